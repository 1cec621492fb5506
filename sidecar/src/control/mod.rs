//! Steering the mock from another process: the JSONL [`protocol`] (commands and replies)
//! and the sidecar binary's main loop ([`cli`]).

pub mod cli;
pub mod protocol;
