//! Runs scenarios across codex binaries, in parallel up to a job limit, and collects one
//! record per scenario and binary. Shared by the test harness and `codex-parity run`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::Semaphore;

use crate::binaries::CodexBinary;
use crate::capabilities::Capabilities;
use crate::scenario::{Outcome, Scenario, run_scenario};
use crate::world::Settings;

/// A binary with its capabilities.
#[derive(Debug, Clone)]
pub struct Target {
    /// The codex binary.
    pub binary: CodexBinary,
    /// What it supports.
    pub caps: Arc<Capabilities>,
}

/// Reads the capabilities of every binary.
pub async fn prepare(binaries: Vec<CodexBinary>) -> anyhow::Result<Vec<Target>> {
    let mut targets = Vec::new();
    for binary in binaries {
        let caps = Capabilities::detect(&binary)
            .await
            .with_context(|| format!("reading the protocol schema of {}", binary.path.display()))?;
        targets.push(Target {
            binary,
            caps: Arc::new(caps),
        });
    }
    Ok(targets)
}

/// The result of one scenario on one binary.
#[derive(Debug, Clone)]
pub struct Record {
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
}

/// Runs every scenario on every target, at most `jobs` at once; calls `on_done` as each
/// finishes. The slowest-bounded scenarios start first (the wall time is then close to the
/// longest one); records come back in (target, scenario) order.
pub async fn run_all(
    targets: &[Target],
    scenarios: &[Scenario],
    settings: Arc<Settings>,
    jobs: usize,
    on_done: Arc<dyn Fn(&Record) + Send + Sync>,
) -> Vec<Record> {
    let limit = Arc::new(Semaphore::new(jobs.max(1)));
    let mut order: Vec<(usize, &Target, &Scenario)> = Vec::new();
    for target in targets {
        for scenario in scenarios {
            order.push((order.len(), target, scenario));
        }
    }
    order.sort_by_key(|(i, _, s)| (std::cmp::Reverse(s.timeout), *i));
    let mut handles = Vec::new();
    for (position, target, scenario) in order {
        {
            let (target, scenario, settings) = (target.clone(), *scenario, settings.clone());
            let (limit, on_done) = (limit.clone(), on_done.clone());
            let key = (position, scenario.name, scenario.id, target.binary.label());
            handles.push((
                key,
                tokio::spawn(async move {
                    let _permit = limit.acquire_owned().await;
                    let (outcome, duration) =
                        run_scenario(&scenario, &target.binary, target.caps.clone(), settings)
                            .await;
                    let record = Record {
                        scenario: scenario.name,
                        id: scenario.id,
                        label: target.binary.label(),
                        outcome,
                        duration,
                    };
                    on_done(&record);
                    record
                }),
            ));
        }
    }
    let mut records = Vec::new();
    handles.sort_by_key(|((position, ..), _)| *position);
    for ((_, scenario, id, label), handle) in handles {
        let record = match handle.await {
            Ok(record) => record,
            Err(e) => {
                let record = Record {
                    scenario,
                    id,
                    label,
                    outcome: Outcome::Failed(format!("the scenario panicked: {e}")),
                    duration: Duration::ZERO,
                };
                on_done(&record);
                record
            }
        };
        records.push(record);
    }
    records
}
