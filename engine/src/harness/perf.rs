//! Performance as a ratio, never as an absolute time: what the performance scenarios (group
//! P) measure of one codex operation (wall time, codex's CPU time, codex's peak resident
//! memory), the same operation measured on a reference binary in the same run and on the same
//! machine, repetitions interleaved (reference, candidate, candidate, reference, ...) so that
//! a machine growing busier or quieter during the run weighs on both alike, the medians, and
//! the judgement: over budget when a median is more than the scenario's budget (e.g. 1.5x)
//! times the reference's, the best repetition more than the budget times the reference's best
//! (a regression slows every run; a busy machine slows some), *and* the medians more than a
//! small absolute floor apart ([`Metric::floor`]), so that a 40 ms operation on a loaded
//! machine never fails on scheduling noise while a real regression cannot hide. How an operation
//! grows with the size of the home (1k and 10k
//! threads) is a [`Growth`] exponent: 1 is linear, 2 quadratic.
//!
//! What the run was told (the reference, the repetitions, the scale of the homes) is
//! [`PerfSettings`], part of the run's settings; what a scenario measured goes to its tally
//! ([`crate::harness::scenario::Ctx::measured`]) and from there into `results.json` (each
//! cell's `perf`), whatever the judgement, so a failed budget still shows its numbers.

use std::future::Future;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::app_server::usage::{CpuTimes, peak_rss_kib};
use crate::codex::binaries::CodexBinary;

/// Repetitions of each side by default.
pub const DEFAULT_REPETITIONS: usize = 3;

/// The budget of a scenario unless it says otherwise: at most 1.5 times the reference.
pub const DEFAULT_BUDGET: f64 = 1.5;

/// What the performance scenarios of a run are told.
#[derive(Debug, Clone)]
pub struct PerfSettings {
    /// The binary every measurement is held against (by default the pinned version); `None`
    /// when the run has no performance scenario, or could not name one (the scenarios then
    /// fail saying so).
    pub reference: Option<CodexBinary>,
    /// Repetitions of each side (at least 1); the medians are judged.
    pub repetitions: usize,
    /// The size of the homes, as a multiple of the catalogue's (1.0: 1,000 and 10,000
    /// threads, a large rollout of about 20,000 records).
    pub scale: f64,
}

impl Default for PerfSettings {
    fn default() -> PerfSettings {
        PerfSettings {
            reference: None,
            repetitions: DEFAULT_REPETITIONS,
            scale: 1.0,
        }
    }
}

impl PerfSettings {
    /// `n` at this scale, at least `min`.
    pub fn scaled(&self, n: u64, min: u64) -> u64 {
        ((n as f64 * self.scale).round() as u64).max(min)
    }
}

/// One run of an operation on one side: wall time, and codex's CPU time and peak resident
/// memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Usage {
    /// Wall time of the operation.
    pub wall: Duration,
    /// CPU time codex spent during it (its own and its waited-for children's).
    pub cpu: Duration,
    /// Codex's peak resident set since it started, when the operation ended, in KiB.
    pub peak_rss_kib: u64,
}

/// Measures `operation` on the codex process `pid`: wall time around it, CPU time read
/// before and after it, the peak resident set after it. A process that is gone when read
/// counts zero CPU and memory (the operation itself says whether that is an error).
pub async fn measure<T, E>(
    pid: Option<u32>,
    operation: impl Future<Output = Result<T, E>>,
) -> Result<(Usage, T), E> {
    let cpu = |pid: Option<u32>| pid.and_then(CpuTimes::of).unwrap_or_default();
    let before = cpu(pid);
    let started = Instant::now();
    let value = operation.await?;
    let wall = started.elapsed();
    let after = cpu(pid);
    let usage = Usage {
        wall,
        cpu: after.since(&before).total(),
        peak_rss_kib: pid.and_then(peak_rss_kib).unwrap_or(0),
    };
    Ok((usage, value))
}

/// Which binary a repetition runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The reference binary.
    Reference,
    /// The binary under test.
    Candidate,
}

/// The usages of `repetitions` runs of each side, interleaved: reference then candidate in
/// even repetitions, candidate then reference in odd ones (ABBA), so that a trend in the
/// machine's load weighs on both sides alike. Returns (reference, candidate).
pub async fn interleaved<F, Fut>(
    repetitions: usize,
    mut run: F,
) -> anyhow::Result<(Vec<Usage>, Vec<Usage>)>
where
    F: FnMut(Side, usize) -> Fut,
    Fut: Future<Output = anyhow::Result<Usage>>,
{
    let (mut reference, mut candidate) = (Vec::new(), Vec::new());
    for rep in 0..repetitions.max(1) {
        let order = if rep % 2 == 0 {
            [Side::Reference, Side::Candidate]
        } else {
            [Side::Candidate, Side::Reference]
        };
        for side in order {
            let usage = run(side, rep).await?;
            match side {
                Side::Reference => reference.push(usage),
                Side::Candidate => candidate.push(usage),
            }
        }
    }
    Ok((reference, candidate))
}

/// Wall time, CPU time and peak memory in the units `results.json` carries them: one
/// repetition's, or the medians of one side's.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Figures {
    /// Wall time, milliseconds.
    pub wall_ms: f64,
    /// Codex's CPU time, milliseconds.
    pub cpu_ms: f64,
    /// Codex's peak resident set, MiB.
    pub rss_mib: f64,
}

impl Figures {
    /// The figures of one repetition.
    pub fn of_one(usage: &Usage) -> Figures {
        Figures {
            wall_ms: round(usage.wall.as_secs_f64() * 1000.0, 1),
            cpu_ms: round(usage.cpu.as_secs_f64() * 1000.0, 1),
            rss_mib: round(usage.peak_rss_kib as f64 / 1024.0, 1),
        }
    }

    /// The medians of `usages` (the mean of the two middle ones for an even count); zero
    /// for none.
    pub fn of(usages: &[Usage]) -> Figures {
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        Figures {
            wall_ms: round(median(usages.iter().map(|u| ms(u.wall)).collect()), 1),
            cpu_ms: round(median(usages.iter().map(|u| ms(u.cpu)).collect()), 1),
            rss_mib: round(
                median(
                    usages
                        .iter()
                        .map(|u| u.peak_rss_kib as f64 / 1024.0)
                        .collect(),
                ),
                1,
            ),
        }
    }

    /// The value of `metric`.
    pub fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Wall => self.wall_ms,
            Metric::Cpu => self.cpu_ms,
            Metric::Rss => self.rss_mib,
        }
    }
}

/// The median of `values` (the mean of the two middle ones for an even count); 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let mid = values.len() / 2;
    if values.len() % 2 == 1 {
        values[mid]
    } else {
        (values[mid - 1] + values[mid]) / 2.0
    }
}

/// `x` rounded to `digits` decimals.
fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// What is measured of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    /// Wall time.
    Wall,
    /// Codex's CPU time.
    Cpu,
    /// Codex's peak resident memory.
    Rss,
}

impl Metric {
    /// Every metric, in the order reports show them.
    pub const ALL: [Metric; 3] = [Metric::Wall, Metric::Cpu, Metric::Rss];

    /// Its name: `wall`, `cpu`, `rss` (also what `bisect --perf-key` takes).
    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::Cpu => "cpu",
            Metric::Rss => "rss",
        }
    }

    /// The metric named `name` (see [`Metric::name`]).
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The unit of its medians: `ms` or `MiB`.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Wall | Metric::Cpu => "ms",
            Metric::Rss => "MiB",
        }
    }

    /// The difference between two releases' medians at or below which a step from one to
    /// the other is noise: the wall and CPU [`Metric::floor`]; none for memory, which does
    /// not jitter with the machine's load.
    pub fn step_floor(self) -> f64 {
        match self {
            Metric::Wall | Metric::Cpu => self.floor(),
            Metric::Rss => 0.0,
        }
    }

    /// The difference from the reference below which a ratio is never over budget: 100 ms
    /// of wall or CPU time (ten clock ticks; what a process start varies by on a loaded
    /// two-core machine), 32 MiB of memory (what an allocator's arenas vary by).
    pub fn floor(self) -> f64 {
        match self {
            Metric::Wall | Metric::Cpu => 100.0,
            Metric::Rss => 32.0,
        }
    }
}

/// One operation at one size, measured on both sides: what `results.json` carries in a
/// cell's `perf.measurements`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measurement {
    /// The operation (`thread/list all pages`).
    pub what: String,
    /// The size of the home it ran on (`size` `unit`: 10000 threads).
    pub size: u64,
    /// What the size counts: `threads` or `records`.
    pub unit: String,
    /// The layout of the history it read: `legacy` or `paginated`.
    pub layout: String,
    /// The reference's version.
    pub reference: String,
    /// Repetitions of each side.
    pub repetitions: usize,
    /// The medians of the binary under test.
    pub candidate: Figures,
    /// The medians of the reference.
    pub baseline: Figures,
    /// Candidate over reference, per metric (1.0 where the reference's median is 0).
    pub ratio: Ratios,
    /// The scenario's budget: the largest ratio that passes.
    pub budget: f64,
    /// Every repetition of the binary under test, in the order run.
    pub candidate_runs: Vec<Figures>,
    /// Every repetition of the reference, in the order run.
    pub baseline_runs: Vec<Figures>,
}

/// Candidate over reference, per metric.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ratios {
    /// Wall time.
    pub wall: f64,
    /// CPU time.
    pub cpu: f64,
    /// Peak resident memory.
    pub rss: f64,
}

impl Ratios {
    /// The ratio of `metric`.
    pub fn get(&self, metric: Metric) -> f64 {
        match metric {
            Metric::Wall => self.wall,
            Metric::Cpu => self.cpu,
            Metric::Rss => self.rss,
        }
    }
}

/// Where a measurement ran: the operation, the size and layout of the home, the reference.
#[derive(Debug, Clone)]
pub struct Subject {
    /// The operation.
    pub what: String,
    /// The size.
    pub size: u64,
    /// What the size counts.
    pub unit: &'static str,
    /// The history's layout.
    pub layout: &'static str,
    /// The reference's version.
    pub reference: String,
    /// The budget.
    pub budget: f64,
}

/// `a / b` rounded to 3 decimals; 1.0 where `b` is 0 (nothing to compare against).
pub fn ratio(a: f64, b: f64) -> f64 {
    if b <= 0.0 { 1.0 } else { round(a / b, 3) }
}

impl Measurement {
    /// The measurement of `subject` from the usages of each side.
    pub fn new(subject: &Subject, reference: &[Usage], candidate: &[Usage]) -> Measurement {
        let (b, c) = (Figures::of(reference), Figures::of(candidate));
        Measurement {
            what: subject.what.clone(),
            size: subject.size,
            unit: subject.unit.to_string(),
            layout: subject.layout.to_string(),
            reference: subject.reference.clone(),
            repetitions: candidate.len(),
            candidate: c,
            baseline: b,
            ratio: Ratios {
                wall: ratio(c.wall_ms, b.wall_ms),
                cpu: ratio(c.cpu_ms, b.cpu_ms),
                rss: ratio(c.rss_mib, b.rss_mib),
            },
            budget: subject.budget,
            candidate_runs: candidate.iter().map(Figures::of_one).collect(),
            baseline_runs: reference.iter().map(Figures::of_one).collect(),
        }
    }

    /// The ratio of the two sides' best (smallest) repetitions of `metric`: what is left
    /// of a difference once the noise a busy machine adds to some runs is set aside.
    pub fn best_ratio(&self, metric: Metric) -> f64 {
        let best = |runs: &[Figures]| {
            runs.iter()
                .map(|f| f.get(metric))
                .min_by(f64::total_cmp)
                .unwrap_or(0.0)
        };
        ratio(best(&self.candidate_runs), best(&self.baseline_runs))
    }

    /// `what (size unit, layout)`: how reports name it.
    pub fn label(&self) -> String {
        format!(
            "{} ({} {}, {})",
            self.what, self.size, self.unit, self.layout
        )
    }

    /// Every metric over the budget: the ratio above it and the difference above the
    /// metric's floor, each as a sentence.
    pub fn over_budget(&self) -> Vec<String> {
        Metric::ALL
            .into_iter()
            .filter(|&m| self.over(m))
            .map(|m| {
                format!(
                    "{}: {} {:.2}x the reference {} ({} against {} {}, median of {}; best \
                     runs {:.2}x; budget {}x)",
                    self.label(),
                    m.name(),
                    self.ratio.get(m),
                    self.reference,
                    self.candidate.get(m),
                    self.baseline.get(m),
                    m.unit(),
                    self.repetitions,
                    self.best_ratio(m),
                    self.budget
                )
            })
            .collect()
    }

    /// Whether `metric` is over the budget: the ratio of the medians above it, the ratio of
    /// the best repetitions too ([`Measurement::best_ratio`]: a regression slows every run,
    /// noise only some), and the difference of the medians above the metric's floor.
    pub fn over(&self, metric: Metric) -> bool {
        let (c, b) = (self.candidate.get(metric), self.baseline.get(metric));
        self.ratio.get(metric) > self.budget
            && self.best_ratio(metric) > self.budget
            && c - b > metric.floor()
    }

    /// One line for people: the medians of both sides and the ratios.
    pub fn summary(&self) -> String {
        let side = |m: &Figures| {
            format!(
                "{} ms wall, {} ms cpu, {} MiB",
                m.wall_ms, m.cpu_ms, m.rss_mib
            )
        };
        format!(
            "{}: {} against {} on {} (x{} wall, x{} cpu, x{} rss; median of {})",
            self.label(),
            side(&self.candidate),
            side(&self.baseline),
            self.reference,
            self.ratio.wall,
            self.ratio.cpu,
            self.ratio.rss,
            self.repetitions
        )
    }
}

impl Eq for Measurement {}

/// How an operation's wall and CPU time grew from a smaller home to a larger one, as the
/// exponent `e` of `time ~ size^e` (1 linear, 2 quadratic), for both sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Growth {
    /// The operation.
    pub what: String,
    /// What the sizes count.
    pub unit: String,
    /// The smaller and the larger size.
    pub sizes: [u64; 2],
    /// The exponent of the binary under test's wall time.
    pub wall: f64,
    /// The exponent of its CPU time.
    pub cpu: f64,
    /// The exponent of the reference's wall time.
    pub reference_wall: f64,
    /// The exponent of the reference's CPU time.
    pub reference_cpu: f64,
}

impl Eq for Growth {}

/// `ln(b / a) / ln(m / n)` rounded to 2 decimals: the exponent from `a` at size `n` to `b`
/// at size `m`; 0 where a value or the sizes do not allow one.
pub fn exponent(n: u64, a: f64, m: u64, b: f64) -> f64 {
    if n == 0 || m <= n || a <= 0.0 || b <= 0.0 {
        return 0.0;
    }
    round((b / a).ln() / (m as f64 / n as f64).ln(), 2)
}

impl Growth {
    /// The growth from `small` to `large`, two measurements of one operation at two sizes.
    pub fn between(small: &Measurement, large: &Measurement) -> Growth {
        let e = |a: &Figures, b: &Figures, metric: Metric| {
            exponent(small.size, a.get(metric), large.size, b.get(metric))
        };
        Growth {
            what: large.what.clone(),
            unit: large.unit.clone(),
            sizes: [small.size, large.size],
            wall: e(&small.candidate, &large.candidate, Metric::Wall),
            cpu: e(&small.candidate, &large.candidate, Metric::Cpu),
            reference_wall: e(&small.baseline, &large.baseline, Metric::Wall),
            reference_cpu: e(&small.baseline, &large.baseline, Metric::Cpu),
        }
    }

    /// One line for people.
    pub fn summary(&self) -> String {
        format!(
            "{} from {} to {} {}: wall ~ n^{}, cpu ~ n^{} (reference: n^{}, n^{})",
            self.what,
            self.sizes[0],
            self.sizes[1],
            self.unit,
            self.wall,
            self.cpu,
            self.reference_wall,
            self.reference_cpu
        )
    }
}

/// What one scenario measured: its measurements and growth exponents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Perf {
    /// Each operation at each size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub measurements: Vec<Measurement>,
    /// How operations grew with the size.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub growth: Vec<Growth>,
}

impl Perf {
    /// Whether nothing was measured.
    pub fn is_empty(&self) -> bool {
        self.measurements.is_empty() && self.growth.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(wall_ms: u64, cpu_ms: u64, rss_mib: u64) -> Usage {
        Usage {
            wall: Duration::from_millis(wall_ms),
            cpu: Duration::from_millis(cpu_ms),
            peak_rss_kib: rss_mib * 1024,
        }
    }

    fn subject(budget: f64) -> Subject {
        Subject {
            what: "thread/list all pages".into(),
            size: 1000,
            unit: "threads",
            layout: "legacy",
            reference: "0.171.0".into(),
            budget,
        }
    }

    #[test]
    fn medians_take_the_middle_and_ignore_one_outlier() {
        assert_eq!(median(vec![]), 0.0);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0]), 2.5);
        let m = Figures::of(&[
            usage(100, 50, 100),
            usage(5000, 50, 100),
            usage(110, 60, 120),
        ]);
        assert_eq!(m.wall_ms, 110.0);
        assert_eq!(m.cpu_ms, 50.0);
        assert_eq!(m.rss_mib, 100.0);
    }

    #[test]
    fn a_slower_candidate_is_over_budget_and_noise_below_the_floor_is_not() {
        let reference = [usage(400, 300, 150); 3];
        // Twice as slow on every metric, well above every floor.
        let slow = Measurement::new(&subject(1.5), &reference, &[usage(800, 600, 300); 3]);
        assert_eq!(slow.ratio.wall, 2.0);
        let over = slow.over_budget();
        assert_eq!(over.len(), 3, "{over:?}");
        assert!(
            over[0].contains("wall 2.00x the reference 0.171.0"),
            "{}",
            over[0]
        );
        assert!(over[0].contains("budget 1.5x"), "{}", over[0]);
        assert!(over[0].starts_with("thread/list all pages (1000 threads, legacy)"));
        // Within budget.
        let fine = Measurement::new(&subject(1.5), &reference, &[usage(550, 420, 200); 3]);
        assert!(fine.over_budget().is_empty());
        // Three times as slow, but 60 ms in all: below the floor.
        let tiny = Measurement::new(
            &subject(1.5),
            &[usage(30, 20, 100); 3],
            &[usage(90, 60, 120); 3],
        );
        assert_eq!(tiny.ratio.wall, 3.0);
        assert!(tiny.over_budget().is_empty(), "{:?}", tiny.over_budget());
        // Two of three runs slowed by a busy machine: the medians differ, the best runs do
        // not, so it is noise, not a regression.
        let noisy = Measurement::new(
            &subject(1.5),
            &reference,
            &[
                usage(400, 300, 150),
                usage(1300, 900, 150),
                usage(1200, 800, 150),
            ],
        );
        assert_eq!(noisy.ratio.wall, 3.0);
        assert_eq!(noisy.best_ratio(Metric::Wall), 1.0);
        assert!(noisy.over_budget().is_empty(), "{:?}", noisy.over_budget());
        assert_eq!(noisy.candidate_runs.len(), 3);
        assert_eq!(noisy.candidate_runs[1].wall_ms, 1300.0);
        // A reference that measured nothing gives ratio 1, never a division by zero.
        let zero = Measurement::new(&subject(1.5), &[usage(0, 0, 0)], &[usage(10, 0, 0)]);
        assert_eq!(zero.ratio.wall, 1.0);
    }

    #[test]
    fn growth_exponents_say_linear_and_quadratic() {
        assert_eq!(exponent(1000, 1.0, 10000, 10.0), 1.0);
        assert_eq!(exponent(1000, 1.0, 10000, 100.0), 2.0);
        assert_eq!(exponent(1000, 0.0, 10000, 100.0), 0.0);
        assert_eq!(exponent(1000, 1.0, 1000, 100.0), 0.0);
        let at = |size: u64, ms: u64| {
            Measurement::new(
                &Subject {
                    size,
                    ..subject(1.5)
                },
                &[usage(ms, ms, 100)],
                &[usage(ms * ms / 10, ms, 100)],
            )
        };
        let g = Growth::between(&at(1000, 10), &at(10000, 100));
        assert_eq!((g.reference_wall, g.wall, g.cpu), (1.0, 2.0, 1.0));
        assert!(g.summary().contains("wall ~ n^2"), "{}", g.summary());
    }

    #[tokio::test]
    async fn repetitions_interleave_abba_and_errors_stop_them() {
        let mut order = Vec::new();
        let (r, c) = interleaved(3, |side, rep| {
            order.push((side, rep));
            async move { Ok(usage(if side == Side::Reference { 1 } else { 2 }, 0, 0)) }
        })
        .await
        .unwrap();
        use Side::*;
        assert_eq!(
            order,
            [
                (Reference, 0),
                (Candidate, 0),
                (Candidate, 1),
                (Reference, 1),
                (Reference, 2),
                (Candidate, 2)
            ]
        );
        assert_eq!((r.len(), c.len()), (3, 3));
        assert!(c.iter().all(|u| u.wall == Duration::from_millis(2)));
        let failed = interleaved(3, |_, rep| async move {
            anyhow::ensure!(rep < 1, "repetition {rep} broke");
            Ok(Usage::default())
        })
        .await
        .unwrap_err();
        assert!(failed.to_string().contains("repetition 1 broke"));
    }

    #[tokio::test]
    async fn measuring_this_process_reads_its_cpu_and_memory() {
        let (u, v) = measure(Some(std::process::id()), async {
            let mut x = 0u64;
            for i in 0..20_000_000u64 {
                x = x.wrapping_add(i ^ (i >> 3));
            }
            Ok::<u64, anyhow::Error>(x)
        })
        .await
        .unwrap();
        assert!(v > 0);
        assert!(u.peak_rss_kib > 0);
        assert!(u.wall > Duration::ZERO);
        let (none, _) = measure(None, async { Ok::<(), ()>(()) }).await.unwrap();
        assert_eq!((none.cpu, none.peak_rss_kib), (Duration::ZERO, 0));
    }

    #[test]
    fn settings_scale_sizes_with_a_minimum_and_metrics_parse_by_name() {
        let s = PerfSettings {
            scale: 0.1,
            ..PerfSettings::default()
        };
        assert_eq!(s.scaled(10_000, 10), 1000);
        assert_eq!(s.scaled(50, 10), 10);
        assert_eq!(Metric::parse("cpu"), Some(Metric::Cpu));
        assert_eq!(Metric::parse("time"), None);
    }
}
