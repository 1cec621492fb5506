//! `codex-parity-sidecar`: a mock OpenAI Responses API on loopback, steered over JSONL.
//!
//! Use it in-process like wiremock: start a [`Server`], script what the model answers,
//! point the client under test at [`Server::base_url`], then read what it sent.
//!
//! ```
//! use std::io::{Read, Write};
//! use codex_parity_sidecar::{bodies, Scripted, Server};
//!
//! # fn main() -> anyhow::Result<()> {
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! runtime.block_on(async {
//!     let server = Server::start("127.0.0.1", 0).await?;
//!     server.verify_on_drop(); // panics on drop if a scripted reply is never served
//!     server.enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "Hello!"))])?;
//!
//!     // Any HTTP client will do; this is what codex does for a turn.
//!     let body = r#"{"model":"m","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]}"#;
//!     let address = server.server_url().trim_start_matches("http://").to_string();
//!     let mut stream = std::net::TcpStream::connect(&address)?;
//!     write!(
//!         stream,
//!         "POST /v1/responses HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\n\
//!          content-length: {}\r\nconnection: close\r\n\r\n{body}",
//!         body.len()
//!     )?;
//!     let mut response = String::new();
//!     stream.read_to_string(&mut response)?;
//!     assert!(response.starts_with("HTTP/1.1 200"));
//!     assert!(response.contains("event: response.completed"));
//!     assert!(response.contains("Hello!"));
//!
//!     let requests = server.received_requests();
//!     assert_eq!(requests.len(), 1);
//!     assert_eq!(requests[0].last_user_text().as_deref(), Some("hi"));
//!     anyhow::Ok(())
//! })
//! # }
//! ```
//!
//! Three layers, each using only the ones before it: [`wire`], the Responses wire format
//! (event builders in [`events`], standard bodies in [`bodies`], SSE framing in [`sse`],
//! WebSocket frames in [`ws_frames`], [`compaction`] and [`rate_limits`]); [`mock`], the mock
//! itself (scripted responses in [`script`] with their [`timing`], WebSocket [`connection`]
//! scripts, the [`server`] with its queue and capture, [`decode`], [`pairing`], the
//! [`captured`] view for assertions); and [`control`], steering it from another process (the
//! JSONL [`protocol`], its typed async [`Client`], a sidecar run as a child process in
//! [`spawn`], and the binary's main loop in [`cli`]). The modules are re-exported at the root
//! under their own names. Beside them, [`handshake`] is the WebSocket opening handshake that
//! the mock's clients and the driver's relays use, and [`mcp`] is a scripted stdio MCP server
//! for codex to launch (`codex-parity-sidecar mcp --script FILE`).
//!
//! ```
//! use codex_parity_sidecar::{bodies, sse, Scripted};
//! let body = sse::frame(&bodies::empty_response("resp-1")).unwrap();
//! assert!(body.starts_with("event: response.created\n"));
//! let line = Scripted::sse(bodies::assistant_reply("resp-1", "hi")).to_json();
//! assert!(line.is_array());
//! ```

pub mod control;
pub mod handshake;
pub mod mcp;
pub mod mock;
pub mod wire;

pub use control::{cli, client, protocol, spawn};
pub use mock::{captured, connection, decode, pairing, script, server, timing};
pub use wire::{base64, bodies, compaction, events, rate_limits, sse, url, ws_frames};

pub use control::client::{Client, ClientError, Ready, ShutdownReply};
pub use control::spawn::{Ended, Exit, SidecarProcess, Stderr};
pub use mock::capture::{SELECTED_HEADERS, read_http_request};
pub use mock::captured::{CapturedRequest, Outcome};
pub use mock::connection::{ConnectionScript, Handshake, Warmup};
pub use mock::script::{Endpoint, ScriptError, Scripted, ScriptedReply, When};
pub use mock::server::{Leftovers, RequestFilter, Server};
pub use wire::events::{Phase, Usage};
pub use wire::sse::SseError;
