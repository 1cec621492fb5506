//! Runs scenarios across codex binaries, in parallel up to a job limit, and collects one
//! record per scenario and binary. Shared by the test harness and `codex-parity run`.

use std::collections::{BTreeSet, HashMap};

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use codex_parity_sidecar::captured::CapturedRequest;

use crate::codex::binaries::CodexBinary;
use crate::codex::capabilities::Capabilities;
use crate::harness::baseline::{Baseline, Baselines};
use crate::harness::conformance::{self, Checked};
use crate::harness::outcome::Drift;
use crate::harness::outcome::Outcome;
use crate::harness::perf::Perf;
use crate::harness::scenario::{Ctx, GoldenKinds, Scenario};
use crate::harness::shard::Shard;
use crate::harness::tally::{Connection, Tally};
use crate::harness::world::{Settings, Transport};
use crate::lock;

/// A binary with its capabilities.
#[derive(Debug, Clone)]
pub struct Target {
    /// The codex binary.
    pub binary: CodexBinary,
    /// What it supports.
    pub caps: Arc<Capabilities>,
    /// What its version is known to do differently.
    pub baseline: Arc<Baseline>,
}

/// Reads the capabilities of every binary; its baseline is its version's entries of
/// `baselines`. Only a plan prepares targets (`crate::plan::PlanBuilder::build`).
pub async fn prepare(
    binaries: Vec<CodexBinary>,
    baselines: &Baselines,
) -> anyhow::Result<Vec<Target>> {
    let mut targets = Vec::new();
    for binary in binaries {
        let caps = Capabilities::detect(&binary)
            .await
            .with_context(|| format!("reading the protocol schema of {}", binary.path.display()))?;
        let baseline = baselines.for_version(&binary.version);
        targets.push(Target {
            binary,
            caps: Arc::new(caps),
            baseline: Arc::new(baseline),
        });
    }
    Ok(targets)
}

/// Worlds one codex world may take in memory, with margin: codex is 115-170 MB resident,
/// the sidecar about 14 MB.
const WORLD_MEMORY: u64 = 400 * 1024 * 1024;

/// Worlds per core by default. Measured with `bench --suite` on 0.171.0, 2 cores: a
/// scenario's wall time is about six times its CPU time (it waits on codex's round trips,
/// retry backoffs and timeouts), so the suite took 41 s at 2 jobs per core, 25-32 s at 4,
/// 23-29 s at 6 and 8, with the same results and the same CPU (about 31 s in all).
const JOBS_PER_CORE: usize = 4;

/// The default number of scenarios run at once: [`JOBS_PER_CORE`] per core (a world mostly
/// waits, so more worlds than cores keep the cores busy), but no more than the available
/// memory holds at [`WORLD_MEMORY`] each, and at least 1.
pub fn default_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    let by_memory = available_memory().map_or(usize::MAX, |bytes| {
        usize::try_from(bytes / WORLD_MEMORY).unwrap_or(usize::MAX)
    });
    (JOBS_PER_CORE * cores).min(by_memory).max(1)
}

/// `MemAvailable` of `/proc/meminfo` in bytes, where the system has it.
fn available_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// What one run of a scenario produced.
#[derive(Debug, Clone)]
pub struct Ran {
    /// How it ended, judged against the baseline.
    pub outcome: Outcome,
    /// How long it took.
    pub duration: Duration,
    /// The requests its worlds captured (the model's view of codex), in arrival order.
    pub requests: Vec<CapturedRequest>,
    /// What it observed (see [`Ctx::observe`]).
    pub observations: Vec<String>,
    /// What its app-servers sent to the client, world after world.
    pub transcripts: Vec<Connection>,
    /// What checking those messages against codex's own schema found (`None`: not
    /// checked, the binary's schema could not be compiled or the scenario did not run).
    pub checked: Option<Checked>,
    /// The drift it reported, before the baseline judged it (what `bisect` compares).
    pub drift: Vec<Drift>,
    /// Why it failed, before the baseline judged its drift; `None` when it got to the end.
    pub failure: Option<String>,
    /// What it measured (performance scenarios; empty for the others).
    pub perf: Perf,
}

/// Runs one scenario on one target, with its timeout, and judges it against the target's
/// baseline.
pub async fn run_scenario(scenario: &Scenario, target: &Target, settings: Arc<Settings>) -> Ran {
    let started = Instant::now();
    if let Err(reason) = (scenario.applies)(&target.caps) {
        return Ran {
            outcome: Outcome::NotApplicable(reason),
            duration: started.elapsed(),
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
            perf: Perf::default(),
        };
    }
    let ctx = Ctx::new(
        scenario,
        target.binary.clone(),
        target.caps.clone(),
        settings,
    );
    let result = tokio::time::timeout(scenario.timeout, (scenario.run)(&ctx)).await;
    check_transport(&ctx);
    let failure = match result {
        Err(_) => Some(format!("timed out after {:?}", scenario.timeout)),
        Ok(Err(e)) => Some(format!("{e:#}")),
        Ok(Ok(())) => {
            let (c, f) = (
                ctx.worlds_created(),
                ctx.tally().finished.load(Ordering::SeqCst),
            );
            (c != f).then(|| {
                format!(
                    "scenario bug: {c} world(s) created, {f} finished (the after-scenario checks did not run)"
                )
            })
        }
    };
    // A dead sidecar explains whatever followed: say it first.
    let failure = failure.map(|f| {
        let deaths = ctx.tally().sidecar_deaths();
        if deaths.is_empty() {
            f
        } else {
            format!("{}\nthen: {f}", deaths.join("\n"))
        }
    });
    let transcripts = Tally::take(&ctx.tally().transcripts);
    let mut drift = Tally::take(&ctx.tally().drift);
    let checked = target.caps.conformance.as_ref().map(|c| {
        let checked = conformance::check(c, &transcripts);
        drift.extend(checked.drift.iter().cloned());
        checked
    });
    let outcome = target
        .baseline
        .judge(scenario.name, failure.clone(), drift.clone());
    Ran {
        outcome,
        duration: started.elapsed(),
        requests: Tally::take(&ctx.tally().requests),
        observations: Tally::take(&ctx.tally().observations),
        transcripts,
        checked,
        drift,
        failure,
        perf: std::mem::take(&mut *lock(&ctx.tally().perf)),
    }
}

/// The after-scenario check of a scenario run over the WebSocket: every model request its
/// worlds captured went over it. Requests that fell back to HTTP are drift
/// (`requests.transport`, the fallen-back requests as `METHOD path`).
fn check_transport(ctx: &Ctx) {
    if ctx.scenario().transport != Transport::WebSocket {
        return;
    }
    let over_http: Vec<String> = lock(&ctx.tally().requests)
        .iter()
        .filter(|r| r.is_model_request() && r.transport.is_none())
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    if !over_http.is_empty() {
        let message = format!(
            "{} model request(s) went over HTTP, not the WebSocket: {}",
            over_http.len(),
            over_http.join(", ")
        );
        ctx.drift("requests.transport", serde_json::json!(over_http), message);
    }
}

/// The result of one scenario on one binary.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Scenario name.
    pub scenario: &'static str,
    /// Catalogue id.
    pub id: &'static str,
    /// The binary's label (`codex-0.171.0`).
    pub label: String,
    /// How it ended.
    pub outcome: Outcome,
    /// How long it took.
    pub duration: Duration,
    /// The requests the scenario's worlds captured.
    pub requests: Vec<CapturedRequest>,
    /// What the scenario observed about this codex.
    pub observations: Vec<String>,
    /// What codex sent to the client, one entry per app-server of each world.
    pub transcripts: Vec<Connection>,
    /// What checking it against codex's own schema found (see [`Ran::checked`]).
    pub checked: Option<Checked>,
    /// The drift it reported, before the baseline judged it (what a sweep's audit reads).
    pub drift: Vec<Drift>,
    /// Why it failed, before the baseline judged its drift (see [`Ran::failure`]).
    pub failure: Option<String>,
    /// The golden expectations the scenario keeps.
    pub golden: GoldenKinds,
    /// What it measured (see [`Ran::perf`]).
    pub perf: Perf,
}

impl Cell {
    /// Whether the scenario got to its end: every check held but perhaps for drift (listed
    /// or not: drift is the baselines' to judge). What a golden file may be written from.
    pub fn ran_to_end(&self) -> bool {
        match self.outcome {
            Outcome::Passed | Outcome::Drift(_) | Outcome::Contradicts(_) => true,
            Outcome::Failed(_) => self.failure.is_none(),
            Outcome::NotApplicable(_) => false,
        }
    }

    fn new(scenario: &Scenario, target: &Target, outcome: Outcome, duration: Duration) -> Cell {
        Cell {
            scenario: scenario.name,
            id: scenario.id,
            label: target.binary.label(),
            outcome,
            duration,
            requests: Vec::new(),
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
            golden: scenario.golden,
            perf: Perf::default(),
        }
    }
}

/// What the runner tells as it goes, from the task of each scenario.
#[derive(Debug)]
pub enum Progress {
    /// A scenario got its turn to run (a job slot) on a binary.
    Started {
        /// The scenario's name.
        scenario: &'static str,
        /// The binary's label.
        label: String,
    },
    /// A scenario ended: its record.
    Finished(Box<Cell>),
}

/// The (target, scenario) runs of `shard`, in (target, scenario) order.
pub fn planned<'a>(
    targets: &'a [Target],
    scenarios: &'a [Scenario],
    shard: Shard,
) -> Vec<(&'a Target, &'a Scenario)> {
    targets
        .iter()
        .flat_map(|t| scenarios.iter().map(move |s| (t, s)))
        .filter(|(t, s)| shard.contains(s.name, &t.binary.label()))
        .collect()
}

/// The order scenarios start in, lowest first: those that wait on a timeout
/// ([`Scenario::waits`]), then by their own timeout, longest first (the wall time is then
/// close to the longest one). A sort by it is stable: the catalogue's order otherwise.
pub fn start_rank(s: &Scenario) -> impl Ord + use<> {
    (std::cmp::Reverse(s.waits), std::cmp::Reverse(s.timeout))
}

/// What [`run_shard_until`] got done.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// The scenarios that ended, in (target, scenario) order.
    pub records: Vec<Cell>,
    /// Scenarios stopped while running, as `name[label]` (empty when not stopped).
    pub interrupted: Vec<String>,
    /// Scenarios that never started because of the stop.
    pub not_started: usize,
}

/// Runs the cells of `shard` (see [`crate::harness::shard`]), at most `jobs` at once,
/// telling `on_progress` as each starts and ends; stops when `stop` resolves: every
/// running scenario is then cancelled and has ended (its worlds dropped: codex and sidecar
/// killed, directories removed) before this returns. Scenarios start in [`start_rank`]
/// order; records come back in (target, scenario) order.
pub async fn run_shard_until(
    targets: &[Target],
    scenarios: &[Scenario],
    shard: Shard,
    settings: Arc<Settings>,
    jobs: usize,
    on_progress: Arc<dyn Fn(Progress) + Send + Sync>,
    stop: impl std::future::Future<Output = ()>,
) -> Finished {
    let slots = u32::try_from(jobs.max(1)).unwrap_or(u32::MAX);
    let limit = Arc::new(Semaphore::new(slots as usize));
    let jobs = planned(targets, scenarios, shard);
    let running: Arc<Mutex<BTreeSet<usize>>> = Arc::default();
    // Tasks queue on the semaphore in spawn order: those that wait and the longest-bounded
    // first.
    let mut spawn_order: Vec<usize> = (0..jobs.len()).collect();
    spawn_order.sort_by_key(|&i| start_rank(jobs[i].1));
    let mut set = JoinSet::new();
    let mut task_of = HashMap::new();
    for i in spawn_order {
        let (target, scenario) = (jobs[i].0.clone(), jobs[i].1.clone());
        let (limit, on_progress, settings) = (limit.clone(), on_progress.clone(), settings.clone());
        let running = running.clone();
        let handle = set.spawn(async move {
            // A scenario that measures runs alone: it takes every slot.
            let wanted = if scenario.exclusive { slots } else { 1 };
            let _permit = limit.acquire_many_owned(wanted).await;
            lock(&running).insert(i);
            on_progress(Progress::Started {
                scenario: scenario.name,
                label: target.binary.label(),
            });
            let ran = run_scenario(&scenario, &target, settings).await;
            lock(&running).remove(&i);
            let mut record = Cell::new(&scenario, &target, ran.outcome, ran.duration);
            record.requests = ran.requests;
            record.observations = ran.observations;
            record.transcripts = ran.transcripts;
            record.checked = ran.checked;
            record.drift = ran.drift;
            record.failure = ran.failure;
            record.perf = ran.perf;
            on_progress(Progress::Finished(Box::new(record.clone())));
            (i, record)
        });
        task_of.insert(handle.id(), i);
    }
    let mut records: Vec<Option<Cell>> = jobs.iter().map(|_| None).collect();
    tokio::pin!(stop);
    let stopped = loop {
        tokio::select! {
            joined = set.join_next_with_id() => match joined {
                None => break false,
                Some(Ok((_, (i, record)))) => records[i] = Some(record),
                Some(Err(e)) => {
                    let Some(&i) = task_of.get(&e.id()) else { continue };
                    let why = format!("the scenario panicked: {e}");
                    let mut record =
                        Cell::new(jobs[i].1, jobs[i].0, Outcome::Failed(why.clone()), Duration::ZERO);
                    record.failure = Some(why);
                    on_progress(Progress::Finished(Box::new(record.clone())));
                    records[i] = Some(record);
                }
            },
            () = &mut stop => break true,
        }
    };
    let mut finished = Finished::default();
    if stopped {
        let was_running = lock(&running).clone();
        // Cancels every task and waits until each has ended (its future dropped).
        set.shutdown().await;
        finished.interrupted = was_running
            .iter()
            .map(|&i| format!("{}[{}]", jobs[i].1.name, jobs[i].0.binary.label()))
            .collect();
        finished.not_started = records
            .iter()
            .enumerate()
            .filter(|(i, r)| r.is_none() && !was_running.contains(i))
            .count();
    }
    finished.records = records.into_iter().flatten().collect();
    finished
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn those_that_wait_start_first_then_the_longest_bounded_then_catalogue_order() {
        let s = |name: &'static str, secs: u64| {
            Scenario::new(name, "T", "", |_| Box::pin(async { Ok(()) }))
                .timeout(Duration::from_secs(secs))
        };
        let mut all = [
            s("a", 60),
            s("b", 30).waits(),
            s("c", 90),
            s("d", 60),
            s("e", 10).waits(),
        ];
        all.sort_by_key(start_rank);
        let order: Vec<&str> = all.iter().map(|s| s.name).collect();
        assert_eq!(order, ["b", "e", "c", "a", "d"]);
    }

    #[test]
    fn default_jobs_is_some_per_core_within_memory() {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let jobs = default_jobs();
        assert!(
            jobs >= 1 && jobs <= JOBS_PER_CORE * cores,
            "{jobs} jobs on {cores} cores"
        );
        if let Some(bytes) = available_memory() {
            assert!(bytes > 0);
            let fit = (bytes / WORLD_MEMORY) as usize;
            assert_eq!(jobs, (JOBS_PER_CORE * cores).min(fit).max(1));
        }
    }
}
