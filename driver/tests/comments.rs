//! Comments and docs are wrapped at one width, [`WIDTH`] columns, in both crates (rustfmt
//! wraps code, not comments, on stable). Verbatim lines (indented examples in `--help`
//! texts), table rows and lines holding a URL are exempt.

use std::path::{Path, PathBuf};

/// The width comments are wrapped at, the same as rustfmt's for code.
const WIDTH: usize = 100;

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The comment lines of `text` wider than [`WIDTH`], as `line: text`.
fn too_wide(text: &str) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| line.chars().count() > WIDTH)
        .filter_map(|(n, line)| {
            let trimmed = line.trim_start();
            let body = ["//!", "///", "//"]
                .iter()
                .find_map(|mark| trimmed.strip_prefix(mark))?;
            let verbatim = body.starts_with("   ") || body.trim_start().starts_with('|');
            (!verbatim && !body.contains("://")).then(|| format!("{}: {line}", n + 1))
        })
        .collect()
}

#[test]
fn comments_fit_the_width() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in [
        "engine/src",
        "catalogue/src",
        "driver/src",
        "driver/tests",
        "sidecar/src",
        "sidecar/tests",
        "sidecar/benches",
    ] {
        rust_files(&root.join(dir), &mut files);
    }
    assert!(files.len() > 50, "found only {} files", files.len());
    let mut problems = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for line in too_wide(&text) {
            problems.push(format!("{}:{line}", file.display()));
        }
    }
    assert!(
        problems.is_empty(),
        "comment lines over {WIDTH} columns (rewrap them):\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_check_sees_wide_comments_and_spares_verbatim_lines() {
    let wide = "x".repeat(WIDTH);
    let text = format!(
        "/// {wide}\nlet s = \"{wide}\";\n    ///   verbatim {wide}\n// | table | {wide}\n// see https://example.org/{wide}\n//! ok\n"
    );
    assert_eq!(too_wide(&text), [format!("1: /// {wide}")]);
}
