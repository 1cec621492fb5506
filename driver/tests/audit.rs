//! `codex-parity baselines audit` on hand-made sweep results (no codex runs): a sweep judged
//! again by the baselines, the table written, and bad input refused with exit 2 naming the
//! entry.

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::json;

const CODEX_PARITY: &str = env!("CARGO_BIN_EXE_codex-parity");

/// One release's results.json: scenario `smoke_uses_mock_responses` with the drift given.
fn write_release(dir: &Path, version: &str, drift: Option<serde_json::Value>) {
    let label = format!("codex-{version}");
    let mut result = json!({
        "scenario": "smoke_uses_mock_responses", "id": "A1", "codex": label,
        "codex_version": version, "status": "passed", "duration_ms": 5
    });
    if let Some(observed) = drift {
        result["drift"] = json!([{"key": "turn.status", "observed": observed, "message": "m"}]);
        result["status"] = json!("failed");
        result["reason"] = json!("drift not in the baseline");
    }
    let file = json!({
        "format": codex_parity::report::json::FORMAT,
        "codex": [{"label": label, "version": version}],
        "scenarios": [{"name": "smoke_uses_mock_responses", "id": "A1", "summary": "s"}],
        "results": [result]
    });
    let d = dir.join(version);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("results.json"), file.to_string()).unwrap();
}

fn audit(dir: &Path, baselines: &str, extra: &[&str]) -> Output {
    let file = dir.join("baselines.json");
    std::fs::write(&file, baselines).unwrap();
    Command::new(CODEX_PARITY)
        .args(["baselines", "audit"])
        .arg(dir.join("sweep"))
        .args(extra)
        .env("CODEX_PARITY_EXPECTED", &file)
        .output()
        .expect("running codex-parity")
}

fn entry(scenario: &str, versions: &str) -> String {
    json!({"expected": [{
        "scenario": scenario, "key": "turn.status", "observed": "failed",
        "versions": [versions], "reason": "r", "contradicts": false
    }]})
    .to_string()
}

#[test]
fn a_sweep_is_judged_again_and_a_range_that_ends_too_soon_is_named_with_the_right_one() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    write_release(&sweep, "0.131.0", Some(json!("failed")));
    write_release(&sweep, "0.132.0", Some(json!("failed")));
    write_release(&sweep, "0.133.0", None);
    let narrow = audit(
        dir.path(),
        &entry("smoke_uses_mock_responses", "0.131.0"),
        &[],
    );
    assert_eq!(narrow.status.code(), Some(1), "{}", support::text(&narrow));
    assert!(
        support::text(&narrow).contains("FAIL smoke_uses_mock_responses[codex-0.132.0]"),
        "{}",
        support::text(&narrow)
    );
    assert!(
        support::text(&narrow).contains("(seen on <0.133.0)"),
        "{}",
        support::text(&narrow)
    );
    let table = dir.path().join("releases.md");
    let suggest = dir.path().join("suggested.json");
    let right = audit(
        dir.path(),
        &entry("smoke_uses_mock_responses", "<0.133.0"),
        &[
            "--table",
            table.to_str().unwrap(),
            "--suggest",
            suggest.to_str().unwrap(),
        ],
    );
    let out = support::text(&right);
    assert_eq!(right.status.code(), Some(0), "{out}");
    assert!(!out.contains("FAIL "), "{out}");
    assert!(
        !out.contains("stale:") && !out.contains("unlisted:"),
        "{out}"
    );
    let md = std::fs::read_to_string(&table).unwrap();
    assert!(md.contains("| 0.131.0 | 0 | 1 | 0 | 0 | 0 |"), "{md}");
    assert!(md.contains("| 0.133.0 | 1 | 0 | 0 | 0 | 0 |"), "{md}");
    let suggested: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&suggest).unwrap()).unwrap();
    assert_eq!(suggested["expected"][0]["versions"], json!(["<0.133.0"]));
}

#[test]
fn bad_entries_exit_2_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    write_release(&dir.path().join("sweep"), "0.131.0", None);
    let unknown = audit(dir.path(), &entry("no_such_scenario", "0.131.0"), &[]);
    support::assert_exit_2_naming(
        &unknown,
        "no_such_scenario turn.status (0.131.0) names no known scenario",
    );
    let never = audit(
        dir.path(),
        &entry("smoke_uses_mock_responses", "0.131.5"),
        &[],
    );
    support::assert_exit_2_naming(&never, "(0.131.5) includes no published release");
    let malformed = audit(
        dir.path(),
        &entry("smoke_uses_mock_responses", ">=0.131"),
        &[],
    );
    support::assert_exit_2_naming(&malformed, "(smoke_uses_mock_responses turn.status)");
}

/// `codex-parity --fixtures F ARGS…`, its output.
fn in_fixtures(fixtures: &Path, args: &[&str]) -> Output {
    Command::new(CODEX_PARITY)
        .arg("--fixtures")
        .arg(fixtures)
        .args(args)
        .env_remove("CODEX_PARITY_EXPECTED")
        .output()
        .expect("running codex-parity")
}

#[test]
fn audit_bless_proposes_baselines_that_review_shows_rejects_and_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let sweep = dir.path().join("sweep");
    write_release(&sweep, "0.131.0", Some(json!("failed")));
    write_release(&sweep, "0.132.0", Some(json!("failed")));
    write_release(&sweep, "0.133.0", None);
    let fixtures = dir.path().join("fixtures");
    let accepted = fixtures.join("expected/baselines.json");
    std::fs::create_dir_all(accepted.parent().unwrap()).unwrap();
    let narrow: serde_json::Value =
        serde_json::from_str(&entry("smoke_uses_mock_responses", "0.131.0")).unwrap();
    let narrow = serde_json::to_string_pretty(&narrow).unwrap() + "\n";
    std::fs::write(&accepted, &narrow).unwrap();
    let sweep_arg = sweep.to_str().unwrap();
    let bless = || in_fixtures(&fixtures, &["baselines", "audit", sweep_arg, "--bless"]);

    let out = bless();
    assert_eq!(out.status.code(), Some(1), "{}", support::text(&out));
    let pending = fixtures.join("expected/baselines.json.pending");
    assert!(pending.is_file(), "{}", support::text(&out));
    assert_eq!(std::fs::read_to_string(&accepted).unwrap(), narrow);
    // The review shows the change of range as a diff, and changes nothing.
    let shown = in_fixtures(&fixtures, &["review"]);
    let text = support::text(&shown);
    assert_eq!(shown.status.code(), Some(0), "{text}");
    assert!(text.contains("pending expected/baselines.json:"), "{text}");
    assert!(
        text.contains("-         \"0.131.0\"\n+         \"<0.133.0\"\n"),
        "{text}"
    );
    assert!(text.contains("1 pending expectation(s)"), "{text}");
    assert!(pending.is_file());
    // Rejected: gone, the accepted file as it was.
    let rejected = in_fixtures(&fixtures, &["review", "--reject"]);
    assert!(support::text(&rejected).contains("rejected expected/baselines.json"));
    assert!(!pending.exists());
    assert_eq!(std::fs::read_to_string(&accepted).unwrap(), narrow);
    // Proposed again and accepted (a filter that matches it): the audit then passes.
    bless();
    let other = in_fixtures(&fixtures, &["review", "--accept", "golden/"]);
    assert!(
        support::text(&other).contains("nothing pending"),
        "{}",
        support::text(&other)
    );
    assert!(pending.is_file());
    let taken = in_fixtures(&fixtures, &["review", "--accept", "expected/"]);
    assert!(support::text(&taken).contains("accepted expected/baselines.json"));
    assert!(!pending.exists());
    let now: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&accepted).unwrap()).unwrap();
    assert_eq!(now["expected"][0]["versions"], json!(["<0.133.0"]));
    let again = in_fixtures(&fixtures, &["baselines", "audit", sweep_arg]);
    assert_eq!(again.status.code(), Some(0), "{}", support::text(&again));
}
