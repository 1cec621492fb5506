//! The harness as a library: a [`Session`] on one codex binary, for another crate's tests
//! (`docs/library.md`). It is a [`Plan`] on that binary, built from [`Options`] like any
//! front-end's (its capabilities read from its own schema, the baselines of its version,
//! `strict`, the settings worlds are made with), and runs a [`Scenario`] written in Rust
//! exactly as `codex-parity run` does: applicability, time limit, the after-scenario
//! checks, the check of what codex sent against its schema, and the baseline's judgement.
//!
//! ```no_run
//! use codex_parity::app_server::turn::{TurnOptions, run_turn, text};
//! use codex_parity::harness::scenario::{Ctx, Scenario};
//! use codex_parity::plan::session::Session;
//! use codex_parity::harness::sidecar::SidecarLauncher;
//! use codex_parity::harness::world::WorldOptions;
//! use codex_parity_sidecar::{Scripted, bodies};
//!
//! async fn my_flow(ctx: &Ctx) -> anyhow::Result<()> {
//!     let mut world = ctx.world(WorldOptions::default()).await?;
//!     world.script(vec![Scripted::sse(bodies::assistant_reply("r1", "hi"))]).await?;
//!     let app = world.start().await?;
//!     let (thread, _) = world.start_thread(&app, serde_json::json!({})).await?;
//!     let turn = run_turn(&app, &thread, vec![text("hello")], &TurnOptions::default()).await?;
//!     anyhow::ensure!(turn.final_response() == "hi");
//!     world.finish().await
//! }
//!
//! # async fn doc() -> anyhow::Result<()> {
//! let session = Session::pinned(SidecarLauncher::from_env()?).await?;
//! let scenario = codex_parity::scenario!("my_flow", "MY-1", "says hi", my_flow);
//! session.check(&scenario).await?;
//! # Ok(()) }
//! ```

use std::path::Path;

use anyhow::Context;

use crate::codex::binaries::{self, BinaryRequest, CodexBinary};
use crate::codex::capabilities::Capabilities;
use crate::codex::install::{Cache, StderrProgress};
use crate::harness::outcome::Outcome;
use crate::harness::runner::{Ran, Target};
use crate::harness::scenario::Scenario;
use crate::harness::sidecar::SidecarLauncher;
use crate::plan::{Options, Plan};

/// One codex binary, ready to run scenarios on.
#[derive(Debug, Clone)]
pub struct Session {
    plan: Plan,
}

impl Session {
    /// A session on `binary` with the default [`Options`].
    pub async fn new(binary: CodexBinary, sidecar: SidecarLauncher) -> anyhow::Result<Session> {
        Session::with_options(binary, sidecar, Options::default()).await
    }

    /// A session on `binary` with `options` (its baselines, `strict`, `keep`: what they
    /// mean to `codex-parity run`): its schema is read (about a second), its version's
    /// entries of the built-in baselines apply; worlds start their sidecar with `sidecar`.
    pub async fn with_options(
        binary: CodexBinary,
        sidecar: SidecarLauncher,
        options: Options,
    ) -> anyhow::Result<Session> {
        let plan = Plan::builder(options)?.build(vec![binary], sidecar).await?;
        anyhow::ensure!(plan.targets.len() == 1, "no target prepared");
        Ok(Session { plan })
    }

    /// A session on the first binary of `CODEX_TEST_BINS`, else on the pinned version
    /// (installed from npm into the cache on first use).
    pub async fn pinned(sidecar: SidecarLauncher) -> anyhow::Result<Session> {
        Session::pinned_with_options(sidecar, Options::default()).await
    }

    /// [`Session::pinned`] with `options` (see [`Session::with_options`]).
    pub async fn pinned_with_options(
        sidecar: SidecarLauncher,
        options: Options,
    ) -> anyhow::Result<Session> {
        let request = BinaryRequest {
            paths: Vec::new(),
            versions: Vec::new(),
            env: std::env::var_os(binaries::CODEX_TEST_BINS),
        };
        let cache = Cache::from_env()?;
        let binary = binaries::resolve_request(&request, &cache, &StderrProgress::new())
            .await?
            .into_iter()
            .next()
            .context("no codex binary resolved")?;
        Session::with_options(binary, sidecar, options).await
    }

    /// The same session also judged by the baselines at `location` (a file, or a
    /// directory holding `baselines.json`): your own known drift.
    pub fn with_baselines(mut self, location: &Path) -> anyhow::Result<Session> {
        self.plan = self.plan.with_baselines(location.to_path_buf())?;
        Ok(self)
    }

    /// The plan the session runs on: its options, its one target, its settings.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    fn target(&self) -> &Target {
        &self.plan.targets[0]
    }

    /// The codex binary.
    pub fn binary(&self) -> &CodexBinary {
        &self.target().binary
    }

    /// What it supports, read from its schema.
    pub fn capabilities(&self) -> &Capabilities {
        &self.target().caps
    }

    /// Runs `scenario` as the matrix would; everything it produced (outcome, captured
    /// requests, transcripts, drift, observations).
    pub async fn run(&self, scenario: &Scenario) -> Ran {
        self.plan.run_one(scenario, self.target()).await
    }

    /// Runs `scenario`; `Ok` with the outcome when it passed or differed only as the
    /// baselines list, an error with the reason when it failed or was not applicable.
    pub async fn check(&self, scenario: &Scenario) -> anyhow::Result<Outcome> {
        let label = self.binary().label();
        match self.run(scenario).await.outcome {
            Outcome::Failed(reason) => anyhow::bail!("{}[{label}] failed: {reason}", scenario.name),
            Outcome::NotApplicable(reason) => {
                anyhow::bail!("{}[{label}] is not applicable: {reason}", scenario.name)
            }
            done => Ok(done),
        }
    }
}
