//! `codex-parity upgrade` on real releases: a client with a strict model of `thread/start`'s
//! result, recorded on 0.131.0, replays green on 0.171.0 (codex still does what the file
//! says) while the client itself breaks on 0.171.0's session (two new fields): the upgrade
//! says so and exits 1. The same client told 0.171.0's fields upgrades from 0.161.0 to
//! 0.171.0 with nothing broken: exit 0. A configuration profile whose `thread/start`
//! `approvalPolicy: "on-failure"` 0.143.0 refuses fails the upgrade from 0.142.5; one with
//! `on-request` passes it. Bad input exits 2 (a bad profile before any codex is looked for).

mod support;

use std::path::Path;
use std::time::Duration;

use codex_parity::codex::binaries;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::harness::sidecar::{Sidecar, SidecarLauncher};
use codex_parity_sidecar::mock::script::Scripted;
use codex_parity_sidecar::wire::bodies;
use support::{CODEX_PARITY, Sandbox, assert_exit_2_naming, text};

/// The top-level fields of 0.161.0's and 0.171.0's `thread/start` result.
const KNOWN_0_171: &str = "activePermissionProfile,approvalPolicy,approvalsReviewer,cwd,\
    disabledPluginIds,instructionSources,model,modelProvider,multiAgentMode,reasoningEffort,\
    runtimeWorkspaceRoots,sandbox,serviceTier,thread";

fn client() -> Vec<String> {
    vec![
        "python3".into(),
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/record/client.py")
            .display()
            .to_string(),
        "strict".into(),
    ]
}

fn finish(mut cmd: std::process::Command, what: &str) -> std::process::Output {
    support::wait_with_timeout(cmd.spawn().unwrap(), Duration::from_secs(300), what)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_side_break_fails_the_upgrade_and_none_passes_it() {
    let cache = Cache::from_env().unwrap();
    let progress = StderrProgress::new();
    let old = binaries::resolve_spec("0.131.0", &cache, &progress)
        .await
        .unwrap();
    for v in ["0.161.0", "0.171.0"] {
        binaries::resolve_spec(v, &cache, &progress).await.unwrap();
    }
    let sandbox = Sandbox::with_real_baselines();
    let dir = sandbox.root.path().join("recordings");
    std::fs::create_dir_all(&dir).unwrap();
    let upstream = Sidecar::start(&SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    upstream
        .enqueue(&[Scripted::sse(bodies::assistant_reply("r1", "hello there"))])
        .await
        .unwrap();
    let out = dir.join("strict_turn.toml");
    let args = support::record_args(&old.path, upstream.base_url(), &out, &[], &client());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let o = finish(sandbox.command(&args), "record");
    assert!(o.status.success(), "recording on 0.131.0: {}", text(&o));
    let _ = upstream.shutdown().await;
    let recordings = dir.display().to_string();
    let upgrade = |from: &str, to: &str, known: Option<&str>| {
        let mut args = vec![
            "upgrade",
            "--from",
            from,
            "--to",
            to,
            "--recordings",
            &recordings,
            "--",
        ];
        let client = client();
        args.extend(client.iter().map(String::as_str));
        let mut cmd = sandbox.command(&args);
        if let Some(k) = known {
            cmd.env("CLIENT_KNOWN_FIELDS", k);
        }
        finish(cmd, "upgrade")
    };
    // 0.131.0 -> 0.171.0: the recording replays, the client breaks.
    let o = upgrade("0.131.0", "0.171.0", None);
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(
        all.contains("your client does not handle 0.171.0's session of")
            && all.contains("unknown field disabledPluginIds"),
        "{all}"
    );
    assert!(
        !all.contains("recording strict_turn does not replay"),
        "codex still does what the file says on 0.171.0: {all}"
    );
    assert!(
        all.contains("the catalogue's known changes between 0.131.0 and 0.171.0: "),
        "{all}"
    );
    // 0.161.0 -> 0.171.0 with a client that knows their fields: nothing broke.
    let o = upgrade("0.161.0", "0.171.0", Some(KNOWN_0_171));
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(
        all.contains("verdict: nothing your integration relies on broke"),
        "{all}"
    );
    // Bad input: nothing to judge; a folder without scenario files.
    let (o, _) = sandbox.run(&["upgrade", "--from", "0.161.0", "--to", "0.171.0"]);
    assert_exit_2_naming(&o, "nothing of your integration to judge");
    let empty = sandbox.root.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (o, _) = sandbox.run(&[
        "upgrade",
        "--from",
        "0.161.0",
        "--to",
        "0.171.0",
        "--recordings",
        empty.to_str().unwrap(),
    ]);
    assert_exit_2_naming(&o, "no scenario files");
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "upgrade left processes behind: {left:?}");
}

/// `--profile`: the configuration judged on A and B. `approvalPolicy: "on-failure"` in
/// `thread/start` is refused from 0.143.0: upgrading to it breaks; `on-request` holds.
#[test]
fn a_profile_that_b_refuses_fails_the_upgrade_and_one_that_holds_passes_it() {
    let sandbox = Sandbox::new();
    let profile = |policy: &str| {
        let path = sandbox.root.path().join(format!("{policy}.toml"));
        std::fs::write(
            &path,
            format!("args = [\"app-server\"]\n[thread_start]\napprovalPolicy = \"{policy}\"\n"),
        )
        .unwrap();
        path.display().to_string()
    };
    let upgrade = |from: &str, to: &str, profile: &str| {
        let mut cmd =
            sandbox.command(&["upgrade", "--from", from, "--to", to, "--profile", profile]);
        cmd.env(
            codex_parity::codex::install::CACHE_ENV,
            Cache::from_env().unwrap().root(),
        );
        finish(cmd, "upgrade --profile")
    };
    let o = upgrade("0.142.5", "0.143.0", &profile("on-failure"));
    let all = text(&o);
    assert_eq!(o.status.code(), Some(1), "{all}");
    assert!(
        all.contains("your configuration (1 not taken by 0.143.0)")
            && all.contains(
                "your configuration's on-failure.toml:3 thread/start approvalPolicy: \"on-failure\" \
                 is not taken by 0.143.0 (REFUSED thread)"
            ),
        "{all}"
    );
    let o = upgrade("0.142.5", "0.143.0", &profile("on-request"));
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    assert!(
        all.contains("your configuration (0 not taken by 0.143.0)"),
        "{all}"
    );
    // Secrets in the profile (a key's shape, a secret-named variable's value) are in
    // nothing the upgrade prints or writes.
    let secret = sandbox.root.path().join("secret.toml");
    std::fs::write(
        &secret,
        "args = [\"-c\", \"experimental_bearer_token=\\\"sk-PLANTEDkey1234567890abcdef\\\"\", \
         \"-c\", \"model=\\\"PLANTEDenvvalue42\\\"\", \"app-server\"]\n",
    )
    .unwrap();
    let report = sandbox.root.path().join("report");
    let mut cmd = sandbox.command(&[
        "upgrade",
        "--from",
        "0.142.5",
        "--to",
        "0.143.0",
        "--profile",
        secret.to_str().unwrap(),
        "--report",
        report.to_str().unwrap(),
    ]);
    cmd.env(
        codex_parity::codex::install::CACHE_ENV,
        Cache::from_env().unwrap().root(),
    )
    .env("MY_SERVICE_TOKEN", "PLANTEDenvvalue42");
    let o = finish(cmd, "upgrade --profile with secrets");
    let all = text(&o);
    assert!(all.contains("your configuration ("), "{all}");
    let written = ["upgrade.json", "upgrade.md"]
        .map(|f| std::fs::read_to_string(report.join(f)).unwrap())
        .join("\n");
    assert!(
        !all.contains("PLANTED") && !written.contains("PLANTED"),
        "{all}\n{written}"
    );
    // A profile that does not read is refused before any codex runs.
    let bad = sandbox.root.path().join("bad.toml");
    std::fs::write(&bad, "pakage = [\"x\"]\n").unwrap();
    let (o, _) = sandbox.run(&[
        "upgrade",
        "--from",
        "0.142.5",
        "--to",
        "0.143.0",
        "--profile",
        bad.to_str().unwrap(),
    ]);
    assert_exit_2_naming(&o, "bad.toml:1:1: unknown key \"pakage\"");
}
