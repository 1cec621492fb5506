//! What `codex-parity run` prints: a progress line per finished scenario (with that
//! binary's count), then the matrix with totals per binary and, below it, the headline of
//! each failure's reason (its cause, see [`super::headline`]), each not-applicable reason
//! and each known drift, and a last
//! line in the form test runners end with (`total: 47 passed, 3 known drift, 0 failed,
//! 3 skipped`; known drift is as expected but not a pass, not applicable is skipped).

use std::collections::HashMap;
use std::fmt::Write;
use std::sync::Mutex;

use super::matrix::Matrix;
use crate::harness::outcome::Outcome;
use crate::harness::runner::Cell;
use crate::lock;

/// Above this many columns the headings drop the `codex-` of each label.
const MANY_COLUMNS: usize = 4;

/// Counts finished scenarios per binary: `codex-0.171.0 [3/17] pass streaming_deltas (0.6s)`.
#[derive(Debug)]
pub struct Progress {
    counts: Mutex<HashMap<String, (usize, usize)>>,
}

impl Progress {
    /// A counter for `planned` runs per label.
    pub fn new<'a>(planned: impl IntoIterator<Item = (&'a str, usize)>) -> Progress {
        let counts = planned
            .into_iter()
            .map(|(label, total)| (label.to_string(), (0, total)))
            .collect();
        Progress {
            counts: Mutex::new(counts),
        }
    }

    /// Counts one finished run and returns its progress line.
    pub fn line(&self, r: &Cell) -> String {
        let (done, total) = {
            let mut counts = lock(&self.counts);
            let c = counts.entry(r.label.clone()).or_insert((0, 0));
            c.0 += 1;
            *c
        };
        format!(
            "{} [{done}/{total}] {:<5} {} ({:.1}s)",
            r.label,
            r.outcome.word(),
            r.scenario,
            r.duration.as_secs_f64()
        )
    }
}

/// The matrix as text: scenarios down, binaries across, totals under the table, then one
/// line per failure (its reason's headline), not-applicable reason and known drift.
pub fn render(matrix: &Matrix) -> String {
    let mut out = String::new();
    let totals = matrix.total_rows();
    let width = matrix
        .rows
        .iter()
        .map(|r| r.name.len())
        .chain(totals.iter().map(|(name, _)| name.len()))
        .max()
        .unwrap_or(0);
    // Many columns (a sweep): headed by the version alone, to keep the table narrow.
    let heading = |label: &str| -> String {
        match label.strip_prefix("codex-") {
            Some(version) if matrix.columns.len() > MANY_COLUMNS => version.to_string(),
            _ => label.to_string(),
        }
    };
    let headings: Vec<String> = matrix.columns.iter().map(|c| heading(&c.label)).collect();
    let widths: Vec<usize> = headings.iter().map(|h| h.len().max(5)).collect();
    let _ = write!(out, "{:<width$}", "scenario");
    for (h, w) in headings.iter().zip(&widths) {
        let _ = write!(out, "  {h:<w$}");
    }
    out.push('\n');
    for (row, cells) in matrix.rows.iter().zip(matrix.grid()) {
        let _ = write!(out, "{:<width$}", row.name);
        for (cell, w) in cells.iter().zip(&widths) {
            let word = cell.map_or("-", |e| e.outcome.word());
            let _ = write!(out, "  {word:<w$}");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    for (name, counts) in totals {
        let _ = write!(out, "{name:<width$}");
        for (n, w) in counts.iter().zip(&widths) {
            let _ = write!(out, "  {n:<w$}");
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
    if let Some(shard) = matrix.shard {
        let _ = writeln!(
            out,
            "(shard {shard}: {} of {} cells; `codex-parity merge` joins the shards)",
            matrix.entries.len(),
            matrix.rows.len() * matrix.columns.len()
        );
    }
    let notes = notes(matrix);
    if !notes.is_empty() {
        out.push('\n');
        out.push_str(&notes);
    }
    write_total_line(&mut out, matrix);
    out
}

/// One line per failure (its reason's [`super::headline`]), not-applicable reason and drift
/// (known or contradicting).
fn notes(matrix: &Matrix) -> String {
    let mut notes = String::new();
    for e in &matrix.entries {
        let cell = format!("{}[{}]", e.scenario, e.codex);
        match &e.outcome {
            Outcome::Failed(reason) => {
                let _ = writeln!(notes, "FAIL  {cell}: {}", super::headline(reason));
            }
            Outcome::NotApplicable(reason) => {
                let _ = writeln!(notes, "n/a   {cell}: {reason}");
            }
            Outcome::Drift(known) => {
                for k in known {
                    let _ = writeln!(notes, "drift {cell}: {k}");
                }
            }
            Outcome::Contradicts(known) => {
                for k in known {
                    let _ = writeln!(notes, "CONTRA {cell}: {k}");
                }
            }
            Outcome::Passed => {}
        }
    }
    notes
}

/// The last line: how many cells passed, drifted (known or contradicting), failed or did not
/// apply.
fn write_total_line(out: &mut String, matrix: &Matrix) {
    let (mut passed, mut drift, mut contradicts, mut failed, mut skipped) = (0, 0, 0, 0, 0);
    for e in &matrix.entries {
        match e.outcome {
            Outcome::Passed => passed += 1,
            Outcome::Drift(_) => drift += 1,
            Outcome::Contradicts(_) => contradicts += 1,
            Outcome::Failed(_) => failed += 1,
            Outcome::NotApplicable(_) => skipped += 1,
        }
    }
    // Known drift is as expected (exit 0) but is not called a pass; drift that contradicts
    // a scenario's headline claim is counted on its own.
    let _ = writeln!(
        out,
        "\ntotal: {passed} passed, {drift} known drift, {contradicts} contradicting drift, {failed} failed, {skipped} skipped"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    #[test]
    fn renders_the_grid_totals_and_first_lines() {
        let text = render(&sample());
        let lines: Vec<&str> = text.lines().collect();
        let header: Vec<&str> = lines[0].split_whitespace().collect();
        assert_eq!(header, ["scenario", "codex-0.131.0", "codex-0.171.0"]);
        let row = |i: usize| lines[i].split_whitespace().collect::<Vec<_>>();
        assert_eq!(row(1), ["alpha", "pass", "FAIL"]);
        assert_eq!(row(2), ["beta", "n/a", "drift"]);
        assert_eq!(row(3), ["gamma", "-", "pass"]);
        // Cells line up under their headers.
        let col = lines[0].find("codex-0.171.0").unwrap();
        assert_eq!(lines[1].find("FAIL"), Some(col));
        assert!(lines[5].starts_with("drift (expected)"));
        assert_eq!(lines[5].rfind('1'), Some(col), "totals line up too");
        assert_eq!(row(4), ["passed", "1", "1"]);
        assert_eq!(row(6), ["contradicts", "claim", "0", "0"]);
        assert_eq!(row(7), ["failed", "0", "1"]);
        assert_eq!(row(9), ["no", "result", "1", "0"]);
        assert!(text.contains("FAIL  alpha[codex-0.171.0]: expected \"a\" <b> & 'c'\n"));
        assert!(
            !text.contains("second line"),
            "only the first line of a reason"
        );
        assert!(text.contains("n/a   beta[codex-0.131.0]: no thread/goal methods"));
        assert!(text.contains("drift beta[codex-0.171.0]: test.key = \"seen\": injects output (goal_objective) (as seen)"));
        assert!(
            text.ends_with(
                "\n\ntotal: 2 passed, 1 known drift, 0 contradicting drift, 1 failed, 1 skipped\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn contradicting_drift_is_its_own_word_and_count() {
        let mut m = sample();
        m.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "the goal stays active",
                true,
            )]);
        let text = render(&m);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[3].split_whitespace().collect::<Vec<_>>(),
            ["gamma", "-", "CONTRA"]
        );
        assert!(text.contains("CONTRA gamma[codex-0.171.0]: contradicts the claim: test.key = \"seen\": the goal stays active (as seen)\n"));
        assert!(
            text.contains("1 passed, 1 known drift, 1 contradicting drift,"),
            "{text}"
        );
    }

    #[test]
    fn progress_counts_per_binary() {
        let p = Progress::new([("codex-a", 2), ("codex-b", 1)]);
        let record = |label: &str| Cell {
            perf: Default::default(),
            golden: crate::harness::scenario::GoldenKinds::default(),
            scenario: "streaming_deltas",
            id: "A2",
            label: label.into(),
            outcome: Outcome::Passed,
            duration: std::time::Duration::from_millis(600),
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
        };
        assert_eq!(
            p.line(&record("codex-a")),
            "codex-a [1/2] pass  streaming_deltas (0.6s)"
        );
        assert_eq!(
            p.line(&record("codex-b")),
            "codex-b [1/1] pass  streaming_deltas (0.6s)"
        );
        assert_eq!(
            p.line(&record("codex-a")),
            "codex-a [2/2] pass  streaming_deltas (0.6s)"
        );
    }
}
