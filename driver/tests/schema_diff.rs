//! `codex-parity schema-diff`: the command against fake codex binaries that print small
//! hand-made schemas, and (feature `codex-parity`) the differ on the real codex binaries.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};

/// Writes a fake `codex` reporting `version` whose `generate-json-schema --out DIR` copies
/// the given schema files into DIR.
fn fake_codex(dir: &Path, version: &str, files: &[(&str, Value)]) -> PathBuf {
    let schema = dir.join(format!("schema-{version}"));
    std::fs::create_dir_all(&schema).unwrap();
    for (name, doc) in files {
        std::fs::write(schema.join(name), doc.to_string()).unwrap();
    }
    let path = dir.join(format!("codex-{version}"));
    let script = format!(
        "#!/bin/sh\n\
         if [ \"$1\" = --version ]; then echo 'codex-cli {version}'; exit 0; fi\n\
         # app-server generate-json-schema --out DIR --experimental\n\
         mkdir -p \"$4\" && cp {}/*.json \"$4\"/\n",
        schema.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn methods(names: &[&str]) -> Value {
    let variants: Vec<Value> = names
        .iter()
        .map(|m| json!({"properties": {"method": {"enum": [m]}}}))
        .collect();
    json!({ "oneOf": variants })
}

fn schema_files(client: &[&str], statuses: &[&str]) -> Vec<(&'static str, Value)> {
    vec![
        ("ClientRequest.json", methods(client)),
        ("ServerRequest.json", methods(&[])),
        ("ServerNotification.json", methods(&["turn/completed"])),
        ("ClientNotification.json", methods(&["initialized"])),
        (
            "codex_app_server_protocol.schemas.json",
            json!({"definitions": {"v2": {
                "ThreadGoalStatus": {"type": "string", "enum": statuses}
            }}}),
        ),
    ]
}

fn schema_diff(args: &[&Path]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .arg("schema-diff")
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn reports_drift_between_two_binaries_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let old = fake_codex(
        dir.path(),
        "0.1.0",
        &schema_files(&["thread/start", "thread/rollback"], &["active"]),
    );
    let new = fake_codex(
        dir.path(),
        "0.2.0",
        &schema_files(&["thread/start"], &["active", "blocked"]),
    );
    let out = schema_diff(&[&old, &new]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.starts_with("schema diff codex-0.1.0 -> codex-0.2.0\n"),
        "{text}"
    );
    assert!(
        text.contains("client requests: +0 -1\n  - thread/rollback\n"),
        "{text}"
    );
    assert!(
        text.contains("  ThreadGoalStatus\n    + value blocked\n"),
        "{text}"
    );

    let out = Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .arg("schema-diff")
        .args([&new, &old])
        .arg("--json")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["client_requests"]["added"], json!(["thread/rollback"]));
    assert_eq!(
        v["changed_types"][0]["values"]["removed"],
        json!(["blocked"])
    );
}

#[test]
fn a_missing_binary_exits_two_and_says_which() {
    let dir = tempfile::tempdir().unwrap();
    let old = fake_codex(dir.path(), "0.1.0", &schema_files(&[], &[]));
    let missing = dir.path().join("no-codex");
    let out = schema_diff(&[&old, &missing]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no-codex"), "{stderr}");
    assert!(out.stdout.is_empty());
}

#[test]
fn a_binary_whose_schema_is_incomplete_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let good = fake_codex(dir.path(), "0.1.0", &schema_files(&[], &[]));
    let broken = fake_codex(
        dir.path(),
        "0.2.0",
        &[("ClientRequest.json", methods(&["initialize"]))],
    );
    let out = schema_diff(&[&good, &broken]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("codex-0.2.0") && stderr.contains("ServerRequest.json"),
        "{stderr}"
    );
}

/// The differ on real binaries: each one against itself shows nothing; with two versions
/// (`CODEX_TEST_BINS`), the oldest against the newest shows drift both ways round, and the
/// known drift where the versions are the documented ones (`CODEX_TEST_BINS` naming 0.131.0
/// and 0.171.0, say).
#[cfg(feature = "codex-parity")]
#[tokio::test]
async fn real_schemas_diff_as_documented() {
    use codex_parity::codex::binaries;
    use codex_parity::codex::capabilities::Capabilities;
    use codex_parity::codex::install::{Cache, StderrProgress};
    use codex_parity::codex::schema::Schema;
    use codex_parity::codex::schema_diff::diff;

    let source =
        binaries::choose_sources(&[], std::env::var_os(binaries::CODEX_TEST_BINS)).unwrap();
    let mut bins = binaries::resolve(source, &Cache::from_env().unwrap(), &StderrProgress::new())
        .await
        .unwrap();
    let key = codex_parity::codex::versions::sort_key;
    bins.sort_by_key(|b| key(&b.version));
    bins.dedup_by(|a, b| a.version == b.version);
    let (oldest, newest) = (&bins[0], &bins[bins.len() - 1]);
    let old = Schema::generate(oldest, true).await.unwrap();
    assert!(old.client_requests.contains("thread/start"));
    assert!(old.types.contains_key("ThreadStartParams"));
    let same = diff("a", &old, "a", &old);
    assert!(same.is_empty(), "{}", same.to_text());
    if bins.len() < 2 {
        eprintln!(
            "one codex version only: compared {} with itself",
            oldest.label()
        );
        return;
    }
    let new = Schema::generate(newest, true).await.unwrap();
    let forward = diff(&oldest.label(), &old, &newest.label(), &new);
    let backward = diff(&newest.label(), &new, &oldest.label(), &old);
    assert!(!forward.is_empty());
    assert_eq!(
        forward.client_requests.added,
        backward.client_requests.removed
    );
    assert_eq!(forward.types.removed, backward.types.added);
    assert_eq!(forward.changed_types.len(), backward.changed_types.len());

    let before_161 = key(&oldest.version) < key("0.161.0");
    if before_161 && key(&newest.version) >= key("0.161.0") {
        assert!(
            forward
                .client_requests
                .removed
                .contains(&"thread/rollback".to_string())
        );
        let ty = |name: &str| {
            forward
                .changed_types
                .iter()
                .find(|t| t.name == name)
                .unwrap_or_else(|| panic!("{name} unchanged:\n{}", forward.to_text()))
        };
        assert_eq!(
            ty("ThreadGoalStatus").values.added,
            ["blocked", "usageLimited"]
        );
        let spec = ty("DynamicToolSpec");
        assert_eq!(
            spec.kind.as_ref().map(|k| k.to.as_str()),
            Some("union tagged by `type`")
        );
        let names: Vec<&str> = spec.variants.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["function", "namespace"]);
        // What scenarios ask of the same schemas.
        let caps = |s: &Schema| Capabilities::from_schemas(s.clone(), s);
        assert!(!caps(&old).enum_has("ThreadGoalStatus", "blocked"));
        assert!(caps(&new).enum_has("ThreadGoalStatus", "blocked"));
        assert!(caps(&old).has_field("ThreadStartParams", "dynamicTools"));
    }
}
