//! `codex-parity bench`: what one scenario costs that is ours (a world: sidecar start,
//! proxy, directories, config) against what is codex's (spawn to `initialize` answered);
//! the wall time of the suite on each binary and on all of them ([`suite`]); a soak of
//! one app-server and one sidecar ([`soak`]); the sidecar under HTTP load against a bare
//! server ([`load`]); and the client's transport, stdio against the app-server's listeners
//! ([`transports`]).

pub mod cpu;
pub mod load;
pub mod soak;
pub mod transports;

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::codex::binaries::CodexBinary;
use crate::harness::outcome::{Outcome, OutcomeKind};
use crate::harness::world::{Settings, World, WorldOptions};
use crate::plan::Plan;

/// The raw samples of each world (`median` summarises them).
#[derive(Debug, Clone)]
pub struct Overhead {
    /// World set-up: sidecar ready, proxy listening, home and config written.
    pub world_setup: Vec<Duration>,
    /// `codex app-server` spawn until `initialize` answered.
    pub codex_start: Vec<Duration>,
    /// `finish`: checks, codex and sidecar shut down, directory removed.
    pub teardown: Vec<Duration>,
}

/// The median of samples (zero when empty).
pub fn median(samples: &[Duration]) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    s.get(s.len() / 2).copied().unwrap_or_default()
}

/// The `q`-th percentile (0–100) of samples, nearest rank (zero when empty).
pub fn percentile(samples: &[Duration], q: usize) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    if s.is_empty() {
        return Duration::ZERO;
    }
    let rank = (q * s.len()).div_ceil(100).clamp(1, s.len());
    s[rank - 1]
}

/// `VmRSS` and `VmHWM` (peak) of a process, in KiB, from `/proc/PID/status`.
pub fn memory_kib(pid: u32) -> Option<(u64, u64)> {
    let status =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status")).ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// What one run of the suite gave.
#[derive(Debug, Clone)]
pub struct SuiteRun {
    /// The binaries it ran on.
    pub labels: Vec<String>,
    /// Wall time.
    pub wall: Duration,
    /// CPU time (user + system) of this process and every process of the run; `None`
    /// where it cannot be read (see [`cpu`]).
    pub cpu: Option<Duration>,
    /// Scenario runs that ran (not applicable ones left out).
    pub ran: usize,
    /// Runs per outcome kind.
    pub counts: Vec<(OutcomeKind, usize)>,
}

/// Runs `plan` quietly (no sink); returns the wall time.
pub async fn suite(plan: &Plan) -> SuiteRun {
    let started = Instant::now();
    let cpu_before = cpu::CpuTimes::now();
    let records = plan
        .run(&mut [], std::future::pending::<()>())
        .await
        .finished
        .records;
    let wall = started.elapsed();
    let cpu = cpu::CpuTimes::now()
        .zip(cpu_before)
        .map(|(after, before)| after.since(&before).total());
    let counts = OutcomeKind::ALL
        .into_iter()
        .map(|k| (k, records.iter().filter(|r| r.outcome.kind() == k).count()))
        .collect();
    for r in &records {
        if let Outcome::Failed(reason) = &r.outcome {
            eprintln!(
                "bench: FAIL {}[{}]: {}",
                r.scenario,
                r.label,
                reason.lines().next().unwrap_or("")
            );
        }
    }
    SuiteRun {
        labels: plan.targets.iter().map(|t| t.binary.label()).collect(),
        wall,
        cpu,
        ran: records
            .iter()
            .filter(|r| !matches!(r.outcome, Outcome::NotApplicable(_)))
            .count(),
        counts,
    }
}

impl SuiteRun {
    /// The CPU-bound limit of the run on `cores`: its CPU time spread over every core.
    pub fn cpu_bound(&self, cores: usize) -> Option<Duration> {
        self.cpu.map(|cpu| cpu.div_f64(cores.max(1) as f64))
    }

    /// Wall time over the CPU-bound limit on `cores` (1.0: every core busy all along).
    pub fn ratio_to_cpu_bound(&self, cores: usize) -> Option<f64> {
        let limit = self.cpu_bound(cores)?;
        (!limit.is_zero()).then(|| self.wall.as_secs_f64() / limit.as_secs_f64())
    }
}

/// Measures `runs` empty worlds, one after the other.
pub async fn overhead(
    binary: &CodexBinary,
    settings: &Settings,
    runs: usize,
) -> anyhow::Result<Overhead> {
    let mut out = Overhead {
        world_setup: vec![],
        codex_start: vec![],
        teardown: vec![],
    };
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut world =
            World::new(binary, settings, WorldOptions::default(), Arc::default()).await?;
        let t1 = Instant::now();
        world.start().await?;
        let t2 = Instant::now();
        world.finish().await?;
        let t3 = Instant::now();
        out.world_setup.push(t1 - t0);
        out.codex_start.push(t2 - t1);
        out.teardown.push(t3 - t2);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_millis(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(median(&ms(&[5, 1, 3])), Duration::from_millis(3));
        assert_eq!(median(&ms(&[4, 1, 3, 2])), Duration::from_millis(3));
        assert_eq!(median(&[]), Duration::ZERO);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let samples: Vec<Duration> = (1..=100).rev().map(Duration::from_millis).collect();
        assert_eq!(percentile(&samples, 50), Duration::from_millis(50));
        assert_eq!(percentile(&samples, 99), Duration::from_millis(99));
        assert_eq!(percentile(&samples, 100), Duration::from_millis(100));
        assert_eq!(percentile(&samples[..1], 99), Duration::from_millis(100));
        assert_eq!(percentile(&[], 50), Duration::ZERO);
    }

    #[test]
    fn memory_of_this_process_is_read() {
        let (rss, peak) = memory_kib(std::process::id()).expect("/proc/self/status");
        assert!(rss > 0 && peak >= rss, "{rss} {peak}");
    }
}
