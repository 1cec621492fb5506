//! codex-parity's engine: what runs a real codex against the sidecar and judges what it did.
//! The `codex-parity` crate re-exports every module here under the same name; the layers,
//! each depending only on the ones listed before it:
//!
//! | layer | what it holds |
//! |---|---|
//! | [`codex`] | a codex binary: resolution, npm install, version, protocol schema, capabilities, schema diff |
//! | [`app_server`] | the JSON-RPC client of `codex app-server`, its messages, typed requests, the turn layer |
//! | [`harness`] | scenarios and their context, worlds (sidecar, home, workspace, proxy, git), outcomes, baselines, the runner, shards |
//! | [`drift`] | request normalisation, structural diff, golden files, request drift across versions |
//! | [`scenario_file`] | the interpreter of scenario files: an integrator's scenarios as TOML data |
//!
//! [`suggest`] (the "did you mean" of messages) is used by any of them.

pub mod app_server;
pub mod codex;
pub mod drift;
pub mod harness;
pub mod scenario_file;
pub mod suggest;

/// Locks a mutex, recovering from poisoning: a scenario that panicked while holding a lock
/// must not hide what was recorded.
pub fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
