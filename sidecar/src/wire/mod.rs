//! The Responses API wire format: stream event builders ([`events`]), whole standard
//! bodies ([`bodies`]), SSE framing ([`sse`]), WebSocket frames ([`ws_frames`]), compaction
//! items and bodies ([`compaction`]), rate-limit headers and events ([`rate_limits`]) and
//! the [`base64`] that tokens and handshakes use, and [`url`]s as messages show them. Pure
//! data, no I/O.

pub mod base64;
pub mod bodies;
pub mod compaction;
pub mod events;
pub mod rate_limits;
pub mod sse;
pub mod url;
pub mod ws_frames;
