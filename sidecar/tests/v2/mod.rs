//! Test support for the v2 transports: the sidecar binary driven over pipes with raw JSONL
//! lines (on purpose: these tests pin the v2 commands' wire format, as a client in another
//! language writes them; `timing.rs` also drives a gate through the typed client), an SSE
//! client that times each event as it arrives, and a WebSocket client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use codex_parity_sidecar::handshake::{self, HandshakeError};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// The sidecar to run and its arguments: this crate's binary in its own tests, `codex-parity
/// sidecar` in the driver's (`driver/tests/sidecar_on_codex.rs` includes this file).
fn program() -> (&'static str, &'static [&'static str]) {
    match (
        option_env!("CARGO_BIN_EXE_codex-parity-sidecar"),
        option_env!("CARGO_BIN_EXE_codex-parity"),
    ) {
        (Some(sidecar), _) => (sidecar, &[]),
        (None, Some(driver)) => (driver, &["sidecar"]),
        (None, None) => panic!("no sidecar binary in this package's tests"),
    }
}

/// A running sidecar binary.
pub(crate) struct Sidecar {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: mpsc::Receiver<String>,
    pub ready: Value,
}

impl Sidecar {
    pub(crate) fn start() -> Sidecar {
        let (bin, args) = program();
        let mut child = Command::new(bin)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sidecar");
        let stdin = child.stdin.take();
        let mut pipe = BufReader::new(child.stdout.take().unwrap());
        let (sender, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = String::new();
                match pipe.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut sidecar = Sidecar {
            child,
            stdin,
            stdout,
            ready: Value::Null,
        };
        sidecar.ready = sidecar.read_line();
        assert_eq!(sidecar.ready["type"], "ready");
        sidecar
    }

    pub(crate) fn base_url(&self) -> String {
        self.ready["base_url"].as_str().unwrap().to_string()
    }

    pub(crate) fn ws_url(&self) -> String {
        self.base_url().replacen("http://", "ws://", 1) + "/responses"
    }

    fn read_line(&mut self) -> Value {
        let line = self
            .stdout
            .recv_timeout(Duration::from_secs(30))
            .expect("a stdout line within 30 s");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a command, returns its reply.
    pub(crate) fn call(&mut self, command: Value) -> Value {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(command.to_string().as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
        self.read_line()
    }

    pub(crate) fn enqueue(&mut self, responses: Value) -> Value {
        self.call(json!({"op": "enqueue", "responses": responses}))
    }

    /// `requests` with `all: true` after waiting for `min`.
    pub(crate) fn all_requests(&mut self, min: u64) -> Vec<Value> {
        let reply =
            self.call(json!({"op": "requests", "all": true, "min": min, "timeout_ms": 5000}));
        reply["requests"].as_array().unwrap().clone()
    }

    /// Model requests after waiting for `min`.
    pub(crate) fn requests(&mut self, min: u64) -> Vec<Value> {
        let reply = self.call(json!({"op": "requests", "min": min, "timeout_ms": 5000}));
        reply["requests"].as_array().unwrap().clone()
    }

    /// Sends `shutdown`; returns the reply, the exit status and stderr.
    pub(crate) fn shutdown(mut self) -> (Value, ExitStatus, String) {
        let reply = self.call(json!({"op": "shutdown"}));
        let deadline = Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "sidecar did not exit");
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        (reply, status, stderr)
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What an SSE client saw.
#[derive(Debug)]
pub(crate) struct Streamed {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    /// Each complete event (the text before its blank line) and when it arrived, in ms since
    /// the request was sent.
    pub events: Vec<(String, f64)>,
    /// Whether the body ended cleanly (false: the connection was cut).
    pub clean_end: bool,
}

impl Streamed {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The event types in order.
    pub(crate) fn types(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|(text, _)| {
                text.lines()
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("event: ")
                    .to_string()
            })
            .collect()
    }
}

/// A hyper connection to the sidecar at `base_url`.
pub(crate) async fn connect(
    base_url: &str,
) -> (hyper::client::conn::http1::SendRequest<Full<Bytes>>, String) {
    let authority = base_url
        .strip_prefix("http://")
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_string();
    let stream = tokio::net::TcpStream::connect(&authority).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    (sender, authority)
}

/// `POST {base}/responses` with `body`, reading the events as they come, stopping after
/// `stop_after` events when given (then dropping the connection).
pub(crate) async fn stream_post(
    base_url: &str,
    body: &Value,
    stop_after: Option<usize>,
) -> Streamed {
    stream_to(base_url, "/responses", body, stop_after).await
}

/// Like [`stream_post`] for any path under the base URL.
pub(crate) async fn stream_to(
    base_url: &str,
    path: &str,
    body: &Value,
    stop_after: Option<usize>,
) -> Streamed {
    let (mut sender, authority) = connect(base_url).await;
    let base_path = base_url.split_once("//").unwrap().1;
    let base_path = &base_path[base_path.find('/').unwrap_or(base_path.len())..];
    let request = hyper::Request::builder()
        .method("POST")
        .uri(format!("{base_path}{path}"))
        .header("host", authority)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let started = Instant::now();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    let mut body = response.into_body();
    let mut buffer = String::new();
    let mut events = Vec::new();
    let clean_end = loop {
        if stop_after.is_some_and(|n| events.len() >= n) {
            break false;
        }
        match body.frame().await {
            None => break true,
            Some(Err(_)) => break false,
            Some(Ok(frame)) => {
                let at = started.elapsed().as_secs_f64() * 1000.0;
                if let Ok(data) = frame.into_data() {
                    buffer.push_str(&String::from_utf8_lossy(&data));
                    while let Some(end) = buffer.find("\n\n") {
                        events.push((buffer[..end].to_string(), at));
                        buffer.drain(..end + 2);
                    }
                }
            }
        }
    };
    Streamed {
        status,
        headers,
        events,
        clean_end,
    }
}

/// A WebSocket client connection.
pub(crate) type Ws = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Opens the Responses WebSocket with extra handshake headers; returns the stream and the 101
/// response's headers.
pub(crate) async fn ws_connect(
    url: &str,
    headers: &[(&str, &str)],
) -> Result<(Ws, Vec<(String, String)>), HandshakeError> {
    let mut request = handshake::request(url)?;
    for (name, value) in headers {
        request.headers_mut().insert(
            http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
            http::HeaderValue::from_str(value).unwrap(),
        );
    }
    let host = request.uri().authority().unwrap().to_string();
    let stream = tokio::net::TcpStream::connect(&host).await.unwrap();
    stream.set_nodelay(true).unwrap();
    let (ws, response) = handshake::connect(stream, request).await?;
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Ok((ws, headers))
}

/// Sends one `response.create` frame.
pub(crate) async fn ws_send(ws: &mut Ws, frame: &Value) {
    ws.send(Message::text(frame.to_string())).await.unwrap();
}

/// What the server sent for one request.
#[derive(Debug, Default)]
pub(crate) struct WsReply {
    /// Text frames parsed as JSON (`Value::String(raw)` when not JSON), with arrival ms.
    pub frames: Vec<(Value, f64)>,
    /// Binary frames.
    pub binary: Vec<Vec<u8>>,
    /// Whether the server closed (close frame or EOF) before `response.completed`.
    pub closed: bool,
}

impl WsReply {
    pub(crate) fn types(&self) -> Vec<String> {
        self.frames
            .iter()
            .map(|(f, _)| f["type"].as_str().unwrap_or("?").to_string())
            .collect()
    }
}

/// Reads frames until `response.completed` or an `error` frame, a close, or `timeout`.
pub(crate) async fn ws_read_response(ws: &mut Ws, timeout: Duration) -> WsReply {
    let started = Instant::now();
    let mut reply = WsReply::default();
    loop {
        let next =
            tokio::time::timeout_at(tokio::time::Instant::from_std(started + timeout), ws.next())
                .await;
        let message = match next {
            Err(_) => return reply,
            Ok(None) | Ok(Some(Err(_))) | Ok(Some(Ok(Message::Close(_)))) => {
                reply.closed = true;
                return reply;
            }
            Ok(Some(Ok(message))) => message,
        };
        let at = started.elapsed().as_secs_f64() * 1000.0;
        match message {
            Message::Text(text) => {
                let value = serde_json::from_str(text.as_str())
                    .unwrap_or_else(|_| Value::String(text.as_str().to_string()));
                let done = matches!(value["type"].as_str(), Some("response.completed" | "error"));
                reply.frames.push((value, at));
                if done {
                    return reply;
                }
            }
            Message::Binary(bytes) => {
                reply.binary.push(bytes.to_vec());
                return reply;
            }
            _ => {}
        }
    }
}

/// A `response.create` frame.
pub(crate) fn create(input: &str, previous: Option<&str>) -> Value {
    let mut frame = json!({"type": "response.create", "model": "mock-model", "stream": true,
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": input}]}]});
    if let Some(previous) = previous {
        frame["previous_response_id"] = json!(previous);
    }
    frame
}

/// The warm-up frame.
pub(crate) fn warmup() -> Value {
    json!({"type": "response.create", "model": "mock-model", "input": [], "generate": false})
}
