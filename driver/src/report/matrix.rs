//! The result matrix every report renders: scenarios down, codex binaries across, one
//! outcome per cell; built from a run's records or read back from `results.json`, and
//! merged from the shards of a split run.

use std::collections::HashMap;
use std::time::Duration;

use anyhow::{bail, ensure};

use crate::codex::binaries::CodexBinary;
use crate::harness::conformance::Checked;
use crate::harness::coverage::{Exercised, Protocol};
use crate::harness::outcome::Drift;
use crate::harness::outcome::Outcome;
use crate::harness::perf::Perf;
use crate::harness::runner::Cell;
use crate::harness::scenario::Scenario;
use crate::harness::shard::Shard;

/// A row: one scenario.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Row {
    /// Scenario name (`smoke_uses_mock_responses`).
    pub name: String,
    /// Catalogue id (`A1`).
    pub id: String,
    /// What it proves, one line.
    pub summary: String,
}

/// A column: one codex binary.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Column {
    /// Its label (`codex-0.171.0`).
    pub label: String,
    /// The version it reports in `codex --version` (`0.171.0`).
    pub version: String,
    /// The methods its schema lists, that protocol coverage counts against (`None`: not
    /// known, e.g. a `results.json` written before coverage was kept).
    pub protocol: Option<Protocol>,
}

/// The result of one scenario on one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The row's scenario name.
    pub scenario: String,
    /// The column's label.
    pub codex: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took (the only field that differs between identical runs).
    pub duration: Duration,
    /// Facts the scenario recorded about this codex (not judged).
    pub observations: Vec<String>,
    /// What checking its transcripts against codex's own schema found (`None`: not
    /// checked).
    pub checked: Option<Checked>,
    /// The drift it reported before the baseline judged it: every key with the value codex
    /// showed (what `baselines audit` reads back from a sweep's results).
    pub drift: Vec<Drift>,
    /// Why it failed before the baseline judged its drift (`None`: it got to the end).
    pub failure: Option<String>,
    /// What its worlds exercised of the protocol (see [`crate::harness::coverage`]).
    pub exercised: Exercised,
    /// What it measured (performance scenarios, see [`crate::harness::perf`]).
    pub perf: Perf,
}

/// Counts of one column's outcomes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    /// Passed.
    pub passed: usize,
    /// Differed only as the version's baseline expects, in details.
    pub drift: usize,
    /// Differed as the version's baseline expects, and the drift contradicts the
    /// scenario's headline claim.
    pub contradicts: usize,
    /// Failed.
    pub failed: usize,
    /// Not applicable to the binary.
    pub not_applicable: usize,
    /// Cells without a result (another shard's, or a filtered run's).
    pub missing: usize,
}

/// Scenarios × binaries with the outcomes that exist, in row-then-column order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matrix {
    /// The share of the work these results are, if the run was split.
    pub shard: Option<Shard>,
    /// Rows, in registry order.
    pub rows: Vec<Row>,
    /// Columns, in the order the binaries were given.
    pub columns: Vec<Column>,
    /// The outcomes, ordered by (row, column); a cell may have none.
    pub entries: Vec<Entry>,
}

impl Matrix {
    /// The matrix of a run: every scenario and binary it planned (all of them, also in a
    /// shard), and the records it produced.
    pub fn from_run(
        scenarios: &[Scenario],
        binaries: &[CodexBinary],
        records: &[Cell],
        shard: Option<Shard>,
    ) -> Matrix {
        let rows = scenarios
            .iter()
            .map(|s| Row {
                name: s.name.to_string(),
                id: s.id.to_string(),
                summary: s.summary.to_string(),
            })
            .collect();
        let columns = binaries
            .iter()
            .map(|b| Column {
                label: b.label(),
                version: b.version.clone(),
                protocol: None,
            })
            .collect();
        let entries = records
            .iter()
            .map(|r| Entry {
                scenario: r.scenario.to_string(),
                codex: r.label.clone(),
                outcome: r.outcome.clone(),
                duration: r.duration,
                observations: r.observations.clone(),
                checked: r.checked.clone(),
                drift: r.drift.clone(),
                failure: r.failure.clone(),
                exercised: Exercised::of(&r.transcripts),
                perf: r.perf.clone(),
            })
            .collect();
        let mut matrix = Matrix {
            shard,
            rows,
            columns,
            entries,
        };
        matrix.sort();
        matrix
    }

    /// Gives the column `label` the methods its binary's schema lists (see
    /// [`Column::protocol`]); a label that is not a column is ignored.
    pub fn set_protocol(&mut self, label: &str, protocol: Protocol) {
        if let Some(column) = self.columns.iter_mut().find(|c| c.label == label) {
            column.protocol = Some(protocol);
        }
    }

    /// Orders the entries by (row, column); entries of unknown cells go last.
    pub fn sort(&mut self) {
        let row: HashMap<&str, usize> = index(self.rows.iter().map(|r| r.name.as_str()));
        let col: HashMap<&str, usize> = index(self.columns.iter().map(|c| c.label.as_str()));
        let key = |e: &Entry| {
            (
                row.get(e.scenario.as_str()).copied().unwrap_or(usize::MAX),
                col.get(e.codex.as_str()).copied().unwrap_or(usize::MAX),
            )
        };
        let mut keyed: Vec<((usize, usize), Entry)> =
            self.entries.drain(..).map(|e| (key(&e), e)).collect();
        keyed.sort_by_key(|(k, _)| *k);
        self.entries = keyed.into_iter().map(|(_, e)| e).collect();
    }

    /// The cells, `grid[row][column]`, `None` where there is no result.
    pub fn grid(&self) -> Vec<Vec<Option<&Entry>>> {
        let mut by_cell: HashMap<(&str, &str), &Entry> = HashMap::new();
        for e in &self.entries {
            by_cell.insert((e.scenario.as_str(), e.codex.as_str()), e);
        }
        self.rows
            .iter()
            .map(|r| {
                self.columns
                    .iter()
                    .map(|c| by_cell.get(&(r.name.as_str(), c.label.as_str())).copied())
                    .collect()
            })
            .collect()
    }

    /// The catalogue id of a scenario (empty when it is not a row).
    pub fn id_of(&self, scenario: &str) -> &str {
        self.rows
            .iter()
            .find(|r| r.name == scenario)
            .map_or("", |r| r.id.as_str())
    }

    /// The version of a label (empty when it is not a column).
    pub fn version_of(&self, label: &str) -> &str {
        self.columns
            .iter()
            .find(|c| c.label == label)
            .map_or("", |c| c.version.as_str())
    }

    /// The counts of one column.
    pub fn totals(&self, label: &str) -> Totals {
        let mut t = Totals {
            missing: self.rows.len(),
            ..Totals::default()
        };
        for e in self.entries.iter().filter(|e| e.codex == label) {
            t.missing = t.missing.saturating_sub(1);
            match e.outcome {
                Outcome::Passed => t.passed += 1,
                Outcome::Drift(_) => t.drift += 1,
                Outcome::Contradicts(_) => t.contradicts += 1,
                Outcome::Failed(_) => t.failed += 1,
                Outcome::NotApplicable(_) => t.not_applicable += 1,
            }
        }
        t
    }

    /// The totals rows under a matrix: a name and one count per column (`passed`,
    /// `drift (expected)`, `contradicts claim`, `failed`, `not applicable`, and `no result`
    /// when a cell has none).
    pub fn total_rows(&self) -> Vec<(&'static str, Vec<usize>)> {
        let totals: Vec<Totals> = self.columns.iter().map(|c| self.totals(&c.label)).collect();
        let row = |f: fn(&Totals) -> usize| totals.iter().map(f).collect::<Vec<usize>>();
        let mut rows = vec![
            ("passed", row(|t| t.passed)),
            ("drift (expected)", row(|t| t.drift)),
            ("contradicts claim", row(|t| t.contradicts)),
            ("failed", row(|t| t.failed)),
            ("not applicable", row(|t| t.not_applicable)),
        ];
        if totals.iter().any(|t| t.missing > 0) {
            rows.push(("no result", row(|t| t.missing)));
        }
        rows
    }

    /// Whether any scenario failed (the exit status 1 of `run` and `merge`).
    pub fn any_failed(&self) -> bool {
        self.entries
            .iter()
            .any(|e| matches!(e.outcome, Outcome::Failed(_)))
    }

    /// Joins the results of several runs into one matrix: rows and columns in the order
    /// first seen, every cell from the one part that has it. Fails when two parts have
    /// the same cell, when shards of different splits are mixed, or when the parts are
    /// shards of one split but not all of them (or of different plans).
    pub fn merge(parts: Vec<Matrix>) -> anyhow::Result<Matrix> {
        ensure!(!parts.is_empty(), "nothing to merge");
        check_shards(&parts)?;
        let mut merged = Matrix {
            shard: None,
            rows: Vec::new(),
            columns: Vec::new(),
            entries: Vec::new(),
        };
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        for (n, part) in parts.into_iter().enumerate() {
            for row in part.rows {
                match merged.rows.iter().find(|r| r.name == row.name) {
                    Some(known) if known.id != row.id => bail!(
                        "scenario {} has id {} in one part and {} in another",
                        row.name,
                        known.id,
                        row.id
                    ),
                    Some(_) => {}
                    None => merged.rows.push(row),
                }
            }
            for column in part.columns {
                match merged.columns.iter_mut().find(|c| c.label == column.label) {
                    Some(known) if known.version != column.version => bail!(
                        "{} is version {} in one part and {} in another",
                        column.label,
                        known.version,
                        column.version
                    ),
                    Some(known) => match (&known.protocol, column.protocol) {
                        (Some(a), Some(b)) if *a != b => bail!(
                            "{}'s schema lists other methods in one part than in another: \
                             two different binaries of one version?",
                            column.label
                        ),
                        (None, Some(b)) => known.protocol = Some(b),
                        _ => {}
                    },
                    None => merged.columns.push(column),
                }
            }
            for entry in part.entries {
                let cell = (entry.scenario.clone(), entry.codex.clone());
                if let Some(first) = seen.insert(cell, n) {
                    bail!(
                        "{}[{}] has a result in part {} and in part {}: each cell must come from one run",
                        entry.scenario,
                        entry.codex,
                        first + 1,
                        n + 1
                    );
                }
                merged.entries.push(entry);
            }
        }
        merged.sort();
        Ok(merged)
    }
}

/// Shards must come as a complete set of one split with one plan; unsplit parts mix freely.
fn check_shards(parts: &[Matrix]) -> anyhow::Result<()> {
    let shards: Vec<(usize, Shard)> = parts
        .iter()
        .enumerate()
        .filter_map(|(i, p)| p.shard.map(|s| (i, s)))
        .collect();
    let Some(&(first, one)) = shards.first() else {
        return Ok(());
    };
    ensure!(
        shards.len() == parts.len(),
        "part {} is shard {one} of a split run, but other parts are not shards",
        first + 1
    );
    let mut have = vec![false; one.count as usize];
    for &(i, s) in &shards {
        ensure!(
            s.count == one.count,
            "part {} is shard {s} but part {} is shard {one}: shards of different splits",
            i + 1,
            first + 1
        );
        let slot = &mut have[(s.index - 1) as usize];
        ensure!(!*slot, "shard {s} is given twice");
        *slot = true;
        let (a, b) = (&parts[first], &parts[i]);
        ensure!(
            sorted(&a.rows) == sorted(&b.rows) && sorted(&a.columns) == sorted(&b.columns),
            "shard {s} planned other scenarios or binaries than shard {one} (different --filter or binaries?)"
        );
    }
    let missing: Vec<String> = have
        .iter()
        .enumerate()
        .filter(|(_, h)| !**h)
        .map(|(k, _)| format!("{}/{}", k + 1, one.count))
        .collect();
    ensure!(
        missing.is_empty(),
        "shard(s) {} missing: merge needs the results of every shard",
        missing.join(", ")
    );
    Ok(())
}

/// The items in a fixed order, to compare plans whose order differs.
fn sorted<T: Ord + Clone>(items: &[T]) -> Vec<T> {
    let mut items = items.to_vec();
    items.sort();
    items
}

fn index<'a>(names: impl Iterator<Item = &'a str>) -> HashMap<&'a str, usize> {
    let mut map = HashMap::new();
    for (i, n) in names.enumerate() {
        map.entry(n).or_insert(i);
    }
    map
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A small matrix with one cell of every kind and one without a result.
    pub(crate) fn sample() -> Matrix {
        let row = |name: &str, id: &str| Row {
            name: name.into(),
            id: id.into(),
            summary: format!("what {name} proves"),
        };
        // The newest column knows its schema's lists; the oldest is as an older file has it.
        let col = |v: &str| Column {
            label: format!("codex-{v}"),
            version: v.into(),
            protocol: (v == "0.171.0").then(sample_protocol),
        };
        let entry = |s: &str, v: &str, outcome: Outcome, ms: u64| Entry {
            scenario: s.into(),
            codex: format!("codex-{v}"),
            outcome,
            duration: Duration::from_millis(ms),
            observations: Vec::new(),
            // A schema check on the first rows, so results.json carries one both ways.
            checked: (s == "alpha").then(|| Checked {
                validated: 5,
                unknown: 1,
                drift: vec![crate::harness::outcome::Drift::new(
                    "schema.unknown_method",
                    serde_json::json!({"method": "x/y"}),
                    "x/y is not in the schema",
                )],
                ..Checked::default()
            }),
            // Raw drift on a drifting row, so results.json carries it both ways.
            drift: if s == "beta" {
                vec![crate::harness::outcome::Drift::new(
                    "turn.status",
                    serde_json::json!("failed"),
                    "the turn failed",
                )]
            } else {
                Vec::new()
            },
            failure: (s == "gamma").then(|| "timed out".to_string()),
            exercised: sample_exercised(s, v),
            perf: Default::default(),
        };
        Matrix {
            shard: None,
            rows: vec![row("alpha", "A1"), row("beta", "E16"), row("gamma", "B2")],
            columns: vec![col("0.131.0"), col("0.171.0")],
            entries: vec![
                entry("alpha", "0.131.0", Outcome::Passed, 1200),
                entry(
                    "alpha",
                    "0.171.0",
                    Outcome::Failed("expected \"a\" <b> & 'c'\nsecond line".into()),
                    2345,
                ),
                entry(
                    "beta",
                    "0.131.0",
                    Outcome::NotApplicable("no thread/goal methods".into()),
                    3,
                ),
                entry(
                    "beta",
                    "0.171.0",
                    Outcome::Drift(vec![crate::harness::outcome::KnownDrift::with_reason(
                        "injects output (goal_objective)",
                        false,
                    )]),
                    900,
                ),
                entry("gamma", "0.171.0", Outcome::Passed, 10),
            ],
        }
    }

    /// The lists of the sample's newest column.
    pub(crate) fn sample_protocol() -> Protocol {
        let set = |names: &[&str]| names.iter().map(|m| m.to_string()).collect();
        let listed = |stable: &[&str], experimental: &[&str]| crate::harness::coverage::Listed {
            stable: set(stable),
            experimental: set(experimental),
        };
        Protocol {
            requests: listed(
                &["initialize", "thread/start", "turn/start"],
                &["thread/goal/set"],
            ),
            notifications: listed(&["turn/started", "turn/completed"], &[]),
            server_requests: listed(&["item/tool/call"], &[]),
        }
    }

    /// What the sample's cells exercised: on 0.171.0 `alpha` answered `initialize`, got an
    /// error for `thread/start` and for the unlisted `x/y`, `gamma` the experimental
    /// `thread/goal/set` and a server request; on 0.131.0 `alpha` one request.
    pub(crate) fn sample_exercised(scenario: &str, version: &str) -> Exercised {
        use crate::app_server::transcript::{Sent, SentKind};
        let sent = |kind, method: &str| Sent::new(kind, method, serde_json::json!({}));
        let mut e = Exercised::default();
        match (scenario, version) {
            ("alpha", "0.171.0") => e.add_connection(
                &["initialize".into(), "thread/start".into(), "x/y".into()],
                &[
                    sent(SentKind::Response, "initialize"),
                    sent(SentKind::Error, "thread/start"),
                    sent(SentKind::Error, "x/y"),
                    sent(SentKind::Notification, "turn/started"),
                ],
            ),
            ("gamma", "0.171.0") => e.add_connection(
                &["initialize".into(), "thread/goal/set".into()],
                &[
                    sent(SentKind::Response, "initialize"),
                    sent(SentKind::Response, "thread/goal/set"),
                    sent(SentKind::Request, "item/tool/call"),
                ],
            ),
            ("alpha", "0.131.0") => e.add_connection(
                &["initialize".into()],
                &[sent(SentKind::Response, "initialize")],
            ),
            _ => {}
        }
        e
    }

    #[test]
    fn grid_and_totals() {
        let m = sample();
        let grid = m.grid();
        assert_eq!(grid.len(), 3);
        assert!(grid.iter().all(|r| r.len() == 2));
        assert!(grid[2][0].is_none());
        assert_eq!(grid[1][1].map(|e| e.outcome.word()), Some("drift"));
        assert_eq!(
            m.totals("codex-0.131.0"),
            Totals {
                passed: 1,
                not_applicable: 1,
                missing: 1,
                ..Totals::default()
            }
        );
        assert_eq!(
            m.totals("codex-0.171.0"),
            Totals {
                passed: 1,
                drift: 1,
                failed: 1,
                ..Totals::default()
            }
        );
        assert!(m.any_failed());
        assert_eq!(m.id_of("beta"), "E16");
        assert_eq!(m.version_of("codex-0.171.0"), "0.171.0");
    }

    /// Splits `m` into `count` shards the way `run --shard` does.
    fn split(m: &Matrix, count: u32) -> Vec<Matrix> {
        (1..=count)
            .map(|index| {
                let shard = Shard { index, count };
                Matrix {
                    shard: Some(shard),
                    entries: m
                        .entries
                        .iter()
                        .filter(|e| shard.contains(&e.scenario, &e.codex))
                        .cloned()
                        .collect(),
                    ..m.clone()
                }
            })
            .collect()
    }

    #[test]
    fn merging_every_shard_gives_the_whole_matrix_in_any_order() {
        let whole = sample();
        for count in 1..=4 {
            let mut parts = split(&whole, count);
            parts.reverse();
            assert_eq!(Matrix::merge(parts).unwrap(), whole, "{count} shards");
        }
    }

    #[test]
    fn merging_runs_of_different_binaries_joins_columns() {
        let whole = sample();
        let only = |label: &str| Matrix {
            columns: whole
                .columns
                .iter()
                .filter(|c| c.label == label)
                .cloned()
                .collect(),
            entries: whole
                .entries
                .iter()
                .filter(|e| e.codex == label)
                .cloned()
                .collect(),
            ..whole.clone()
        };
        let merged = Matrix::merge(vec![only("codex-0.131.0"), only("codex-0.171.0")]).unwrap();
        assert_eq!(merged, whole);
    }

    #[test]
    fn merge_rejects_missing_shards_duplicates_and_mixed_splits() {
        let whole = sample();
        let err = |parts: Vec<Matrix>| format!("{:#}", Matrix::merge(parts).unwrap_err());
        let mut parts = split(&whole, 3);
        parts.remove(1);
        assert!(err(parts).contains("shard(s) 2/3 missing"));
        let parts = split(&whole, 2);
        assert!(
            err(vec![parts[0].clone(), parts[0].clone(), parts[1].clone()]).contains("given twice")
        );
        let mut mixed = split(&whole, 2);
        mixed.push(split(&whole, 3).remove(0));
        assert!(err(mixed).contains("different splits"));
        assert!(
            err(vec![whole.clone(), whole.clone()])
                .contains("has a result in part 1 and in part 2")
        );
        let mut other_plan = split(&whole, 2);
        other_plan[1].rows.pop();
        assert!(err(other_plan).contains("planned other scenarios"));
        // Binaries listed in another order on one machine are the same plan.
        let mut reordered = split(&whole, 2);
        reordered[1].columns.reverse();
        assert_eq!(Matrix::merge(reordered).unwrap(), whole);
        assert!(err(vec![]).contains("nothing to merge"));
    }
}
