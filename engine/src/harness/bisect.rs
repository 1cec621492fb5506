//! Bisecting codex releases: in which release did a scenario's outcome change?
//!
//! The search is pure: it gets the releases between a good and a bad version (oldest first)
//! and an async function that probes one release, and binary-searches for the first release
//! whose outcome differs from the good one's. Outcomes are compared whole, so for a scenario
//! run they are [`Fingerprint`]s: the raw status and every (drift key, observed value) pair,
//! before any baseline judged them (a baseline range would otherwise move the change to the
//! range's edge). "drift A" and "drift B" are different outcomes.
//!
//! Each release is probed at most once. After every probe, the probes so far are checked in
//! release order: when an outcome comes back after another one (A, B, A), the history is not
//! monotonic and the search stops with those three probes as the evidence. When the first
//! change leads to an outcome that is not the bad end's, the search goes on from there, so
//! every change on the way is listed (and a flip back is caught when a probe shows it). As
//! with any bisection, a flip that leaves and returns between two probes can go unseen.

use std::collections::BTreeMap;
use std::future::Future;

use anyhow::{Result, bail};

pub use crate::codex::install::between;

use crate::harness::outcome::{Drift, Outcome, OutcomeKind};
use crate::harness::perf::Metric;
use crate::harness::runner::Ran;

/// What a scenario run did on one release, as bisect compares it: the status and the drift.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fingerprint {
    /// `pass`, `drift` (got to the end with drift), `FAIL` or `n/a`: before any baseline.
    pub status: &'static str,
    /// Every (key, observed value as JSON text) pair reported, sorted, without repeats.
    pub drift: Vec<(String, String)>,
}

impl Fingerprint {
    /// The fingerprint of a status and the drift reported.
    pub fn new(status: &'static str, drift: &[Drift]) -> Fingerprint {
        let mut pairs: Vec<(String, String)> = drift
            .iter()
            .map(|d| (d.key.clone(), d.observed.to_string()))
            .collect();
        pairs.sort();
        pairs.dedup();
        Fingerprint {
            status,
            drift: pairs,
        }
    }

    /// The fingerprint of one run of a scenario (see [`Ran::drift`] and [`Ran::failure`]).
    pub fn of(ran: &Ran) -> Fingerprint {
        let kind = if matches!(ran.outcome, Outcome::NotApplicable(_)) {
            OutcomeKind::NotApplicable
        } else if ran.failure.is_some() {
            OutcomeKind::Failed
        } else if ran.drift.is_empty() {
            OutcomeKind::Passed
        } else {
            OutcomeKind::Drift
        };
        let status = kind.word();
        Fingerprint::new(status, &ran.drift)
    }

    /// The status and the drift on one line, each value cut to `width` characters.
    pub fn summary(&self, width: usize) -> String {
        let mut line = self.status.to_string();
        for (key, value) in &self.drift {
            line.push_str(&format!(" {key}={}", cut(value, width)));
        }
        line
    }
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.status)?;
        for (key, value) in &self.drift {
            write!(f, "\n    {key} = {value}")?;
        }
        Ok(())
    }
}

/// `text`, cut to `width` characters with `…` when longer.
fn cut(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_string()
    } else {
        let mut short: String = text.chars().take(width.saturating_sub(1)).collect();
        short.push('…');
        short
    }
}

/// A bisection on a measurement (`--perf-key`): the metric, the factor, and the good
/// release's ratio to the reference once probed (the first probe).
pub struct PerfKey {
    metric: Metric,
    factor: f64,
    good: std::sync::Mutex<Option<f64>>,
}

impl PerfKey {
    /// A key on `metric`: slower at more than `factor` times the good release's ratio.
    pub fn new(metric: Metric, factor: f64) -> PerfKey {
        PerfKey {
            metric,
            factor,
            good: std::sync::Mutex::new(None),
        }
    }

    /// The fingerprint of a probe by its measurement: `slower` when its ratio is more than
    /// the factor times the good release's, `as good` otherwise (the first probe, the good
    /// release, sets the mark); the text for the probe's line. A run that measured nothing
    /// keeps its outcome's fingerprint.
    pub fn classify(&self, ran: &Ran) -> (Fingerprint, String) {
        let Some(m) = ran.perf.measurements.iter().max_by_key(|m| m.size) else {
            return (Fingerprint::of(ran), "measured nothing".to_string());
        };
        let r = m.ratio.get(self.metric);
        let mark = *crate::lock(&self.good).get_or_insert(r);
        let step = crate::harness::perf::ratio(r, mark);
        let status = if step > self.factor {
            "slower"
        } else {
            "as good"
        };
        let text = format!(
            "{} {:.2}x the reference {} ({} {}), {step:.2}x the good release's",
            self.metric.name(),
            r,
            m.reference,
            m.candidate.get(self.metric),
            self.metric.unit()
        );
        (Fingerprint::new(status, &[]), text)
    }
}

/// One release probed and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe<O> {
    /// The release.
    pub version: String,
    /// Its outcome.
    pub outcome: O,
}

/// Where the outcome changed: the last release with the old outcome and the first with the
/// new one (adjacent releases).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change<O> {
    /// The last release with the old outcome.
    pub before: Probe<O>,
    /// The first release with the new outcome.
    pub after: Probe<O>,
}

/// What a bisection found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding<O> {
    /// The outcome changed, in order, at each of these (the first is the answer; more than
    /// one when the first change led to an outcome other than the bad end's).
    Found(Vec<Change<O>>),
    /// An outcome came back after another: three probes in release order, the first and
    /// the last with the same outcome, the middle one with another.
    NotMonotonic([Probe<O>; 3]),
    /// Both ends have the same outcome: nothing to search.
    Unchanged,
}

/// A bisection: its verdict and every probe, in the order they were made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bisection<O> {
    /// What it found.
    pub verdict: Finding<O>,
    /// The probes, in the order they ran.
    pub probes: Vec<Probe<O>>,
}

/// The probes made so far, by index into the releases, with a check for flips.
struct Probed<'a, O, F> {
    releases: &'a [String],
    known: BTreeMap<usize, O>,
    order: Vec<usize>,
    probe: F,
}

impl<O, F, Fut> Probed<'_, O, F>
where
    O: Clone + Eq,
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<O>>,
{
    /// The outcome of release `i`, probing it the first time.
    async fn outcome(&mut self, i: usize) -> Result<O> {
        if let Some(o) = self.known.get(&i) {
            return Ok(o.clone());
        }
        let o = (self.probe)(self.releases[i].clone()).await?;
        self.known.insert(i, o.clone());
        self.order.push(i);
        Ok(o)
    }

    fn at(&self, i: usize) -> Probe<O> {
        Probe {
            version: self.releases[i].clone(),
            outcome: self.known[&i].clone(),
        }
    }

    /// Three probes showing an outcome that came back after another, if the probes so far
    /// show one.
    fn flip(&self) -> Option<[Probe<O>; 3]> {
        // Runs of equal outcomes in release order: (last index of the run, first index).
        let mut runs: Vec<(usize, usize)> = Vec::new();
        for (&i, o) in &self.known {
            match runs.last_mut() {
                Some(run) if self.known[&run.0] == *o => run.0 = i,
                _ => runs.push((i, i)),
            }
        }
        for (a, run) in runs.iter().enumerate() {
            for later in runs.iter().skip(a + 2) {
                if self.known[&run.0] == self.known[&later.1] {
                    return Some([self.at(run.0), self.at(runs[a + 1].1), self.at(later.1)]);
                }
            }
        }
        None
    }

    fn done(self, verdict: Finding<O>) -> Bisection<O> {
        let probes = self.order.iter().map(|&i| self.at(i)).collect();
        Bisection { verdict, probes }
    }
}

/// Bisects `releases` (oldest first; the first is the good end, the last the bad end) with
/// `probe`, which runs one release and returns its outcome. Errors of `probe` end the search.
pub async fn bisect<O, F, Fut>(releases: &[String], probe: F) -> Result<Bisection<O>>
where
    O: Clone + Eq,
    F: FnMut(String) -> Fut,
    Fut: Future<Output = Result<O>>,
{
    if releases.len() < 2 {
        bail!("bisect needs two different releases, a good and a bad one");
    }
    let last = releases.len() - 1;
    let mut p = Probed {
        releases,
        known: BTreeMap::new(),
        order: Vec::new(),
        probe,
    };
    let (good, bad) = (p.outcome(0).await?, p.outcome(last).await?);
    if good == bad {
        return Ok(p.done(Finding::Unchanged));
    }
    let mut changes = Vec::new();
    let mut lo = 0;
    loop {
        let current = p.known[&lo].clone();
        // Start from what is known: the last probe still at `current`, the next after it.
        let (mut lo_i, mut hi) = (lo, last);
        for (&i, o) in p.known.range(lo + 1..) {
            if *o == current {
                lo_i = i;
            } else {
                hi = i;
                break;
            }
        }
        lo = lo_i;
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            let o = p.outcome(mid).await?;
            if let Some(evidence) = p.flip() {
                return Ok(p.done(Finding::NotMonotonic(evidence)));
            }
            if o == current { lo = mid } else { hi = mid }
        }
        changes.push(Change {
            before: p.at(lo),
            after: p.at(hi),
        });
        if p.known[&hi] == bad {
            return Ok(p.done(Finding::Found(changes)));
        }
        lo = hi;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::versions::sort_key;

    /// Releases `0.1.0` .. `0.N.0`.
    fn releases(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("0.{i}.0")).collect()
    }

    /// Bisects releases whose outcomes are the characters of `history`, oldest first.
    fn run(history: &str) -> Bisection<char> {
        let list = releases(history.len());
        let chars: Vec<char> = history.chars().collect();
        let probe = |v: String| {
            let i = list.iter().position(|r| *r == v).unwrap();
            let c = chars[i];
            async move { Ok(c) }
        };
        block_on(bisect(&list, probe)).unwrap()
    }

    fn block_on<T>(fut: impl Future<Output = T>) -> T {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(fut)
    }

    fn versions(probes: &[Probe<char>]) -> Vec<&str> {
        probes.iter().map(|p| p.version.as_str()).collect()
    }

    #[test]
    fn finds_the_first_changed_release_in_few_probes() {
        let b = run("GGGGGGGGGGGGBBBBBBBBBBBBBBBBBBBBB");
        let Finding::Found(changes) = &b.verdict else {
            panic!("{b:?}")
        };
        assert_eq!(changes.len(), 1);
        assert_eq!(changes[0].before.version, "0.12.0");
        assert_eq!(changes[0].after.version, "0.13.0");
        assert_eq!(changes[0].after.outcome, 'B');
        // 33 releases: both ends and 5 midpoints.
        assert!(b.probes.len() <= 7, "{:?}", versions(&b.probes));
        assert_eq!(versions(&b.probes[..2]), ["0.1.0", "0.33.0"]);
    }

    #[test]
    fn a_range_of_one_step_probes_only_the_ends() {
        let b = run("GB");
        let Finding::Found(changes) = &b.verdict else {
            panic!("{b:?}")
        };
        assert_eq!(changes[0].after.version, "0.2.0");
        assert_eq!(versions(&b.probes), ["0.1.0", "0.2.0"]);
    }

    #[test]
    fn the_change_at_the_bad_end_or_right_after_the_good_one() {
        let b = run("GGGGGGB");
        assert!(matches!(&b.verdict, Finding::Found(c) if c[0].after.version == "0.7.0"));
        let b = run("GBBBBBB");
        assert!(matches!(&b.verdict, Finding::Found(c) if c[0].after.version == "0.2.0"));
    }

    #[test]
    fn every_change_on_the_way_to_a_third_outcome_is_listed() {
        let b = run("GGGXXXXBBB");
        let Finding::Found(changes) = &b.verdict else {
            panic!("{b:?}")
        };
        let at: Vec<(&str, char)> = changes
            .iter()
            .map(|c| (c.after.version.as_str(), c.after.outcome))
            .collect();
        assert_eq!(at, [("0.4.0", 'X'), ("0.8.0", 'B')]);
    }

    #[test]
    fn an_outcome_that_comes_back_is_not_monotonic_with_its_evidence() {
        // Good, a third outcome, good again, then bad: the probes show G, X, G in order.
        let b = run("GGXXGGBB");
        let Finding::NotMonotonic([first, middle, last]) = &b.verdict else {
            panic!("{b:?}")
        };
        assert_eq!(
            (first.outcome, middle.outcome, last.outcome),
            ('G', 'X', 'G')
        );
        assert!(sort_key(&first.version) < sort_key(&middle.version));
        assert!(sort_key(&middle.version) < sort_key(&last.version));
    }

    #[test]
    fn the_same_outcome_at_both_ends_is_unchanged() {
        let b = run("GGBBGG");
        assert_eq!(b.verdict, Finding::Unchanged);
        assert_eq!(b.probes.len(), 2);
    }

    #[test]
    fn a_probe_error_ends_the_search() {
        let list = releases(5);
        let probe = |v: String| async move {
            if v == "0.5.0" {
                bail!("cannot install {v}")
            }
            Ok('G')
        };
        let err = block_on(bisect(&list, probe)).unwrap_err();
        assert!(format!("{err:#}").contains("0.5.0"), "{err:#}");
    }

    #[test]
    fn fingerprints_differ_by_drift_value_not_by_order_or_repeats() {
        let d = |k: &str, v: serde_json::Value| Drift::new(k, v, "said differently each time");
        let a = Fingerprint::new("drift", &[d("x", 1.into()), d("y", 2.into())]);
        let b = Fingerprint::new(
            "drift",
            &[d("y", 2.into()), d("x", 1.into()), d("x", 1.into())],
        );
        assert_eq!(a, b);
        assert_ne!(
            a,
            Fingerprint::new("drift", &[d("x", 1.into()), d("y", 3.into())])
        );
        assert_ne!(
            a,
            Fingerprint::new("FAIL", &[d("x", 1.into()), d("y", 2.into())])
        );
        assert_eq!(a.summary(80), "drift x=1 y=2");
    }

    #[test]
    fn bisect_of_one_release_is_an_error() {
        let probe = |_: String| async { Ok('G') };
        assert!(block_on(bisect(&releases(1), probe)).is_err());
    }

    /// A run that measured `small_ms` on 1,000 threads and `large_ms` on 10,000, against a
    /// reference at 100 ms on both.
    fn perf_ran(small_ms: u64, large_ms: u64) -> Ran {
        let usage = |ms| crate::harness::perf::Usage {
            wall: std::time::Duration::from_millis(ms),
            cpu: std::time::Duration::from_millis(ms),
            peak_rss_kib: 1024,
        };
        let at = |size, ms| {
            crate::harness::perf::Measurement::new(
                &crate::harness::perf::Subject {
                    what: "thread/list all pages".into(),
                    size,
                    unit: "threads",
                    layout: "legacy",
                    reference: "0.171.0".into(),
                    budget: 1.5,
                },
                &[usage(100)],
                &[usage(ms)],
            )
        };
        Ran {
            outcome: crate::harness::outcome::Outcome::Passed,
            duration: std::time::Duration::ZERO,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
            perf: crate::harness::perf::Perf {
                measurements: vec![at(10_000, large_ms), at(1_000, small_ms)],
                growth: Vec::new(),
            },
        }
    }

    #[test]
    fn a_probe_is_slower_when_its_largest_home_is_over_the_factor_of_the_good_one() {
        let key = PerfKey::new(Metric::Wall, 2.0);
        // The good release sets the mark (1.5x the reference on 10,000 threads).
        let (good, text) = key.classify(&perf_ran(100, 150));
        assert_eq!(good.status, "as good");
        assert!(text.contains("wall 1.50x the reference 0.171.0"), "{text}");
        // Twice as slow as the good one is not more than the factor; three times is, and the
        // smaller home does not count.
        assert_eq!(key.classify(&perf_ran(900, 300)).0.status, "as good");
        let (slow, text) = key.classify(&perf_ran(100, 451));
        assert_eq!(slow.status, "slower");
        assert!(text.contains("3.01x the good release's"), "{text}");
        // A run that measured nothing keeps its outcome.
        let mut failed = perf_ran(100, 100);
        failed.perf = Default::default();
        failed.failure = Some("no reference".into());
        failed.outcome = crate::harness::outcome::Outcome::Failed("no reference".into());
        assert_eq!(key.classify(&failed).0.status, "FAIL");
    }
}
