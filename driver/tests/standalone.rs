//! A binary that stands alone: `codex-parity` installed or copied away from its checkout,
//! run where no checkout can be reached, judges the pinned codex exactly as `cargo run`
//! does inside the checkout (its expectations are compiled in); an expectations directory
//! that is named but missing exits 2 naming it; `--bless` with no checkout to write to is
//! refused before anything runs.
//!
//! The binary is `$CODEX_PARITY_INSTALLED` (CI sets it to one made by `cargo install --path
//! driver --root …`), else this build's binary copied into an empty directory. The checkout
//! is hidden by running the binary in a private mount namespace with an empty directory
//! mounted over the workspace (`unshare -m`, as root); where that is not possible the test
//! says so and runs it from the empty directory only.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The scenarios both runs compare: group E holds golden requests (E1) and drift the
/// baselines list for the pinned version.
const FILTER: &str = "E";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the driver sits in the workspace")
        .canonicalize()
        .expect("a canonical workspace path")
}

/// The binary under test and the directory that keeps it.
fn standalone_binary() -> (PathBuf, tempfile::TempDir) {
    let dir = tempfile::Builder::new()
        .prefix("codex-parity-standalone-")
        .tempdir_in(std::env::temp_dir())
        .expect("a temporary directory");
    if let Some(installed) = std::env::var_os("CODEX_PARITY_INSTALLED") {
        return (PathBuf::from(installed), dir);
    }
    let bin = dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let copy = bin.join("codex-parity");
    std::fs::copy(env!("CARGO_BIN_EXE_codex-parity"), &copy).expect("copying the binary");
    (copy, dir)
}

/// Whether this process may hide the checkout in a mount namespace of its own.
fn can_hide() -> bool {
    Command::new("unshare")
        .args(["-m", "true"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `bin ARGS` run from `cwd` with the workspace hidden (an empty directory over it) when
/// `hide`.
fn run_alone(bin: &Path, args: &[&str], cwd: &Path, hide: bool, env: &[(&str, &str)]) -> Output {
    let mut cmd = if hide {
        let empty = cwd.join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let mut c = Command::new("unshare");
        c.args([
            "-m",
            "sh",
            "-c",
            r#"mount --bind "$0" "$1" && shift && exec "$@""#,
        ])
        .arg(&empty)
        .arg(workspace())
        .arg(bin);
        c
    } else {
        Command::new(bin)
    };
    cmd.args(args)
        .current_dir(cwd)
        .env_remove("CODEX_PARITY_FIXTURES")
        .env_remove("CODEX_PARITY_EXPECTED")
        .env_remove("CODEX_TEST_BINS")
        .stdin(std::process::Stdio::null());
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("running codex-parity")
}

/// (scenario, status, drift keys with values) of every cell of a report's results.json.
fn cells(report: &Path) -> Vec<(String, String, Vec<String>)> {
    let text = std::fs::read_to_string(report.join("results.json")).expect("results.json");
    let v: Value = serde_json::from_str(&text).unwrap();
    let mut out: Vec<(String, String, Vec<String>)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let mut drift: Vec<String> = r["drift"]
                .as_array()
                .map(|d| {
                    d.iter()
                        .map(|d| format!("{}={}", d["key"], d["observed"]))
                        .collect()
                })
                .unwrap_or_default();
            drift.sort();
            (
                r["scenario"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                drift,
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn a_binary_away_from_its_checkout_judges_as_cargo_run_does() {
    let (bin, keep) = standalone_binary();
    let hide = can_hide();
    if !hide {
        eprintln!(
            "standalone: cannot make a mount namespace here (not root?): the binary runs from \
             an empty directory with the checkout still on disk"
        );
    }
    let root = keep.path();
    let inside = root.join("inside");
    let reference = Command::new(env!("CARGO_BIN_EXE_codex-parity"))
        .args(["run", "--filter", FILTER, "--report"])
        .arg(&inside)
        .current_dir(workspace())
        .env_remove("CODEX_PARITY_FIXTURES")
        .env_remove("CODEX_PARITY_EXPECTED")
        .env_remove("CODEX_TEST_BINS")
        .output()
        .expect("running codex-parity in the checkout");
    let alone_dir = root.join("alone");
    let out_dir = root.join("out");
    std::fs::create_dir_all(&alone_dir).unwrap();
    let out = out_dir.to_str().unwrap();
    let alone = run_alone(
        &bin,
        &["run", "--filter", FILTER, "--report", out],
        &alone_dir,
        hide,
        &[],
    );
    assert_eq!(
        alone.status.code(),
        reference.status.code(),
        "inside:\n{}\nalone:\n{}",
        support::text(&reference),
        support::text(&alone)
    );
    let (a, b) = (cells(&inside), cells(&out_dir));
    assert_eq!(a, b, "the same cells, outcomes and drift");
    assert!(
        a.iter()
            .any(|(s, status, _)| s == "request_shape_plain" && status == "passed"),
        "E1 compared with its golden file alone too: {a:?}"
    );
    assert!(
        a.iter()
            .any(|(_, status, _)| status == "drift" || status == "contradicts"),
        "the baselines were read alone too (listed drift): {a:?}"
    );
}

#[test]
fn named_expectations_that_are_missing_exit_2_naming_them() {
    let (bin, keep) = standalone_binary();
    let cwd = keep.path();
    let missing = cwd.join("no-such-fixtures");
    let m = missing.to_str().unwrap();
    let by_flag = run_alone(
        &bin,
        &["--fixtures", m, "run", "--filter", "A1"],
        cwd,
        false,
        &[],
    );
    support::assert_exit_2_naming(&by_flag, m);
    let by_env = run_alone(
        &bin,
        &["run", "--filter", "A1"],
        cwd,
        false,
        &[("CODEX_PARITY_FIXTURES", m)],
    );
    support::assert_exit_2_naming(&by_env, m);
    let file = cwd.join("baselines.json");
    let f = file.to_str().unwrap();
    let baselines = run_alone(
        &bin,
        &["run", "--filter", "A1"],
        cwd,
        false,
        &[("CODEX_PARITY_EXPECTED", f)],
    );
    support::assert_exit_2_naming(&baselines, f);
    // A directory without its baselines file is not an empty baseline either.
    std::fs::create_dir_all(missing.join("golden")).unwrap();
    let empty = run_alone(
        &bin,
        &["--fixtures", m, "run", "--filter", "A1"],
        cwd,
        false,
        &[],
    );
    support::assert_exit_2_naming(&empty, "expected/baselines.json");
}

#[test]
fn bless_without_a_checkout_is_refused_before_anything_runs() {
    if !can_hide() {
        eprintln!("standalone: cannot hide the checkout here (not root?); bless refusal not tried");
        return;
    }
    let (bin, keep) = standalone_binary();
    let cwd = keep.path();
    let out = run_alone(
        &bin,
        &["run", "--filter", "request_shape_plain", "--bless"],
        cwd,
        true,
        &[],
    );
    let all = support::text(&out);
    assert_eq!(out.status.code(), Some(2), "{all}");
    assert!(
        all.contains("--bless rewrites golden files in a checkout"),
        "{all}"
    );
    assert!(all.contains("--fixtures DIR"), "{all}");
    assert!(!all.contains("scenario(s) on"), "nothing ran: {all}");
    // With a directory named, it writes there and says so.
    let fixtures = cwd.join("fixtures");
    std::fs::create_dir_all(fixtures.join("expected")).unwrap();
    std::fs::write(
        fixtures.join("expected/baselines.json"),
        "{\"expected\": []}",
    )
    .unwrap();
    let f = fixtures.to_str().unwrap();
    let out = run_alone(
        &bin,
        &[
            "--fixtures",
            f,
            "run",
            "--filter",
            "request_shape_plain",
            "--bless",
        ],
        cwd,
        true,
        &[],
    );
    let all = support::text(&out);
    assert!(all.contains(&format!("--bless writes into {f}")), "{all}");
    let pinned = codex_parity::codex::versions::load().unwrap().pinned;
    // What it writes is pending until reviewed: the accepted file appears only on --accept.
    let accepted = fixtures.join(format!("golden/{pinned}/request_shape_plain.json"));
    assert!(
        codex_parity::harness::pending::pending_path(&accepted).is_file() && !accepted.exists(),
        "{all}"
    );
    let review = run_alone(
        &bin,
        &["--fixtures", f, "review", "--accept"],
        cwd,
        true,
        &[],
    );
    let said = support::text(&review);
    assert!(
        said.contains(&format!(
            "accepted golden/{pinned}/request_shape_plain.json"
        )),
        "{said}"
    );
    assert!(accepted.is_file(), "{said}");
}
