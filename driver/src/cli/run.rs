//! `codex-parity run`: its arguments become the [`Options`] of a [`Plan`], built and run
//! with the sinks they ask for (the matrix, the reports, `--request-diff`,
//! `--transcript-diff`, `--bless`).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use codex_parity::harness::expectations::Expectations;
use codex_parity::harness::shard::Shard;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::plan::events::Sink;
use codex_parity::plan::{Options, Plan};
use codex_parity::report::{destination, sinks};

use crate::cli::matrix::{MatrixArgs, binaries_for};

/// The arguments of `run`.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub(crate) matrix: MatrixArgs,
    /// Keep each scenario's temporary directory (CODEX_HOME, workspace) and print where;
    /// each world's transcript (what codex sent the client, normalised) is left in it as
    /// transcript.json.
    #[arg(long)]
    keep: bool,
    /// Write results.json, junit.xml, report.md and report.html into this directory, and
    /// each scenario's transcript as transcripts/VERSION/SCENARIO.json.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// With --report: remove the files an earlier report left in DIR first (without it, a
    /// DIR holding files is refused, so that no earlier run's file is read as this run's).
    #[arg(long, requires = "report")]
    replace_report: bool,
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
    /// Propose new golden request files (fixtures/golden/VERSION/SCENARIO.json) and golden
    /// transcripts (fixtures/golden-transcripts/VERSION/SCENARIO.json) of the scenarios
    /// that have them, from this run, for each binary on which they ran to their end: each
    /// is written as FILE.pending beside the accepted one, for `codex-parity review`.
    /// Golden checks are skipped during the run.
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

impl RunArgs {
    /// The plan's options: the matrix's, and `--keep`, `--bless`, `--strict`, `--shard`.
    pub(crate) fn options(&self) -> Options {
        Options {
            keep: self.keep,
            bless: self.bless,
            strict: self.strict,
            shard: self.shard.unwrap_or(Shard::ALL),
            ..self.matrix.options()
        }
    }

    /// The sinks `run` reports to: progress, the matrix and reports, transcripts, the
    /// diffs asked for, the golden expectations.
    fn sinks(&self) -> Vec<Box<dyn Sink>> {
        vec![
            Box::new(sinks::Progress::default()),
            Box::new(sinks::Results::new(
                self.report.clone(),
                self.matrix.is_sweep(),
            )),
            Box::new(sinks::Transcripts::new(self.report.clone(), self.keep)),
            Box::new(sinks::Diffs {
                requests: self.request_diff,
                transcripts: self.transcript_diff,
            }),
            Box::new(sinks::Golden::new(self.bless)),
        ]
    }
}

pub(crate) async fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    let stop = stop_signal()?;
    tokio::pin!(stop);
    let plan = tokio::select! {
        plan = build_plan(&args) => plan?,
        code = &mut stop => {
            eprintln!("codex-parity: interrupted while preparing the binaries; nothing was run");
            return Ok(ExitCode::from(code));
        }
    };
    let signal = Arc::new(std::sync::Mutex::new(None));
    let caught = signal.clone();
    let stop = async move {
        let code = stop.await;
        if let Ok(mut c) = caught.lock() {
            *c = Some(code);
        }
    };
    let end = plan.run(&mut args.sinks(), stop).await;
    if let Some(code) = signal.lock().ok().and_then(|c| *c) {
        let finished = &end.finished;
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
    Ok(ExitCode::from(end.verdict.code()))
}

/// The plan: scenario files read and checked and a bless with nowhere to write refused
/// before any codex is installed or started, then the binaries.
async fn build_plan(args: &RunArgs) -> anyhow::Result<Plan> {
    let builder = Plan::builder(args.options())?;
    args.matrix.sources.note_unread_baselines();
    if let Some(dir) = &args.report {
        destination::prepare(dir, "--report", args.replace_report)?;
    }
    if !args.matrix.sources.dirs.is_empty() {
        eprintln!(
            "codex-parity: {} scenario(s) to run with the files of {}",
            builder.scenarios().len(),
            args.matrix
                .sources
                .dirs
                .iter()
                .map(|d| d.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if args.bless {
        let dir = Expectations::current()?.bless_dir()?;
        eprintln!("codex-parity: --bless writes into {}", dir.display());
    }
    let binaries = binaries_for(&args.matrix).await?;
    for (asked, what) in [
        (args.request_diff, "--request-diff"),
        (args.transcript_diff, "--transcript-diff"),
    ] {
        if asked && binaries.len() < 2 {
            anyhow::bail!("{what} compares versions: name two or more binaries (e.g. --compare)");
        }
    }
    builder
        .build(binaries, SidecarLauncher::current_exe()?)
        .await
}
