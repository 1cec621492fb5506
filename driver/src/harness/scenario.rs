//! The scenario registry: every parity scenario is data (name, id, what it needs) plus one
//! async function. The same registry feeds the test harness and `codex-parity run`.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use codex_parity_sidecar::captured::CapturedRequest;

use crate::codex::binaries::CodexBinary;
use crate::codex::capabilities::Capabilities;
use crate::harness::baseline::Drift;
use crate::harness::runner::Target;
use crate::harness::sidecar::SidecarHealth;
use crate::harness::world::{Settings, World, WorldOptions};
use crate::lock;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The body of a scenario.
pub type ScenarioFn = for<'a> fn(&'a Ctx) -> BoxFuture<'a, anyhow::Result<()>>;

/// One parity scenario.
#[derive(Clone, Copy)]
pub struct Scenario {
    /// Test name, snake case (e.g. `smoke_uses_mock_responses`).
    pub name: &'static str,
    /// Catalogue id in `parity-scenarios.md` (e.g. `A1`).
    pub id: &'static str,
    /// One line saying what it proves.
    pub summary: &'static str,
    /// `Err(reason)` when the binary lacks what the scenario needs.
    pub applies: fn(&Capabilities) -> Result<(), String>,
    /// The scenario itself.
    pub run: ScenarioFn,
    /// The longest it may take.
    pub timeout: Duration,
}

impl Scenario {
    /// A scenario that applies to every binary and may take 60 s.
    pub const fn new(
        name: &'static str,
        id: &'static str,
        summary: &'static str,
        run: ScenarioFn,
    ) -> Scenario {
        Scenario {
            name,
            id,
            summary,
            applies: always,
            run,
            timeout: Duration::from_secs(60),
        }
    }

    /// The same scenario with a capability requirement.
    pub const fn applies(self, applies: fn(&Capabilities) -> Result<(), String>) -> Scenario {
        Scenario { applies, ..self }
    }

    /// Whether `--filter text` selects it: its name contains `text`, or `text` is its id,
    /// a group letter (`A`), or an id its own extends with a letter (`E11` for `E11a`).
    pub fn matches(&self, text: &str) -> bool {
        self.name.contains(text)
            || self.id.strip_prefix(text).is_some_and(|rest| {
                !(text.ends_with(|c: char| c.is_ascii_digit())
                    && rest.starts_with(|c: char| c.is_ascii_digit()))
            })
    }

    /// The same scenario with another time limit.
    pub const fn timeout(self, timeout: Duration) -> Scenario {
        Scenario { timeout, ..self }
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.id)
    }
}

/// Applies to every binary.
pub fn always(_: &Capabilities) -> Result<(), String> {
    Ok(())
}

/// How a scenario ended on one binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every assertion held.
    Passed,
    /// Every assertion held except divergences this version's baseline lists, none of
    /// which contradicts the scenario's headline claim: each with the baseline's reason and
    /// what was seen.
    Drift(Vec<String>),
    /// Differed only as the baseline lists, but at least one listed divergence contradicts
    /// the scenario's headline claim (the claim did not hold on this version): the notes,
    /// as for [`Outcome::Drift`].
    Contradicts(Vec<String>),
    /// Something did not hold: the reason.
    Failed(String),
    /// The binary cannot do what the scenario needs: the reason. Never counted as passed.
    NotApplicable(String),
}

impl Outcome {
    /// The matrix word: `pass`, `drift` (as the baseline expects), `CONTRA` (listed drift
    /// that contradicts the headline claim), `FAIL` or `n/a`.
    pub fn word(&self) -> &'static str {
        match self {
            Outcome::Passed => "pass",
            Outcome::Drift(_) => "drift",
            Outcome::Contradicts(_) => "CONTRA",
            Outcome::Failed(_) => "FAIL",
            Outcome::NotApplicable(_) => "n/a",
        }
    }

    /// What there is to say beyond the word: the reason (failed, not applicable) or the
    /// known drift, one per line; `None` for a pass.
    pub fn detail(&self) -> Option<String> {
        match self {
            Outcome::Passed => None,
            Outcome::Drift(notes) | Outcome::Contradicts(notes) => Some(notes.join("\n")),
            Outcome::Failed(reason) | Outcome::NotApplicable(reason) => Some(reason.clone()),
        }
    }
}

/// What a scenario gets: the binary, its capabilities and the run's settings.
pub struct Ctx {
    /// The codex under test.
    pub binary: CodexBinary,
    /// What it supports.
    pub caps: Arc<Capabilities>,
    /// Run-wide settings.
    pub settings: Arc<Settings>,
    created: AtomicUsize,
    tally: Arc<Tally>,
}

/// What the worlds of one scenario run report back to it.
#[derive(Debug, Default)]
pub struct Tally {
    /// Worlds whose after-scenario checks ran.
    pub finished: AtomicUsize,
    /// Divergences of this codex version (see [`crate::harness::baseline`]).
    pub drift: Mutex<Vec<Drift>>,
    /// Every request the worlds' sidecars captured, world after world.
    pub requests: Mutex<Vec<CapturedRequest>>,
    /// Facts the scenario recorded about this codex (see [`Ctx::observe`]).
    pub observations: Mutex<Vec<String>>,
    /// The sidecars of the scenario's worlds, to say so when one died.
    pub sidecars: Mutex<Vec<Arc<SidecarHealth>>>,
}

impl Tally {
    /// Records a divergence.
    pub fn drift(&self, drift: Drift) {
        lock(&self.drift).push(drift);
    }

    /// Keeps a world's sidecar in view.
    pub fn watch_sidecar(&self, health: Arc<SidecarHealth>) {
        lock(&self.sidecars).push(health);
    }

    /// What to say about every sidecar that died without being told to stop.
    pub fn sidecar_deaths(&self) -> Vec<String> {
        lock(&self.sidecars)
            .iter()
            .filter_map(|h| h.death())
            .collect()
    }

    /// Keeps a world's captured requests.
    pub fn captured(&self, requests: Vec<CapturedRequest>) {
        lock(&self.requests).extend(requests);
    }

    fn take<T>(list: &Mutex<Vec<T>>) -> Vec<T> {
        std::mem::take(&mut *lock(list))
    }
}

impl Ctx {
    /// A context for one scenario run.
    pub fn new(binary: CodexBinary, caps: Arc<Capabilities>, settings: Arc<Settings>) -> Ctx {
        Ctx {
            binary,
            caps,
            settings,
            created: AtomicUsize::new(0),
            tally: Arc::default(),
        }
    }

    /// Records a fact about this codex that the results should carry (e.g. which edit path
    /// it took), without judging it: it lands in the record, `results.json` and the report.
    pub fn observe(&self, what: impl Into<String>) {
        lock(&self.tally.observations).push(what.into());
    }

    /// Records that this codex version differs from the catalogue, and goes on: `key` a
    /// stable dotted name (`goal.interrupt_leaves_status`), `observed` what codex showed
    /// (the baseline matches both, never `message`), `message` the same for people. The
    /// scenario fails at the end unless a baseline entry for the version lists the key and
    /// value (`fixtures/expected/baselines.json`, see [`crate::harness::baseline`]).
    pub fn drift(&self, key: &str, observed: serde_json::Value, message: impl Into<String>) {
        self.tally.drift(Drift::new(key, observed, message));
    }

    /// A fresh world. The scenario must end it with [`World::finish`].
    pub async fn world(&self, options: WorldOptions) -> anyhow::Result<World> {
        self.created.fetch_add(1, Ordering::SeqCst);
        World::new(&self.binary, &self.settings, options, self.tally.clone()).await
    }
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
        };
    }
    let ctx = Ctx::new(target.binary.clone(), target.caps.clone(), settings);
    let result = tokio::time::timeout(scenario.timeout, (scenario.run)(&ctx)).await;
    let failure = match result {
        Err(_) => Some(format!("timed out after {:?}", scenario.timeout)),
        Ok(Err(e)) => Some(format!("{e:#}")),
        Ok(Ok(())) => {
            let (c, f) = (
                ctx.created.load(Ordering::SeqCst),
                ctx.tally.finished.load(Ordering::SeqCst),
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
        let deaths = ctx.tally.sidecar_deaths();
        if deaths.is_empty() {
            f
        } else {
            format!("{}\nthen: {f}", deaths.join("\n"))
        }
    });
    let outcome = target
        .baseline
        .judge(scenario.name, failure, Tally::take(&ctx.tally.drift));
    Ran {
        outcome,
        duration: started.elapsed(),
        requests: Tally::take(&ctx.tally.requests),
        observations: Tally::take(&ctx.tally.observations),
    }
}

/// Every scenario, in catalogue order.
pub fn registry() -> Vec<Scenario> {
    let mut all = Vec::new();
    all.extend(crate::scenarios::executor::scenarios());
    all.extend(crate::scenarios::goal::scenarios());
    all.extend(crate::scenarios::goal_continuation::scenarios());
    all.extend(crate::scenarios::history::scenarios());
    all.extend(crate::scenarios::files::scenarios());
    all.extend(crate::scenarios::request_shape::scenarios());
    all.extend(crate::scenarios::lifecycle::scenarios());
    all.extend(crate::scenarios::threads::scenarios());
    all.extend(crate::scenarios::dynamic_tools::scenarios());
    all.extend(crate::scenarios::interaction::scenarios());
    all.extend(crate::scenarios::approvals::scenarios());
    all.extend(crate::scenarios::reasoning::scenarios());
    all.extend(crate::scenarios::fault::scenarios());
    all.extend(crate::scenarios::protocol::scenarios());
    all
}

/// The test name of a scenario on a binary: `name[codex-0.171.0]`.
pub fn test_name(scenario: &Scenario, binary: &CodexBinary) -> String {
    format!("{}[{}]", scenario.name, binary.label())
}

/// Fails with "what: expected right, got left" unless `left == right`.
#[macro_export]
macro_rules! ensure_eq {
    ($left:expr, $right:expr, $($what:tt)+) => {
        match (&$left, &$right) {
            (l, r) => {
                if l != r {
                    anyhow::bail!("{}: expected {:?}, got {:?}", format!($($what)+), r, l);
                }
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_snake_case() {
        let all = registry();
        let mut names: Vec<&str> = all.iter().map(|s| s.name).collect();
        names.sort();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "duplicate scenario names");
        for n in names {
            assert!(
                n.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{n}"
            );
        }
    }

    #[test]
    fn filters_name_groups_and_ids() {
        let s = |id| Scenario::new("turn_interrupt", id, "", |_| Box::pin(async { Ok(()) }));
        assert!(s("E1").matches("E1"));
        assert!(!s("E15").matches("E1"));
        assert!(s("E11a").matches("E11"));
        assert!(s("A7").matches("A"));
        assert!(s("E9").matches("interrupt"));
        assert!(!s("E9").matches("steer"));
    }

    #[test]
    fn test_names_carry_the_version() {
        let s = registry()[0];
        let b = CodexBinary {
            path: "/x/codex".into(),
            version: "0.171.0".into(),
        };
        assert_eq!(test_name(&s, &b), format!("{}[codex-0.171.0]", s.name));
    }
}
