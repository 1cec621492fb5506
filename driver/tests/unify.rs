//! The README's test command reuses what its first command built: every crate the binary's
//! build compiles is asked for the same features by the test build, the binary's own package
//! included (its `codex-parity` feature, the test command's switch, is a default one). When a
//! dependency of the tests turns on a feature the binary's build did not, cargo builds that
//! crate again and everything above it (the sidecar, the engine, the catalogue, the driver):
//! the fix is a line in `unify/Cargo.toml`, which this test names; a feature the driver's
//! tests need belongs in its default features.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Package (name and version, and `(proc-macro)` for a host crate) -> its feature sets.
type Features = BTreeMap<String, BTreeSet<String>>;

/// Parses `cargo tree --prefix none -f '{p} [{f}]'`.
fn parse(tree: &str) -> Features {
    let mut out = Features::new();
    for line in tree.lines() {
        let Some((package, rest)) = line.split_once(" [") else {
            continue;
        };
        let features = rest.split(']').next().unwrap_or_default();
        let words: Vec<&str> = package.split_whitespace().collect();
        let mut key = words.iter().take(2).copied().collect::<Vec<_>>().join(" ");
        if package.contains("(proc-macro)") {
            key.push_str(" (proc-macro)");
        }
        out.entry(key).or_default().insert(features.to_string());
    }
    out
}

/// The packages of both builds whose features differ, as lines naming both sets.
fn differences(run: &Features, test: &Features) -> Vec<String> {
    run.iter()
        .filter_map(|(package, features)| {
            let other = test.get(package)?;
            (other != features).then(|| {
                format!(
                    "{package}: the binary's build asks for {features:?}, the tests' for {other:?}"
                )
            })
        })
        .collect()
}

fn tree(args: &[&str]) -> Features {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new(cargo)
        .current_dir(&root)
        .args([
            "tree",
            "--offline",
            "--locked",
            "--prefix",
            "none",
            "-f",
            "{p} [{f}]",
        ])
        .args(args)
        .output()
        .expect("running cargo tree");
    assert!(
        output.status.success(),
        "cargo tree {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    parse(&String::from_utf8_lossy(&output.stdout))
}

#[test]
fn the_test_command_asks_for_the_features_the_binary_was_built_with() {
    let run = tree(&["-p", "codex-parity", "-e", "no-dev"]);
    let test = tree(&["--workspace", "--features", "codex-parity"]);
    assert!(run.len() > 100, "read only {} packages", run.len());
    assert!(run.contains_key("hyper v1.12.0") || run.keys().any(|k| k.starts_with("hyper v")));
    let found = differences(&run, &test);
    assert!(
        found.is_empty(),
        "the test command would rebuild these (add a dependency's features to unify/Cargo.toml, \
         the driver's to its default features):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_feature_only_the_tests_ask_for_is_named() {
    let run = parse(
        "memchr v2.8.3 [alloc,std]\ncodex-parity v0.1.0 (/x/driver) []\nserde_derive v1.0.0 (proc-macro) []\n",
    );
    let test = parse(
        "memchr v2.8.3 [alloc,default,std]\ncodex-parity v0.1.0 (/x/driver) [codex-parity]\n\
         serde_derive v1.0.0 (proc-macro) []\nwiremock v0.6.5 []\n",
    );
    assert_eq!(
        differences(&run, &test),
        [
            r#"codex-parity v0.1.0: the binary's build asks for {""}, the tests' for {"codex-parity"}"#,
            r#"memchr v2.8.3: the binary's build asks for {"alloc,std"}, the tests' for {"alloc,default,std"}"#
        ]
    );
}
