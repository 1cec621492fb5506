//! `codex-parity bench`: what the harness costs and how it holds up.

use std::process::ExitCode;

use anyhow::Context;
use codex_parity::bench;
use codex_parity::codex::binaries::CodexBinary;
use codex_parity::harness::outcome::OutcomeKind;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::Settings;
use codex_parity::plan::{Options, Plan};

use crate::cli::matrix::{MatrixArgs, binaries_for};

/// The arguments of `bench`.
#[derive(Debug, clap::Args)]
pub(crate) struct BenchArgs {
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
    /// Turn and round-trip latency over stdio, a ws:// and a unix:// listener.
    #[arg(long)]
    transports: bool,
    /// --overhead: empty worlds to measure (median reported); --transports: turns and
    /// round trips per transport.
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

impl BenchArgs {
    /// The plan's options of `--suite`: the matrix's (scenarios, filter, baselines, jobs).
    pub(crate) fn options(&self) -> Options {
        self.matrix.options()
    }
}

/// `bench`: the measures asked for (`--overhead` and `--suite` when none is).
pub(crate) async fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let default = !(args.overhead || args.suite || args.soak || args.load || args.transports);
    let settings = Settings::new(SidecarLauncher::current_exe()?, false);
    let mut failed = false;
    if args.load {
        load(&args, &settings).await?;
    }
    let needs_codex = default || args.overhead || args.suite || args.soak || args.transports;
    let binaries = if needs_codex {
        binaries_for(&args.matrix).await?
    } else {
        Vec::new()
    };
    if default || args.overhead {
        overhead(&args, &binaries, &settings).await?;
    }
    if args.soak {
        failed |= !soak(&args, &binaries, &settings).await?;
    }
    if args.transports {
        let binary = binaries.first().context("no codex binary")?;
        println!("transports on {}:", binary.label());
        for t in bench::transports::transports(binary, &settings, args.runs).await? {
            println!("  {}", t.summary());
        }
    }
    if default || args.suite {
        failed |= !suite(&args, binaries, settings.sidecar).await?;
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `--load`: the sidecar against a bare server.
async fn load(args: &BenchArgs, settings: &Settings) -> anyhow::Result<()> {
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
    Ok(())
}

/// `--overhead`: our world set-up and teardown against codex start-up, per binary.
async fn overhead(
    args: &BenchArgs,
    binaries: &[CodexBinary],
    settings: &Settings,
) -> anyhow::Result<()> {
    let ms = |d: std::time::Duration| d.as_secs_f64() * 1000.0;
    for binary in binaries {
        let o = bench::overhead(binary, settings, args.runs).await?;
        println!(
            "{}: median over {} worlds: ours {:.1} ms set-up + {:.1} ms teardown; codex spawn->initialize {:.1} ms",
            binary.label(),
            args.runs,
            ms(bench::median(&o.world_setup)),
            ms(bench::median(&o.teardown)),
            ms(bench::median(&o.codex_start)),
        );
    }
    Ok(())
}

/// `--soak` on the first binary; false when a soak check failed.
async fn soak(
    args: &BenchArgs,
    binaries: &[CodexBinary],
    settings: &Settings,
) -> anyhow::Result<bool> {
    let binary = binaries.first().context("no codex binary")?;
    match bench::soak::soak(binary, settings, args.turns, args.threads).await {
        Ok(r) => {
            println!("soak on {}:", binary.label());
            println!("{}", r.one_thread.describe("  one thread", "turn"));
            println!(
                "{}",
                r.many_threads
                    .describe(&format!("  {} threads", args.threads), "round")
            );
            println!("  every turn's request captured exactly once");
            Ok(true)
        }
        Err(e) => {
            println!("soak on {}: FAILED: {e:#}", binary.label());
            Ok(false)
        }
    }
}

/// `--suite`: each binary alone (when there are several), then all of them together, as
/// one plan and plans on its targets; false when a scenario failed.
async fn suite(
    args: &BenchArgs,
    binaries: Vec<CodexBinary>,
    sidecar: SidecarLauncher,
) -> anyhow::Result<bool> {
    let plan = Plan::builder(args.options())?
        .build(binaries, sidecar)
        .await?;
    let jobs = plan.options.jobs();
    let mut runs: Vec<Plan> = Vec::new();
    if plan.targets.len() > 1 {
        for target in &plan.targets {
            let label = target.binary.label();
            runs.push(plan.only(|t| t.binary.label() == label));
        }
    }
    let scenarios = plan.scenarios.len();
    runs.push(plan);
    let mut single = Vec::new();
    let mut passed = true;
    for set in runs {
        let r = bench::suite(&set).await;
        let counts: Vec<String> = r
            .counts
            .iter()
            .map(|(k, n)| format!("{n} {}", k.word()))
            .collect();
        println!(
            "suite on {} ({scenarios} scenarios, --jobs {jobs}): {:.1} s ({})",
            r.labels.join(" + "),
            r.wall.as_secs_f64(),
            counts.join(", ")
        );
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if let (Some(cpu), Some(limit), Some(ratio)) =
            (r.cpu, r.cpu_bound(cores), r.ratio_to_cpu_bound(cores))
        {
            println!(
                "  CPU (user + sys, all processes): {:.1} s, {:.3} s per scenario run ({}); \
                 CPU-bound limit on {cores} cores {:.1} s; wall / limit {ratio:.2}",
                cpu.as_secs_f64(),
                cpu.as_secs_f64() / r.ran.max(1) as f64,
                r.ran,
                limit.as_secs_f64(),
            );
        }
        passed &= !r
            .counts
            .iter()
            .any(|(k, n)| *k == OutcomeKind::Failed && *n > 0);
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
    Ok(passed)
}
