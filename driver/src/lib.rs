//! codex-parity: proves that a program embedding the Codex CLI still works with a given
//! Codex release, against the real `codex app-server` and a mock Responses API (the
//! sidecar).
//!
//! The pieces, in the order data flows through them: [`binaries`] and [`install`] find or
//! fetch codex binaries; [`capabilities`] reads what each supports; [`scenario`] holds the
//! registry that both the test harness and `codex-parity run` use; each scenario builds a
//! [`world::World`] (sidecar, `CODEX_HOME`, workspace, [`proxy`]), drives
//! [`app_server::AppServer`] through the [`turn`] layer, and checks what the
//! [`sidecar::Sidecar`] captured; [`runner`] runs scenarios across binaries
//! (or a [`shard`] of them), and [`report`] renders the result matrix.

pub mod app_server;
pub mod baseline;
pub mod bench;
pub mod binaries;
pub mod capabilities;
pub mod install;
pub mod message;
pub mod proxy;
pub mod report;
pub mod requests;
pub mod runner;
pub mod scenario;
pub mod scenarios;
pub mod shard;
pub mod sidecar;
pub mod turn;
pub mod versions;
pub mod world;
