//! The Responses API wire format: stream event builders ([`events`]), whole standard
//! bodies ([`bodies`]) and SSE framing ([`sse`]). Pure data, no I/O.

pub mod bodies;
pub mod events;
pub mod sse;
