//! What a parity scenario is: data (name, id, summary, what it needs, how long it may take)
//! plus one async body, and the [`Ctx`] the body runs with. Scenarios are declared with
//! [`scenario!`](crate::scenario) and the builder methods [`Scenario::applies`] and
//! [`Scenario::timeout`]; the registry of all of them is `crate::scenarios::registry`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::app_server::turn::{Turn, TurnStatus};
use crate::codex::binaries::CodexBinary;
use crate::codex::capabilities::Capabilities;
use crate::harness::outcome::Drift;
use crate::harness::perf::{Growth, Measurement};
pub use crate::harness::tally::Tally;
use crate::harness::world::{Listen, Settings, Transport, World, WorldOptions};

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A plain scenario body as a function pointer (any closure of the same shape does too).
pub type ScenarioFn = for<'a> fn(&'a Ctx) -> BoxFuture<'a, anyhow::Result<()>>;

/// The body of a scenario: runs it with its context.
pub type Body = Arc<dyn for<'a> Fn(&'a Ctx) -> BoxFuture<'a, anyhow::Result<()>> + Send + Sync>;

/// What a scenario needs of a binary: `Err(reason)` when the binary lacks it.
pub type Requirement = Arc<dyn Fn(&Capabilities) -> Result<(), String> + Send + Sync>;

/// One parity scenario.
#[derive(Clone)]
pub struct Scenario {
    /// Test name, snake case (e.g. `smoke_uses_mock_responses`).
    pub name: &'static str,
    /// Catalogue id in `parity-scenarios.md` (e.g. `A1`).
    pub id: &'static str,
    /// One line saying what it proves.
    pub summary: &'static str,
    /// `Err(reason)` when the binary lacks what the scenario needs.
    pub applies: Requirement,
    /// The scenario itself.
    pub run: Body,
    /// The longest it may take.
    pub timeout: Duration,
    /// The transport every world of the scenario offers codex: `Http` leaves each world's
    /// own choice; `WebSocket` makes all of them offer the Responses WebSocket (a twin of an
    /// HTTP scenario, see [`Scenario::over_websocket`]).
    pub transport: Transport,
    /// How every world of the scenario's app-servers talk to their client: `Stdio` leaves
    /// each world's own choice; a listener makes all of them one (a twin of a stdio scenario
    /// over `codex app-server --listen`, see [`Scenario::over_listener`]).
    pub listen: Listen,
    /// The golden expectations it keeps, declared with the scenario.
    pub golden: GoldenKinds,
    /// Whether it runs alone: no other scenario of the run runs beside it (the performance
    /// scenarios, whose measurements another scenario's codex would disturb; see
    /// [`Scenario::exclusive`]).
    pub exclusive: bool,
    /// Whether it waits on a timeout of its own or of codex's (seconds, not round trips):
    /// the runner starts it before the others so that the wait overlaps them (see
    /// [`Scenario::waits`]).
    pub waits: bool,
}

/// Which golden expectations a scenario keeps: its normalised model requests
/// (`crate::drift::golden`), the shape of what codex sent its client
/// (`crate::drift::golden_transcript`). Declared with [`Scenario::golden_requests`] and
/// [`Scenario::golden_transcript`] where the scenario is declared; nothing lists them
/// elsewhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GoldenKinds {
    /// Its requests are compared with a golden file.
    pub requests: bool,
    /// Its transcript's shape is compared with a golden transcript.
    pub transcript: bool,
}

/// Declares a scenario in one expression: `scenario!("name", "A1", "summary", body_fn)`,
/// where `body_fn` is an `async fn(&Ctx) -> anyhow::Result<()>`, or
/// `scenario!("name", "A3", "summary", body_fn(x, y))`, which runs `body_fn(ctx, x, y)`;
/// add requirements and time limits with [`Scenario::applies`] and [`Scenario::timeout`].
#[macro_export]
macro_rules! scenario {
    ($name:expr, $id:expr, $summary:expr, $body:ident ( $($arg:expr),* $(,)? ) $(,)?) => {
        $crate::harness::scenario::Scenario::new($name, $id, $summary, move |c| {
            ::std::boxed::Box::pin($body(c, $($arg),*))
        })
    };
    ($name:expr, $id:expr, $summary:expr, $body:expr $(,)?) => {
        $crate::harness::scenario::Scenario::new($name, $id, $summary, |c| {
            ::std::boxed::Box::pin($body(c))
        })
    };
}

impl Scenario {
    /// A scenario that applies to every binary and may take 60 s.
    pub fn new(
        name: &'static str,
        id: &'static str,
        summary: &'static str,
        run: impl for<'a> Fn(&'a Ctx) -> BoxFuture<'a, anyhow::Result<()>> + Send + Sync + 'static,
    ) -> Scenario {
        Scenario {
            name,
            id,
            summary,
            applies: Arc::new(|_: &Capabilities| Ok(())),
            run: Arc::new(run),
            timeout: Duration::from_secs(60),
            transport: Transport::Http,
            listen: Listen::Stdio,
            golden: GoldenKinds::default(),
            exclusive: false,
            waits: false,
        }
    }

    /// The same scenario run with the Responses WebSocket on in every world, under another
    /// name and id: its twin over the other transport (catalogue F2), which keeps no golden
    /// expectation of its own.
    pub fn over_websocket(self, name: &'static str, id: &'static str) -> Scenario {
        Scenario {
            name,
            id,
            transport: Transport::WebSocket,
            golden: GoldenKinds::default(),
            ..self
        }
    }

    /// The same scenario run with its app-servers behind `codex app-server --listen` over
    /// `listen` in every world, under another name and id (group I): its twin for a client
    /// of the listener, which keeps no golden expectation of its own and applies only where
    /// the binary's `app-server --help` lists the listener.
    pub fn over_listener(self, name: &'static str, id: &'static str, listen: Listen) -> Scenario {
        let applies = self.applies.clone();
        Scenario {
            name,
            id,
            listen,
            golden: GoldenKinds::default(),
            applies: Arc::new(move |caps: &Capabilities| {
                caps.needs_listen(listen.scheme())?;
                applies(caps)
            }),
            ..self
        }
    }

    /// The same scenario with its requests compared with a golden file (its body calls
    /// `crate::drift::golden::assert_matches`).
    pub fn golden_requests(mut self) -> Scenario {
        self.golden.requests = true;
        self
    }

    /// The same scenario with its transcript compared with a golden transcript after the
    /// run.
    pub fn golden_transcript(mut self) -> Scenario {
        self.golden.transcript = true;
        self
    }

    /// The same scenario run alone: the runner starts it only when every job slot is free
    /// and starts nothing else until it ends.
    pub fn exclusive(mut self) -> Scenario {
        self.exclusive = true;
        self
    }

    /// The same scenario marked as one that waits on a timeout (codex's idle timeout, an
    /// unanswered refresh, a bounded wait for answers that may never come): started before
    /// the others, its wait overlaps their work instead of running alone at the end.
    pub fn waits(mut self) -> Scenario {
        self.waits = true;
        self
    }

    /// The same scenario with a capability requirement (replacing any earlier one).
    pub fn applies(
        self,
        applies: impl Fn(&Capabilities) -> Result<(), String> + Send + Sync + 'static,
    ) -> Scenario {
        Scenario {
            applies: Arc::new(applies),
            ..self
        }
    }

    /// The same scenario with another time limit.
    pub fn timeout(self, timeout: Duration) -> Scenario {
        Scenario { timeout, ..self }
    }

    /// Whether `--filter text` selects it: its name contains `text`, or `text` is its id,
    /// a group letter (`A`), or an id its own extends with a letter (`E11` for `E11a`); a
    /// comma-separated list (`H8,H17`) selects what any of its parts does.
    pub fn matches(&self, text: &str) -> bool {
        if text.contains(',') {
            return text
                .split(',')
                .map(str::trim)
                .any(|part| !part.is_empty() && self.matches(part));
        }
        self.name.contains(text)
            || self.id.strip_prefix(text).is_some_and(|rest| {
                !(text.ends_with(|c: char| c.is_ascii_digit())
                    && rest.starts_with(|c: char| c.is_ascii_digit()))
            })
    }
}

impl std::fmt::Debug for Scenario {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.id)
    }
}

/// What a scenario gets: itself, the binary, its capabilities and the run's settings.
pub struct Ctx {
    /// The codex under test.
    pub binary: CodexBinary,
    /// What it supports.
    pub caps: Arc<Capabilities>,
    /// Run-wide settings.
    pub settings: Arc<Settings>,
    scenario: Scenario,
    created: AtomicUsize,
    tally: Arc<Tally>,
}

impl Ctx {
    /// Records drift under `key` when `got` is not `want` (the value codex gave is what the
    /// baseline matches). Unlisted drift fails the scenario, so this is as strict as an
    /// assert while letting the scenario go on and report every difference.
    pub fn expect(&self, key: &str, want: serde_json::Value, got: serde_json::Value) {
        if want != got {
            let message = format!("{key}: expected {want}, got {got}");
            self.drift(key, got, message);
        }
    }

    /// [`Ctx::expect`] for a turn's status: drift under `key` when `turn` did not end
    /// `want` (compared and recorded as codex's strings).
    pub fn expect_status(&self, key: &str, want: TurnStatus, turn: &Turn) {
        self.expect(key, serde_json::json!(want), serde_json::json!(turn.status));
    }

    /// A context for one run of `scenario`.
    pub fn new(
        scenario: &Scenario,
        binary: CodexBinary,
        caps: Arc<Capabilities>,
        settings: Arc<Settings>,
    ) -> Ctx {
        Ctx {
            binary,
            caps,
            settings,
            scenario: scenario.clone(),
            created: AtomicUsize::new(0),
            tally: Arc::default(),
        }
    }

    /// The scenario this context runs.
    pub fn scenario(&self) -> &Scenario {
        &self.scenario
    }

    /// Records a fact about this codex that the results should carry (e.g. which edit path
    /// it took), without judging it: it lands in the record, `results.json` and the report.
    pub fn observe(&self, what: impl Into<String>) {
        self.tally.observe(what.into());
    }

    /// Records that this codex version differs from the catalogue, and goes on: `key` a
    /// stable dotted name (`goal.interrupt_leaves_status`), `observed` what codex showed
    /// (the baseline matches both, never `message`), `message` the same for people. The
    /// scenario fails at the end unless a baseline entry for the version lists the key and
    /// value (`fixtures/expected/baselines.json`, see [`crate::harness::baseline`]).
    pub fn drift(&self, key: &str, observed: serde_json::Value, message: impl Into<String>) {
        self.tally.drift(Drift::new(key, observed, message));
    }

    /// Records what a performance scenario measured of one operation on both sides (see
    /// [`crate::harness::perf`]): it lands in the record and `results.json` whatever the
    /// scenario's outcome.
    pub fn measured(&self, measurement: Measurement) {
        crate::lock(&self.tally.perf).measurements.push(measurement);
    }

    /// Records how an operation grew with the size of the home.
    pub fn grew(&self, growth: Growth) {
        crate::lock(&self.tally.perf).growth.push(growth);
    }

    /// A fresh world. The scenario must end it with [`World::finish`]. A scenario run over
    /// the WebSocket ([`Scenario::over_websocket`]) offers it in every world it makes; one
    /// over a listener ([`Scenario::over_listener`]) listens so in every world.
    pub async fn world(&self, mut options: WorldOptions) -> anyhow::Result<World> {
        self.created.fetch_add(1, Ordering::SeqCst);
        if self.scenario.transport == Transport::WebSocket {
            options.transport = Transport::WebSocket;
        }
        if self.scenario.listen != Listen::Stdio {
            options.listen = self.scenario.listen;
        }
        World::new(&self.binary, &self.settings, options, self.tally.clone()).await
    }

    /// How many worlds the scenario created.
    pub fn worlds_created(&self) -> usize {
        self.created.load(Ordering::SeqCst)
    }

    /// What the scenario's worlds reported back.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }
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

    async fn nothing(_: &Ctx) -> anyhow::Result<()> {
        Ok(())
    }

    async fn fails_with(_: &Ctx, what: &'static str, n: u32) -> anyhow::Result<()> {
        anyhow::bail!("{what} {n}")
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
        assert!(s("H17").matches("H8,H17"));
        assert!(s("E9").matches("nothing, interrupt"));
        assert!(!s("E15").matches("E1,A"));
        assert!(!s("E9").matches(","));
    }

    #[test]
    fn the_macro_and_builders_declare_one_scenario() {
        let s = crate::scenario!("some_name", "Z1", "says what", nothing)
            .timeout(Duration::from_secs(5))
            .applies(|_| Err("never".to_string()));
        assert_eq!((s.name, s.id, s.summary), ("some_name", "Z1", "says what"));
        assert_eq!(s.timeout, Duration::from_secs(5));
        let caps = Capabilities::default();
        assert_eq!((s.applies)(&caps), Err("never".to_string()));
        let with_args = crate::scenario!("with_args", "Z3", "", fails_with("row", 3));
        assert_eq!((with_args.name, with_args.id), ("with_args", "Z3"));
        let plain = crate::scenario!("other", "Z2", "", nothing);
        assert_eq!(plain.timeout, Duration::from_secs(60));
        assert_eq!((plain.applies)(&caps), Ok(()));
    }

    #[test]
    fn test_names_carry_the_version() {
        let s = crate::scenario!("some_name", "Z1", "", nothing);
        let b = CodexBinary {
            path: "/x/codex".into(),
            version: "0.171.0".into(),
        };
        assert_eq!(test_name(&s, &b), "some_name[codex-0.171.0]");
    }
}
