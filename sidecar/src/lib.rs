//! `codex-parity-sidecar`: a mock OpenAI Responses API on loopback, steered over JSONL.
//!
//! The library holds the wire format (event builders in [`events`], standard bodies in
//! [`bodies`], SSE framing in [`sse`]), scripted responses ([`script`]), the mock itself
//! ([`server`] with its script queue and capture, [`decode`], [`pairing`]), the JSONL
//! protocol ([`protocol`]), the captured-request view for assertions ([`captured`]) and the
//! binary's main loop ([`cli`]).
//!
//! ```
//! use codex_parity_sidecar::{bodies, sse, Scripted};
//! let body = sse::frame(&bodies::empty_response("resp-1")).unwrap();
//! assert!(body.starts_with("event: response.created\n"));
//! let line = Scripted::sse(bodies::assistant_reply("resp-1", "hi")).to_json();
//! assert!(line.is_array());
//! ```

pub mod bodies;
mod capture;
pub mod captured;
pub mod cli;
pub mod decode;
pub mod events;
pub mod pairing;
pub mod protocol;
mod queue;
pub mod script;
pub mod server;
pub mod sse;

pub use capture::SELECTED_HEADERS;
pub use captured::{CapturedRequest, Outcome};
pub use events::{Phase, Usage};
pub use script::{ScriptError, Scripted, ScriptedReply, When};
pub use sse::SseError;
