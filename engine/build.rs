//! Compiles the expectations a run judges by into the binary: every file under the
//! repository's `fixtures/expected`, `fixtures/golden` and `fixtures/golden-transcripts`
//! becomes an entry of `$OUT_DIR/expectations.rs` (path relative to `fixtures/`, text), read
//! by `harness::expectations`. A binary installed, copied or cached elsewhere then judges as
//! one run inside its checkout.
//!
//! A build without them fails, naming what is missing: a package that left `fixtures/` out
//! (an sdist without it, `cargo package`) would otherwise give a binary that judges every
//! drift as unlisted and compares no golden file.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The folders of `fixtures/` that hold expectations.
const KINDS: &[&str] = &["expected", "golden", "golden-transcripts"];

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let fixtures = manifest
        .parent()
        .expect("the engine sits in the workspace")
        .join("fixtures");
    println!("cargo:rerun-if-changed={}", fixtures.display());
    let mut files = Vec::new();
    let mut missing = Vec::new();
    for kind in KINDS {
        let dir = fixtures.join(kind);
        println!("cargo:rerun-if-changed={}", dir.display());
        let before = files.len();
        collect(&dir, &mut files);
        if files.len() == before {
            missing.push(dir.display().to_string());
        }
    }
    let baselines = fixtures.join("expected/baselines.json");
    if missing.is_empty() && !baselines.is_file() {
        missing.push(baselines.display().to_string());
    }
    if !missing.is_empty() {
        // `cargo::error` fails the build with this message, without a panic's backtrace.
        println!(
            "cargo::error=the expectations to compile in are missing: {} (no such directory, \
             no *.json in it, or no such file). codex-parity builds from a checkout of its \
             repository or from its sdist, both of which carry fixtures/ beside engine/; a \
             package without fixtures/ (e.g. `cargo package`) cannot build it",
            missing.join(", ")
        );
        return;
    }
    files.sort();
    let mut out = String::from(
        "/// Every expectation file, as (path relative to `fixtures/`, contents), sorted.\n\
         pub(crate) static FILES: &[(&str, &str)] = &[\n",
    );
    for file in &files {
        let relative = file
            .strip_prefix(&fixtures)
            .expect("collected under fixtures")
            .to_string_lossy()
            .replace('\\', "/");
        writeln!(
            out,
            "    ({relative:?}, include_str!({:?})),",
            file.display().to_string()
        )
        .expect("writing to a String");
    }
    out.push_str("];\n");
    writeln!(
        out,
        "/// The `fixtures/` directory these were compiled from.\npub(crate) const BUILT_FROM: &str = {:?};",
        fixtures.display().to_string()
    )
    .expect("writing to a String");
    let target =
        PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it")).join("expectations.rs");
    std::fs::write(&target, out).expect("writing expectations.rs");
}

/// Every `*.json` file under `dir`, recursively (nothing when `dir` is missing).
fn collect(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect(&path, files);
        } else if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
}
