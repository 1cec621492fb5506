//! `codex-parity bisect`: the first published codex release in which one scenario's outcome
//! differs from its outcome on a good release, installing only the releases it probes.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use codex_parity::codex::install::{self, Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::bisect::{self, Bisection, Fingerprint, Verdict};
use codex_parity::harness::perf::{self, Metric};
use codex_parity::harness::runner::Ran;
use codex_parity::harness::scenario::Scenario;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::plan::{Options, Plan, PlanBuilder};

use crate::cli::matrix::PerfArgs;
use crate::cli::sources::ScenarioSources;

/// How many characters of an observed value a probe line shows.
const VALUE_WIDTH: usize = 60;

/// The arguments of `bisect`.
#[derive(Debug, clap::Args)]
pub(crate) struct BisectArgs {
    /// The scenario: its name, a part of it or its catalogue id, as for `run --filter`; it
    /// must select exactly one (an exact name or id wins over partial matches).
    #[arg(long, value_name = "SCENARIO")]
    filter: String,
    /// A release with the old outcome, e.g. 0.161.0.
    #[arg(long, value_name = "VERSION")]
    good: String,
    /// A newer release with another outcome, e.g. 0.171.0.
    #[arg(long, value_name = "VERSION")]
    bad: String,
    /// Keep each probe's temporary directory (CODEX_HOME, workspace) and print where.
    #[arg(long)]
    keep: bool,
    /// Bisect on a measurement of a performance scenario (group P) instead of its outcome:
    /// `wall`, `cpu` or `rss`. A release is "slower" when its ratio to the reference (of
    /// its own probe, on its largest home) is more than --perf-factor times the good
    /// release's; the search finds the first slower one.
    #[arg(long, value_name = "METRIC", value_parser = ["wall", "cpu", "rss"])]
    perf_key: Option<String>,
    /// With --perf-key: how many times the good release's ratio makes a release slower.
    #[arg(
        long,
        value_name = "FACTOR",
        default_value_t = 2.0,
        requires = "perf_key"
    )]
    perf_factor: f64,
    /// Group P's settings for each probe.
    #[command(flatten)]
    perf: PerfArgs,
    /// Scenario files and extra baselines (the scenario may be one of the files).
    #[command(flatten)]
    sources: ScenarioSources,
}

impl BisectArgs {
    /// The plan's options: the scenario files, the extra baselines, `--keep`.
    pub(crate) fn options(&self) -> Options {
        Options {
            keep: self.keep,
            perf: self.perf.options(),
            ..self.sources.apply(Options::default())
        }
    }
}

/// `bisect`: 0 when the first changed release was found, 1 when there is no single change
/// (not monotonic, or the same outcome at both ends), 2 on errors.
pub(crate) async fn bisect(args: BisectArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    versions::check_version(&args.good).context("--good")?;
    versions::check_version(&args.bad).context("--bad")?;
    if args.good == args.bad {
        anyhow::bail!(
            "--good and --bad are both {}: name two different releases",
            args.good
        );
    }
    let builder = Plan::builder(args.options())?;
    let scenario = one_scenario(builder.scenarios().to_vec(), &args.filter)?;
    let platform = install::current_platform()?;
    eprintln!(
        "codex-parity: listing the releases of {} on npm",
        install::NPM_PACKAGE
    );
    let published = install::published_releases(platform).await?;
    let releases = bisect::between(&published, &args.good, &args.bad)
        .with_context(|| format!("--good {} --bad {}", args.good, args.bad))?;
    let steps = (releases.len() - 1).next_power_of_two().trailing_zeros();
    eprintln!(
        "codex-parity: bisecting {} ({}) over {} releases from {} to {}: both ends and at most \
         {steps} more probes (more if it changes twice)",
        scenario.name,
        scenario.id,
        releases.len(),
        args.good,
        args.bad
    );
    let cache = Cache::from_env()?;
    // Both ends are probed first and again compared against: never evicted by the cap.
    install::reserve(&cache, &[args.good.clone(), args.bad.clone()]);
    let perf_key = match &args.perf_key {
        Some(name) => {
            anyhow::ensure!(
                scenario.id.starts_with('P'),
                "--perf-key bisects a performance scenario (group P); {} ({}) measures nothing",
                scenario.name,
                scenario.id
            );
            anyhow::ensure!(
                args.perf_factor > 1.0,
                "--perf-factor {} is not above 1",
                args.perf_factor
            );
            let metric = Metric::parse(name).context("--perf-key")?;
            Some(PerfKey {
                metric,
                factor: args.perf_factor,
                good: std::cell::Cell::new(None),
            })
        }
        None => None,
    };
    let prober = Prober {
        scenario,
        builder,
        cache,
        sidecar: SidecarLauncher::current_exe()?,
        perf_key,
    };
    let count = std::cell::Cell::new(0);
    let result = bisect::bisect(&releases, |version| {
        count.set(count.get() + 1);
        prober.probe(version, count.get())
    })
    .await?;
    Ok(report(&result, started))
}

/// The one scenario `filter` selects: an exact name or id, else the only partial match.
fn one_scenario(all: Vec<Scenario>, filter: &str) -> anyhow::Result<Scenario> {
    let mut matching: Vec<Scenario> = all.into_iter().filter(|s| s.matches(filter)).collect();
    if let Some(exact) = matching
        .iter()
        .position(|s| s.name == filter || s.id == filter)
    {
        return Ok(matching.swap_remove(exact));
    }
    match matching.len() {
        1 => Ok(matching.remove(0)),
        0 => anyhow::bail!("no scenario matches --filter {filter}; `codex-parity list` shows them"),
        n => {
            let names: Vec<String> = matching
                .iter()
                .map(|s| format!("{} ({})", s.name, s.id))
                .collect();
            anyhow::bail!(
                "--filter {filter} selects {n} scenarios; bisect takes one: name it exactly, \
                 one of {}",
                names.join(", ")
            )
        }
    }
}

/// What one probe needs: the scenario, the plan each probe builds on its release, where
/// releases are installed, how worlds start their sidecar.
struct Prober {
    scenario: Scenario,
    builder: PlanBuilder,
    cache: Cache,
    sidecar: SidecarLauncher,
    perf_key: Option<PerfKey>,
}

/// A bisection on a measurement (`--perf-key`): the metric, the factor, and the good
/// release's ratio to the reference once probed (the first probe).
struct PerfKey {
    metric: Metric,
    factor: f64,
    good: std::cell::Cell<Option<f64>>,
}

impl PerfKey {
    /// The fingerprint of a probe by its measurement: `slower` when its ratio is more than
    /// the factor times the good release's, `as good` otherwise (the first probe, the good
    /// release, sets the mark); the text for the probe's line. A run that measured nothing
    /// keeps its outcome's fingerprint.
    fn classify(&self, ran: &Ran) -> (Fingerprint, String) {
        let Some(m) = ran.perf.measurements.iter().max_by_key(|m| m.size) else {
            return (Fingerprint::of(ran), "measured nothing".to_string());
        };
        let r = m.ratio.get(self.metric);
        let mark = self.good.get().unwrap_or(r);
        self.good.set(Some(mark));
        let step = perf::ratio(r, mark);
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

impl Prober {
    /// Installs `version` if needed, runs the scenario on it and prints the probe's line.
    async fn probe(&self, version: String, n: usize) -> anyhow::Result<Fingerprint> {
        let started = Instant::now();
        let binary = install::install(&self.cache, &version, &StderrProgress::new())
            .await
            .with_context(|| format!("installing codex {version} to probe it"))?;
        let installed = started.elapsed();
        let plan = self
            .builder
            .clone()
            .build(vec![binary], self.sidecar.clone())
            .await?;
        let target = plan
            .targets
            .first()
            .with_context(|| format!("no target prepared for codex {version}"))?;
        let ran = plan.run_one(&self.scenario, target).await;
        let (fingerprint, measured) = match &self.perf_key {
            Some(key) => {
                let (f, text) = key.classify(&ran);
                (f, format!(" {text}"))
            }
            None => (Fingerprint::of(&ran), String::new()),
        };
        println!(
            "probe {n}: {version:<9} {}{measured}  ({:.1} s run, {:.1} s install or cache)",
            fingerprint.summary(VALUE_WIDTH),
            ran.duration.as_secs_f64(),
            installed.as_secs_f64()
        );
        if let Some(failure) = &ran.failure {
            let first = failure.lines().next().unwrap_or_default();
            println!("         failed: {first}");
        }
        Ok(fingerprint)
    }
}

/// Prints the verdict; the exit status it calls for.
fn report(result: &Bisection<Fingerprint>, started: Instant) -> ExitCode {
    let probed: Vec<&str> = result.probes.iter().map(|p| p.version.as_str()).collect();
    let footer = format!(
        "{} probe(s) ({}) in {:.1} s",
        probed.len(),
        probed.join(", "),
        started.elapsed().as_secs_f64()
    );
    match &result.verdict {
        Verdict::Found(changes) => {
            let first = &changes[0];
            println!("\nfirst changed release: {}", first.after.version);
            println!("  {}: {}", first.before.version, first.before.outcome);
            println!("  {}: {}", first.after.version, first.after.outcome);
            for later in &changes[1..] {
                println!(
                    "then changed again in {} (after {}): {}",
                    later.after.version, later.before.version, later.after.outcome
                );
            }
            println!("{footer}");
            ExitCode::SUCCESS
        }
        Verdict::NotMonotonic([a, b, c]) => {
            println!(
                "\nnot monotonic: the outcome flips back between the ends: {} and {} agree, {} \
                 in between differs; bisect a narrower range",
                a.version, c.version, b.version
            );
            for p in [a, b, c] {
                println!("  {}: {}", p.version, p.outcome);
            }
            println!("{footer}");
            ExitCode::from(1)
        }
        Verdict::Unchanged => {
            println!(
                "\nno change: both ends have the same outcome ({}); if it changed and \
                 changed back in between, bisect a narrower range\n{footer}",
                result.probes[0].outcome.summary(VALUE_WIDTH)
            );
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_parity::harness::outcome::Outcome;
    use codex_parity::harness::perf::{Measurement, Perf, Subject, Usage};
    use std::time::Duration;

    /// A run that measured `small_ms` on 1,000 threads and `large_ms` on 10,000, against a
    /// reference at 100 ms on both.
    fn ran(small_ms: u64, large_ms: u64) -> Ran {
        let usage = |ms| Usage {
            wall: Duration::from_millis(ms),
            cpu: Duration::from_millis(ms),
            peak_rss_kib: 1024,
        };
        let at = |size, ms| {
            Measurement::new(
                &Subject {
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
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
            perf: Perf {
                measurements: vec![at(10_000, large_ms), at(1_000, small_ms)],
                growth: Vec::new(),
            },
        }
    }

    #[test]
    fn a_probe_is_slower_when_its_largest_home_is_over_the_factor_of_the_good_one() {
        let key = PerfKey {
            metric: Metric::Wall,
            factor: 2.0,
            good: std::cell::Cell::new(None),
        };
        // The good release sets the mark (1.5x the reference on 10,000 threads).
        let (good, text) = key.classify(&ran(100, 150));
        assert_eq!(good.status, "as good");
        assert!(text.contains("wall 1.50x the reference 0.171.0"), "{text}");
        // Twice as slow as the good one is not more than the factor; three times is, and the
        // smaller home does not count.
        assert_eq!(key.classify(&ran(900, 300)).0.status, "as good");
        let (slow, text) = key.classify(&ran(100, 451));
        assert_eq!(slow.status, "slower");
        assert!(text.contains("3.01x the good release's"), "{text}");
        // A run that measured nothing keeps its outcome.
        let mut failed = ran(100, 100);
        failed.perf = Perf::default();
        failed.failure = Some("no reference".into());
        failed.outcome = Outcome::Failed("no reference".into());
        assert_eq!(key.classify(&failed).0.status, "FAIL");
    }
}
