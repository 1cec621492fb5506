//! What `run` and `bench` share: which binaries and scenarios make the matrix, how many
//! run at once, and the settings of a run.

use std::path::PathBuf;

use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{self, Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::plan::{Options, PerfOptions};

use crate::cli::sources::ScenarioSources;

/// What `run` and `bench` share: the binaries and the scenarios of the matrix, and how
/// many run at once.
#[derive(Debug, clap::Args)]
pub(crate) struct MatrixArgs {
    /// A codex binary to test (repeatable); with --codex-version or --compare, tested
    /// beside those versions. Wins over CODEX_TEST_BINS.
    #[arg(long = "codex-bin", value_name = "PATH")]
    pub(crate) codex_bin: Vec<PathBuf>,
    /// A codex version to install from npm and test (repeatable); `latest` is the release
    /// npm's latest dist-tag points at (for a scheduled job against each new release).
    #[arg(long = "codex-version", value_name = "VERSION")]
    pub(crate) codex_version: Vec<String>,
    /// Test the whole comparison set of fixtures/codex-versions.json.
    #[arg(long)]
    pub(crate) compare: bool,
    /// Test the sample of releases between the comparison versions
    /// (fixtures/codex-versions.json `sample`; CI runs it beside --compare).
    #[arg(long)]
    pub(crate) sample: bool,
    /// Sweep: test every stable release from A to B (both included) as npm lists them,
    /// e.g. 0.161.0..0.171.0; installs each on first use (see `install --prune` and
    /// CODEX_PARITY_CACHE_MAX to bound the cache).
    #[arg(long, value_name = "A..B")]
    pub(crate) releases: Option<String>,
    /// With --releases: only every Nth release, from A on (B always included).
    #[arg(long, value_name = "N", requires = "releases", value_parser = at_least_one)]
    pub(crate) every: Option<usize>,
    /// Run only scenarios whose name contains this text or whose catalogue id it names
    /// (`--filter A` runs group A, `--filter E1` E1 but not E15, `--filter E11` E11a-e);
    /// several, comma-separated, run what any of them selects (`--filter H8,H17,I`).
    #[arg(long, value_name = "TEXT")]
    pub(crate) filter: Option<String>,
    /// Scenario files and extra baselines.
    #[command(flatten)]
    pub(crate) sources: ScenarioSources,
    /// Scenarios run at once (default: four per core, as memory allows at 400 MB a world).
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub(crate) jobs: Option<usize>,
    /// How long one JSON-RPC call to codex may take before the scenario fails (default
    /// 20); more on a machine so loaded that codex answers late.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) call_timeout_secs: Option<u64>,
    /// The performance scenarios' settings.
    #[command(flatten)]
    pub(crate) perf: PerfArgs,
}

/// The settings of the performance scenarios (group P, `--filter P`).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct PerfArgs {
    /// The binary group P holds every measurement against, measured in the same run: a
    /// version (installed from npm) or a path to a codex binary. Default: the pinned
    /// version.
    #[arg(long, value_name = "VERSION|PATH")]
    pub(crate) perf_reference: Option<String>,
    /// Repetitions of each binary per measurement, interleaved with the reference's; the
    /// medians are judged (default 3).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=50))]
    pub(crate) perf_reps: Option<u32>,
    /// The size of group P's homes as a multiple of the catalogue's (1: 1,000 and 10,000
    /// threads, a rollout of 20,000 records; 0.1 for a quick look, a sweep's default).
    #[arg(long, value_name = "FACTOR", value_parser = parse_scale)]
    pub(crate) perf_scale: Option<u32>,
}

impl PerfArgs {
    /// The plan's performance options.
    pub(crate) fn options(&self) -> PerfOptions {
        PerfOptions {
            reference: self.perf_reference.clone(),
            repetitions: self.perf_reps.map(|n| n as usize),
            scale_permille: self.perf_scale,
        }
    }

    /// The same settings as arguments, for a child `codex-parity run` (a sweep's).
    pub(crate) fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(r) = &self.perf_reference {
            args.extend(["--perf-reference".to_string(), r.clone()]);
        }
        if let Some(n) = self.perf_reps {
            args.extend(["--perf-reps".to_string(), n.to_string()]);
        }
        if let Some(s) = self.perf_scale {
            args.extend([
                "--perf-scale".to_string(),
                format!("{}", f64::from(s) / 1000.0),
            ]);
        }
        args
    }
}

/// `--perf-scale FACTOR`: a number from 0.001 to 100, kept in thousandths.
fn parse_scale(text: &str) -> Result<u32, String> {
    let f: f64 = text
        .parse()
        .map_err(|_| format!("{text:?} is not a number (e.g. 1, 0.1)"))?;
    if !(0.001..=100.0).contains(&f) {
        return Err(format!("{text} is outside 0.001..100"));
    }
    Ok((f * 1000.0).round() as u32)
}

/// A count of at least 1 (`--jobs 0` would run nothing, or one at a time, unsaid).
pub(crate) fn at_least_one(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{e} (a whole number, at least 1)")),
    }
}

impl MatrixArgs {
    /// The plan's options these arguments set (scenarios, filter, baselines, jobs).
    pub(crate) fn options(&self) -> Options {
        Options {
            filter: self.filter.clone(),
            jobs: self.jobs,
            call_timeout: self.call_timeout_secs.map(std::time::Duration::from_secs),
            perf: self.perf.options(),
            ..self.sources.apply(Options::default())
        }
    }

    /// Whether the binaries are a sweep over releases.
    pub(crate) fn is_sweep(&self) -> bool {
        self.releases.is_some()
    }
}

/// The binaries of a run: the named versions (`--codex-version`, `--compare`) and the
/// `--codex-bin` paths, both when both are given; else `CODEX_TEST_BINS` or the pinned
/// version. Results are named by version, so two binaries of one version are refused.
pub(crate) async fn binaries_for(args: &MatrixArgs) -> anyhow::Result<Vec<CodexBinary>> {
    let mut versions_wanted = args.codex_version.clone();
    versions_wanted.extend(versions::load()?.chosen(args.compare, args.sample));
    if let Some(range) = &args.releases {
        versions_wanted.extend(sweep(range, args.every.unwrap_or(1)).await?);
    }
    let request = binaries::BinaryRequest {
        paths: args.codex_bin.clone(),
        versions: versions_wanted,
        env: std::env::var_os(binaries::CODEX_TEST_BINS),
    };
    let cache = Cache::from_env()?;
    install::reserve(&cache, &request.versions);
    binaries::resolve_request(&request, &cache, &StderrProgress::new()).await
}

/// The releases of a sweep: every `every`-th stable release of the range `A..B` on npm.
async fn sweep(range: &str, every: usize) -> anyhow::Result<Vec<String>> {
    let (all, _) = install::releases_in(range, install::current_platform()?).await?;
    let picked = install::every_nth(&all, every);
    eprintln!(
        "codex-parity: sweeping {} of the {} releases from {} to {}: {}",
        picked.len(),
        all.len(),
        all.first().map_or("", String::as_str),
        all.last().map_or("", String::as_str),
        picked.join(", ")
    );
    Ok(picked)
}
