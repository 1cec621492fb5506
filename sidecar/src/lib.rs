//! `codex-parity-sidecar`: a mock OpenAI Responses API on loopback, steered over JSONL.
//!
//! Three layers, each using only the ones before it: [`wire`], the Responses wire format
//! (event builders in [`events`], standard bodies in [`bodies`], SSE framing in [`sse`],
//! WebSocket frames in [`ws_frames`], [`compaction`] and [`rate_limits`]); [`mock`], the mock
//! itself (scripted responses in [`script`] with their [`timing`], WebSocket [`connection`]
//! scripts, the [`server`] with its queue and capture, [`decode`], [`pairing`], the
//! [`captured`] view for assertions); and
//! [`control`], steering it from another process (the JSONL [`protocol`] and the binary's
//! main loop in [`cli`]). The modules are re-exported at the root under their own names.
//!
//! ```
//! use codex_parity_sidecar::{bodies, sse, Scripted};
//! let body = sse::frame(&bodies::empty_response("resp-1")).unwrap();
//! assert!(body.starts_with("event: response.created\n"));
//! let line = Scripted::sse(bodies::assistant_reply("resp-1", "hi")).to_json();
//! assert!(line.is_array());
//! ```

pub mod control;
pub mod mock;
pub mod wire;

pub use control::{cli, protocol};
pub use mock::{captured, connection, decode, pairing, script, server, timing};
pub use wire::{bodies, compaction, events, rate_limits, sse, ws_frames};

pub use mock::capture::SELECTED_HEADERS;
pub use mock::captured::{CapturedRequest, Outcome};
pub use mock::connection::{ConnectionScript, Handshake, Warmup};
pub use mock::script::{Endpoint, ScriptError, Scripted, ScriptedReply, When};
pub use wire::events::{Phase, Usage};
pub use wire::sse::SseError;
