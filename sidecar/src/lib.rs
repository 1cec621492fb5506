//! `codex-parity-sidecar`: a mock OpenAI Responses API on loopback, steered over JSONL.
//!
//! The library holds the wire format (event builders in [`events`], standard bodies in
//! [`bodies`], SSE framing in [`sse`]), scripted responses ([`script`]), the JSONL protocol
//! ([`protocol`]), the captured-request view ([`captured`]) and the binary's main loop
//! ([`cli`]).
//!
//! ```
//! use codex_parity_sidecar::{bodies, sse, Scripted};
//! let body = sse::frame(&bodies::empty_response("resp-1")).unwrap();
//! assert!(body.starts_with("event: response.created\n"));
//! let line = Scripted::sse(bodies::assistant_reply("resp-1", "hi")).to_json();
//! assert!(line.is_array());
//! ```

pub mod bodies;
pub mod events;
pub mod script;
pub mod sse;

pub use events::{Phase, Usage};
pub use script::{Reply, ScriptError, Scripted, When};
pub use sse::SseError;
