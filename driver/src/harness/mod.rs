//! The harness layer: what a scenario is and the context it runs with, how it ended
//! ([`outcome`]) and what its worlds reported ([`tally`]) and exercised of the protocol
//! ([`coverage`]), the isolated world
//! it runs in (sidecar, `CODEX_HOME`, workspace, proxy), the baselines that judge its
//! drift, the runner that runs scenarios across binaries (or a shard of them), and the
//! search for the release in which a scenario's outcome changed ([`bisect`]), and a
//! [`session`] on one binary for another crate's tests (the harness as a library).

pub mod baseline;
pub mod bisect;
pub mod codex_env;
pub mod conformance;
pub mod coverage;
pub mod expectations;
pub mod git;
pub mod home_template;
pub mod outcome;
pub mod pending;
pub mod perf;
pub mod proxy;
pub mod run_dir;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod sidecar;
pub mod tally;
pub mod world;
