//! `codex-parity bisect`: the first published codex release in which one scenario's outcome
//! differs from its outcome on a good release, installing only the releases it probes.

use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;
use codex_parity::codex::install::{self, Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::bisect::{self, Bisection, Finding, Fingerprint, PerfKey};
use codex_parity::harness::perf::Metric;
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
            // Its --filter picks one scenario of all of them, group P's too.
            with_opt_in: true,
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
            Some(PerfKey::new(metric, args.perf_factor))
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
            println!(
                "         failed: {}",
                codex_parity::report::headline(failure)
            );
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
        Finding::Found(changes) => {
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
        Finding::NotMonotonic([a, b, c]) => {
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
        Finding::Unchanged => {
            println!(
                "\nno change: both ends have the same outcome ({}); if it changed and \
                 changed back in between, bisect a narrower range\n{footer}",
                result.probes[0].outcome.summary(VALUE_WIDTH)
            );
            ExitCode::from(1)
        }
    }
}
