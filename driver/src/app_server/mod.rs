//! The app-server layer: a JSON-RPC client of one `codex app-server` process (its
//! messages, typed requests and child-process handling) and the turn layer above it.
//! Depends only on the codex layer.

pub mod child;
pub mod client;
pub mod message;
pub mod requests;
pub mod transcript;
pub mod turn;

pub use client::*;
