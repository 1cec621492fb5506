//! codex-parity: proves that a program embedding the Codex CLI still works with a given
//! Codex release, against the real `codex app-server` and a mock Responses API (the
//! sidecar).
//!
//! The pieces, in the order data flows through them: [`binaries`] and [`install`] find or
//! fetch codex binaries; [`schema`] reads the protocol schema a binary prints, from which
//! [`capabilities`] decides what each supports and [`schema_diff`] shows what changed
//! between two of them; [`scenario`] holds the registry that both the test harness and
//! `codex-parity run` use; each scenario builds a [`world::World`] (sidecar, `CODEX_HOME`,
//! workspace, [`proxy`]), drives [`app_server::AppServer`] through the [`turn`] layer, and
//! checks what the [`sidecar::Sidecar`] captured, judged against the version's [`baseline`];
//! [`runner`] runs scenarios across binaries (or a [`shard`] of them), and [`report`]
//! renders the result matrix.

pub mod app_server;
pub mod baseline;
pub mod bench;
pub mod binaries;
pub mod capabilities;
mod child;
pub mod git;
pub mod golden;
pub mod install;
pub mod message;
pub mod normalize;
pub mod png;
pub mod proxy;
pub mod report;
pub mod request_diff;
pub mod request_drift;
pub mod requests;
pub mod rollout;
pub mod runner;
pub mod scenario;
pub mod scenarios;
pub mod schema;
pub mod schema_diff;
pub mod shard;
pub mod sidecar;
pub mod turn;
pub mod versions;
pub mod world;

/// Locks a mutex, recovering from poisoning: a scenario that panicked while holding a lock
/// must not hide what was recorded.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
