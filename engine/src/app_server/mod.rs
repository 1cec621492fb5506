//! The app-server layer: a JSON-RPC client of one `codex app-server` process (its
//! messages, typed requests and child-process handling) over stdio, or of a connection to
//! its listener (`listener`, and `proxy` for the control socket's other clients), and the
//! turn layer above it; and `codex exec --json`, run to its end with its event stream kept.
//! Depends only on the codex layer.

pub mod child;
pub mod client;
mod connection;
pub mod exec;
pub mod listener;
pub mod message;
pub mod proxy;
pub mod requests;
pub mod transcript;
pub mod turn;
pub mod usage;

pub use client::*;
