//! Recording an integrator's own session (`codex-parity record`): a shim relays the
//! client's JSON-RPC to the real `codex app-server`, a proxy forwards codex's model requests
//! to the upstream, and both sides become one scenario file.
//!
//! The client side: [`shim`] is the `codex` the client runs, [`relay`] relays and logs its
//! stdio, [`timeline`] reads the logs back; [`listener`] does both for a client
//! of an app-server listener. The model side: [`model_proxy::ModelProxy`]
//! listens for codex, relays HTTP ([`http_relay`], SSE read by [`sse_events`]) and the
//! Responses WebSocket ([`ws_relay`]) to the [`upstream::Upstream`], passing on the
//! [`headers`] it should, and keeps what it recorded in a [`journal::Journal`] of
//! [`exchange::Exchange`]s. [`writer`] makes the scenario-file model of both and [`render`]
//! writes it with its comments (through `crate::scenario_file::write`, the same code that
//! reads it back), [`redact`] keeps secrets out of everything written; [`recorder`] runs a
//! recording from start to end.

pub mod exchange;
pub mod headers;
pub mod http_relay;
pub mod journal;
pub mod listener;
pub mod model_proxy;
pub mod recorder;
pub mod redact;
pub mod relay;
pub mod render;
pub mod shim;
pub mod sse_events;
pub mod timeline;
pub mod upstream;
pub mod writer;
pub mod ws_relay;
