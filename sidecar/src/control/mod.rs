//! Steering the mock from another process: the JSONL [`protocol`] (commands and replies),
//! the typed [`client`] of it, a sidecar run as a child process ([`spawn`]), children that die
//! with their parent ([`parent_death`]) and the sidecar binary's main loop ([`cli`]).

pub mod cli;
pub mod client;
pub mod parent_death;
pub mod protocol;
pub mod spawn;
