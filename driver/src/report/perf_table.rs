//! The performance table of a sweep (`docs/performance-releases.md`): what group P measured on each
//! release, as each release's ratio to the reference measured in the same run, per metric;
//! the growth exponents; and, per measurement and metric, the largest step between two
//! consecutive releases. A step is the ratio of the two releases' ratios: both were held
//! against the same reference on the same machine, so the quotient compares the two
//! releases even though they ran minutes apart.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::codex::versions;
use crate::harness::perf::{Measurement, Metric, ratio};
use crate::report::Matrix;

/// One measurement of one release: the scenario's id and the measurement.
type Cell<'a> = (&'a str, &'a Measurement);

/// A measurement's column key: `P4 10000` (the id, with the size where a scenario measures
/// several), and the label of its legend.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Key {
    order: usize,
    short: String,
    label: String,
}

/// The largest step of one measurement and metric between consecutive releases.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The measurement's column (`P4 10000`).
    pub column: String,
    /// What it measures (`thread/list all pages (10000 threads, legacy)`).
    pub label: String,
    /// The metric.
    pub metric: Metric,
    /// The earlier release.
    pub from: String,
    /// The later release.
    pub to: String,
    /// The later release's ratio over the earlier's.
    pub step: f64,
}

/// The releases of `matrix` in version order, each with its measurements.
fn releases(matrix: &Matrix) -> Vec<(String, Vec<Cell<'_>>)> {
    let mut columns: Vec<_> = matrix.columns.iter().collect();
    columns.sort_by_key(|c| versions::sort_key(&c.version));
    columns
        .into_iter()
        .map(|c| {
            let cells = matrix
                .entries
                .iter()
                .filter(|e| e.codex == c.label)
                .flat_map(|e| {
                    let id = matrix.id_of(&e.scenario);
                    e.perf.measurements.iter().map(move |m| (id, m))
                })
                .collect();
            (c.version.clone(), cells)
        })
        .collect()
}

/// Every measurement's key, in catalogue order (scenario, then size).
fn keys(matrix: &Matrix, releases: &[(String, Vec<Cell<'_>>)]) -> Vec<Key> {
    let order = |id: &str| matrix.rows.iter().position(|r| r.id == id).unwrap_or(0);
    let sized = sized_ids(releases);
    let mut keys: Vec<Key> = Vec::new();
    for (_, cells) in releases {
        for (id, m) in cells {
            let short = key_of(id, m, sized.iter().any(|s| s == id));
            if !keys.iter().any(|k| k.short == short) {
                keys.push(Key {
                    order: order(id) * 1000 + keys.len(),
                    short,
                    label: m.label(),
                });
            }
        }
    }
    keys.sort();
    keys
}

fn key_of(id: &str, m: &Measurement, sized: bool) -> String {
    if sized {
        format!("{id} {}", m.size)
    } else {
        id.to_string()
    }
}

/// The value of `key` in a release's cells, with whether it was over budget.
fn find<'a>(
    cells: &[Cell<'a>],
    key: &Key,
    sized: impl Fn(&str) -> bool,
) -> Option<&'a Measurement> {
    cells
        .iter()
        .find(|(id, m)| key_of(id, m, sized(id)) == key.short)
        .map(|(_, m)| *m)
}

/// The largest step per measurement and metric between consecutive releases that both
/// measured it, largest first; a step whose medians differ by no more than the metric's
/// [`Metric::step_floor`] is not counted.
pub fn steps(matrix: &Matrix) -> Vec<Step> {
    let releases = releases(matrix);
    let keys = keys(matrix, &releases);
    let sized = sized_ids(&releases);
    let mut out = Vec::new();
    for key in &keys {
        for metric in Metric::ALL {
            let mut best: Option<Step> = None;
            let mut last: Option<(&str, f64, f64)> = None;
            for (version, cells) in &releases {
                let Some(m) = find(cells, key, |id| sized.iter().any(|s| s == id)) else {
                    continue;
                };
                let (r, value) = (m.ratio.get(metric), m.candidate.get(metric));
                if let Some((from, previous, before)) = last {
                    let step = ratio(r, previous);
                    // A step of a few clock ticks is noise, however large its ratio.
                    let counts = (value - before).abs() > metric.step_floor();
                    if counts && best.as_ref().is_none_or(|b| step > b.step) {
                        best = Some(Step {
                            column: key.short.clone(),
                            label: key.label.clone(),
                            metric,
                            from: from.to_string(),
                            to: version.clone(),
                            step,
                        });
                    }
                }
                last = Some((version, r, value));
            }
            out.extend(best);
        }
    }
    out.sort_by(|a, b| b.step.total_cmp(&a.step));
    out
}

/// The ids whose scenario measured more than one size.
fn sized_ids(releases: &[(String, Vec<Cell<'_>>)]) -> Vec<String> {
    let mut sizes: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (_, cells) in releases {
        for (id, m) in cells {
            let s = sizes.entry(id).or_default();
            if !s.contains(&m.size) {
                s.push(m.size);
            }
        }
    }
    sizes
        .into_iter()
        .filter(|(_, s)| s.len() > 1)
        .map(|(id, _)| id.to_string())
        .collect()
}

/// `docs/performance-releases.md`: the tables of `matrix` (a sweep's results of group P), headed by
/// the command that wrote it.
pub fn table(matrix: &Matrix, command: &str) -> String {
    let releases = releases(matrix);
    let keys = keys(matrix, &releases);
    let sized = sized_ids(&releases);
    let mut out = String::from("# Performance on a big home, release by release\n\n");
    let references: Vec<&str> = {
        let mut r: Vec<&str> = releases
            .iter()
            .flat_map(|(_, cells)| cells.iter().map(|(_, m)| m.reference.as_str()))
            .collect();
        r.sort();
        r.dedup();
        r
    };
    let _ = writeln!(
        out,
        "Group P on {} release(s), {} to {}, each measured against the reference {} in the \
         same run (the median of interleaved repetitions; [performance.md](performance.md) says \
         what each scenario does and how to run it). Generated, not written by hand: \
         `{command}`.\n",
        releases.len(),
        releases.first().map_or("", |r| r.0.as_str()),
        releases.last().map_or("", |r| r.0.as_str()),
        references.join(", ")
    );
    out.push_str(
        "## How to read it\n\n\
         Each cell is the release's median divided by the reference's median of the same \
         run (1.00: as fast as the reference; 2.00: twice the time or memory). A cell in \
         bold was over its scenario's budget (its median and its best run more than the \
         budget times the reference's, and the medians more than the noise floor apart: \
         100 ms of wall or CPU time, 32 MiB). A dash: \
         the release did not measure it (not applicable, or it failed before measuring). \
         Because every release is held against the same reference, the ratio of two \
         releases' cells compares the two releases; the last section lists the largest \
         such step of each measurement between consecutive releases.\n\n",
    );
    out.push_str("Columns:\n\n");
    for k in &keys {
        let _ = writeln!(out, "- `{}`: {}", k.short, k.label);
    }
    out.push('\n');
    for (metric, title) in [
        (Metric::Wall, "Wall time"),
        (Metric::Cpu, "Codex's CPU time"),
        (Metric::Rss, "Codex's peak resident memory"),
    ] {
        let _ = writeln!(out, "## {title}, as a multiple of the reference\n");
        let mut header = String::from("| release |");
        let mut rule = String::from("|---|");
        for k in &keys {
            let _ = write!(header, " {} |", k.short);
            rule.push_str("---|");
        }
        let _ = writeln!(out, "{header}\n{rule}");
        for (version, cells) in &releases {
            let mut row = format!("| {version} |");
            for k in &keys {
                match find(cells, k, |id| sized.iter().any(|s| s == id)) {
                    Some(m) if m.over(metric) => {
                        let _ = write!(row, " **{:.2}** |", m.ratio.get(metric));
                    }
                    Some(m) => {
                        let _ = write!(row, " {:.2} |", m.ratio.get(metric));
                    }
                    None => row.push_str(" - |"),
                }
            }
            let _ = writeln!(out, "{row}");
        }
        out.push('\n');
    }
    growth_table(&mut out, matrix);
    out.push_str(
        "## The largest step between consecutive releases\n\n\
         Per measurement and metric, the two consecutive releases (as swept) between which \
         the ratio to the reference grew the most, and by how much; a step whose medians \
         differ by 100 ms of wall or CPU time or less is not counted (a few clock ticks on a \
         40 ms operation make any ratio).\n\n\
         | measurement | metric | from | to | step |\n|---|---|---|---|---|\n",
    );
    let mut steps = steps(matrix);
    steps.sort_by(|a, b| {
        let order = |s: &Step| keys.iter().position(|k| k.short == s.column);
        order(a).cmp(&order(b)).then(a.metric.cmp(&b.metric))
    });
    for s in &steps {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {:.2}x |",
            s.column,
            s.metric.name(),
            s.from,
            s.to,
            s.step
        );
    }
    out
}

/// One release's growth exponents by column: (the release's, the reference's).
type GrowthRow = BTreeMap<String, (f64, f64)>;

/// The growth exponents of each release's wall time, one column per operation.
fn growth_table(out: &mut String, matrix: &Matrix) {
    let mut columns: Vec<String> = Vec::new();
    let mut rows: Vec<(String, GrowthRow)> = Vec::new();
    let mut ordered: Vec<_> = matrix.columns.iter().collect();
    ordered.sort_by_key(|c| versions::sort_key(&c.version));
    for c in ordered {
        let mut row = BTreeMap::new();
        for e in matrix.entries.iter().filter(|e| e.codex == c.label) {
            let id = matrix.id_of(&e.scenario);
            for g in &e.perf.growth {
                let column = format!("{id} {}..{}", g.sizes[0], g.sizes[1]);
                if !columns.contains(&column) {
                    columns.push(column.clone());
                }
                row.insert(column, (g.wall, g.reference_wall));
            }
        }
        rows.push((c.version.clone(), row));
    }
    if columns.is_empty() {
        return;
    }
    out.push_str(
        "## Growth with the size of the home\n\n\
         The exponent `e` of `wall time ~ threads^e` from the smaller home to the larger \
         (1: linear, 2: quadratic), the reference's of the same run in parentheses.\n\n",
    );
    let _ = writeln!(
        out,
        "| release | {} |\n|---|{}",
        columns.join(" | "),
        "---|".repeat(columns.len())
    );
    for (version, row) in rows {
        let cells: Vec<String> = columns
            .iter()
            .map(|c| {
                row.get(c)
                    .map_or("-".to_string(), |(e, r)| format!("{e:.2} ({r:.2})"))
            })
            .collect();
        let _ = writeln!(out, "| {version} | {} |", cells.join(" | "));
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::outcome::Outcome;
    use crate::harness::perf::{Growth, Perf, Subject, Usage};
    use crate::report::{Column, Entry, Row};
    use std::time::Duration;

    fn measured(size: u64, reference_ms: u64, candidate_ms: u64) -> Measurement {
        let usage = |ms: u64| Usage {
            wall: Duration::from_millis(ms),
            cpu: Duration::from_millis(ms),
            peak_rss_kib: 100 * 1024,
        };
        Measurement::new(
            &Subject {
                what: "thread/list all pages".into(),
                size,
                unit: "threads",
                layout: "legacy",
                reference: "0.171.0".into(),
                budget: 1.5,
            },
            &[usage(reference_ms)],
            &[usage(candidate_ms)],
        )
    }

    fn sweep() -> Matrix {
        // 0.150.0 as fast as the reference, 0.151.0 three times as slow at 10,000 threads,
        // 0.152.0 back to 1.2x; each release measured against a reference of its own run.
        let cells = [
            ("0.150.0", 1000, 1000),
            ("0.151.0", 1000, 3000),
            ("0.152.0", 2000, 2400),
        ];
        let entries = cells
            .iter()
            .map(|(v, reference, candidate)| {
                let small = measured(1000, reference / 10, reference / 10);
                let large = measured(10000, *reference, *candidate);
                Entry {
                    scenario: "perf_thread_list_all_pages".into(),
                    codex: format!("codex-{v}"),
                    outcome: if large.over_budget().is_empty() {
                        Outcome::Passed
                    } else {
                        Outcome::Failed("over budget".into())
                    },
                    duration: Duration::ZERO,
                    observations: Vec::new(),
                    checked: None,
                    drift: Vec::new(),
                    failure: None,
                    exercised: Default::default(),
                    perf: Perf {
                        growth: vec![Growth::between(&small, &large)],
                        measurements: vec![small, large],
                    },
                }
            })
            .collect();
        Matrix {
            shard: None,
            rows: vec![Row {
                name: "perf_thread_list_all_pages".into(),
                id: "P4".into(),
                summary: String::new(),
            }],
            // Out of order: the table sorts by version.
            columns: ["0.152.0", "0.150.0", "0.151.0"]
                .iter()
                .map(|v| Column {
                    label: format!("codex-{v}"),
                    version: v.to_string(),
                    protocol: None,
                })
                .collect(),
            entries,
        }
    }

    #[test]
    fn the_largest_step_is_between_the_releases_that_changed() {
        let steps = steps(&sweep());
        let wall = steps
            .iter()
            .find(|s| s.column == "P4 10000" && s.metric == Metric::Wall)
            .unwrap();
        assert_eq!(
            (wall.from.as_str(), wall.to.as_str()),
            ("0.150.0", "0.151.0")
        );
        assert_eq!(wall.step, 3.0);
        assert_eq!(steps[0].step, 3.0, "largest first: {steps:?}");
        // The smaller home's medians moved by 100 ms at most: noise, no step.
        assert!(steps.iter().all(|s| s.column != "P4 1000"), "{steps:?}");
    }

    #[test]
    fn the_table_has_a_row_per_release_in_order_and_bold_cells_over_budget() {
        let text = table(&sweep(), "codex-parity sweep --filter P");
        assert!(text.contains("`codex-parity sweep --filter P`"), "{text}");
        assert!(text.contains("- `P4 10000`: thread/list all pages (10000 threads, legacy)"));
        let wall = text.split("## Wall time").nth(1).unwrap();
        let rows: Vec<&str> = wall
            .lines()
            .filter(|l| l.starts_with("| 0."))
            .take(3)
            .collect();
        assert_eq!(
            rows,
            [
                "| 0.150.0 | 1.00 | 1.00 |",
                "| 0.151.0 | 1.00 | **3.00** |",
                "| 0.152.0 | 1.00 | 1.20 |"
            ]
        );
        assert!(text.contains("| P4 1000..10000 |"), "{text}");
        assert!(text.contains("| 0.151.0 | 1.48 (1.00) |"), "{text}");
        assert!(
            text.contains("| `P4 10000` | wall | 0.150.0 | 0.151.0 | 3.00x |"),
            "{text}"
        );
    }
}
