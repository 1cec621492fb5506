//! The `codex-parity` command: run the parity scenarios against real codex binaries,
//! install codex versions, list scenarios, or serve as the sidecar.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::schema::Schema;
use codex_parity::codex::schema_diff;
use codex_parity::codex::versions;
use codex_parity::harness::baseline::Baseline;
use codex_parity::harness::runner::{self, Record};
use codex_parity::harness::scenario;
use codex_parity::harness::shard::Shard;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::Settings;
use codex_parity::report::{self, Matrix, terminal};

/// Does Codex X still behave the way your integration relies on? codex-parity runs parity
/// scenarios against the real `codex app-server`, offline, with a mock Responses API.
#[derive(Debug, Parser)]
#[command(name = "codex-parity", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the parity scenarios (on the pinned codex version when no binary is named).
    ///
    /// Examples:
    ///   codex-parity run                              # pinned version, installed on demand
    ///   codex-parity run --codex-version 0.161.0      # another version from npm
    ///   codex-parity run --compare                    # the whole comparison set
    ///   codex-parity run --codex-bin ./codex --filter streaming
    ///   codex-parity run --compare --report out     # also write out/{results.json,junit.xml,report.md,report.html}
    ///   codex-parity run --compare --shard 2/3 --report out2   # a third of the work, for split CI
    ///   codex-parity run --compare --request-diff     # and what changed in the requests
    ///   codex-parity run --compare --bless --filter request_shape  # rewrite golden requests (review first)
    ///
    /// Exit status: 0 when every applicable scenario passed, 1 when any failed, 2 on a
    /// usage or install error, 130 when stopped by Ctrl-C (SIGINT) and 143 by SIGTERM: the
    /// running scenarios are cancelled, their codex and sidecar processes killed and their
    /// directories removed before it exits.
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Download codex versions from npm into the cache (fetched once, reused after).
    ///
    /// The cache is $CODEX_PARITY_CACHE, else $XDG_CACHE_HOME/codex-parity/codex, else
    /// ~/.cache/codex-parity/codex. Needs `npm` on PATH.
    Install {
        /// Versions such as 0.171.0 (default: the pinned version).
        versions: Vec<String>,
        /// Also install the whole comparison set of fixtures/codex-versions.json.
        #[arg(long)]
        compare: bool,
    },
    /// Join the results.json files of several runs into one matrix (the shards of a split
    /// run, or runs on different binaries), print it, and optionally write the reports.
    ///
    /// Example: codex-parity merge shard-1 shard-2 shard-3 --report merged
    ///
    /// Exit status: 0 when every applicable scenario passed, 1 when any failed, 2 when the
    /// files cannot be read or joined (a shard missing or given twice, a cell in two files).
    #[command(verbatim_doc_comment)]
    Merge {
        /// Directories holding a results.json (or results.json files).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Write results.json, junit.xml, report.md and report.html of the joined matrix here.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// List the scenarios with their catalogue ids.
    List,
    /// Measure what the harness costs and how it holds up (numbers, not pass/fail).
    ///
    /// Pick any of the measures; with none, --overhead and --suite run:
    ///   --overhead  median world set-up and teardown (ours) against codex spawn->initialize
    ///   --suite     wall time of the suite on each binary alone, then on all of them
    ///               together, with --jobs (how it grows from 1 to N versions)
    ///   --soak      --turns consecutive turns on one thread, then --threads threads running
    ///               turns at once in one app-server, against one sidecar: every request
    ///               captured once (none lost or duplicated), sidecar memory sampled
    ///   --load      the sidecar (capture on) under HTTP load from --clients keep-alive
    ///               clients, against a bare hyper server sending the same SSE body;
    ///               requests/s, p50/p99 latency and their ratio (no codex needed)
    ///
    /// Measures that need codex use the first binary; --suite uses all of them. Exit
    /// status: 0, or 1 when a soak check or a suite scenario failed, 2 on errors.
    ///
    /// Examples:
    ///   codex-parity bench --runs 10 --codex-version 0.171.0
    ///   codex-parity bench --suite --jobs 2 --codex-version 0.131.0 --codex-version 0.171.0
    ///   codex-parity bench --soak --turns 500 --threads 50 --codex-bin ./codex
    ///   codex-parity bench --load --requests 20000 --clients 8
    #[command(verbatim_doc_comment)]
    Bench(BenchArgs),
    /// Show what changed in the app-server protocol between two codex versions.
    ///
    /// Runs `codex app-server generate-json-schema --experimental` for A and B and reports
    /// client requests, server requests and notifications added and removed, named types
    /// added and removed, and for each type both have: fields added, removed, changed in
    /// type or in being required, enum values added or removed, and union variants added,
    /// removed or changed (an object that became a tagged union is compared with each new
    /// variant). Lines start with `-` removed, `+` added, `~` changed.
    ///
    /// A and B are versions (installed from npm into the cache on first use, like
    /// `install`) or paths to codex binaries.
    ///
    /// Examples:
    ///   codex-parity schema-diff 0.131.0 0.171.0
    ///   codex-parity schema-diff 0.161.0 ./target/codex             # a local build
    ///   codex-parity schema-diff 0.131.0 0.171.0 --json | jq '.changed_types[] | select(.name == "ThreadGoalStatus")'
    ///
    /// Reading the report (an excerpt of 0.131.0 -> 0.171.0):
    ///   client requests: +87 -2
    ///     - thread/rollback                          gone: calls to it now fail
    ///   changed types: 130
    ///     DynamicToolSpec: object -> union tagged by `type`
    ///       + variant function (fields compared with the former object)
    ///           - field namespace: string|null
    ///           + field type: "function" (required)
    ///     ThreadGoalStatus
    ///       + value blocked                          a value your client may now receive
    ///
    /// Exit status: 0 when both schemas were read (drift is not an error), 2 on a usage
    /// or install error.
    #[command(verbatim_doc_comment)]
    SchemaDiff {
        /// The older codex: a version such as 0.131.0, or a path to a codex binary.
        #[arg(value_name = "A")]
        from: String,
        /// The newer codex: a version such as 0.171.0, or a path to a codex binary.
        #[arg(value_name = "B")]
        to: String,
        /// Print the diff as JSON (fields `client_requests`, `server_requests`,
        /// `notifications`, `client_notifications`, `types`: {added, removed}; and
        /// `changed_types`: [{name, kind?, values, fields, variants}]).
        #[arg(long)]
        json: bool,
    },
    /// Run the mock Responses API sidecar (same as `codex-parity-sidecar`).
    #[command(disable_help_flag = true)]
    Sidecar {
        /// Arguments for the sidecar (see `codex-parity sidecar --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

#[derive(Debug, clap::Args)]
struct BenchArgs {
    /// Our overhead per world against codex start-up.
    #[arg(long)]
    overhead: bool,
    /// Suite wall time per binary and on all binaries.
    #[arg(long)]
    suite: bool,
    /// Soak one app-server and one sidecar.
    #[arg(long)]
    soak: bool,
    /// The sidecar under HTTP load against a bare server.
    #[arg(long)]
    load: bool,
    /// --overhead: empty worlds to measure (median reported).
    #[arg(long, default_value_t = 10)]
    runs: usize,
    /// --soak: consecutive turns on one thread.
    #[arg(long, default_value_t = 500)]
    turns: usize,
    /// --soak: threads running turns at once in one app-server.
    #[arg(long, default_value_t = 50)]
    threads: usize,
    /// --load: requests sent to each server.
    #[arg(long, default_value_t = 20_000)]
    requests: usize,
    /// --load: concurrent keep-alive connections.
    #[arg(long, default_value_t = 8)]
    clients: usize,
    #[command(flatten)]
    matrix: MatrixArgs,
}

/// What `run` and `bench` share: the binaries and the scenarios of the matrix, and how
/// many run at once.
#[derive(Debug, clap::Args)]
struct MatrixArgs {
    /// A codex binary to test (repeatable); with --codex-version or --compare, tested
    /// beside those versions. Wins over CODEX_TEST_BINS.
    #[arg(long = "codex-bin", value_name = "PATH")]
    codex_bin: Vec<PathBuf>,
    /// A codex version to install from npm and test (repeatable).
    #[arg(long = "codex-version", value_name = "VERSION")]
    codex_version: Vec<String>,
    /// Test the whole comparison set of fixtures/codex-versions.json.
    #[arg(long)]
    compare: bool,
    /// Run only scenarios whose name contains this text or whose catalogue id it names
    /// (`--filter A` runs group A, `--filter E1` E1 but not E15, `--filter E11` E11a-e).
    #[arg(long, value_name = "TEXT")]
    filter: Option<String>,
    /// Scenarios run at once (default: the number of cores).
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
}

impl MatrixArgs {
    /// `--jobs`, else the number of cores.
    fn jobs(&self) -> usize {
        self.jobs
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
    }

    /// The scenarios `--filter` selects (all without it); an error when it selects none.
    fn scenarios(&self) -> anyhow::Result<Vec<scenario::Scenario>> {
        let mut scenarios = scenario::registry();
        if let Some(f) = &self.filter {
            scenarios.retain(|s| s.matches(f));
            if scenarios.is_empty() {
                anyhow::bail!("no scenario matches --filter {f}; `codex-parity list` shows them");
            }
        }
        Ok(scenarios)
    }
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    #[command(flatten)]
    matrix: MatrixArgs,
    /// Keep each scenario's temporary directory (CODEX_HOME, workspace) and print where.
    #[arg(long)]
    keep: bool,
    /// Write results.json, junit.xml, report.md and report.html into this directory.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// Run only share K of N of the (scenario, binary) cells, chosen by a stable hash of
    /// each cell, so N CI machines can split the matrix; `merge` joins their results.
    #[arg(long, value_name = "K/N")]
    shard: Option<Shard>,
    /// After the matrix, show per scenario what changed in the model requests from each
    /// version to the next, oldest first (needs two or more binaries, e.g. --compare).
    #[arg(long)]
    request_diff: bool,
    /// Rewrite the golden request files (fixtures/golden/VERSION/SCENARIO.json) of the
    /// scenarios that have them, from this run, for each binary on which they passed.
    /// Golden checks are skipped during the run. Review the diff first.
    #[arg(long)]
    bless: bool,
    /// Fail any drift, even drift the baselines list (fixtures/expected/baselines.json).
    #[arg(long)]
    strict: bool,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Sidecar { args } => {
            let mut argv = vec![std::ffi::OsString::from("codex-parity sidecar")];
            argv.extend(args);
            let code = codex_parity_sidecar::cli::main_with_args(argv);
            ExitCode::from(u8::try_from(code).unwrap_or(1))
        }
        Command::List => {
            for s in scenario::registry() {
                println!("{:<5} {:<50} {}", s.id, s.name, s.summary);
            }
            ExitCode::SUCCESS
        }
        Command::Install { versions, compare } => with_runtime(install_versions(versions, compare)),
        Command::Merge { dirs, report } => with_runtime(merge(dirs, report)),
        Command::Run(args) => with_runtime(run(args)),
        Command::Bench(args) => with_runtime(bench(args)),
        Command::SchemaDiff { from, to, json } => with_runtime(schema_diff(from, to, json)),
    }
}

fn with_runtime(fut: impl std::future::Future<Output = anyhow::Result<ExitCode>>) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codex-parity: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    match runtime.block_on(fut) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("codex-parity: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

async fn install_versions(mut wanted: Vec<String>, compare: bool) -> anyhow::Result<ExitCode> {
    if compare {
        wanted.extend(versions::load()?.compare);
    }
    if wanted.is_empty() {
        wanted.push(versions::load()?.pinned);
    }
    let source = binaries::BinarySource::Versions(wanted);
    for binary in binaries::resolve(source, &Cache::from_env()?, &StderrProgress::new()).await? {
        println!("{} {}", binary.label(), binary.path.display());
    }
    Ok(ExitCode::SUCCESS)
}

async fn schema_diff(from: String, to: String, json: bool) -> anyhow::Result<ExitCode> {
    let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
    let (a, old) = experimental_schema(&from, &cache, &progress).await?;
    let (b, new) = experimental_schema(&to, &cache, &progress).await?;
    let diff = schema_diff::diff(&a, &old, &b, &new);
    if json {
        println!("{}", serde_json::to_string_pretty(&diff)?);
    } else {
        print!("{}", diff.to_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// The label and `--experimental` schema of the codex `spec` names (a version or a path).
async fn experimental_schema(
    spec: &str,
    cache: &Cache,
    progress: &StderrProgress,
) -> anyhow::Result<(String, Schema)> {
    let binary = binaries::resolve_spec(spec, cache, progress).await?;
    Ok((binary.label(), Schema::generate(&binary, true).await?))
}

/// The binaries of a run: the named versions (`--codex-version`, `--compare`) and the
/// `--codex-bin` paths, both when both are given; else `CODEX_TEST_BINS` or the pinned
/// version. Results are named by version, so two binaries of one version are refused.
async fn binaries_for(args: &MatrixArgs) -> anyhow::Result<Vec<CodexBinary>> {
    let progress = StderrProgress::new();
    let cache = Cache::from_env()?;
    let mut wanted = args.codex_version.clone();
    if args.compare {
        wanted.extend(versions::load()?.compare);
    }
    let mut found = Vec::new();
    if !wanted.is_empty() {
        let source = binaries::BinarySource::Versions(wanted.clone());
        found.extend(binaries::resolve(source, &cache, &progress).await?);
    }
    if wanted.is_empty() || !args.codex_bin.is_empty() {
        let env = std::env::var_os(binaries::CODEX_TEST_BINS);
        let source = binaries::choose_sources(&args.codex_bin, env)?;
        found.extend(binaries::resolve(source, &cache, &progress).await?);
    }
    let mut unique: Vec<CodexBinary> = Vec::new();
    for b in found {
        if let Some(first) = unique.iter().find(|u| u.version == b.version) {
            if same_file(&first.path, &b.path) {
                continue;
            }
            anyhow::bail!(
                "{} and {} both report codex {}: results are named by version, so test them in separate runs",
                first.path.display(),
                b.path.display(),
                b.version
            );
        }
        unique.push(b);
    }
    Ok(unique)
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The first of SIGINT (Ctrl-C) or SIGTERM, as the exit status it calls for (130, 143).
/// The handlers are installed when this is called, so no signal between then and the
/// first poll is lost or takes the default action.
fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = u8>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int = signal(SignalKind::interrupt()).context("handling SIGINT")?;
    let mut term = signal(SignalKind::terminate()).context("handling SIGTERM")?;
    Ok(async move {
        tokio::select! {
            _ = int.recv() => 130,
            _ = term.recv() => 143,
        }
    })
}

async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let stop = stop_signal()?;
    tokio::pin!(stop);
    let prepared = tokio::select! {
        prepared = prepare_run(&args) => prepared?,
        code = &mut stop => {
            eprintln!("codex-parity: interrupted while preparing the binaries; nothing was run");
            return Ok(ExitCode::from(code));
        }
    };
    let (targets, scenarios) = prepared;
    let jobs = args.matrix.jobs();
    let settings = Arc::new(settings(args.keep, args.bless)?);
    let shard = args.shard.unwrap_or(Shard::ALL);
    let planned = runner::planned(&targets, &scenarios, shard);
    let labels: Vec<String> = targets.iter().map(|t| t.binary.label()).collect();
    let per_label = labels.iter().map(|l| {
        let n = planned
            .iter()
            .filter(|(t, _)| t.binary.label() == *l)
            .count();
        (l.as_str(), n)
    });
    let progress = terminal::Progress::new(per_label);
    eprintln!(
        "codex-parity: {} scenario(s) on {} ({} runs{}, {jobs} at once)",
        scenarios.len(),
        labels.join(", "),
        planned.len(),
        args.shard
            .map(|s| format!(" in shard {s}"))
            .unwrap_or_default()
    );
    let on_done = Arc::new(move |r: &Record| eprintln!("{}", progress.line(r)));
    let signal = Arc::new(std::sync::Mutex::new(None));
    let caught = signal.clone();
    let stop = async move {
        let code = stop.await;
        if let Ok(mut c) = caught.lock() {
            *c = Some(code);
        }
    };
    let finished =
        runner::run_shard_until(&targets, &scenarios, shard, settings, jobs, on_done, stop).await;
    let binaries: Vec<CodexBinary> = targets.iter().map(|t| t.binary.clone()).collect();
    let matrix = Matrix::from_run(&scenarios, &binaries, &finished.records, args.shard);
    if let Some(code) = signal.lock().ok().and_then(|c| *c) {
        // A partial matrix on the terminal; no report files for a run that did not finish.
        print!("\n{}", terminal::render(&matrix));
        eprintln!(
            "codex-parity: interrupted; stopped {} running scenario(s){}, {} not started; their codex and sidecar processes were killed and their directories removed; no report written",
            finished.interrupted.len(),
            if finished.interrupted.is_empty() {
                String::new()
            } else {
                format!(" ({})", finished.interrupted.join(", "))
            },
            finished.not_started
        );
        return Ok(ExitCode::from(code));
    }
    let records = &finished.records;
    let drift = if args.report.is_some() && binaries.len() > 1 {
        drift_sections(records, &targets)
    } else {
        Vec::new()
    };
    let code = show(&matrix, args.report.as_deref(), drift)?;
    if !request_drift_and_bless(&args, records, &binaries) {
        return Ok(ExitCode::from(2));
    }
    Ok(code)
}

/// The report's schema and request drift sections, for two or more binaries, from the
/// schemas read when the run was prepared.
fn drift_sections(
    records: &[Record],
    targets: &[runner::Target],
) -> Vec<report::sections::Section> {
    let mut order: Vec<&runner::Target> = targets.iter().collect();
    order.sort_by_key(|t| versions::sort_key(&t.binary.version));
    let schemas: Vec<(String, Schema)> = order
        .iter()
        .map(|t| (t.binary.label(), t.caps.schema()))
        .collect();
    let diffs: Vec<_> = schemas
        .windows(2)
        .map(|w| schema_diff::diff(&w[0].0, &w[0].1, &w[1].0, &w[1].1))
        .collect();
    let binaries: Vec<CodexBinary> = targets.iter().map(|t| t.binary.clone()).collect();
    vec![
        report::sections::schema_drift(&diffs),
        report::sections::request_drift(codex_parity::drift::request_drift::report(
            records, &binaries,
        )),
    ]
}

/// `--request-diff` and `--bless`, after the matrix; false when a golden file could not be
/// written.
fn request_drift_and_bless(args: &RunArgs, records: &[Record], binaries: &[CodexBinary]) -> bool {
    if args.request_diff {
        print!(
            "{}",
            codex_parity::drift::request_drift::report(records, binaries)
        );
    }
    let mut blessed = true;
    if args.bless {
        let dir = codex_parity::drift::golden::default_dir();
        for line in codex_parity::drift::golden::bless(records, binaries, &dir) {
            blessed &= !line.starts_with(codex_parity::drift::golden::BLESS_ERROR);
            println!("{line}");
        }
    }
    blessed
}

async fn merge(dirs: Vec<PathBuf>, report_dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let parts = dirs
        .iter()
        .map(|d| report::read_dir(d))
        .collect::<anyhow::Result<Vec<Matrix>>>()?;
    show(&Matrix::merge(parts)?, report_dir.as_deref(), Vec::new())
}

/// Prints the matrix, writes the reports if asked, and gives the exit status.
fn show(
    matrix: &Matrix,
    report_dir: Option<&Path>,
    drift: Vec<report::sections::Section>,
) -> anyhow::Result<ExitCode> {
    print!("\n{}", terminal::render(matrix));
    if let Some(dir) = report_dir {
        let mut sections = report::sections::standard(matrix);
        sections.extend(drift);
        report::write_dir(dir, matrix, &sections)?;
        eprintln!(
            "codex-parity: wrote {} into {}",
            report::FILES.join(", "),
            dir.display()
        );
    }
    Ok(if matrix.any_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The targets and the scenarios `--filter` selects.
async fn prepare_run(
    args: &RunArgs,
) -> anyhow::Result<(Vec<runner::Target>, Vec<scenario::Scenario>)> {
    let binaries = binaries_for(&args.matrix).await?;
    if args.request_diff && binaries.len() < 2 {
        anyhow::bail!(
            "--request-diff compares versions: name two or more binaries (e.g. --compare)"
        );
    }
    let mut targets = runner::prepare(binaries, &Baseline::default_dir()).await?;
    for target in &mut targets {
        Arc::make_mut(&mut target.baseline).strict = args.strict;
    }
    Ok((targets, args.matrix.scenarios()?))
}

/// The settings of a run: the sidecar is this executable's `sidecar` subcommand.
fn settings(keep: bool, bless: bool) -> anyhow::Result<Settings> {
    Ok(Settings {
        bless,
        ..Settings::new(SidecarLauncher::current_exe()?, keep)
    })
}

async fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    use codex_parity::bench;
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    let default = !(args.overhead || args.suite || args.soak || args.load);
    let settings = settings(false, false)?;
    let mut failed = false;
    if args.load {
        let r = bench::load::load(&settings.sidecar, args.requests, args.clients).await?;
        println!("load, {} clients:", args.clients);
        println!("  sidecar (capture on): {}", r.sidecar.summary());
        println!("  bare hyper server:    {}", r.bare.summary());
        println!(
            "  sidecar / bare = {:.2} (target: at least 0.5); sidecar RSS {} KiB, peak {} KiB",
            r.ratio(),
            r.sidecar_memory_kib.map_or(0, |m| m.0),
            r.sidecar_memory_kib.map_or(0, |m| m.1)
        );
    }
    let needs_codex = default || args.overhead || args.suite || args.soak;
    let binaries = if needs_codex {
        binaries_for(&args.matrix).await?
    } else {
        Vec::new()
    };
    if default || args.overhead {
        for binary in &binaries {
            let o = bench::overhead(binary, &settings, args.runs).await?;
            println!(
                "{}: median over {} worlds: ours {:.1} ms set-up + {:.1} ms teardown; codex spawn->initialize {:.1} ms",
                binary.label(),
                args.runs,
                ms(bench::median(&o.world_setup)),
                ms(bench::median(&o.teardown)),
                ms(bench::median(&o.codex_start)),
            );
        }
    }
    if args.soak {
        let binary = binaries.first().context("no codex binary")?;
        match bench::soak::soak(binary, &settings, args.turns, args.threads).await {
            Ok(r) => {
                println!("soak on {}:", binary.label());
                println!("{}", r.one_thread.describe("  one thread", "turn"));
                println!(
                    "{}",
                    r.many_threads
                        .describe(&format!("  {} threads", args.threads), "round")
                );
                println!("  every turn's request captured exactly once");
            }
            Err(e) => {
                println!("soak on {}: FAILED: {e:#}", binary.label());
                failed = true;
            }
        }
    }
    if default || args.suite {
        let scenarios = args.matrix.scenarios()?;
        let targets = runner::prepare(binaries, &Baseline::default_dir()).await?;
        let jobs = args.matrix.jobs();
        let settings = Arc::new(settings);
        // Each binary alone (when there are several), then all of them together.
        let mut runs: Vec<Vec<runner::Target>> = Vec::new();
        if targets.len() > 1 {
            runs.extend(targets.iter().map(|t| vec![t.clone()]));
        }
        runs.push(targets);
        let mut single = Vec::new();
        for set in runs {
            let r = bench::suite(&set, &scenarios, settings.clone(), jobs).await;
            let counts: Vec<String> = r.counts.iter().map(|(w, n)| format!("{n} {w}")).collect();
            println!(
                "suite on {} ({} scenarios, --jobs {jobs}): {:.1} s ({})",
                r.labels.join(" + "),
                scenarios.len(),
                r.wall.as_secs_f64(),
                counts.join(", ")
            );
            failed |= r.counts.iter().any(|(w, n)| *w == "FAIL" && *n > 0);
            if r.labels.len() == 1 {
                single.push(r.wall);
            } else if let Some(first) = single.first() {
                println!(
                    "  {} versions together take {:.2}x one version alone ({:.2}x the sum of the single runs)",
                    r.labels.len(),
                    r.wall.as_secs_f64() / first.as_secs_f64(),
                    r.wall.as_secs_f64() / single.iter().map(|d| d.as_secs_f64()).sum::<f64>()
                );
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
