//! `codex-parity sweep`: the default catalogue on every stable release of a range, one
//! release at a time with the cache kept under a cap, each release's `results.json` kept in
//! `--out DIR/VERSION/`; then `codex-parity baselines audit` on them: today's baselines
//! judged against what every release did, and the table of `docs/releases.md`.
//!
//! Each release runs as a child `codex-parity run` (its own process, so a release that
//! crashes or hangs codex costs only its own cell), with `CODEX_PARITY_CACHE_MAX` set so
//! that each install evicts the least recently used releases. A release already in `--out`
//! is not run again: a sweep stopped half way goes on where it stopped. Kept results of
//! other scenarios (a sweep with another `--filter`) are not this sweep's: such a release is
//! swept again.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context;

use codex_parity::codex::install::{self, Cache};
use codex_parity::codex::versions;
use codex_parity::harness::baseline::Baselines;
use codex_parity::harness::expectations::Expectations;
use codex_parity::harness::pending;
use codex_parity::plan::{Options, Plan};
use codex_parity::report::{self, Matrix, audit, perf_table};

use crate::cli::matrix::PerfArgs;
use crate::cli::run::stop_signal;

/// The default cap of the cache during a sweep: a dozen releases.
const DEFAULT_CACHE_MAX: &str = "4G";

/// The scale of group P's homes in a sweep unless `--perf-scale` says otherwise (thousandths:
/// 100 and 1,000 threads, a rollout of 1,999 records): a minute a release, not several.
const SWEEP_SCALE_PERMILLE: u32 = 100;

/// The arguments of `sweep`.
#[derive(Debug, clap::Args)]
pub(crate) struct SweepArgs {
    /// The releases, A..B (both included; B may be `latest`); default: the oldest of the
    /// comparison set to the latest.
    #[arg(long, value_name = "A..B")]
    releases: Option<String>,
    /// Where each release's results go (DIR/VERSION/results.json, and the run's output in
    /// DIR/VERSION/run.log); releases already there are not run again, unless their results
    /// hold other scenarios (a sweep with another --filter).
    #[arg(long, value_name = "DIR")]
    out: PathBuf,
    /// Keep the codex cache under this size while sweeping (bytes, or with K, M, G, T).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_CACHE_MAX)]
    cache_max: String,
    /// Scenarios run at once in each release's run (default: as `run`).
    #[arg(long, value_name = "N", value_parser = crate::cli::matrix::at_least_one)]
    jobs: Option<usize>,
    /// Only the scenarios this selects, as `run --filter` (a group letter, an id, a name
    /// part): a new group swept on its own; the audit then judges those alone.
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Write the audit's table (docs/releases.md) to this file.
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Write the performance table of group P (docs/performance-releases.md) to this file: each
    /// release's ratios to the reference, growth exponents, the largest step between
    /// consecutive releases (sweep with --filter P).
    #[arg(long, value_name = "FILE")]
    perf_table: Option<PathBuf>,
    /// Group P's settings for each release's run (a sweep's default scale is 0.1).
    #[command(flatten)]
    perf: PerfArgs,
}

/// The arguments of `baselines audit`.
#[derive(Debug, clap::Args)]
pub(crate) struct AuditArgs {
    /// A sweep's output directory (`sweep --out DIR`: DIR/VERSION/results.json), or
    /// results.json files or directories of runs.
    #[arg(required = true, value_name = "DIR")]
    dirs: Vec<PathBuf>,
    /// Write the table (docs/releases.md) to this file.
    #[arg(long, value_name = "FILE")]
    table: Option<PathBuf>,
    /// Write the baselines as the sweep supports them to this file, for review: each
    /// entry's versions as the ranges where its drift was seen, each unlisted drift a new
    /// entry whose reason says TODO.
    #[arg(long, value_name = "FILE")]
    suggest: Option<PathBuf>,
    /// Write the performance table of group P (docs/performance-releases.md) to this file.
    #[arg(long, value_name = "FILE")]
    perf_table: Option<PathBuf>,
    /// Propose those baselines as a pending expectation (expected/baselines.json.pending in
    /// the checkout's fixtures, or --fixtures DIR) for `codex-parity review`.
    #[arg(long)]
    bless: bool,
}

pub(crate) async fn sweep(args: SweepArgs) -> anyhow::Result<ExitCode> {
    install::parse_size(&args.cache_max).context("--cache-max")?;
    let range = match &args.releases {
        Some(r) => r.clone(),
        None => {
            let set = versions::load()?;
            let oldest = set
                .compare
                .iter()
                .min_by_key(|v| versions::sort_key(v))
                .context("an empty comparison set")?;
            format!("{oldest}..latest")
        }
    };
    let (releases, published) = install::releases_in(&range, install::current_platform()?).await?;
    let exe = std::env::current_exe().context("finding this codex-parity executable")?;
    let cache = Cache::from_env()?;
    let stop = stop_signal()?;
    tokio::pin!(stop);
    eprintln!(
        "codex-parity: sweeping {} release(s), {} to {}, into {} (cache kept under {})",
        releases.len(),
        releases.first().map_or("", String::as_str),
        releases.last().map_or("", String::as_str),
        args.out.display(),
        args.cache_max
    );
    let selected = selected_scenarios(args.filter.as_deref())?;
    let started = Instant::now();
    let mut peak_cache = 0u64;
    for (i, version) in releases.iter().enumerate() {
        let dir = args.out.join(version);
        let n = format!("[{}/{}]", i + 1, releases.len());
        if dir.join(report::FILES[0]).is_file() {
            match kept_elsewise(&dir, &selected) {
                None => {
                    eprintln!("sweep {n} {version}: already swept ({})", dir.display());
                    continue;
                }
                Some(why) => eprintln!("sweep {n} {version}: swept again: {why}"),
            }
        }
        // The log is kept beside the release's report while it runs (the report directory
        // is the run's own, `--replace-report` emptying what a stopped sweep left there) and
        // moved into it at the end.
        std::fs::create_dir_all(&args.out)
            .with_context(|| format!("creating {}", args.out.display()))?;
        let running_log = args.out.join(format!(".{version}.run.log"));
        let log = dir.join("run.log");
        let log_file = std::fs::File::create(&running_log)
            .with_context(|| format!("creating {}", running_log.display()))?;
        let mut cmd = tokio::process::Command::new(&exe);
        cmd.arg("run")
            .args(["--codex-version", version])
            .arg("--report")
            .arg(&dir)
            .arg("--replace-report")
            .env(install::CACHE_MAX_ENV, &args.cache_max)
            .stdin(std::process::Stdio::null())
            .stdout(log_file.try_clone().context("sharing the log file")?)
            .stderr(log_file);
        if let Some(filter) = &args.filter {
            cmd.args(["--filter", filter]);
        }
        if let Some(jobs) = args.jobs {
            cmd.args(["--jobs", &jobs.to_string()]);
        }
        let mut perf = args.perf.clone();
        perf.perf_scale = perf.perf_scale.or(Some(SWEEP_SCALE_PERMILLE));
        cmd.args(perf.to_args());
        if let Expectations::Dir(fixtures) = Expectations::current()? {
            cmd.arg("--fixtures").arg(fixtures);
        }
        let one = Instant::now();
        let mut child = cmd.spawn().context("starting codex-parity run")?;
        let status = tokio::select! {
            status = child.wait() => status.context("waiting for codex-parity run")?,
            code = &mut stop => {
                // The child cleans up its worlds on SIGTERM; wait for it, then stop.
                if let Some(pid) = child.id().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
                }
                let _ = child.wait().await;
                eprintln!("codex-parity: sweep stopped at {version}; its partial results were not kept");
                let _ = std::fs::remove_dir_all(&dir);
                let _ = std::fs::remove_file(&running_log);
                return Ok(ExitCode::from(code));
            }
        };
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        std::fs::rename(&running_log, &log)
            .with_context(|| format!("moving {} into {}", running_log.display(), dir.display()))?;
        let cached: u64 = install::cached_releases(&cache)?
            .iter()
            .map(|r| r.bytes)
            .sum();
        peak_cache = peak_cache.max(cached);
        let summary = match report::read_dir(&dir) {
            Ok(m) => counts(&m),
            Err(_) => {
                let tail = tail_of(&log);
                let _ = std::fs::remove_dir_all(&dir);
                anyhow::bail!(
                    "codex-parity run on {version} wrote no results ({status}); the end of its output:\n{tail}"
                );
            }
        };
        eprintln!(
            "sweep {n} {version}: {summary} ({:.0} s; cache {:.1} GB)",
            one.elapsed().as_secs_f64(),
            cached as f64 / 1e9
        );
    }
    eprintln!(
        "codex-parity: swept {} release(s) in {:.0} s; the cache peaked at {:.1} GB",
        releases.len(),
        started.elapsed().as_secs_f64(),
        peak_cache as f64 / 1e9
    );
    let dirs: Vec<PathBuf> = releases.iter().map(|v| args.out.join(v)).collect();
    audit_dirs(
        &dirs,
        &published,
        Tables {
            releases: args.table.as_deref(),
            perf: args.perf_table.as_deref(),
        },
        None,
        false,
        &args.out,
    )
}

pub(crate) async fn baselines_audit(args: AuditArgs) -> anyhow::Result<ExitCode> {
    let dirs = expand(&args.dirs)?;
    let published = match install::published_releases(install::current_platform()?).await {
        Ok(p) => p,
        Err(e) => {
            eprintln!(
                "codex-parity: cannot list the published releases ({e:#}); checking ranges \
                 against the swept releases only"
            );
            Vec::new()
        }
    };
    let shown = args.dirs.first().cloned().unwrap_or_default();
    audit_dirs(
        &dirs,
        &published,
        Tables {
            releases: args.table.as_deref(),
            perf: args.perf_table.as_deref(),
        },
        args.suggest.as_deref(),
        args.bless,
        &shown,
    )
}

/// The names of the scenarios a sweep with `filter` runs on each release.
fn selected_scenarios(filter: Option<&str>) -> anyhow::Result<BTreeSet<String>> {
    let options = Options {
        filter: filter.map(str::to_string),
        ..Options::default()
    };
    let builder = Plan::builder(options)?;
    Ok(builder
        .scenarios()
        .iter()
        .map(|s| s.name.to_string())
        .collect())
}

/// Why the results kept in `dir` are not this sweep's (`None`: they are): another
/// `--filter`, or another catalogue, ran there. Such a release is swept again rather than
/// audited with scenarios missing or foreign.
fn kept_elsewise(dir: &Path, selected: &BTreeSet<String>) -> Option<String> {
    let kept: BTreeSet<String> = match report::read_dir(dir) {
        Ok(m) => m.rows.into_iter().map(|r| r.name).collect(),
        Err(e) => return Some(format!("its results cannot be read ({e:#})")),
    };
    if &kept == selected {
        return None;
    }
    let missing = selected.difference(&kept).count();
    let extra = kept.difference(selected).count();
    Some(format!(
        "its results hold {} scenario(s), this sweep runs {} ({missing} missing there, {extra} \
         not run here: another --filter or catalogue)",
        kept.len(),
        selected.len()
    ))
}

/// A sweep directory stands for its VERSION sub-directories; anything else for itself.
fn expand(dirs: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for d in dirs {
        if d.is_dir() && !d.join(report::FILES[0]).exists() {
            let mut subs: Vec<PathBuf> = std::fs::read_dir(d)
                .with_context(|| format!("listing {}", d.display()))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.join(report::FILES[0]).is_file())
                .collect();
            anyhow::ensure!(
                !subs.is_empty(),
                "{} holds no results.json, directly or in a sub-directory",
                d.display()
            );
            subs.sort();
            out.extend(subs);
        } else {
            out.push(d.clone());
        }
    }
    Ok(out)
}

/// The tables an audit writes.
struct Tables<'a> {
    /// docs/releases.md.
    releases: Option<&'a Path>,
    /// docs/performance.md.
    perf: Option<&'a Path>,
}

/// Audits the results in `dirs` (see [`audit::audit`]), prints it, writes the tables; exit 0
/// when nothing was found and no cell fails, 1 otherwise.
fn audit_dirs(
    dirs: &[PathBuf],
    published: &[String],
    tables: Tables<'_>,
    suggest: Option<&Path>,
    bless: bool,
    shown: &Path,
) -> anyhow::Result<ExitCode> {
    let parts = dirs
        .iter()
        .map(|d| report::read_dir(d))
        .collect::<anyhow::Result<Vec<Matrix>>>()?;
    let matrix = Matrix::merge(parts)?;
    let baselines = Baselines::builtin()?;
    let swept: Vec<String> = matrix.columns.iter().map(|c| c.version.clone()).collect();
    let published = if published.is_empty() {
        &swept[..]
    } else {
        published
    };
    let names: Vec<String> = codex_parity::scenarios::registry::registry()
        .iter()
        .map(|s| s.name.to_string())
        .collect();
    let found = audit::audit(&matrix, &baselines, published, &names)?;
    println!("release    passed  drift  contra  failed  n/a");
    for (v, t) in &found.counts {
        println!(
            "{v:<10} {:>6} {:>6} {:>7} {:>7} {:>4}",
            t.passed, t.drift, t.contradicts, t.failed, t.not_applicable
        );
    }
    for (v, s, why) in &found.failures {
        println!("FAIL {s}[codex-{v}]: {why}");
    }
    for f in &found.findings {
        println!("{f}");
    }
    let failed: usize = found.counts.iter().map(|(_, t)| t.failed).sum();
    println!(
        "audit of {} ({}): {} release(s), {failed} failing cell(s), {} finding(s)",
        baselines.source,
        expectations_note(),
        found.counts.len(),
        found.findings.len()
    );
    if let Some(path) = tables.releases {
        let command = format!(
            "codex-parity baselines audit {} --table {}",
            shown.display(),
            path.display()
        );
        std::fs::write(path, audit::table(&found, &command))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let steps = perf_table::steps(&matrix);
    if !steps.is_empty() {
        println!("largest step between consecutive releases, per measurement and metric:");
        for s in &steps {
            println!(
                "  {:<10} {:<5} {} -> {}: {:.2}x  ({})",
                s.column,
                s.metric.name(),
                s.from,
                s.to,
                s.step,
                s.label
            );
        }
    }
    if let Some(path) = tables.perf {
        let command = format!(
            "codex-parity baselines audit {} --perf-table {}",
            shown.display(),
            path.display()
        );
        std::fs::write(path, perf_table::table(&matrix, &command))
            .with_context(|| format!("writing {}", path.display()))?;
        println!("wrote {}", path.display());
    }
    if suggest.is_some() || bless {
        let file = serde_json::json!({ "expected": audit::suggest(&found, &baselines) });
        let text = serde_json::to_string_pretty(&file).context("serialising the baselines")? + "\n";
        if let Some(path) = suggest {
            std::fs::write(path, &text).with_context(|| format!("writing {}", path.display()))?;
            println!(
                "wrote {} (review each range and TODO reason)",
                path.display()
            );
        }
        if bless {
            let accepted = Expectations::current()?
                .bless_dir()?
                .join(codex_parity::harness::baseline::RELATIVE_PATH);
            match pending::propose(&accepted, &text)? {
                Some(p) => println!(
                    "proposed {} (pending: `codex-parity review` shows it, `--accept` takes it)",
                    p.display()
                ),
                None => println!("{} already holds these baselines", accepted.display()),
            }
        }
    }
    Ok(if failed == 0 && found.findings.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn expectations_note() -> String {
    Expectations::current()
        .map(|e| e.describe())
        .unwrap_or_else(|e| format!("{e:#}"))
}

/// `P passed, D drift, C contradicts, F failed, N n/a` of a one-release matrix.
fn counts(m: &Matrix) -> String {
    let label = m.columns.first().map_or("", |c| c.label.as_str());
    let t = m.totals(label);
    format!(
        "{} passed, {} drift, {} contradicts, {} failed, {} n/a",
        t.passed, t.drift, t.contradicts, t.failed, t.not_applicable
    )
}

/// The last lines of a log file.
fn tail_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}
