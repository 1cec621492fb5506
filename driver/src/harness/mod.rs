//! The harness layer: what a scenario is and the context it runs with, the isolated world
//! it runs in (sidecar, `CODEX_HOME`, workspace, proxy), the baselines that judge its
//! drift, and the runner that runs scenarios across binaries (or a shard of them).

pub mod baseline;
pub mod proxy;
pub mod runner;
pub mod scenario;
pub mod shard;
pub mod sidecar;
pub mod world;
