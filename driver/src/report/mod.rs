//! The results of a run, rendered: one [`Matrix`] model (scenarios × codex binaries) that
//! the terminal, `results.json`, `junit.xml`, `report.md` and `report.html` all show.
//!
//! `codex-parity run --report DIR` writes the four files with [`write_dir`];
//! `codex-parity merge` reads `results.json` files back with [`read_dir`] and joins them
//! with [`Matrix::merge`]. Files are written in (scenario, binary) order, so the same inputs
//! give the same files except for durations.

pub mod audit;
pub mod changes;
pub mod conformance;
pub mod coverage;
pub mod destination;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod matrix;
pub mod perf_table;
pub mod sections;
pub mod sinks;
pub mod terminal;
pub mod uses_coverage;

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::plan::events::Verdict;

pub use matrix::{Column, Entry, Matrix, Row, Totals};
pub use sections::{Item, Section};

/// Prints the matrix, writes the report files into `report_dir` when there is one (with
/// `drift` sections under the matrix); [`Verdict::Fail`] when a cell failed.
pub fn show(
    matrix: &Matrix,
    report_dir: Option<&Path>,
    drift: Vec<Section>,
) -> anyhow::Result<Verdict> {
    print!("\n{}", terminal::render(matrix));
    for c in coverage::coverage(matrix) {
        println!("{}", coverage::line(&c));
    }
    if let Some(dir) = report_dir {
        let mut sections = sections::standard(matrix);
        sections.extend(drift);
        sections.push(conformance::section(matrix));
        sections.push(coverage::section(matrix));
        write_dir(dir, matrix, &sections)?;
        eprintln!(
            "codex-parity: wrote {} into {}",
            FILES.join(", "),
            dir.display()
        );
    }
    Ok(if matrix.any_failed() {
        Verdict::Fail
    } else {
        Verdict::Pass
    })
}

/// The file names `write_dir` writes.
pub const FILES: [&str; 4] = ["results.json", "junit.xml", "report.md", "report.html"];

/// Writes `results.json`, `junit.xml`, `report.md` and `report.html` into `dir` (created if
/// needed); `sections` go under the matrix in the Markdown and HTML reports. Returns the
/// paths written.
pub fn write_dir(
    dir: &Path,
    matrix: &Matrix,
    sections: &[Section],
) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let texts = [
        json::render(matrix),
        junit::render(matrix),
        markdown::render(matrix, sections),
        html::render(matrix, sections),
    ];
    let mut written = Vec::new();
    for (name, text) in FILES.iter().zip(texts) {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Reads `DIR/results.json` (or the file itself when `path` is one).
pub fn read_dir(path: &Path) -> anyhow::Result<Matrix> {
    let file = if path.is_dir() {
        path.join(FILES[0])
    } else {
        path.to_path_buf()
    };
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    json::parse(&text).with_context(|| format!("reading {}", file.display()))
}

/// The one line a failure's reason is summed up by where there is room for one (the
/// terminal's notes, a JUnit message): its first line, and when that only announces a list
/// (`after-scenario checks failed:`), the list's first item with how many more, so the
/// cause is on the line and not only in `report.md`.
pub fn headline(reason: &str) -> String {
    let mut lines = reason.lines();
    let first = lines.next().unwrap_or("").trim_end();
    let Some(intro) = first.strip_suffix(':') else {
        return first.to_string();
    };
    let items: Vec<&str> = lines
        .map(|l| l.trim().trim_start_matches("- ").trim())
        .filter(|l| !l.is_empty())
        .collect();
    match items.as_slice() {
        [] => first.to_string(),
        [one] => format!("{intro}: {one}"),
        [one, rest @ ..] => format!("{intro}: {one} (and {} more)", rest.len()),
    }
}

/// Text without terminal escape sequences (the colours of a codex stderr tail): CSI
/// (`ESC [` … final byte), OSC (`ESC ]` … BEL or `ESC \`) and two-character `ESC x`
/// sequences are removed; a lone trailing `ESC` too.
pub fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        match chars.next() {
            // CSI: parameters and intermediates, then one final byte in @..~.
            Some('[') => {
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        break;
                    }
                }
            }
            // OSC: up to BEL or ESC \.
            Some(']') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' {
                        break;
                    }
                    if c == '\u{1b}' {
                        if chars.peek() == Some(&'\\') {
                            chars.next();
                        }
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Escapes text for XML and HTML, in element text and in quoted attributes: `&<>"'`, and
/// every character XML 1.0 forbids (most C0 controls) becomes U+FFFD. Terminal escape
/// sequences are removed first ([`strip_escapes`]). Newlines and tabs are kept.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in strip_escapes(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// [`escape`] for an XML attribute whose line breaks must survive (parsers turn a raw
/// newline in an attribute into a space).
pub fn escape_attr(text: &str) -> String {
    escape(text)
        .replace('\n', "&#10;")
        .replace('\r', "&#13;")
        .replace('\t', "&#9;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_forbidden_characters() {
        assert_eq!(
            escape("a<b>&\"c\"'d'"),
            "a&lt;b&gt;&amp;&quot;c&quot;&#39;d&#39;"
        );
        assert_eq!(escape("x\u{1b}[0m\u{0}\ty\n"), "x\u{fffd}\ty\n");
        assert_eq!(escape("\u{1b}[1;31mred\u{1b}[0m"), "red");
        assert_eq!(escape_attr("a\nb"), "a&#10;b");
    }

    #[test]
    fn a_reason_that_announces_a_list_is_summed_up_by_its_first_item() {
        let checks = "after-scenario checks failed:\n  - 10000 scripted response(s) never \
                      served\n  - the sidecar exited with Some(3), expected 0";
        assert_eq!(
            headline(checks),
            "after-scenario checks failed: 10000 scripted response(s) never served (and 1 more)"
        );
        assert_eq!(
            headline("after-scenario checks failed:\n  - one"),
            "after-scenario checks failed: one"
        );
        assert_eq!(headline("timed out\ndetails"), "timed out");
        assert_eq!(headline("ends with a colon:"), "ends with a colon:");
        assert_eq!(headline(""), "");
    }

    #[test]
    fn terminal_escapes_are_stripped() {
        assert_eq!(strip_escapes("\u{1b}[31mred\u{1b}[0m plain"), "red plain");
        assert_eq!(strip_escapes("a\u{1b}[2K\u{1b}[1Gb"), "ab");
        assert_eq!(strip_escapes("\u{1b}]0;title\u{7}text"), "text");
        assert_eq!(strip_escapes("\u{1b}]8;;http://x\u{1b}\\link"), "link");
        assert_eq!(strip_escapes("\u{1b}(Bx\u{1b}"), "Bx");
        assert_eq!(strip_escapes("no escapes: [31m"), "no escapes: [31m");
    }

    #[test]
    fn write_dir_writes_the_four_files_and_reads_results_back() {
        let dir = tempfile::tempdir().unwrap();
        let m = matrix::tests::sample();
        let out = dir.path().join("nested/report");
        let written = write_dir(&out, &m, &sections::standard(&m)).unwrap();
        assert_eq!(written.len(), 4);
        for name in FILES {
            assert!(out.join(name).is_file(), "{name}");
        }
        assert_eq!(read_dir(&out).unwrap(), m);
        assert_eq!(read_dir(&out.join("results.json")).unwrap(), m);
        let e = read_dir(dir.path()).unwrap_err();
        assert!(format!("{e:#}").contains("results.json"), "{e:#}");
    }
}
