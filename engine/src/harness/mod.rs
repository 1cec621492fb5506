//! The harness layer: what a scenario is and the context it runs with, how it ended
//! ([`outcome`]) and what its worlds reported ([`tally`]) and exercised of the protocol
//! ([`coverage`]), the isolated world
//! it runs in (sidecar, `CODEX_HOME`, workspace, proxy), the baselines that judge its
//! drift, the runner that runs scenarios across binaries (or a shard of them), and the
//! search for the release in which a scenario's outcome changed ([`bisect`]), the run's own
//! temporary directory ([`run_dir`]) and the [`guard`] that cleans up after a command
//! killed outright. (The harness as a library for another crate's tests is
//! `crate::plan::session`.)

pub mod baseline;
pub mod bisect;
pub mod codex_env;
pub mod conformance;
pub mod coverage;
pub mod egress_trap;
pub mod expectations;
pub mod git;
pub mod guard;
pub mod home_template;
pub mod outcome;
pub mod pending;
pub mod perf;
pub mod run_dir;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod sidecar;
pub mod tally;
pub mod world;
