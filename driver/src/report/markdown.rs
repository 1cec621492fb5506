//! `report.md`: the matrix as a Markdown table (scenarios down, binaries across, totals
//! at the bottom), then the report's sections as lists, for pull requests and CI summaries.

use std::fmt::Write;

use super::matrix::Matrix;
use super::sections::Section;

/// The matrix and sections as Markdown.
pub fn render(matrix: &Matrix, sections: &[Section]) -> String {
    let mut out = String::from("# codex-parity results\n\n");
    if let Some(shard) = matrix.shard {
        let _ = writeln!(
            out,
            "Shard {shard}: {} of {} cells; `codex-parity merge` joins the shards.\n",
            matrix.entries.len(),
            matrix.rows.len() * matrix.columns.len()
        );
    }
    out.push_str("| scenario | id |");
    for c in &matrix.columns {
        let _ = write!(out, " {} |", cell(&c.label));
    }
    out.push_str("\n|---|---|");
    out.push_str(&"---|".repeat(matrix.columns.len()));
    out.push('\n');
    for (row, cells) in matrix.rows.iter().zip(matrix.grid()) {
        let _ = write!(out, "| {} | {} |", cell(&row.name), cell(&row.id));
        for c in cells {
            let word = c.map_or("–", |e| e.outcome.word());
            let _ = write!(out, " {} |", if word == "FAIL" { "**FAIL**" } else { word });
        }
        out.push('\n');
    }
    for (name, counts) in matrix.total_rows() {
        let _ = write!(out, "| *{name}* | |");
        for n in counts {
            let _ = write!(out, " {n} |");
        }
        out.push('\n');
    }
    for s in sections {
        let _ = write!(out, "\n## {}\n\n{}\n\n", s.title, s.intro);
        if s.items.is_empty() {
            out.push_str("None.\n");
        }
        for item in &s.items {
            let mut lines = item.text.lines();
            let first = lines.next().unwrap_or("");
            let _ = writeln!(out, "- **{}**: {}", inline(&item.title), inline(first));
            let rest: Vec<&str> = lines.collect();
            if !rest.is_empty() {
                out.push_str("\n  ```text\n");
                for l in rest {
                    let _ = writeln!(out, "  {}", printable(l).replace("```", "'''"));
                }
                out.push_str("  ```\n");
            }
        }
    }
    out
}

/// Text for a table cell: pipes escaped, line breaks flattened.
fn cell(text: &str) -> String {
    inline(text).replace('|', "\\|")
}

/// Text on one line, with HTML-significant characters escaped so it shows as written.
fn inline(text: &str) -> String {
    printable(&text.replace('\r', "").replace('\n', " "))
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Without terminal escape sequences (an ANSI colour code from codex's stderr, say), and
/// other control characters as U+FFFD.
fn printable(text: &str) -> String {
    super::strip_escapes(text)
        .chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::outcome::Outcome;
    use crate::report::matrix::tests::sample;
    use crate::report::sections::standard;

    #[test]
    fn renders_a_table_with_one_row_per_scenario_and_totals() {
        let m = sample();
        let md = render(&m, &standard(&m));
        let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(
            table[0],
            "| scenario | id | codex-0.131.0 | codex-0.171.0 |"
        );
        assert_eq!(table[1], "|---|---|---|---|");
        assert_eq!(table[2], "| alpha | A1 | pass | **FAIL** |");
        assert_eq!(table[3], "| beta | E16 | n/a | drift |");
        assert_eq!(table[4], "| gamma | B2 | – | pass |");
        assert_eq!(table[5], "| *passed* | | 1 | 1 |");
        assert!(table.contains(&"| *no result* | | 1 | 0 |"));
        // Every table line has the same number of cells.
        let pipes = table[0].matches('|').count();
        assert!(table.iter().all(|l| l.matches('|').count() == pipes));
        assert!(md.contains("\n## Failures\n"));
        assert!(md.contains(
            "- **alpha (A1) on codex-0.171.0**: expected \"a\" &lt;b&gt; &amp; 'c'\n\n  ```text\n  second line\n  ```\n\n## Drift that contradicts the claim"
        ));
        assert!(md.contains("- **beta (E16) on codex-0.131.0**: no thread/goal methods"));
    }

    #[test]
    fn empty_sections_say_none() {
        let mut m = sample();
        m.entries.retain(|e| e.outcome.word() == "pass");
        let md = render(&m, &standard(&m));
        assert!(md.contains("## Failures\n\nScenarios that did not behave"));
        assert_eq!(md.matches("None.\n").count(), 5);
    }

    #[test]
    fn contradicting_drift_has_its_word_and_total() {
        let mut m = sample();
        m.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "the goal stays active",
                true,
            )]);
        let md = render(&m, &standard(&m));
        assert!(md.contains("| gamma | B2 | – | CONTRA |"), "{md}");
        assert!(md.contains("| *contradicts claim* | | 0 | 1 |"), "{md}");
        assert!(md.contains("- **gamma (B2) on codex-0.171.0**: contradicts the claim: test.key = \"seen\": the goal stays active (as seen)"));
    }
}
