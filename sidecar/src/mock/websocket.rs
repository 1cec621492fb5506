//! The Responses WebSocket (`transports.md` §1) on the same base URL: `GET …/responses` with
//! an upgrade takes the next connection script (accept with extra 101 headers, refuse, or
//! hang); each `response.create` text frame is captured as a request and answered from the
//! connection's own responses, then the shared queue with its `when` routing, one event JSON
//! per text frame and with the same timing as SSE ([`crate::mock::stream`]). Warm-up frames
//! are answered by the sidecar unless configured otherwise; `previous_response_id` is checked
//! against the responses this connection completed.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::header::{CONNECTION, CONTENT_TYPE, SEC_WEBSOCKET_ACCEPT, SEC_WEBSOCKET_KEY, UPGRADE};
use http::{HeaderValue, Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::Role;

use crate::mock::body::ReplyBody;
use crate::mock::capture::{Capture, Transport, merge_headers};
use crate::mock::captured::Outcome;
use crate::mock::connection::{ConnectionScript, Handshake, Warmup};
use crate::mock::queue::{self, Prepared};
use crate::mock::script::{Endpoint, ScriptedReply};
use crate::mock::shared::{Shared, unscripted_body, unscripted_message};
use crate::mock::stream::{self, End, Sink};
use crate::wire::{bodies, ws_frames};

/// Whether `request` asks for the Responses WebSocket.
pub(crate) fn is_upgrade(request: &Request<Incoming>) -> bool {
    request.method() == Method::GET
        && request.uri().path().ends_with("/responses")
        && request
            .headers()
            .get(UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

fn plain(status: StatusCode, body: Bytes, content_type: Option<&str>) -> Response<ReplyBody> {
    let mut response = Response::new(ReplyBody::whole(body));
    *response.status_mut() = status;
    if let Some(value) = content_type.and_then(|c| HeaderValue::from_str(c).ok()) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

fn add_headers(response: &mut Response<ReplyBody>, headers: &[(String, String)]) {
    for (name, value) in headers {
        // Checked when the connection script was parsed.
        if let Ok((name, value)) = queue::header(name, value) {
            response.headers_mut().append(name, value);
        }
    }
}

/// Answers an upgrade request as the next connection script says.
pub(crate) async fn upgrade(
    shared: Arc<Shared>,
    mut request: Request<Incoming>,
) -> Response<ReplyBody> {
    let (capture, script, warmup) = take_connection(&shared, &request);
    match &script.handshake {
        Handshake::Refuse {
            status,
            headers,
            body,
        } => refused(*status, headers, body),
        Handshake::Hang => {
            // Never answered: the client times out and closes, or the server stops.
            shared.stopping.notified().await;
            plain(StatusCode::SERVICE_UNAVAILABLE, Bytes::new(), None)
        }
        Handshake::Accept { headers } => {
            accepted(shared, &mut request, &script, capture, warmup, headers)
        }
    }
}

/// Captures the upgrade request and takes the next connection script (accept by default) and
/// its warm-up setting.
fn take_connection(
    shared: &Shared,
    request: &Request<Incoming>,
) -> (Arc<Capture>, ConnectionScript, Warmup) {
    let headers = merge_headers(
        request
            .headers()
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes())),
    );
    let mut capture = Capture::new(
        "GET".into(),
        request.uri().path().to_string(),
        request.uri().query().map(str::to_string),
        headers,
    );
    capture.transport = Transport::WebSocket;
    let (capture, (script, warmup)) = shared.record(capture, |state, capture| {
        capture.connection = Some(state.next_connection);
        state.next_connection += 1;
        let script = state
            .connections
            .pop_front()
            .unwrap_or_else(ConnectionScript::accept);
        let warmup = script.warmup.unwrap_or(state.warmup);
        (script, warmup)
    });
    (capture, script, warmup)
}

/// The refusal a `refuse` handshake scripts: its status, headers and body.
fn refused(status: u16, headers: &[(String, String)], body: &Value) -> Response<ReplyBody> {
    let (bytes, content_type) = match body {
        Value::Null => (Bytes::new(), None),
        Value::String(text) => (Bytes::from(text.clone()), Some("text/plain")),
        json => (Bytes::from(json.to_string()), Some("application/json")),
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST);
    let mut response = plain(status, bytes, content_type);
    add_headers(&mut response, headers);
    response
}

/// Accepts the upgrade: starts the connection's task once the upgrade completes and answers
/// 101 Switching Protocols with the script's extra headers.
fn accepted(
    shared: Arc<Shared>,
    request: &mut Request<Incoming>,
    script: &ConnectionScript,
    capture: Arc<Capture>,
    warmup: Warmup,
    headers: &[(String, String)],
) -> Response<ReplyBody> {
    let Some(key) = request.headers().get(SEC_WEBSOCKET_KEY) else {
        return plain(
            StatusCode::BAD_REQUEST,
            Bytes::from_static(b"missing sec-websocket-key"),
            Some("text/plain"),
        );
    };
    let accept = crate::handshake::accept_key(key.as_bytes());
    let on_upgrade = hyper::upgrade::on(request);
    let responses: VecDeque<Arc<Prepared>> = script
        .responses
        .iter()
        .filter_map(|s| queue::prepare(s).ok().map(Arc::new))
        .collect();
    let task_shared = Arc::clone(&shared);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let mut connection = Connection {
            ws,
            inbox: VecDeque::new(),
            gone: false,
            shared: task_shared,
            handshake: capture,
            responses,
            warmup,
            completed: HashMap::new(),
            frames: 0,
        };
        connection.run().await;
    });
    let mut response = Response::new(ReplyBody::whole(Bytes::new()));
    *response.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = response.headers_mut();
    h.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    h.insert(UPGRADE, HeaderValue::from_static("websocket"));
    if let Ok(value) = HeaderValue::from_str(&accept) {
        h.insert(SEC_WEBSOCKET_ACCEPT, value);
    }
    add_headers(&mut response, headers);
    response
}

/// The input a frame stands for: its resolved input when it continues a response, else its
/// own `input`.
fn conversation(capture: &Capture) -> Vec<Value> {
    match &capture.resolved_input {
        Some(input) => input.clone(),
        None => serde_json::from_slice::<Value>(&capture.body)
            .map(|frame| ws_frames::input_items(&frame))
            .unwrap_or_default(),
    }
}

/// One accepted WebSocket connection.
struct Connection {
    ws: WebSocketStream<TokioIo<Upgraded>>,
    /// Frames read while waiting during a response, handled after it.
    inbox: VecDeque<Message>,
    gone: bool,
    shared: Arc<Shared>,
    /// The upgrade request's capture (path, headers, connection number).
    handshake: Arc<Capture>,
    /// This connection's own responses, served first.
    responses: VecDeque<Arc<Prepared>>,
    warmup: Warmup,
    /// The responses this connection completed, by id, each with the conversation after it
    /// (its resolved input, then its output items): what a frame naming it continues.
    completed: HashMap<String, Vec<Value>>,
    frames: u64,
}

/// What a frame gets.
enum Answer {
    /// Nothing (not a `response.create`).
    Nothing,
    /// `created` + `completed` by the sidecar.
    AutoWarmup,
    Scripted(Arc<Prepared>),
    Unscripted(String),
}

impl Sink for Connection {
    async fn send(&mut self, event: &Value) -> bool {
        !self.gone && self.ws.send(Message::text(event.to_string())).await.is_ok()
    }

    async fn closed(&mut self) {
        while !self.gone {
            match self.ws.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => self.gone = true,
                Some(Ok(message)) => self.inbox.push_back(message),
            }
        }
    }

    async fn cut(&mut self) {
        let _ = self.ws.close(None).await;
        self.gone = true;
    }
}

impl Connection {
    async fn next_text(&mut self) -> Option<String> {
        loop {
            let message = match self.inbox.pop_front() {
                Some(message) => message,
                None if self.gone => return None,
                None => match self.ws.next().await {
                    Some(Ok(message)) => message,
                    None | Some(Err(_)) => return None,
                },
            };
            match message {
                Message::Text(text) => return Some(text.as_str().to_string()),
                Message::Binary(bytes) => {
                    return Some(String::from_utf8_lossy(&bytes).into_owned());
                }
                Message::Close(_) => return None,
                // Pongs to pings go out with the next write.
                _ => {}
            }
        }
    }

    async fn run(&mut self) {
        while let Some(text) = self.next_text().await {
            if !self.frame(text).await {
                break;
            }
            if self.ws.flush().await.is_err() {
                break;
            }
        }
        // Dropping the stream closes the TCP connection.
    }

    /// Handles one client frame; false when the connection is over.
    async fn frame(&mut self, text: String) -> bool {
        let parsed: Option<Value> = serde_json::from_str(&text).ok();
        let capture = self.frame_capture(text, parsed.as_ref());
        let (capture, answer) = self.answer_for(parsed.as_ref(), capture);
        match answer {
            Answer::Nothing => true,
            Answer::AutoWarmup => self.auto_warmup(&capture).await,
            Answer::Unscripted(message) => {
                eprintln!("{message}");
                let frame = ws_frames::error_frame_for_body(500, &unscripted_body(&message), &[]);
                self.send_one(&capture, &frame).await
            }
            Answer::Scripted(prepared) => self.serve(&capture, &prepared).await,
        }
    }

    /// The capture of one client frame: the handshake's path and headers, the frame's number
    /// and body, and a `previous_response_id` this connection did not complete.
    fn frame_capture(&mut self, text: String, parsed: Option<&Value>) -> Capture {
        let mut capture = Capture::new(
            self.handshake.method.clone(),
            self.handshake.path.clone(),
            self.handshake.query.clone(),
            self.handshake.headers.clone(),
        );
        capture.transport = Transport::WebSocket;
        capture.connection = self.handshake.connection;
        capture.frame = Some(self.frames);
        self.frames += 1;
        capture.body = text.into_bytes();
        let Some(previous) = parsed.and_then(ws_frames::previous_response_id) else {
            return capture;
        };
        match self.completed.get(previous) {
            Some(before) => {
                let mut input = before.clone();
                input.extend(parsed.map(ws_frames::input_items).unwrap_or_default());
                capture.resolved_input = Some(input);
            }
            None => {
                let message = format!(
                    "previous_response_id {previous:?} names no response this connection completed"
                );
                eprintln!("codex-parity-sidecar: {message}");
                capture.chain_error = Some(message);
            }
        }
        capture
    }

    /// Records the frame and decides what it gets: this connection's own next response, the
    /// shared queue's, the sidecar's warm-up answer, or the unscripted error.
    fn answer_for(&mut self, parsed: Option<&Value>, capture: Capture) -> (Arc<Capture>, Answer) {
        let is_create =
            parsed.and_then(|p| p.get("type")).and_then(Value::as_str) == Some("response.create");
        let warm = parsed.is_some_and(ws_frames::is_warmup);
        let auto = self.warmup == Warmup::Auto;
        let own = if is_create && !(warm && auto) {
            self.responses.pop_front()
        } else {
            None
        };
        self.shared.record(capture, |state, capture| {
            if !is_create {
                return Answer::Nothing;
            }
            if let Some(prepared) = own {
                return Answer::Scripted(prepared);
            }
            let taken = if warm && auto {
                state
                    .queue
                    .take_specific(Endpoint::Responses, &capture.body, &capture.headers)
            } else {
                state
                    .queue
                    .take(Endpoint::Responses, &capture.body, &capture.headers)
            };
            match taken {
                Some((_, prepared)) => Answer::Scripted(prepared),
                None if warm && auto => {
                    capture.auto_warmup = true;
                    Answer::AutoWarmup
                }
                None => {
                    capture.outcome = Outcome::Unscripted;
                    Answer::Unscripted(unscripted_message(capture, state.queue.len()))
                }
            }
        })
    }

    /// Answers a warm-up frame with an empty completed response; false when the connection is
    /// over.
    async fn auto_warmup(&mut self, capture: &Capture) -> bool {
        let id = format!(
            "resp_warmup_{}_{}",
            capture.connection.unwrap_or(0),
            capture.frame.unwrap_or(0)
        );
        let events = bodies::empty_response(&id);
        self.completed.insert(id, conversation(capture));
        let end = stream::deliver(
            self,
            &events,
            &Default::default(),
            &Arc::clone(&self.shared).gates,
            &capture.delivery,
            capture.started,
        )
        .await;
        end == End::Completed
    }

    /// Sends one frame as the whole response and records it.
    async fn send_one(&mut self, capture: &Capture, frame: &Value) -> bool {
        let ok = self.send(frame).await;
        stream::record_all_sent(&capture.delivery, capture.started, 1);
        ok
    }

    async fn serve(&mut self, capture: &Capture, prepared: &Prepared) -> bool {
        let scripted = &prepared.scripted;
        if scripted.delay_ms > 0 {
            let delay = tokio::time::sleep(Duration::from_millis(scripted.delay_ms));
            tokio::select! {
                () = delay => {}
                () = self.closed() => return false,
            }
        }
        match &scripted.reply {
            ScriptedReply::Sse(events) => {
                let mut after = conversation(capture);
                after.extend(ws_frames::output_items(events).cloned());
                for id in ws_frames::completed_ids(events) {
                    self.completed.insert(id.to_string(), after.clone());
                }
                let shared = Arc::clone(&self.shared);
                let end = stream::deliver(
                    self,
                    events,
                    &scripted.timing,
                    &shared.gates,
                    &capture.delivery,
                    capture.started,
                )
                .await;
                end == End::Completed
            }
            ScriptedReply::HttpError { status, body } => {
                let frame = ws_frames::error_frame_for_body(*status, body, &scripted.headers);
                self.send_one(capture, &frame).await
            }
            ScriptedReply::Raw { text, content_type } => {
                let message = if content_type == "application/octet-stream" {
                    Message::binary(text.clone().into_bytes())
                } else {
                    Message::text(text.clone())
                };
                let ok = !self.gone && self.ws.send(message).await.is_ok();
                stream::record_all_sent(&capture.delivery, capture.started, 1);
                ok
            }
        }
    }
}
