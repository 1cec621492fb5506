//! The Responses API wire format: stream event builders ([`events`]), whole standard
//! bodies ([`bodies`]), SSE framing ([`sse`]), WebSocket frames ([`ws_frames`]), compaction
//! items and bodies ([`compaction`]) and rate-limit headers and events ([`rate_limits`]).
//! Pure data, no I/O.

pub mod bodies;
pub mod compaction;
pub mod events;
pub mod rate_limits;
pub mod sse;
pub mod ws_frames;
