//! `codex-parity config`: bad profiles exit 2 naming `file:line:column` before any codex is
//! looked for; `init` writes a profile from a codex home without its secrets; and (feature
//! `codex-parity`) `check` on real releases: profiles that break on a known release judged
//! right on the releases before and after it (the `on-failure` thread/start param from
//! 0.143.0, a legacy top-level `profile` from 0.134.0, the feature `codex_hooks` renamed
//! `hooks` in 0.129.0, the binary's old path in the package until 0.132.0, exec's
//! `--full-auto` until 0.146.1), a profile that holds everywhere, the first changed release
//! found by probing, and the host's `/etc/codex` hidden or reported.

use std::path::Path;
use std::process::{Command, Output};

fn codex_parity(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .args(args)
        .output()
        .unwrap()
}

fn text(out: &[u8]) -> String {
    String::from_utf8_lossy(out).into_owned()
}

fn write(dir: &Path, name: &str, content: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, content).unwrap();
    path.display().to_string()
}

#[test]
fn a_bad_profile_exits_two_naming_every_problem_before_any_codex_runs() {
    let dir = tempfile::tempdir().unwrap();
    let bad = write(
        dir.path(),
        "profile.toml",
        "args = [\"app-server\", 7]\npakage = [\"x\"]\n[home]\n\"auth.json\" = \"{}\"\n\
         \"config.toml\" = { path = \"missing.toml\" }\n",
    );
    // 0.0.1 is no release: the profile is read first, so this never matters.
    let out = codex_parity(&["config", "check", &bad, "0.0.1"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    for expected in [
        "profile.toml:1:23: args[1] is a string, found integer",
        "profile.toml:2:1: unknown key \"pakage\" (did you mean package?)",
        "profile.toml:4:1: auth.json holds credentials",
        "profile.toml:5:26: cannot read",
        "4 problem(s) in the profile (nothing was run)",
    ] {
        assert!(err.contains(expected), "missing {expected:?} in:\n{err}");
    }
    let missing = codex_parity(&["config", "check", "/nonexistent/profile.toml", "0.0.1"]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(
        text(&missing.stderr).contains("/nonexistent/profile.toml:1:1: cannot read the profile")
    );
}

#[test]
fn init_writes_a_profile_from_a_codex_home_without_its_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    write(
        &home,
        "config.toml",
        "model = \"o3\"\n[model_providers.corp]\nbase_url = \"https://llm.corp/v1\"\n\
         experimental_bearer_token = \"sk-corp-secret\"\n",
    );
    write(
        &home,
        "work.config.toml",
        "model_reasoning_effort = \"high\"\n",
    );
    write(
        &home,
        "auth.json",
        "{\"OPENAI_API_KEY\": \"sk-auth-secret\"}",
    );
    let out_file = dir.path().join("profile.toml");
    let out = out_file.display().to_string();
    let home_arg = home.display().to_string();
    let run = codex_parity(&[
        "config",
        "init",
        "--codex-home",
        &home_arg,
        "--out",
        &out,
        "--",
        "app-server",
        "-c",
        "api_key=sk-arg-secret",
    ]);
    assert_eq!(run.status.code(), Some(0), "{}", text(&run.stderr));
    let written = std::fs::read_to_string(&out_file).unwrap();
    for secret in ["sk-corp-secret", "sk-auth-secret", "sk-arg-secret"] {
        assert!(!written.contains(secret), "{secret} written:\n{written}");
        assert!(!text(&run.stderr).contains(secret));
    }
    let err = text(&run.stderr);
    assert!(
        err.contains("redacted config.toml: model_providers.corp.experimental_bearer_token"),
        "{err}"
    );
    assert!(err.contains("redacted args: -c api_key"), "{err}");
    assert!(
        written.contains("args = [\"app-server\", \"-c\", \"api_key=\\\"<redacted>\\\"\"]"),
        "{written}"
    );
    assert!(written.contains("\"work.config.toml\" = '''\nmodel_reasoning_effort = \"high\"\n'''"));
    // Never over a file.
    let again = codex_parity(&["config", "init", "--codex-home", &home_arg, "--out", &out]);
    assert_eq!(again.status.code(), Some(2));
    assert!(text(&again.stderr).contains("exists: choose another --out"));
    let nowhere = codex_parity(&["config", "init", "--codex-home", "/nonexistent/home"]);
    assert_eq!(nowhere.status.code(), Some(2));
    assert!(text(&nowhere.stderr).contains("/nonexistent/home is not a directory"));
}

#[cfg(feature = "codex-parity")]
mod real {
    use super::*;
    use serde_json::Value;

    /// `config check PROFILE ARGS… --json`: the exit code and the report.
    fn check(profile: &str, args: &[&str]) -> (i32, Value) {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "profile.toml", profile);
        let mut all = vec!["config", "check", path.as_str(), "--json"];
        all.extend_from_slice(args);
        let out = codex_parity(&all);
        let code = out.status.code().unwrap_or(-1);
        let report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "no JSON report ({e}), exit {code}, stderr:\n{}",
                text(&out.stderr)
            )
        });
        (code, report)
    }

    /// The item whose text starts with `item`.
    fn item<'a>(report: &'a Value, item: &str) -> &'a Value {
        report["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["item"].as_str().unwrap().starts_with(item))
            .unwrap_or_else(|| panic!("no item {item:?} in {report:#}"))
    }

    /// `status`, `status warning detail`: an item's outcome on `version`.
    fn outcome(report: &Value, name: &str, version: &str) -> String {
        let v = &item(report, name)["verdicts"][version];
        [&v["status"], &v["warning"], &v["detail"]]
            .iter()
            .filter_map(|x| x.as_str())
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn said(report: &Value, name: &str, version: &str) -> String {
        item(report, name)["verdicts"][version]["messages"].to_string()
    }

    #[test]
    fn the_on_failure_thread_start_param_is_refused_from_0_143_0() {
        let profile = "args = [\"app-server\"]\n[thread_start]\napprovalPolicy = \"on-failure\"\n";
        let (code, r) = check(profile, &["0.142.5", "0.143.0", "--no-bisect"]);
        assert_eq!(code, 1);
        let name = "thread/start approvalPolicy";
        assert_eq!(outcome(&r, name, "0.142.5"), "warning deprecated");
        assert!(said(&r, name, "0.142.5").contains("`on-failure` approval policy is deprecated"));
        assert_eq!(outcome(&r, name, "0.143.0"), "refused-at-thread-start");
        assert!(
            said(&r, name, "0.143.0").contains("unknown variant `on-failure`, expected one of"),
            "{}",
            said(&r, name, "0.143.0")
        );
        let change = &item(&r, name)["changes"][0];
        assert_eq!(
            (change["last_before"].as_str(), change["first"].as_str()),
            (Some("0.142.5"), Some("0.143.0"))
        );
    }

    #[test]
    fn on_failure_in_config_toml_is_remapped_silently_from_0_143_0() {
        let profile = "args = [\"app-server\"]\n[home]\n\"config.toml\" = '''\napproval_policy = \"on-failure\"\n'''\n";
        let (code, r) = check(profile, &["0.142.5", "0.143.0", "--no-bisect"]);
        assert_eq!(code, 0, "warnings pass without --strict: {r:#}");
        assert_eq!(
            outcome(&r, "approval_policy", "0.142.5"),
            "warning deprecated"
        );
        assert_eq!(
            outcome(&r, "approval_policy", "0.143.0"),
            "warning remapped on-request"
        );
        let (strict, _) = check(profile, &["0.142.5", "--strict"]);
        assert_eq!(strict, 1, "a warning fails with --strict");
    }

    #[test]
    fn a_legacy_top_level_profile_is_refused_from_0_134_0() {
        let profile = "args = [\"app-server\"]\n[home]\n\"config.toml\" = '''\nprofile = \"work\"\n\
                       [profiles.work]\nmodel_reasoning_effort = \"high\"\n'''\n";
        let (code, r) = check(profile, &["0.133.0", "0.134.0", "--no-bisect"]);
        assert_eq!(code, 1);
        assert_eq!(outcome(&r, "profile = \"work\"", "0.133.0"), "accepted");
        assert_eq!(
            outcome(&r, "profile = \"work\"", "0.134.0"),
            "refused-at-thread-start"
        );
        assert!(
            said(&r, "profile = \"work\"", "0.134.0")
                .contains("legacy `profile = \\\"work\\\"` config is no longer supported")
        );
        // The file's line, as the integrator wrote it in the profile.
        assert!(
            item(&r, "profile = \"work\"")["at"]
                .as_str()
                .unwrap()
                .ends_with("profile.toml:4")
        );
        assert_eq!(
            outcome(&r, "profiles.work.model_reasoning_effort", "0.134.0"),
            "accepted"
        );
    }

    /// The profile's own secrets (a `-c` override of a secret key, a home file's bearer token
    /// and an MCP server's `env`) are in none of the report's words: items, messages, notes.
    #[test]
    fn the_report_holds_none_of_the_profiles_secrets() {
        let profile = r#"args = ["app-server", "-c", "api_key=\"sk-planted-arg-7731\""]
[home]
"config.toml" = '''
[model_providers.corp]
name = "corp"
base_url = "https://corp.example/v1"
experimental_bearer_token = "planted-bearer-7732"
[mcp_servers.db]
command = "db-mcp"
env = { DB_PASSWORD = "planted-env-7733" }
'''
"#;
        let (_, r) = check(profile, &["0.171.0", "--no-bisect"]);
        let text = r.to_string();
        for planted in [
            "sk-planted-arg-7731",
            "planted-bearer-7732",
            "planted-env-7733",
        ] {
            assert!(!text.contains(planted), "{planted} in {r:#}");
        }
        let items: Vec<&str> = r["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["item"].as_str())
            .collect();
        assert!(items.contains(&"-c api_key=\"<redacted>\""), "{items:?}");
        assert!(
            items.contains(&"model_providers.corp.experimental_bearer_token = \"<redacted>\""),
            "{items:?}"
        );
    }

    #[test]
    fn the_feature_codex_hooks_became_hooks_in_0_129_0() {
        let profile = "args = [\"app-server\", \"--enable\", \"hooks\"]\n[home]\n\"config.toml\" = '''\n\
                       [features]\ncodex_hooks = true\n'''\n";
        let (code, r) = check(profile, &["0.128.0", "0.129.0", "--no-bisect"]);
        assert_eq!(code, 1);
        assert_eq!(outcome(&r, "--enable hooks", "0.128.0"), "refused-at-start");
        assert!(said(&r, "--enable hooks", "0.128.0").contains("Unknown feature flag: hooks"));
        assert_eq!(outcome(&r, "--enable hooks", "0.129.0"), "accepted");
        assert_eq!(outcome(&r, "features.codex_hooks", "0.128.0"), "accepted");
        assert_eq!(
            outcome(&r, "features.codex_hooks", "0.129.0"),
            "warning alias hooks"
        );
    }

    #[test]
    fn the_old_binary_path_is_gone_from_the_package_in_0_133_0() {
        let profile = "args = [\"app-server\"]\npackage = [\"vendor/x86_64-unknown-linux-musl/codex/codex\", \
                       \"vendor/x86_64-unknown-linux-musl/bin/codex\"]\n";
        let (code, r) = check(profile, &["0.132.0", "0.133.0", "--no-bisect"]);
        assert_eq!(code, 1);
        let old = "package path vendor/x86_64-unknown-linux-musl/codex/codex";
        let new = "package path vendor/x86_64-unknown-linux-musl/bin/codex";
        assert_eq!(outcome(&r, old, "0.132.0"), "accepted");
        assert_eq!(outcome(&r, old, "0.133.0"), "missing-from-package");
        assert!(
            said(&r, old, "0.133.0")
                .contains("its entrypoint is vendor/x86_64-unknown-linux-musl/bin/codex")
        );
        assert_eq!(outcome(&r, new, "0.132.0"), "missing-from-package");
        assert_eq!(outcome(&r, new, "0.133.0"), "accepted");
    }

    #[test]
    fn exec_full_auto_is_deprecated_then_unknown_and_a_bad_override_refused() {
        let profile = "args = [\"exec\", \"--json\", \"--full-auto\", \"-c\", \"model_context_window=big\"]\n";
        let (code, r) = check(profile, &["0.146.1", "0.147.0", "--no-bisect"]);
        assert_eq!(code, 1);
        assert_eq!(outcome(&r, "--full-auto", "0.146.1"), "warning deprecated");
        assert_eq!(outcome(&r, "--full-auto", "0.147.0"), "unknown-flag");
        assert!(said(&r, "--full-auto", "0.147.0").contains("unexpected argument '--full-auto'"));
        for v in ["0.146.1", "0.147.0"] {
            assert_eq!(
                outcome(&r, "-c model_context_window=big", v),
                "refused-at-start"
            );
            assert!(said(&r, "-c model_context_window=big", v).contains("expected i64"));
            assert_eq!(outcome(&r, "--json", v), "accepted");
        }
    }

    #[test]
    fn a_profile_that_holds_everywhere_passes_strict() {
        let profile = "args = [\"-c\", \"model_reasoning_effort=\\\"high\\\"\", \"app-server\", \"--listen\", \"stdio://\"]\n\
                       package = [\"package.json\"]\n[home]\n\"config.toml\" = '''\nmodel = \"gpt-5\"\n\
                       sandbox_mode = \"workspace-write\"\n[features]\nhooks = true\n'''\n\
                       [thread_start]\napprovalPolicy = \"on-request\"\nsandbox = \"workspace-write\"\n";
        let (code, r) = check(
            profile,
            &["0.131.0", "0.143.0", "0.161.0", "0.171.0", "--strict"],
        );
        assert_eq!(code, 0, "{r:#}");
        for i in r["items"].as_array().unwrap() {
            for (v, verdict) in i["verdicts"].as_object().unwrap() {
                assert_eq!(
                    verdict["status"], "accepted",
                    "{} on {v}: {verdict}",
                    i["item"]
                );
            }
        }
        for run in r["runs"].as_array().unwrap() {
            assert!(run["leaks"].as_array().unwrap().is_empty(), "{run}");
            assert!(run["connections"].as_array().unwrap().is_empty(), "{run}");
        }
    }

    #[test]
    fn the_first_changed_release_is_found_by_probing_between() {
        let profile = "args = [\"app-server\"]\n[thread_start]\napprovalPolicy = \"on-failure\"\n";
        let (_, r) = check(profile, &["0.140.0", "0.145.0"]);
        let change = &item(&r, "thread/start approvalPolicy")["changes"][0];
        assert_eq!(change["first"], "0.143.0", "{r:#}");
        assert_eq!(change["last_before"], "0.142.5");
        assert_eq!(change["exact"], true);
        assert!(!r["probed"].as_array().unwrap().is_empty());
    }

    /// Whether this process may make a mount namespace (root, or user namespaces).
    fn namespaces() -> bool {
        Command::new("unshare")
            .args(["--mount", "--propagation", "private", "true"])
            .status()
            .is_ok_and(|s| s.success())
    }

    #[test]
    fn host_managed_configuration_is_hidden_or_reported() {
        if !namespaces() {
            eprintln!("skipped: no mount namespace here to stand a fake /etc/codex in");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let profile = write(
            dir.path(),
            "profile.toml",
            "args = [\"app-server\"]\n[thread_start]\napprovalPolicy = \"untrusted\"\n",
        );
        // A host whose /etc/codex limits approval policies, in a namespace of the test's own.
        let etc = dir.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        let script = format!(
            "set -e; cp -a /etc/. {etc}/; mkdir -p {etc}/codex; \
             printf 'allowed_approval_policies = [\"never\"]\\n' > {etc}/codex/requirements.toml; \
             mount --bind {etc} /etc; exec \"$@\"",
            etc = etc.display()
        );
        let run = |mode: &str| {
            let out = Command::new("unshare")
                .args([
                    "--mount",
                    "--propagation",
                    "private",
                    "sh",
                    "-c",
                    &script,
                    "sh",
                ])
                .arg(env!("CARGO_BIN_EXE_codex-parity"))
                .args([
                    "config",
                    "check",
                    &profile,
                    "0.171.0",
                    "--json",
                    "--host-config",
                    mode,
                ])
                .output()
                .unwrap();
            let report: Value = serde_json::from_slice(&out.stdout)
                .unwrap_or_else(|e| panic!("{e}: {}", text(&out.stderr)));
            (out.status.code(), report)
        };
        let (code, hidden) = run("hide");
        assert_eq!(code, Some(0), "{hidden:#}");
        assert!(
            hidden["isolation"]
                .as_str()
                .unwrap()
                .contains("hidden from codex"),
            "{hidden:#}"
        );
        assert_eq!(
            outcome(&hidden, "thread/start approvalPolicy", "0.171.0"),
            "accepted"
        );
        let (code, kept) = run("keep");
        assert_eq!(code, Some(0), "a managed override is a warning: {kept:#}");
        assert!(
            kept["isolation"]
                .as_str()
                .unwrap()
                .starts_with("NOT ISOLATED"),
            "{kept:#}"
        );
        assert_eq!(
            outcome(&kept, "thread/start approvalPolicy", "0.171.0"),
            "warning managed by requirements"
        );
        let leaks = kept["runs"][0]["leaks"].to_string();
        assert!(leaks.contains("allowedApprovalPolicies"), "{leaks}");
    }
}
