//! The mock itself: scripted responses ([`script`]) in a queue, the wiremock-based
//! [`server`] that answers from it, the capture of every request (decoded by [`decode`],
//! viewed as [`captured`] requests) and the tool-call [`pairing`] check.

pub(crate) mod capture;
pub mod captured;
pub mod decode;
pub mod pairing;
pub(crate) mod queue;
pub mod script;
pub mod server;
