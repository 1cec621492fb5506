//! `results.json`: the matrix as data, one record per scenario and codex binary, and the
//! file `codex-parity merge` reads back.
//!
//! ```json
//! {
//!   "format": 3,
//!   "shard": {"index": 1, "count": 2},
//!   "codex": [{"label": "codex-0.171.0", "version": "0.171.0"}],
//!   "scenarios": [{"name": "smoke_uses_mock_responses", "id": "A1", "summary": "..."}],
//!   "results": [
//!     {"scenario": "smoke_uses_mock_responses", "id": "A1", "codex": "codex-0.171.0",
//!      "codex_version": "0.171.0", "status": "passed", "duration_ms": 734}
//!   ],
//!   "coverage": [{"codex": "codex-0.171.0", "version": "0.171.0", "scenarios": 88,
//!     "client_requests": {"stable": {"listed": 110, "exercised": ["initialize", …],
//!       "never": […]}, "experimental": {…}, "answered_with_error": […]},
//!     "notifications": {…}, "server_requests": {…}}]
//! }
//! ```
//!
//! `status` is `passed`, `drift` (with `known`: what differs as the baseline expects, each
//! as its drift, the number of `more` like it and the entry's `reason`, `versions` and
//! `contradicts`), `contradicts` (listed drift that contradicts the scenario's headline
//! claim, with `known`),
//! `failed` or `not_applicable` (with `reason`); `observations` lists facts the scenario recorded
//! about that codex (which edit path it took, a skipped golden comparison); `schema` what
//! checking its transcripts against codex's own schema found (counts and drift); `drift`
//! every divergence the scenario reported (`key`, `observed`, `message`) before the
//! baseline judged it, and `failure` why it failed on its own (before any baseline), so a
//! sweep's results say what each release did whatever the baselines then said
//! (`codex-parity baselines audit` reads them and judges again); `exercised` the client
//! requests (each with `result`, `error` or `unanswered`), notifications, server requests
//! and exec events its worlds exercised; `perf` what a performance scenario (group P)
//! measured: each operation's `measurements` (the medians of both sides, `candidate` and
//! `baseline` (the reference), their `ratio` and the scenario's `budget`) and the `growth`
//! exponents from the smaller home to the larger (see `crate::harness::perf`). `coverage` holds,
//! per binary, those exercised by
//! any scenario out of the methods its schema lists (see [`crate::report::coverage`]);
//! reading a file back takes the lists from it and counts again from the records, so a
//! merge counts every shard's scenarios. `codex` and
//! `scenarios` list the whole plan, also in a shard, whose `results` hold only its own cells.
//! Records are ordered by
//! (scenario, binary); durations are the only values that change between identical runs.

use std::time::Duration;

use anyhow::{Context, ensure};
use serde::{Deserialize, Serialize};

use super::coverage::{self, Coverage};
use super::matrix::{Column, Entry, Matrix, Row};
use crate::harness::conformance::Checked;
use crate::harness::coverage::{Exercised, Protocol};
use crate::harness::outcome::Drift;
use crate::harness::outcome::{KnownDrift, Outcome, OutcomeKind};
use crate::harness::perf::Perf;
use crate::harness::shard::Shard;

/// The version of the file's shape: 3 added `coverage` and each record's `exercised`.
pub const FORMAT: u32 = 3;

/// The older shapes this reader still reads (2: without coverage).
const READS: [u32; 2] = [2, FORMAT];

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    format: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    shard: Option<Shard>,
    codex: Vec<ColumnJson>,
    scenarios: Vec<RowJson>,
    results: Vec<ResultJson>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    coverage: Vec<Coverage>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ColumnJson {
    label: String,
    version: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowJson {
    name: String,
    id: String,
    summary: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct ResultJson {
    scenario: String,
    id: String,
    codex: String,
    codex_version: String,
    status: OutcomeKind,
    duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    known: Vec<KnownDrift>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    observations: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    schema: Option<Checked>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    drift: Vec<Drift>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    failure: Option<String>,
    #[serde(default, skip_serializing_if = "Exercised::is_empty")]
    exercised: Exercised,
    #[serde(default, skip_serializing_if = "Perf::is_empty")]
    perf: Perf,
}

/// The matrix as `results.json` text (pretty, with a final newline).
pub fn render(matrix: &Matrix) -> String {
    let file = File {
        format: FORMAT,
        shard: matrix.shard,
        codex: matrix
            .columns
            .iter()
            .map(|c| ColumnJson {
                label: c.label.clone(),
                version: c.version.clone(),
            })
            .collect(),
        scenarios: matrix
            .rows
            .iter()
            .map(|r| RowJson {
                name: r.name.clone(),
                id: r.id.clone(),
                summary: r.summary.clone(),
            })
            .collect(),
        results: matrix.entries.iter().map(|e| record(matrix, e)).collect(),
        coverage: coverage::coverage(matrix),
    };
    // Plain data with string keys: serializing cannot fail.
    let mut text = serde_json::to_string_pretty(&file).unwrap_or_default();
    text.push('\n');
    text
}

fn record(matrix: &Matrix, e: &Entry) -> ResultJson {
    let status = e.outcome.kind();
    let reason = match &e.outcome {
        Outcome::Failed(r) | Outcome::NotApplicable(r) => Some(r.clone()),
        _ => None,
    };
    // Text for readers, not terminals: no colour codes from a codex stderr tail.
    let clean = |lines: Vec<String>| lines.iter().map(|l| super::strip_escapes(l)).collect();
    let reason = reason.map(|r| super::strip_escapes(&r));
    ResultJson {
        scenario: e.scenario.clone(),
        id: matrix.id_of(&e.scenario).to_string(),
        codex: e.codex.clone(),
        codex_version: matrix.version_of(&e.codex).to_string(),
        status,
        duration_ms: u64::try_from(e.duration.as_millis()).unwrap_or(u64::MAX),
        reason,
        known: e.outcome.known().to_vec(),
        observations: clean(e.observations.clone()),
        schema: e.checked.clone(),
        drift: e.drift.clone(),
        failure: e.failure.as_deref().map(super::strip_escapes),
        exercised: e.exercised.clone(),
        perf: e.perf.clone(),
    }
}

/// Reads `results.json` text back into a matrix. Every record must name a listed
/// scenario and binary.
pub fn parse(text: &str) -> anyhow::Result<Matrix> {
    let file: File = serde_json::from_str(text).context("not a codex-parity results.json")?;
    ensure!(
        READS.contains(&file.format),
        "results.json format {} is not {FORMAT}: written by another codex-parity version",
        file.format
    );
    let matrix = Matrix {
        shard: file.shard,
        rows: file
            .scenarios
            .into_iter()
            .map(|r| Row {
                name: r.name,
                id: r.id,
                summary: r.summary,
            })
            .collect(),
        columns: file
            .codex
            .into_iter()
            .map(|c| Column {
                label: c.label,
                version: c.version,
                protocol: None,
            })
            .collect(),
        entries: Vec::new(),
    };
    let mut matrix = matrix;
    for c in &file.coverage {
        let lists = c.kinds().map(|(name, k)| {
            for split in [&k.stable, &k.experimental] {
                ensure!(
                    split.listed == split.exercised.len() + split.never.len(),
                    "coverage of {}: {name} lists {} method(s) but names {}",
                    c.codex,
                    split.listed,
                    split.exercised.len() + split.never.len()
                );
            }
            Ok(k.listed())
        });
        let [requests, notifications, server_requests] = lists;
        ensure!(
            matrix.columns.iter().any(|col| col.label == c.codex),
            "coverage of {} which is not among the codex binaries",
            c.codex
        );
        let protocol = Protocol {
            requests: requests?,
            notifications: notifications?,
            server_requests: server_requests?,
        };
        matrix.set_protocol(&c.codex, protocol);
    }
    let mut entries = Vec::new();
    for r in file.results {
        ensure!(
            matrix.rows.iter().any(|row| row.name == r.scenario),
            "result for {} which is not among the scenarios",
            r.scenario
        );
        ensure!(
            matrix.columns.iter().any(|c| c.label == r.codex),
            "result for {} which is not among the codex binaries",
            r.codex
        );
        let reason = || r.reason.clone().unwrap_or_default();
        let outcome = match r.status {
            OutcomeKind::Passed => Outcome::Passed,
            OutcomeKind::Drift => Outcome::Drift(r.known.clone()),
            OutcomeKind::Contradicts => Outcome::Contradicts(r.known.clone()),
            OutcomeKind::Failed => Outcome::Failed(reason()),
            OutcomeKind::NotApplicable => Outcome::NotApplicable(reason()),
        };
        entries.push(Entry {
            scenario: r.scenario,
            codex: r.codex,
            outcome,
            duration: Duration::from_millis(r.duration_ms),
            observations: r.observations,
            checked: r.schema,
            drift: r.drift,
            failure: r.failure,
            exercised: r.exercised,
            perf: r.perf,
        });
    }
    let mut matrix = Matrix { entries, ..matrix };
    matrix.sort();
    Ok(matrix)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    #[test]
    fn round_trips() {
        let mut m = sample();
        assert_eq!(parse(&render(&m)).unwrap(), m);
        m.shard = Some(Shard { index: 2, count: 3 });
        assert_eq!(parse(&render(&m)).unwrap(), m);
    }

    #[test]
    fn records_carry_status_reason_notes_and_version() {
        let v: serde_json::Value = serde_json::from_str(&render(&sample())).unwrap();
        let results = v["results"].as_array().unwrap();
        assert_eq!(results.len(), 5);
        assert_eq!(results[0]["status"], "passed");
        assert_eq!(results[0]["codex_version"], "0.131.0");
        assert_eq!(results[0]["duration_ms"], 1200);
        assert!(results[0].get("reason").is_none());
        assert_eq!(results[1]["status"], "failed");
        assert!(
            results[1]["reason"]
                .as_str()
                .unwrap()
                .contains("second line")
        );
        assert_eq!(results[2]["status"], "not_applicable");
        assert_eq!(results[2]["id"], "E16");
        assert_eq!(results[3]["status"], "drift");
        let mut contra = sample();
        contra.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "stays active",
                true,
            )]);
        let text = render(&contra);
        assert!(text.contains("\"status\": \"contradicts\""), "{text}");
        assert_eq!(parse(&text).unwrap(), contra, "merge reads it back");
        assert_eq!(
            results[3]["known"][0]["reason"],
            "injects output (goal_objective)"
        );
        assert_eq!(results[3]["known"][0]["drift"]["key"], "test.key");
        assert!(v.get("shard").is_none());
    }

    #[test]
    fn rejects_foreign_files_and_unknown_cells() {
        assert!(parse("{}").is_err());
        let text = render(&sample()).replace("\"format\": 3", "\"format\": 9");
        assert!(format!("{:#}", parse(&text).unwrap_err()).contains("format 9"));
        let text =
            render(&sample()).replace("\"codex\": \"codex-0.131.0\"", "\"codex\": \"codex-9\"");
        assert!(format!("{:#}", parse(&text).unwrap_err()).contains("codex-9"));
    }
}
