//! codex-parity: proves that a program embedding the Codex CLI still works with a given
//! Codex release, against the real `codex app-server` and a mock Responses API (the
//! sidecar).
//!
//! The crate is laid out in layers, each depending only on the ones listed before it. The
//! first five are the engine's (crate `codex-parity-engine`), `scenarios` is the catalogue's
//! (crate `codex-parity-catalogue`): both are re-exported here under their own names, so
//! that `codex_parity::harness` is the one path to each, and each crate builds while the
//! compiler works on the next.
//!
//! | layer | what it holds |
//! |---|---|
//! | [`codex`] | a codex binary: resolution, npm install, version, protocol schema, capabilities, schema diff |
//! | [`app_server`] | the JSON-RPC client of `codex app-server`, its messages, typed requests, the turn layer |
//! | [`harness`] | scenarios and their context, worlds (sidecar, home, workspace, proxy, git), outcomes, baselines, the runner, shards |
//! | [`drift`] | request normalisation, structural diff, golden files, request drift across versions |
//! | [`scenario_file`] | the interpreter of scenario files: an integrator's scenarios as TOML data |
//! | [`scenarios`] | the registry of parity scenarios, one file per catalogue group, and their support |
//! | [`plan`] | the run as a library: options, the plan every front-end builds, its events and sinks, the session on one binary |
//! | [`record`] | recording an integrator's session: the shim, the recording proxy, the scenario file written from both sides |
//! | [`report`] | one results matrix rendered for the terminal, JSON, JUnit, Markdown and HTML |
//! | [`client_check`] | the integrator's client served a session and its mutations by a mock app-server, and the verdict |
//! | [`config`] | the configuration surface: config.toml keys, `-c`, features and flags judged per release |
//! | [`upgrade`] | "can I upgrade from A to B?": the uses, the recordings, the client and the known changes, one verdict |
//! | [`mod@bench`] | measurements: overhead, suite, soak, load, transports |
//!
//! The `codex-parity` binary (`src/main.rs`, `src/cli/`) sits on top of all of them;
//! [`suggest`] (the "did you mean" of messages) is used by any of them.

pub use codex_parity_catalogue::scenarios;
pub use codex_parity_engine::{
    app_server, codex, drift, ensure_eq, harness, scenario, scenario_file, suggest,
};

pub mod bench;
pub mod client_check;
pub mod config;
pub mod plan;
pub mod record;
pub mod report;
pub mod upgrade;

use codex_parity_engine::lock;
