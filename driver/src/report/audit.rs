//! The baselines audited against a sweep: the results of the default catalogue on many
//! releases (one `results.json` each, written by `codex-parity sweep`) judged again by
//! today's baselines from the raw drift and failures they keep, and each baseline entry held
//! against the releases where its drift was seen.
//!
//! What it finds ([`Finding`]): an entry whose range covers swept releases where its drift
//! did not happen (stale there), drift seen outside an entry's range or listed by no entry
//! (each with the range the sweep supports), two entries listing the same drift for one
//! release (overlap) or calling it contradicting and not (contradiction), and published
//! releases the sweep did not run. Bad input is an error naming the entry: an entry naming
//! no known scenario, or a range that includes no published release.
//!
//! [`table`] renders the outcome counts per release and where each entry's drift starts and
//! ends, as the Markdown of `docs/releases.md`.

use std::collections::{BTreeMap, HashMap};

use anyhow::bail;
use serde_json::Value;

use crate::codex::versions::sort_key;
use crate::harness::baseline::{Baseline, Baselines, Expected};
use crate::harness::outcome::Outcome;
use crate::report::matrix::{Entry, Matrix, Totals};

/// One thing the audit found wrong with the baselines or the sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    /// An entry applies to swept releases where its drift did not happen.
    Stale {
        /// The entry, as [`describe`] names it.
        entry: String,
        /// Where it did not happen.
        releases: Vec<String>,
        /// The ranges of the releases where it did (`None`: nowhere).
        supported: Option<Vec<String>>,
    },
    /// Drift seen on releases no entry for it covers.
    Unlisted {
        /// Scenario.
        scenario: String,
        /// Drift key.
        key: String,
        /// The value codex showed.
        observed: Value,
        /// The releases it was seen on where no entry admits it.
        releases: Vec<String>,
        /// The ranges of every release it was seen on.
        supported: Vec<String>,
    },
    /// Two entries admit the same drift on the same releases.
    Overlap {
        /// The two entries.
        entries: [String; 2],
        /// The swept or published releases both apply to.
        releases: Vec<String>,
        /// Whether they also disagree on `contradicts`.
        contradicting: bool,
    },
    /// Published releases within the sweep's span that it did not run.
    NotSwept {
        /// The releases.
        releases: Vec<String>,
    },
}

/// How an entry is named in findings: `scenario key (versions)`.
pub fn describe(e: &Expected) -> String {
    format!("{} {} ({})", e.scenario, e.key, e.versions.join(", "))
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Finding::Stale {
                entry,
                releases,
                supported,
            } => {
                write!(
                    f,
                    "stale: {entry} did not happen on {}",
                    spans_text(releases)
                )?;
                match supported {
                    Some(ranges) => write!(f, "; the sweep supports {}", ranges.join(", ")),
                    None => write!(f, "; it happened on no swept release"),
                }
            }
            Finding::Unlisted {
                scenario,
                key,
                observed,
                releases,
                supported,
            } => write!(
                f,
                "unlisted: {scenario} {key} = {observed} on {} (seen on {})",
                spans_text(releases),
                supported.join(", ")
            ),
            Finding::Overlap {
                entries,
                releases,
                contradicting,
            } => write!(
                f,
                "{}: {} and {} both list it on {}",
                if *contradicting {
                    "contradicting"
                } else {
                    "overlap"
                },
                entries[0],
                entries[1],
                spans_text(releases)
            ),
            Finding::NotSwept { releases } => {
                write!(f, "not swept: {}", releases.join(", "))
            }
        }
    }
}

/// The releases as a short text: `0.131.0` or `0.131.0 (and 12 more up to 0.150.1)`.
fn spans_text(releases: &[String]) -> String {
    match releases {
        [] => "no release".into(),
        [one] => one.clone(),
        [first, .., last] => format!(
            "{first} (and {} more up to {last})",
            releases.len().saturating_sub(1)
        ),
    }
}

/// One entry's edges in the sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edges {
    /// The entry, as [`describe`] names it.
    pub entry: String,
    /// Its catalogue id.
    pub id: String,
    /// The swept releases where its drift happened, oldest first.
    pub seen: Vec<String>,
    /// The swept releases it applies to on which the scenario ran.
    pub applies: usize,
}

/// What the audit of a sweep found.
#[derive(Debug, Clone, PartialEq)]
pub struct Audit {
    /// The swept releases, oldest first, with their outcome counts judged by today's
    /// baselines.
    pub counts: Vec<(String, Totals)>,
    /// The cells that fail by today's baselines: (release, scenario, first line).
    pub failures: Vec<(String, String, String)>,
    /// Each entry's edges, in file order.
    pub edges: Vec<Edges>,
    /// What is wrong.
    pub findings: Vec<Finding>,
}

/// The maximal runs of consecutive releases of `all` (sorted) that are in `set`, written as
/// version specs: `>=A` to the newest, `<B` from the oldest (B the first release after the
/// run), `A..B` between, `A` for one release between two others.
pub fn ranges(all: &[String], set: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < all.len() {
        if !set.contains(&all[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < all.len() && set.contains(&all[i]) {
            i += 1;
        }
        let (first, next) = (&all[start], all.get(i));
        out.push(match (start == 0, next) {
            (_, None) => format!(">={first}"),
            (true, Some(next)) => format!("<{next}"),
            (false, Some(_)) if i - start == 1 => first.clone(),
            (false, Some(next)) => format!("{first}..{next}"),
        });
    }
    out
}

/// Judges the sweep `matrix` (one column per release) by `baselines` again and audits them;
/// `published` lists the stable releases npm has (the sweep's own when unknown), and
/// `scenarios` the names of every known scenario. An entry naming no known scenario, or
/// whose range includes no published release, is an error naming it.
pub fn audit(
    matrix: &Matrix,
    baselines: &Baselines,
    published: &[String],
    scenarios: &[String],
) -> anyhow::Result<Audit> {
    for e in &baselines.entries {
        if !scenarios.contains(&e.scenario) {
            bail!(
                "{}: entry {} names no known scenario (`codex-parity list` shows them)",
                baselines.source,
                describe(e)
            );
        }
        if !published.iter().any(|v| e.applies_to(v)) {
            bail!(
                "{}: entry {} includes no published release (the stable releases are {})",
                baselines.source,
                describe(e),
                spans_text(published)
            );
        }
    }
    let mut swept: Vec<(String, String)> = matrix
        .columns
        .iter()
        .map(|c| (c.version.clone(), c.label.clone()))
        .collect();
    swept.sort_by_key(|(v, _)| sort_key(v));
    let versions: Vec<String> = swept.iter().map(|(v, _)| v.clone()).collect();
    // Each release's baseline once, and each cell by (scenario, release).
    let baseline_of: HashMap<&str, Baseline> = swept
        .iter()
        .map(|(v, _)| (v.as_str(), baselines.for_version(v)))
        .collect();
    let cell_of: HashMap<(&str, &str), &Entry> = matrix
        .entries
        .iter()
        .map(|c| ((c.scenario.as_str(), matrix.version_of(&c.codex)), c))
        .collect();
    let mut rejudged = matrix.clone();
    let mut failures = Vec::new();
    for cell in &mut rejudged.entries {
        if matches!(cell.outcome, Outcome::NotApplicable(_)) {
            continue;
        }
        let version = matrix.version_of(&cell.codex).to_string();
        let Some(baseline) = baseline_of.get(version.as_str()) else {
            continue;
        };
        cell.outcome = baseline.judge(&cell.scenario, cell.failure.clone(), cell.drift.clone());
        if let Outcome::Failed(why) = &cell.outcome {
            failures.push((version, cell.scenario.clone(), super::headline(why)));
        }
    }
    failures.sort_by(|a, b| sort_key(&a.0).cmp(&sort_key(&b.0)).then(a.1.cmp(&b.1)));
    let counts = swept
        .iter()
        .map(|(v, label)| (v.clone(), rejudged.totals(label)))
        .collect();
    let mut findings = Vec::new();
    let ran = |scenario: &str, version: &str| {
        cell_of
            .get(&(scenario, version))
            .is_some_and(|c| !matches!(c.outcome, Outcome::NotApplicable(_)))
    };
    let seen_on = |scenario: &str, admits: &dyn Fn(&str, &Value) -> bool| -> Vec<String> {
        versions
            .iter()
            .filter(|v| {
                cell_of
                    .get(&(scenario, v.as_str()))
                    .is_some_and(|c| c.drift.iter().any(|d| admits(&d.key, &d.observed)))
            })
            .cloned()
            .collect()
    };
    let mut edges = Vec::new();
    for e in &baselines.entries {
        let seen = seen_on(&e.scenario, &|key, value| key == e.key && e.admits(value));
        let applies: Vec<String> = versions
            .iter()
            .filter(|v| e.applies_to(v) && ran(&e.scenario, v))
            .cloned()
            .collect();
        let missed: Vec<String> = applies
            .iter()
            .filter(|v| !seen.contains(v))
            .cloned()
            .collect();
        if !missed.is_empty() && !e.intermittent {
            findings.push(Finding::Stale {
                entry: describe(e),
                releases: missed,
                supported: (!seen.is_empty()).then(|| ranges(&versions, &seen)),
            });
        }
        let id = matrix.id_of(&e.scenario).to_string();
        edges.push(Edges {
            entry: describe(e),
            id,
            seen,
            applies: applies.len(),
        });
    }
    // Drift no entry admits: grouped by (scenario, key, value).
    let mut unlisted: BTreeMap<(String, String, String), (Value, Vec<String>)> = BTreeMap::new();
    for cell in &matrix.entries {
        let version = matrix.version_of(&cell.codex).to_string();
        let applying = baseline_of.get(version.as_str());
        for d in &cell.drift {
            let listed = applying.is_some_and(|b| {
                b.entries(&cell.scenario)
                    .any(|e| e.key == d.key && e.admits(&d.observed))
            });
            if !listed {
                let slot = unlisted
                    .entry((cell.scenario.clone(), d.key.clone(), d.observed.to_string()))
                    .or_insert_with(|| (d.observed.clone(), Vec::new()));
                if !slot.1.contains(&version) {
                    slot.1.push(version.clone());
                }
            }
        }
    }
    for ((scenario, key, _), (observed, mut releases)) in unlisted {
        releases.sort_by_key(|v| sort_key(v));
        let all_seen = seen_on(&scenario, &|k, v| k == key && *v == observed);
        findings.push(Finding::Unlisted {
            supported: ranges(&versions, &all_seen),
            scenario,
            key,
            observed,
            releases,
        });
    }
    findings.extend(overlaps(baselines, published, &versions));
    let first = versions.first().map(|v| sort_key(v));
    let last = versions.last().map(|v| sort_key(v));
    let not_swept: Vec<String> = published
        .iter()
        .filter(|v| {
            first.as_ref().is_some_and(|f| sort_key(v) >= *f)
                && last.as_ref().is_some_and(|l| sort_key(v) <= *l)
                && !versions.contains(v)
        })
        .cloned()
        .collect();
    if !not_swept.is_empty() {
        findings.push(Finding::NotSwept {
            releases: not_swept,
        });
    }
    Ok(Audit {
        counts,
        failures,
        edges,
        findings,
    })
}

/// Pairs of entries of one scenario and key that admit a common value on a common release.
fn overlaps(baselines: &Baselines, published: &[String], swept: &[String]) -> Vec<Finding> {
    let mut releases: Vec<String> = published.iter().chain(swept).cloned().collect();
    releases.sort_by_key(|v| sort_key(v));
    releases.dedup();
    let mut found = Vec::new();
    let entries = &baselines.entries;
    for (i, a) in entries.iter().enumerate() {
        for b in &entries[i + 1..] {
            if a.scenario != b.scenario || a.key != b.key {
                continue;
            }
            let values = |e: &Expected| -> Vec<Value> {
                e.observed
                    .iter()
                    .cloned()
                    .chain(e.observed_any.iter().flatten().cloned())
                    .collect()
            };
            if !values(a).iter().any(|v| b.admits(v)) && !values(b).iter().any(|v| a.admits(v)) {
                continue;
            }
            let both: Vec<String> = releases
                .iter()
                .filter(|v| a.applies_to(v) && b.applies_to(v))
                .cloned()
                .collect();
            if !both.is_empty() {
                found.push(Finding::Overlap {
                    entries: [describe(a), describe(b)],
                    releases: both,
                    contradicting: a.contradicts != b.contradicts,
                });
            }
        }
    }
    found
}

/// The baselines rewritten as the sweep supports them, for review: each entry's `versions`
/// become the ranges of the swept releases where its drift happened (an intermittent
/// entry's the span from its first to its last sighting; an entry never seen keeps its
/// own), and each drift no entry admits becomes a new entry whose reason asks for one.
pub fn suggest(audit: &Audit, baselines: &Baselines) -> Vec<Expected> {
    let versions: Vec<String> = audit.counts.iter().map(|(v, _)| v.clone()).collect();
    let mut out = Vec::new();
    for (e, edges) in baselines.entries.iter().zip(&audit.edges) {
        let mut e = e.clone();
        if !edges.seen.is_empty() {
            e.versions = if e.intermittent {
                let hull = hull(&versions, &edges.seen);
                ranges(&versions, &hull)
            } else {
                ranges(&versions, &edges.seen)
            };
        }
        out.push(e);
    }
    for f in &audit.findings {
        if let Finding::Unlisted {
            scenario,
            key,
            observed,
            supported,
            ..
        } = f
        {
            // An entry that admits it already got the ranges where it was seen.
            if baselines
                .entries
                .iter()
                .any(|e| e.scenario == *scenario && e.key == *key && e.admits(observed))
            {
                continue;
            }
            out.push(Expected {
                scenario: scenario.clone(),
                key: key.clone(),
                observed: Some(observed.clone()),
                observed_any: None,
                versions: supported.clone(),
                reason: format!(
                    "TODO: say why (unlisted drift the sweep saw on {})",
                    supported.join(", ")
                ),
                contradicts: false,
                intermittent: false,
            });
        }
    }
    out
}

/// Every release of `all` from the first of `set` to its last.
fn hull(all: &[String], set: &[String]) -> Vec<String> {
    let at = |v: &String| all.iter().position(|a| a == v);
    let (Some(first), Some(last)) = (
        set.iter().filter_map(at).min(),
        set.iter().filter_map(at).max(),
    ) else {
        return Vec::new();
    };
    all[first..=last].to_vec()
}

/// The line of `docs/releases.md` that points at the performance table of group P.
const PERFORMANCE_LINK: &str = "How each release performs on a big home (group P, which the \
     default catalogue leaves out) is in [performance-releases.md](performance-releases.md), \
     from a sweep of that group ([performance.md](performance.md) says how).\n\n";

/// The audit as the Markdown of `docs/releases.md`: outcome counts per release, the cells
/// that fail, the findings, and where each entry's drift was seen. `command` is how it was
/// made (said at the top, so the file says how to make it again).
pub fn table(audit: &Audit, command: &str) -> String {
    let mut md = String::from("# Every release judged\n\n");
    let (first, last) = (
        audit.counts.first().map_or("", |(v, _)| v.as_str()),
        audit.counts.last().map_or("", |(v, _)| v.as_str()),
    );
    md.push_str(&format!(
        "The default catalogue on {} stable releases of codex, {first} to {last}, judged by \
         the baselines (`fixtures/expected/baselines.json`). Generated, not written by hand: \
         `codex-parity sweep --out sweep` runs every release (resumable, the cache capped), \
         then `{command}` (`sweep --table` does both).\n\n",
        audit.counts.len()
    ));
    md.push_str(PERFORMANCE_LINK);
    md.push_str("## Outcomes per release\n\n");
    md.push_str("| release | passed | drift | contradicts | failed | n/a |\n");
    md.push_str("|---|---|---|---|---|---|\n");
    for (v, t) in &audit.counts {
        md.push_str(&format!(
            "| {v} | {} | {} | {} | {} | {} |\n",
            t.passed, t.drift, t.contradicts, t.failed, t.not_applicable
        ));
    }
    md.push_str("\n## Failures\n\n");
    if audit.failures.is_empty() {
        md.push_str("None: every cell passed or differed as its baseline expects.\n");
    }
    for (v, s, why) in &audit.failures {
        md.push_str(&format!("- {v} `{s}`: {}\n", why.replace('|', "\\|")));
    }
    md.push_str("\n## Findings of the audit\n\n");
    if audit.findings.is_empty() {
        md.push_str("None: every entry's range is the releases where its drift was seen.\n");
    }
    for f in &audit.findings {
        md.push_str(&format!("- {}\n", f.to_string().replace('|', "\\|")));
    }
    md.push_str("\n## Where each baseline entry holds\n\n");
    md.push_str(
        "Seen: the swept releases where the entry's drift happened, as ranges; of: the swept \
         releases its range covers on which the scenario ran.\n\n",
    );
    md.push_str("| id | entry | first seen | last seen | seen | of |\n|---|---|---|---|---|---|\n");
    let versions: Vec<String> = audit.counts.iter().map(|(v, _)| v.clone()).collect();
    for e in &audit.edges {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            e.id,
            e.entry.replace('|', "\\|"),
            e.seen.first().map_or("never", String::as_str),
            e.seen.last().map_or("never", String::as_str),
            ranges(&versions, &e.seen).join(", "),
            e.applies
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::harness::baseline::version_matches;
    use crate::harness::outcome::Drift;
    use crate::report::matrix::{Column, Entry, Row};

    fn v(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn ranges_end_where_the_releases_changed() {
        let all = v(&["0.131.0", "0.139.0", "0.150.1", "0.161.0", "0.171.0"]);
        assert_eq!(ranges(&all, &v(&["0.131.0", "0.139.0"])), ["<0.150.1"]);
        assert_eq!(ranges(&all, &v(&["0.161.0", "0.171.0"])), [">=0.161.0"]);
        assert_eq!(ranges(&all, &all), [">=0.131.0"]);
        assert_eq!(
            ranges(&all, &v(&["0.139.0", "0.150.1"])),
            ["0.139.0..0.161.0"]
        );
        assert_eq!(ranges(&all, &v(&["0.150.1"])), ["0.150.1"]);
        // A regression fixed later, and back again: two ranges.
        assert_eq!(
            ranges(&all, &v(&["0.131.0", "0.150.1", "0.171.0"])),
            ["<0.139.0", "0.150.1", ">=0.171.0"]
        );
        assert!(ranges(&all, &[]).is_empty());
        for spec in ranges(&all, &v(&["0.139.0", "0.150.1"])) {
            assert!(!version_matches(&spec, "0.131.0") && !version_matches(&spec, "0.161.0"));
        }
    }

    fn entry(key: &str, observed: Value, versions: &[&str], contradicts: bool) -> Expected {
        Expected {
            scenario: "s".into(),
            key: key.into(),
            observed: Some(observed),
            observed_any: None,
            versions: v(versions),
            reason: "r".into(),
            contradicts,
            intermittent: false,
        }
    }

    /// A sweep of scenario `s` whose drift `k` = 1 happens on the releases given.
    fn sweep(releases: &[&str], with_drift: &[&str]) -> Matrix {
        let columns = releases
            .iter()
            .map(|r| Column {
                label: format!("codex-{r}"),
                version: r.to_string(),
                protocol: None,
            })
            .collect();
        let entries = releases
            .iter()
            .map(|r| Entry {
                scenario: "s".into(),
                codex: format!("codex-{r}"),
                outcome: Outcome::Passed,
                duration: Duration::ZERO,
                observations: Vec::new(),
                checked: None,
                drift: if with_drift.contains(r) {
                    vec![Drift::new("k", json!(1), "one")]
                } else {
                    Vec::new()
                },
                failure: None,
                exercised: Default::default(),
                perf: Default::default(),
            })
            .collect();
        Matrix {
            shard: None,
            rows: vec![Row {
                name: "s".into(),
                id: "X1".into(),
                summary: String::new(),
            }],
            columns,
            entries,
        }
    }

    fn baselines(entries: Vec<Expected>) -> Baselines {
        Baselines {
            source: "b.json".into(),
            entries,
        }
    }

    #[test]
    fn a_range_ending_where_we_sampled_is_found_with_the_range_the_sweep_supports() {
        let releases = ["0.131.0", "0.139.0", "0.150.1", "0.161.0"];
        let m = sweep(&releases, &["0.131.0", "0.139.0"]);
        let names = v(&["s"]);
        // Listed for 0.131.0 only: 0.139.0 fails by it, and the audit says where it holds.
        let b = baselines(vec![entry("k", json!(1), &["0.131.0"], false)]);
        let a = audit(&m, &b, &v(&releases), &names).unwrap();
        assert_eq!(a.failures.len(), 1, "{:?}", a.failures);
        assert_eq!(a.failures[0].0, "0.139.0");
        assert_eq!(a.counts[0].1.drift, 1);
        assert_eq!(a.counts[1].1.failed, 1);
        assert!(matches!(
            &a.findings[..],
            [Finding::Unlisted { releases, supported, .. }]
                if releases == &v(&["0.139.0"]) && supported == &v(&["<0.150.1"])
        ));
        assert_eq!(a.edges[0].seen, v(&["0.131.0", "0.139.0"]));
        // The right range: nothing found, nothing fails.
        let b = baselines(vec![entry("k", json!(1), &["<0.150.1"], false)]);
        let a = audit(&m, &b, &v(&releases), &names).unwrap();
        assert!(a.findings.is_empty(), "{:?}", a.findings);
        assert!(a.failures.is_empty());
        // Too wide: stale on 0.150.1 and 0.161.0.
        let b = baselines(vec![entry("k", json!(1), &[">=0.131.0"], false)]);
        let a = audit(&m, &b, &v(&releases), &names).unwrap();
        match &a.findings[..] {
            [
                Finding::Stale {
                    releases,
                    supported,
                    ..
                },
            ] => {
                assert_eq!(releases, &v(&["0.150.1", "0.161.0"]));
                assert_eq!(supported.as_deref(), Some(&v(&["<0.150.1"])[..]));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(a.failures.len(), 2);
        let text = a.findings[0].to_string();
        assert!(
            text.starts_with("stale: s k (>=0.131.0) did not happen on 0.150.1"),
            "{text}"
        );
    }

    #[test]
    fn overlapping_and_contradicting_entries_and_releases_not_swept() {
        let releases = ["0.131.0", "0.139.0", "0.150.1"];
        let m = sweep(&["0.131.0", "0.150.1"], &["0.131.0", "0.150.1"]);
        let names = v(&["s"]);
        let b = baselines(vec![
            entry("k", json!(1), &[">=0.131.0"], false),
            entry("k", json!(1), &["0.150.1"], true),
            entry("k", json!(2), &["0.150.1"], true),
        ]);
        let a = audit(&m, &b, &v(&releases), &names).unwrap();
        let overlap = a
            .findings
            .iter()
            .find_map(|f| match f {
                Finding::Overlap {
                    entries,
                    releases,
                    contradicting,
                } => Some((entries.clone(), releases.clone(), *contradicting)),
                _ => None,
            })
            .expect("an overlap");
        assert_eq!(overlap.1, v(&["0.150.1"]));
        assert!(overlap.2, "one contradicts and the other does not");
        assert_eq!(
            a.findings
                .iter()
                .filter(|f| matches!(f, Finding::Overlap { .. }))
                .count(),
            1,
            "the entry for value 2 overlaps nothing: {:?}",
            a.findings
        );
        assert!(a.findings.contains(&Finding::NotSwept {
            releases: v(&["0.139.0"])
        }));
    }

    #[test]
    fn an_entry_naming_no_scenario_or_no_published_release_is_an_error_naming_it() {
        let releases = v(&["0.131.0", "0.139.0"]);
        let m = sweep(&["0.131.0"], &[]);
        let mut unknown = entry("k", json!(1), &["0.131.0"], false);
        unknown.scenario = "nope".into();
        let e = audit(&m, &baselines(vec![unknown]), &releases, &v(&["s"])).unwrap_err();
        assert!(
            format!("{e:#}").contains("nope k (0.131.0) names no known scenario"),
            "{e:#}"
        );
        let never = entry("k", json!(1), &["0.135.0"], false);
        let e = audit(&m, &baselines(vec![never]), &releases, &v(&["s"])).unwrap_err();
        assert!(
            format!("{e:#}").contains("includes no published release"),
            "{e:#}"
        );
    }

    #[test]
    fn suggested_baselines_end_where_the_sweep_saw_the_drift_and_list_what_no_entry_did() {
        let releases = ["0.131.0", "0.139.0", "0.150.1", "0.161.0"];
        let mut m = sweep(&releases, &["0.131.0", "0.139.0"]);
        m.entries[3]
            .drift
            .push(Drift::new("new", json!("x"), "new drift"));
        let mut racy = entry("k", json!(1), &["0.131.0"], false);
        racy.intermittent = true;
        racy.key = "racy".into();
        for i in [0, 2] {
            m.entries[i]
                .drift
                .push(Drift::new("racy", json!(1), "sometimes"));
        }
        let b = baselines(vec![entry("k", json!(1), &["0.131.0"], false), racy]);
        let a = audit(&m, &b, &v(&releases), &v(&["s"])).unwrap();
        let s = suggest(&a, &b);
        assert_eq!(s[0].versions, ["<0.150.1"]);
        assert_eq!(
            s[1].versions,
            ["<0.161.0"],
            "an intermittent entry spans its sightings"
        );
        let new = s
            .iter()
            .find(|e| e.key == "new")
            .expect("the unlisted drift");
        assert_eq!(new.versions, [">=0.161.0"]);
        assert!(new.reason.starts_with("TODO"), "{}", new.reason);
        let rejudged = audit(
            &m,
            &baselines(s.into_iter().filter(|e| e.key != "new").collect()),
            &v(&releases),
            &v(&["s"]),
        )
        .unwrap();
        assert_eq!(
            rejudged.failures.len(),
            1,
            "only the new drift: {:?}",
            rejudged.failures
        );
    }

    #[test]
    fn the_table_counts_each_release_and_says_how_it_was_made() {
        let releases = ["0.131.0", "0.139.0"];
        let m = sweep(&releases, &["0.131.0"]);
        let b = baselines(vec![entry("k", json!(1), &["<0.139.0"], false)]);
        let a = audit(&m, &b, &v(&releases), &v(&["s"])).unwrap();
        let md = table(&a, "codex-parity baselines audit out");
        assert!(md.contains("| 0.131.0 | 0 | 1 | 0 | 0 | 0 |"), "{md}");
        assert!(md.contains("| 0.139.0 | 1 | 0 | 0 | 0 | 0 |"), "{md}");
        assert!(md.contains("`codex-parity baselines audit out`"), "{md}");
        assert!(
            md.contains("| X1 | s k (<0.139.0) | 0.131.0 | 0.131.0 | <0.139.0 | 1 |"),
            "{md}"
        );
    }
}
