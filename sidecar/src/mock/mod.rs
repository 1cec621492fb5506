//! The mock itself: scripted responses ([`script`], their [`timing`], WebSocket
//! [`connection`] scripts) in a queue, the [`server`] that answers from it over [`http`] and
//! the Responses [`websocket`] (with reply bodies of [`body`]), releasing events over time
//! ([`stream`], [`gates`]), both serving from the state they [`shared`] with the server; the
//! capture of every request (decoded by [`decode`], viewed as [`captured`] requests) and the
//! tool-call [`pairing`] check. It imports nothing of the control layer above it.

pub(crate) mod body;
pub(crate) mod capture;
pub mod captured;
pub mod connection;
pub mod decode;
pub(crate) mod gates;
pub(crate) mod http;
pub mod pairing;
pub(crate) mod queue;
pub mod script;
pub mod server;
pub(crate) mod shared;
pub(crate) mod stream;
pub mod timing;
pub(crate) mod websocket;
