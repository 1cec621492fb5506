//! `codex-parity run`: the parity scenarios on the chosen binaries, the matrix, the
//! reports, `--request-diff`, `--transcript-diff` and `--bless`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use codex_parity::codex::binaries::CodexBinary;
use codex_parity::codex::schema::Schema;
use codex_parity::codex::schema_diff;
use codex_parity::codex::versions;
use codex_parity::harness::baseline::Baselines;
use codex_parity::harness::expectations::Expectations;
use codex_parity::harness::runner::{self, Record};
use codex_parity::harness::scenario;
use codex_parity::harness::shard::Shard;
use codex_parity::report::{self, Matrix, terminal};

use crate::cli::matrix::{MatrixArgs, binaries_for, settings};
use crate::cli::merge::show;
use crate::cli::sources::add_baselines;

/// The arguments of `run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    matrix: MatrixArgs,
    /// Keep each scenario's temporary directory (CODEX_HOME, workspace) and print where;
    /// each world's transcript (what codex sent the client, normalised) is left in it as
    /// transcript.json.
    #[arg(long)]
    keep: bool,
    /// Write results.json, junit.xml, report.md and report.html into this directory, and
    /// each scenario's transcript as transcripts/VERSION/SCENARIO.json.
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
    /// After the matrix, show per scenario what changed in the messages codex sent the
    /// client from each version to the next, oldest first: messages added, removed,
    /// recounted or reordered, fields added, removed or retyped, enum values new or gone
    /// (needs two or more binaries, e.g. --compare).
    #[arg(long)]
    transcript_diff: bool,
    /// Rewrite the golden request files (fixtures/golden/VERSION/SCENARIO.json) and the
    /// golden transcripts (fixtures/golden-transcripts/VERSION/SCENARIO.json) of the
    /// scenarios that have them, from this run, for each binary on which they passed.
    /// Golden checks are skipped during the run. Review the diff first.
    #[arg(long)]
    bless: bool,
    /// Fail any drift, even drift the baselines list (fixtures/expected/baselines.json).
    #[arg(long)]
    strict: bool,
}

/// The first of SIGINT (Ctrl-C) or SIGTERM, as the exit status it calls for (130, 143).
/// The handlers are installed when this is called, so no signal between then and the
/// first poll is lost or takes the default action.
pub(crate) fn stop_signal() -> anyhow::Result<impl std::future::Future<Output = u8>> {
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

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
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
    let mut drift = if args.report.is_some() && binaries.len() > 1 {
        drift_sections(records, &targets)
    } else {
        Vec::new()
    };
    for (label, totals) in report::conformance::totals(&matrix) {
        eprintln!(
            "codex-parity: against its own schema: {}; checks took {} ms",
            report::conformance::line(&label, &totals),
            totals.time.as_millis()
        );
    }
    let sweep = args.matrix.releases.is_some();
    let changes = report::changes::changes(&matrix);
    if sweep {
        drift.insert(0, report::changes::section(&changes));
    }
    let code = show(&matrix, args.report.as_deref(), drift)?;
    if sweep {
        print!("\n{}", report::changes::render(&changes));
    }
    write_transcripts(&args, records)?;
    if !request_drift_and_bless(&args, records, &binaries) {
        return Ok(ExitCode::from(2));
    }
    if !golden_transcripts(&args, records) {
        return Ok(ExitCode::from(1));
    }
    Ok(code)
}

/// The transcripts: into the report directory with `--report`, beside each world with
/// `--keep`.
fn write_transcripts(args: &RunArgs, records: &[Record]) -> anyhow::Result<()> {
    use codex_parity::drift::transcript;
    if let Some(dir) = &args.report {
        let n = transcript::write_report(dir, records)?;
        eprintln!(
            "codex-parity: wrote {n} transcript(s) to {}",
            dir.join("transcripts").display()
        );
    }
    if args.keep {
        for path in transcript::write_kept(records)? {
            eprintln!("codex-parity: kept {}", path.display());
        }
    }
    Ok(())
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
        report::sections::transcript_drift(codex_parity::drift::transcript_diff::report(
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
    if args.transcript_diff {
        print!(
            "{}",
            codex_parity::drift::transcript_diff::report(records, binaries)
        );
    }
    let mut blessed = true;
    if args.bless {
        let dir = match Expectations::current().and_then(|e| e.bless_dir()) {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("codex-parity: {e:#}");
                return false;
            }
        };
        println!("blessing into {}", dir.display());
        for outcome in codex_parity::drift::golden::bless(records, binaries, &dir) {
            blessed &= !outcome.is_error();
            println!("{outcome}");
        }
    }
    blessed
}

/// Golden transcripts: rewritten with `--bless`, else compared; false when one differs or
/// could not be read or written.
fn golden_transcripts(args: &RunArgs, records: &[Record]) -> bool {
    use codex_parity::drift::golden_transcript;
    let expectations = match Expectations::current() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("codex-parity: {e:#}");
            return false;
        }
    };
    if args.bless {
        let dir = match expectations.bless_dir() {
            Ok(dir) => dir,
            Err(e) => {
                eprintln!("codex-parity: {e:#}");
                return false;
            }
        };
        return match golden_transcript::bless(&dir, records) {
            Ok(files) => {
                for f in files {
                    println!("blessed golden transcript {}", f.display());
                }
                true
            }
            Err(e) => {
                eprintln!("codex-parity: {e:#}");
                false
            }
        };
    }
    match golden_transcript::check_all(&expectations, records) {
        Ok((text, ok)) => {
            print!("{text}");
            ok
        }
        Err(e) => {
            eprintln!("codex-parity: {e:#}");
            false
        }
    }
}

/// The targets and the scenarios `--filter` selects.
async fn prepare_run(
    args: &RunArgs,
) -> anyhow::Result<(Vec<runner::Target>, Vec<scenario::Scenario>)> {
    // Scenario files are read and checked before any codex is installed or started, and a
    // bless with nowhere to write is refused before anything runs.
    let sources = args.matrix.scenarios()?;
    if args.bless {
        let dir = Expectations::current()?.bless_dir()?;
        eprintln!("codex-parity: --bless writes into {}", dir.display());
    }
    let binaries = binaries_for(&args.matrix).await?;
    if args.request_diff && binaries.len() < 2 {
        anyhow::bail!(
            "--request-diff compares versions: name two or more binaries (e.g. --compare)"
        );
    }
    if args.transcript_diff && binaries.len() < 2 {
        anyhow::bail!(
            "--transcript-diff compares versions: name two or more binaries (e.g. --compare)"
        );
    }
    let mut targets = runner::prepare(binaries, &Baselines::builtin()?).await?;
    add_baselines(&mut targets, &sources.baselines)?;
    for target in &mut targets {
        Arc::make_mut(&mut target.baseline).strict = args.strict;
    }
    Ok((targets, sources.scenarios))
}
