//! The Responses WebSocket relayed by the recording proxy: codex's upgrade (`GET …/responses`
//! with `upgrade: websocket`) is first made upstream, with codex's handshake headers, and only
//! then accepted, with the upstream's 101 headers; frames then go both ways unchanged. Each
//! `response.create` text frame of codex opens an [`Exchange`]; the upstream's text frames are
//! its events until one of type `response.completed`, `response.failed`,
//! `response.incomplete` or `error` ends it. An upgrade the upstream refuses gets codex the
//! upstream's answer (or a `502`) and is recorded as an [`End::UpstreamError`] exchange.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::header::{
    CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_EXTENSIONS,
    SEC_WEBSOCKET_KEY, UPGRADE,
};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::exchange::{End, Exchange, Micros, Transport, is_final_event, now_us};
use super::headers::{forwarded_request, forwarded_response, recorded};
use super::http_relay::{RelayBody, answer, bad_gateway, below_base};
use super::journal::Journal;
use super::upstream::{Upstream, UpstreamStream, WebSocketError};

/// How long a closing handshake may take once one side went away.
const CLOSE_WAIT: Duration = Duration::from_secs(1);

/// Whether `request` asks for a WebSocket.
pub fn is_upgrade(request: &Request<Incoming>) -> bool {
    request.method() == Method::GET
        && request
            .headers()
            .get(UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("websocket"))
}

/// Answers codex's upgrade: opens the upstream's WebSocket, then accepts codex's and relays
/// between them in a task of the journal.
pub async fn upgrade(
    journal: Arc<Journal>,
    upstream: Arc<Upstream>,
    mut request: Request<Incoming>,
) -> Result<Response<RelayBody>, Infallible> {
    let request_at = now_us();
    let connection = journal.next_connection();
    let path = below_base(request.uri());
    let Some(key) = request.headers().get(SEC_WEBSOCKET_KEY).cloned() else {
        journal.problem(format!(
            "WebSocket connection {connection} (GET {path}): no sec-websocket-key, refused"
        ));
        let body = Bytes::from_static(b"missing sec-websocket-key");
        return Ok(answer(StatusCode::BAD_REQUEST, "text/plain", body));
    };
    let headers = forwarded_request(request.headers(), &upstream.authority());
    let failed = |status: u16, headers, body, message: String| {
        let index = journal.next_index();
        journal.problem(format!(
            "exchange {index} (WebSocket connection {connection}, GET {path}): {message}"
        ));
        journal.finish(Exchange {
            index,
            transport: Transport::WebSocket { connection },
            method: "GET".into(),
            path: path.clone(),
            request_at,
            request: Value::Null,
            status,
            headers,
            events: Vec::new(),
            body,
            end: End::UpstreamError { message },
        });
    };
    let (socket, handshake) = match upstream.websocket(&path, &headers).await {
        Ok(pair) => pair,
        Err(WebSocketError::Refused(refusal)) => {
            let status = refusal.status();
            let body = refusal.body().clone();
            let text = (!body.is_empty()).then(|| String::from_utf8_lossy(&body).into_owned());
            let message = format!(
                "the upstream {} refused the WebSocket upgrade with {status}",
                upstream.url()
            );
            failed(status.as_u16(), recorded(refusal.headers()), text, message);
            let mut response = Response::new(RelayBody::Whole(
                (!body.is_empty()).then(|| Bytes::from(body)),
            ));
            *response.status_mut() = status;
            *response.headers_mut() = forwarded_response(refusal.headers());
            response.headers_mut().remove(CONTENT_LENGTH);
            return Ok(response);
        }
        Err(WebSocketError::Other(e)) => {
            let message = format!("{e:#}");
            failed(
                StatusCode::BAD_GATEWAY.as_u16(),
                Vec::new(),
                None,
                message.clone(),
            );
            return Ok(bad_gateway(&message));
        }
    };
    let on_upgrade = hyper::upgrade::on(&mut request);
    let relay = Relay {
        journal: journal.clone(),
        connection,
        path,
        headers: recorded(handshake.headers()),
        open: VecDeque::new(),
    };
    journal.spawn(async move {
        match on_upgrade.await {
            Ok(upgraded) => {
                let codex =
                    WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None)
                        .await;
                relay.run(codex, socket).await;
            }
            Err(e) => relay.journal.problem(format!(
                "WebSocket connection {} (GET {}): codex's upgrade did not complete: {e}",
                relay.connection, relay.path
            )),
        }
    });
    Ok(switching_protocols(&key, handshake.headers()))
}

/// The 101 codex gets: the upstream's handshake headers, with this connection's accept key.
fn switching_protocols(key: &HeaderValue, upstream: &http::HeaderMap) -> Response<RelayBody> {
    let mut response = Response::new(RelayBody::Whole(None));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let mut headers = forwarded_response(upstream);
    for name in [
        SEC_WEBSOCKET_ACCEPT,
        SEC_WEBSOCKET_EXTENSIONS,
        CONTENT_LENGTH,
        CONTENT_TYPE,
    ] {
        headers.remove(name);
    }
    headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    headers.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(accept) =
        HeaderValue::from_str(&codex_parity_sidecar::handshake::accept_key(key.as_bytes()))
    {
        headers.insert(SEC_WEBSOCKET_ACCEPT, accept);
    }
    *response.headers_mut() = headers;
    response
}

/// One relayed WebSocket connection and the exchanges open on it.
struct Relay {
    journal: Arc<Journal>,
    connection: usize,
    path: String,
    /// The upstream's handshake headers, as recorded.
    headers: Vec<(String, String)>,
    /// Responses asked for and not yet ended, oldest first.
    open: VecDeque<Exchange>,
}

/// Which side a frame came from.
enum Side {
    Codex,
    Upstream,
}

impl Side {
    /// How an open exchange ends when this side goes away at `at`.
    fn closed(&self, at: Micros) -> End {
        match self {
            Side::Codex => End::ClientClosed { at },
            Side::Upstream => End::UpstreamClosed { at },
        }
    }
}

impl Relay {
    /// Relays until a side closes or fails; ends the open exchanges as that side's doing.
    async fn run(
        mut self,
        mut codex: WebSocketStream<TokioIo<Upgraded>>,
        mut upstream: WebSocketStream<UpstreamStream>,
    ) {
        // The close frame of the side that closed, passed on to the other.
        let mut closing = (None, None);
        loop {
            let (side, message) = tokio::select! {
                message = codex.next() => (Side::Codex, message),
                message = upstream.next() => (Side::Upstream, message),
            };
            let at = now_us();
            let message = match message {
                Some(Ok(Message::Close(frame))) => {
                    self.end_open(side.closed(at));
                    closing = match side {
                        Side::Codex => (None, frame),
                        Side::Upstream => (frame, None),
                    };
                    break;
                }
                Some(Err(_)) | None => {
                    self.end_open(side.closed(at));
                    break;
                }
                // Each side's library answers its pings.
                Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
                Some(Ok(message)) => message,
            };
            let delivered = match side {
                Side::Codex => {
                    if let Message::Text(text) = &message {
                        self.codex_sent(text.as_str(), at);
                    }
                    upstream.send(message).await.is_ok()
                }
                Side::Upstream => {
                    if let Message::Text(text) = &message {
                        self.upstream_sent(text.as_str(), at);
                    }
                    codex.send(message).await.is_ok()
                }
            };
            if !delivered {
                let at = now_us();
                let other = match side {
                    Side::Codex => Side::Upstream,
                    Side::Upstream => Side::Codex,
                };
                self.end_open(other.closed(at));
                break;
            }
        }
        let (to_codex, to_upstream) = closing;
        let _ = tokio::time::timeout(CLOSE_WAIT, codex.close(to_codex)).await;
        let _ = tokio::time::timeout(CLOSE_WAIT, upstream.close(to_upstream)).await;
    }

    /// A text frame of codex: a `response.create` opens an exchange.
    fn codex_sent(&mut self, text: &str, at: Micros) {
        let Ok(frame) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if frame.get("type").and_then(Value::as_str) != Some("response.create") {
            return;
        }
        self.open.push_back(Exchange {
            index: self.journal.next_index(),
            transport: Transport::WebSocket {
                connection: self.connection,
            },
            method: "WS".into(),
            path: self.path.clone(),
            request_at: at,
            request: frame,
            status: StatusCode::SWITCHING_PROTOCOLS.as_u16(),
            headers: self.headers.clone(),
            events: Vec::new(),
            body: None,
            end: End::Completed,
        });
    }

    /// A text frame of the upstream: an event of the oldest open exchange, which a final
    /// event ends (recorded before codex gets the frame).
    fn upstream_sent(&mut self, text: &str, at: Micros) {
        let Some(exchange) = self.open.front_mut() else {
            return;
        };
        let event =
            serde_json::from_str::<Value>(text).unwrap_or_else(|_| Value::String(text.into()));
        let last = is_final_event(&event);
        exchange.events.push((at, event));
        if last && let Some(exchange) = self.open.pop_front() {
            self.journal.finish(exchange);
        }
    }

    /// Ends every open exchange so.
    fn end_open(&mut self, end: End) {
        for mut exchange in self.open.drain(..) {
            exchange.end = end.clone();
            self.journal.finish(exchange);
        }
    }
}
