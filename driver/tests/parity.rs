//! The parity suite: one test per scenario per codex binary, named
//! `scenario_name[codex-0.171.0]`, run against the real `codex app-server`.
//!
//! Binaries: `-- --codex-bin PATH` (repeatable), else `CODEX_TEST_BINS` (separated like
//! `PATH`), else the pinned version, installed on demand. Usual libtest filters work; the
//! scenarios run [`runner::default_jobs`] at once unless `--test-threads` says otherwise.
//! It also runs under nextest (`cargo nextest run --features codex-parity`), one process
//! per test: its terse list names tests as `--exact` takes them back.
//!
//! A scenario whose version has baseline entries is marked by its kind: `[B15 contradicts]`
//! when one of them contradicts the scenario's headline claim, `[E9 drift]` otherwise. Known
//! drift passes (its notes on stderr) unless `CODEX_PARITY_STRICT=1`, which fails any
//! drift. After the run a `parity summary:` line counts passes, known drift,
//! contradicting drift, not applicable and failures.
//!
//! `CODEX_PARITY_SCENARIOS=DIR` (separated like `PATH`) adds the scenario files of each
//! directory (`docs/scenario-files.md`) as trials beside the built-in scenarios, judged with
//! the directory's `baselines.json` too; a bad file stops the run (exit 2) before any codex
//! starts.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use codex_parity::app_server::turn::{TurnOptions, run_turn, text};
use codex_parity::codex::binaries;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::drift::transcript;
use codex_parity::harness::baseline::Baseline;
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::run_dir;
use codex_parity::harness::runner;
use codex_parity::harness::scenario;
use codex_parity::harness::scenario::{Ctx, Scenario, ScenarioFn};
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::plan::{Options, Plan};
use codex_parity::scenario_file;
use codex_parity::scenarios::setup;
use codex_parity_sidecar::{Scripted, bodies};
use libtest_mimic::{Arguments, Failed, FormatSetting, Trial};

/// Checks of the harness itself on the real codex: a scenario that leaves its world wrong
/// must end `Failed`, with the after-scenario checks (and the baseline judgement) naming
/// what was wrong. Each is (name, scenario body, text the failure must contain).
type SelfCheck = (&'static str, ScenarioFn, &'static str);

const SELF_CHECKS: [SelfCheck; 2] = [
    (
        "harness_reports_unconsumed_script",
        |c| Box::pin(one_turn(c, 2)),
        "1 scripted response(s) never served",
    ),
    (
        "harness_reports_unscripted_request",
        |c| Box::pin(one_turn(c, 0)),
        "drift not in the baseline: requests.unscripted = {\"request\":\"POST /v1/responses\",\"index\":0}",
    ),
];

/// Runs one plain turn in a world with `replies` scripted replies, then finishes it.
async fn one_turn(ctx: &Ctx, replies: usize) -> anyhow::Result<()> {
    let script = (0..replies)
        .map(|n| Scripted::sse(bodies::assistant_reply(&format!("resp-{n}"), "reply")))
        .collect();
    let (world, app, thread) = setup(ctx, script).await?;
    run_turn(
        &app,
        &thread,
        vec![text("one turn")],
        &TurnOptions::default(),
    )
    .await?;
    world.finish().await
}

/// Takes `--codex-bin PATH` / `--codex-bin=PATH` out of the arguments.
fn split_args(args: impl Iterator<Item = OsString>) -> (Vec<PathBuf>, Vec<OsString>) {
    let (mut bins, mut rest) = (Vec::new(), Vec::new());
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy();
        if text == "--codex-bin" {
            if let Some(path) = args.next() {
                bins.push(PathBuf::from(path));
            }
        } else if let Some(path) = text.strip_prefix("--codex-bin=") {
            bins.push(PathBuf::from(path));
        } else {
            rest.push(arg);
        }
    }
    (bins, rest)
}

/// How the scenario trials ended, for the summary line.
#[derive(Default)]
struct Counts {
    passed: AtomicUsize,
    drift: AtomicUsize,
    contradicts: AtomicUsize,
    failed: AtomicUsize,
}

/// The trial's kind: the catalogue id, and `drift` or `contradicts` when the version's
/// baseline lists drift for the scenario.
fn kind(s: &Scenario, baseline: &Baseline) -> String {
    let entries: Vec<_> = baseline.entries(s.name).collect();
    if entries.iter().any(|e| e.contradicts) {
        format!("{} contradicts", s.id)
    } else if entries.is_empty() {
        s.id.to_string()
    } else {
        format!("{} drift", s.id)
    }
}

fn main() -> ExitCode {
    let (bins, rest) = split_args(std::env::args_os());
    let mut args = Arguments::from_iter(rest);
    // Scenarios mostly wait on codex: as many at once as `codex-parity run` runs, unless
    // `--test-threads` (or RUST_TEST_THREADS) says otherwise.
    if args.test_threads.is_none() {
        let from_env = std::env::var("RUST_TEST_THREADS")
            .ok()
            .and_then(|v| v.parse().ok());
        args.test_threads = Some(from_env.unwrap_or_else(runner::default_jobs));
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("parity: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    // The worlds go in a run directory of this process's, as `codex-parity run`'s do (in
    // memory unless TMPDIR says where); it is removed when `main` returns.
    let _run_dir = match run_dir::claim_for_process() {
        Ok((dir, _)) => dir,
        Err(e) => {
            eprintln!("parity: cannot make a run directory: {e:#}");
            return ExitCode::from(2);
        }
    };
    // The plan every front-end builds, from what the environment sets; libtest filters
    // the trials itself.
    let options = Options::from_env();
    let strict = options.strict;
    let builder = match Plan::builder(options) {
        Ok(b) => b,
        Err(e) => {
            eprintln!(
                "parity: {} names a bad scenario file: {e:#}",
                scenario_file::ENV
            );
            return ExitCode::from(2);
        }
    };
    let built = runtime.block_on(async {
        let request = binaries::BinaryRequest {
            paths: bins,
            versions: Vec::new(),
            env: std::env::var_os(binaries::CODEX_TEST_BINS),
        };
        let binaries =
            binaries::resolve_request(&request, &Cache::from_env()?, &StderrProgress::new())
                .await?;
        let sidecar = SidecarLauncher::codex_parity(env!("CARGO_BIN_EXE_codex-parity"));
        builder.build(binaries, sidecar).await
    });
    let plan = match built {
        Ok(plan) => Arc::new(plan),
        Err(e) => {
            eprintln!("parity: cannot prepare the codex binaries: {e:#}");
            return ExitCode::from(2);
        }
    };
    let counts = Arc::new(Counts::default());
    let handle = runtime.handle().clone();
    let mut trials = Vec::new();
    let mut not_applicable = Vec::new();
    // Trials start in the order given: as `run`'s, those that wait first (`start_rank`).
    let mut cells = plan.cells();
    cells.sort_by_key(|(_, s)| runner::start_rank(s));
    for (target, s) in cells {
        let name = scenario::test_name(s, &target.binary);
        let na = (s.applies)(&target.caps).err();
        if let Some(reason) = &na {
            not_applicable.push(format!("{name}: {reason}"));
        }
        let kind = kind(s, &target.baseline);
        let (target, s, plan, handle) = (target.clone(), s.clone(), plan.clone(), handle.clone());
        let counts = counts.clone();
        {
            let trial = Trial::test(name, move || {
                let keep = plan.options.keep;
                let ran = handle.block_on(plan.run_one(&s, &target));
                if keep {
                    let version = &target.binary.version;
                    match transcript::write_kept_connections(s.name, version, &ran.transcripts) {
                        Ok(kept) => kept.iter().for_each(|p| eprintln!("kept {}", p.display())),
                        Err(e) => eprintln!("keeping the transcript: {e:#}"),
                    }
                }
                for o in &ran.observations {
                    eprintln!("note [{}]: {o}", target.binary.label());
                }
                let count = |c: &AtomicUsize| c.fetch_add(1, Ordering::SeqCst);
                match ran.outcome {
                    Outcome::Passed => {
                        count(&counts.passed);
                        Ok(())
                    }
                    Outcome::Drift(known) => {
                        count(&counts.drift);
                        for k in known {
                            eprintln!("known drift [{}]: {k}", target.binary.label());
                        }
                        Ok(())
                    }
                    Outcome::Contradicts(known) => {
                        count(&counts.contradicts);
                        // The note of the drift that contradicts says so.
                        for k in known {
                            eprintln!("known drift [{}]: {k}", target.binary.label());
                        }
                        Ok(())
                    }
                    Outcome::Failed(reason) => {
                        count(&counts.failed);
                        Err(Failed::from(reason))
                    }
                    Outcome::NotApplicable(reason) => {
                        Err(Failed::from(format!("not applicable: {reason}")))
                    }
                }
            })
            .with_kind(kind)
            .with_ignored_flag(na.is_some());
            trials.push(trial);
        }
    }
    for target in &plan.targets {
        for (name, run, expected) in SELF_CHECKS {
            let (target, plan, handle) = (target.clone(), plan.clone(), handle.clone());
            let name = format!("{name}[{}]", target.binary.label());
            let check = Scenario::new("harness_self_check", "self", "self-check", run);
            trials.push(
                Trial::test(name, move || {
                    match handle.block_on(plan.run_one(&check, &target)).outcome {
                        Outcome::Failed(reason) if reason.contains(expected) => Ok(()),
                        other => Err(Failed::from(format!(
                            "expected a failure naming {expected:?}, got {other:?}"
                        ))),
                    }
                })
                .with_kind("self"),
            );
        }
    }
    for line in &not_applicable {
        eprintln!("not applicable (reported as ignored, never passed): {line}");
    }
    // nextest lists with `--list --format terse` and takes each line's text before `: test`
    // as the name it passes back with `--exact`: no `[kind]` there.
    let nextest_list = args.list && args.format == Some(FormatSetting::Terse);
    if nextest_list {
        trials = trials.into_iter().map(|t| t.with_kind("")).collect();
    }
    let listing = args.list;
    let conclusion = libtest_mimic::run(&args, trials);
    if listing {
        // A list is all nextest may read on stdout: no summary.
        return conclusion.exit_code();
    }
    // Not `N passed, N failed` alone: CI parses that form from libtest's own line.
    let n = |c: &AtomicUsize| c.load(Ordering::SeqCst);
    println!(
        "parity summary: {} passed, {} known drift, {} contradicting drift, {} not applicable, {} failed{}",
        n(&counts.passed),
        n(&counts.drift),
        n(&counts.contradicts),
        conclusion.num_ignored,
        n(&counts.failed),
        if strict {
            " (strict: any drift fails)"
        } else {
            ""
        }
    );
    drop(runtime);
    conclusion.exit_code()
}
