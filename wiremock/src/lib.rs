//! The Responses mock on your own [`wiremock::MockServer`]: responders built from the
//! `codex-parity-sidecar` crate's wire-format builders (the same event JSON and SSE framing the
//! sidecar serves), mounting helpers for one response, a sequence and a response chosen by
//! a matcher, and a [`Capture`] of what codex sent, read as [`CapturedRequest`]s (the body
//! decoded from codex's `zstd`, the tool-call pairing checked).
//!
//! ```no_run
//! use codex_parity_sidecar::bodies;
//! use codex_parity_wiremock as responses;
//!
//! # async fn doc() {
//! let server = wiremock::MockServer::start().await;
//! // Two turns: a tool call, then the answer after it. Each is served once, in order; the
//! // server panics on drop if codex did not ask for both.
//! let capture = responses::mount_sequence(
//!     &server,
//!     vec![
//!         bodies::function_call_reply("r1", "c1", "lookup", "{}"),
//!         bodies::assistant_reply("r2", "done"),
//!     ],
//! )
//! .await;
//! // Point codex at `responses::base_url(&server)`, run the turn, then:
//! let second = &capture.requests()[1];
//! assert_eq!(second.function_call_output_text("c1").as_deref(), Some("the tool's answer"));
//! capture.assert_pairing();
//! # }
//! ```
//!
//! What needs the sidecar instead: streams with timing (gaps, stalls, cuts), the Responses
//! WebSocket, gates that hold a response until the test releases it, and a process any
//! language can steer (see `docs/wiremock.md`).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use wiremock::matchers::{method, path_regex};
use wiremock::{Match, Mock, MockServer, Request, Respond, ResponseTemplate};

use codex_parity_sidecar::{CapturedRequest, pairing, read_http_request, sse};

/// The base URL to give codex's provider for `server` (`{uri}/v1`).
pub fn base_url(server: &MockServer) -> String {
    format!("{}/v1", server.uri())
}

/// A `200 text/event-stream` answer whose body is `events` framed as SSE, as the sidecar
/// frames them. Events that cannot be framed (no `type`) answer `500` saying why, so a bad
/// script is never silent.
pub fn sse_response(events: &[Value]) -> ResponseTemplate {
    match sse::frame(events) {
        Ok(body) => ResponseTemplate::new(200)
            .insert_header("cache-control", "no-cache")
            .set_body_raw(body, "text/event-stream"),
        Err(e) => error_response(500, &format!("codex-parity: the scripted events: {e}")),
    }
}

/// An error answer: `status` with the Responses API's error body (`{"error": {"message"}}`).
pub fn error_response(status: u16, message: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(json!({"error": {"message": message, "type": "mock_error"}}))
}

/// The answer of `POST …/responses/compact`: a JSON body with `output` (see
/// [`codex_parity_sidecar::compaction::compact_body`]).
pub fn compact_response(output: Vec<Value>) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(codex_parity_sidecar::compaction::compact_body(output))
}

/// Matches the model requests: `POST …/responses` (not `…/responses/compact`).
pub fn responses_request() -> impl Match {
    Both(method("POST"), path_regex(r"/responses$"))
}

/// Matches the remote compaction requests: `POST …/responses/compact`.
pub fn compact_request() -> impl Match {
    Both(method("POST"), path_regex(r"/responses/compact$"))
}

/// Two matchers that must both hold.
struct Both<A, B>(A, B);

impl<A: Match, B: Match> Match for Both<A, B> {
    fn matches(&self, request: &Request) -> bool {
        self.0.matches(request) && self.1.matches(request)
    }
}

/// `request` read as the sidecar reads one: headers merged, the body decoded by its
/// `content-encoding`, parsed, and checked for tool-call pairing; `index` is its place.
pub fn captured(request: &Request, index: u64) -> CapturedRequest {
    read_http_request(
        index,
        request.method.as_ref(),
        request.url.path(),
        request.url.query(),
        request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes())),
        &request.body,
    )
}

/// What a mounted mock answered: every request, in arrival order, as [`CapturedRequest`]s.
#[derive(Debug, Clone, Default)]
pub struct Capture {
    requests: Arc<Mutex<Vec<CapturedRequest>>>,
}

impl Capture {
    /// Every request so far.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.lock().clone()
    }

    /// How many requests so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none came.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The only request; panics naming how many came otherwise.
    pub fn single(&self) -> CapturedRequest {
        let all = self.lock();
        assert_eq!(
            all.len(),
            1,
            "expected exactly one request, got {}",
            all.len()
        );
        all[0].clone()
    }

    /// The last request, if any.
    pub fn last(&self) -> Option<CapturedRequest> {
        self.lock().last().cloned()
    }

    /// Every tool-call pairing violation of the requests so far (`request #N: …`).
    pub fn pairing_violations(&self) -> Vec<String> {
        self.lock()
            .iter()
            .flat_map(|r| {
                r.pairing_violations
                    .iter()
                    .map(move |v| format!("request #{}: {v}", r.index))
            })
            .collect()
    }

    /// Panics listing every tool-call pairing violation (a call without its output, an
    /// output without its call) of the requests so far.
    pub fn assert_pairing(&self) {
        let violations = self.pairing_violations();
        assert!(
            violations.is_empty(),
            "tool-call pairing broken:\n{}",
            violations.join("\n")
        );
    }

    fn record(&self, request: &Request) {
        let mut all = self.lock();
        let index = all.len() as u64;
        all.push(captured(request, index));
    }

    fn lock(&self) -> MutexGuard<'_, Vec<CapturedRequest>> {
        self.requests
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A responder that answers a sequence of responses in order, recording each request
/// into its [`Capture`]; past the end it answers `500` saying that no scripted response
/// is left (never a silent success).
pub struct Sequence {
    left: Mutex<VecDeque<ResponseTemplate>>,
    capture: Capture,
}

impl Sequence {
    /// Answers `responses` in order.
    pub fn new(responses: Vec<ResponseTemplate>) -> Sequence {
        Sequence {
            left: Mutex::new(responses.into()),
            capture: Capture::default(),
        }
    }

    /// What it answered.
    pub fn capture(&self) -> Capture {
        self.capture.clone()
    }
}

impl Respond for Sequence {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.capture.record(request);
        let next = self
            .left
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .pop_front();
        next.unwrap_or_else(|| {
            error_response(
                500,
                "codex-parity: no scripted response left for this request",
            )
        })
    }
}

/// Mounts one SSE response for the next model request; the server checks on drop that it
/// was asked for exactly once.
pub async fn mount_one(server: &MockServer, events: Vec<Value>) -> Capture {
    mount_sequence(server, vec![events]).await
}

/// Mounts SSE responses answered in order to the model requests; the server checks on
/// drop that exactly that many came.
pub async fn mount_sequence(server: &MockServer, bodies: Vec<Vec<Value>>) -> Capture {
    let n = bodies.len() as u64;
    let responder = Sequence::new(bodies.iter().map(|b| sse_response(b)).collect());
    let capture = responder.capture();
    Mock::given(responses_request())
        .respond_with(responder)
        .expect(n)
        .named("codex-parity responses")
        .mount(server)
        .await;
    capture
}

/// Mounts one SSE response for the model requests `when` matches (answered each time it
/// matches; the server checks on drop that it matched at least once). Mount the more
/// specific ones first: wiremock answers with the first mock that matches.
pub async fn mount_when(
    server: &MockServer,
    when: impl Match + 'static,
    events: Vec<Value>,
) -> Capture {
    let responder = Repeat {
        response: sse_response(&events),
        capture: Capture::default(),
    };
    let capture = responder.capture.clone();
    Mock::given(responses_request())
        .and(when)
        .respond_with(responder)
        .expect(1..)
        .named("codex-parity responses (matched)")
        .mount(server)
        .await;
    capture
}

/// One response, answered every time, each request recorded.
struct Repeat {
    response: ResponseTemplate,
    capture: Capture,
}

impl Respond for Repeat {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        self.capture.record(request);
        self.response.clone()
    }
}

/// Matches a model request whose `input` carries `text` in a message, a call or an output.
pub fn input_contains(text: impl Into<String>) -> impl Match {
    InputContains(text.into())
}

struct InputContains(String);

impl Match for InputContains {
    fn matches(&self, request: &Request) -> bool {
        let r = captured(request, 0);
        r.input()
            .is_ok_and(|items| items.iter().any(|i| i.to_string().contains(&self.0)))
    }
}

/// Matches a model request that carries the output of the tool call `call_id` (any kind
/// of call output).
pub fn has_call_output(call_id: impl Into<String>) -> impl Match {
    HasCallOutput(call_id.into())
}

struct HasCallOutput(String);

impl Match for HasCallOutput {
    fn matches(&self, request: &Request) -> bool {
        captured(request, 0).input().is_ok_and(|items| {
            items.iter().any(|i| {
                i["call_id"] == self.0.as_str()
                    && i["type"].as_str().is_some_and(|t| t.ends_with("_output"))
            })
        })
    }
}

/// Matches a model request that keeps the tool-call pairing (every call with its output,
/// no output without its call): mount a catch-all error behind a `pairing_holds()` mock
/// to fail a turn whose history is broken.
pub fn pairing_holds() -> impl Match {
    PairingHolds
}

struct PairingHolds;

impl Match for PairingHolds {
    fn matches(&self, request: &Request) -> bool {
        let r = captured(request, 0);
        r.body_json()
            .is_ok_and(|b| pairing::violations(b).is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_parity_sidecar::bodies;

    async fn post(server: &MockServer, body: Value) -> (u16, String) {
        post_to(server, "/v1/responses", body).await
    }

    /// POSTs `body` to `path` of `server`; the status and the whole response text.
    async fn post_to(server: &MockServer, path: &'static str, body: Value) -> (u16, String) {
        let address = server.address().to_string();
        let body = body.to_string();
        let text = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect(&address).unwrap();
            write!(
                stream,
                "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            )
            .unwrap();
            let mut out = String::new();
            stream.read_to_string(&mut out).unwrap();
            out
        })
        .await
        .unwrap();
        let status = text[9..12].parse().unwrap();
        (status, text)
    }

    fn user(text: &str) -> Value {
        json!({"model": "m", "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        ]})
    }

    #[tokio::test]
    async fn a_sequence_answers_in_order_with_the_sidecar_framing_then_refuses() {
        let server = MockServer::start().await;
        let capture = Sequence::new(vec![
            sse_response(&bodies::assistant_reply("r1", "one")),
            sse_response(&bodies::assistant_reply("r2", "two")),
        ]);
        let seen = capture.capture();
        Mock::given(responses_request())
            .respond_with(capture)
            .mount(&server)
            .await;
        let (status, first) = post(&server, user("a")).await;
        assert_eq!(status, 200);
        let framed = sse::frame(&bodies::assistant_reply("r1", "one")).unwrap();
        assert!(first.ends_with(&framed), "{first}");
        assert!(first.contains("content-type: text/event-stream"), "{first}");
        assert!(post(&server, user("b")).await.1.contains("two"));
        let (status, third) = post(&server, user("c")).await;
        assert_eq!(status, 500);
        assert!(third.contains("no scripted response left"), "{third}");
        let texts: Vec<_> = seen
            .requests()
            .iter()
            .map(|r| r.last_user_text().unwrap())
            .collect();
        assert_eq!(texts, ["a", "b", "c"]);
        assert_eq!(seen.requests()[2].index, 2);
    }

    #[tokio::test]
    async fn matchers_choose_by_input_and_call_output_and_pairing_is_checked() {
        let server = MockServer::start().await;
        let after_tool = mount_when(
            &server,
            has_call_output("c1"),
            bodies::assistant_reply("r2", "after the tool"),
        )
        .await;
        let greeting = mount_when(
            &server,
            input_contains("hello"),
            bodies::assistant_reply("r1", "hi"),
        )
        .await;
        assert!(post(&server, user("hello there")).await.1.contains("hi"));
        let output = json!({"model": "m", "input": [
            {"type": "function_call_output", "call_id": "c1", "output": "42"}
        ]});
        let (status, text) = post(&server, output).await;
        assert_eq!(status, 200);
        assert!(text.contains("after the tool"), "{text}");
        assert_eq!(
            greeting.single().last_user_text().as_deref(),
            Some("hello there")
        );
        let tool = after_tool.single();
        assert_eq!(tool.function_call_output_text("c1").as_deref(), Some("42"));
        // An output without its call breaks the pairing: the capture says so.
        let body = json!({"input": [{"type": "function_call_output", "call_id": "c1"}]});
        let expected: Vec<String> = pairing::violations(&body)
            .iter()
            .map(|v| format!("request #0: {v}"))
            .collect();
        assert!(!expected.is_empty());
        assert_eq!(after_tool.pairing_violations(), expected);
        let broken = std::panic::catch_unwind(|| after_tool.assert_pairing());
        assert!(broken.is_err());
        greeting.assert_pairing();
    }

    #[tokio::test]
    async fn pairing_holds_matches_only_a_whole_history_and_compact_and_errors_answer() {
        let server = MockServer::start().await;
        Mock::given(compact_request())
            .respond_with(compact_response(vec![
                codex_parity_sidecar::compaction::item("c", "S"),
            ]))
            .mount(&server)
            .await;
        let whole = mount_when(&server, pairing_holds(), bodies::assistant_reply("r", "ok")).await;
        Mock::given(responses_request())
            .respond_with(error_response(400, "broken history"))
            .mount(&server)
            .await;
        assert_eq!(post(&server, user("fine")).await.0, 200);
        let orphan = json!({"model": "m", "input": [
            {"type": "function_call_output", "call_id": "c9", "output": "x"}
        ]});
        let (status, text) = post(&server, orphan).await;
        assert_eq!(status, 400);
        assert!(text.contains("broken history"), "{text}");
        assert_eq!(whole.len(), 1);
        // The compact endpoint is not a model request.
        let (status, compact) = post_to(&server, "/v1/responses/compact", json!({})).await;
        assert_eq!(status, 200, "{compact}");
        assert!(compact.contains("\"output\""), "{compact}");
        // Events without a `type` cannot be framed: a 500 that says why.
        let (status, text) = {
            let bad = MockServer::start().await;
            Mock::given(responses_request())
                .respond_with(sse_response(&[json!({"no": "type"})]))
                .mount(&bad)
                .await;
            post(&bad, user("x")).await
        };
        assert_eq!(status, 500);
        assert!(text.contains("the scripted events"), "{text}");
    }

    #[tokio::test]
    async fn a_sequence_not_all_asked_for_fails_the_servers_verification() {
        let server = MockServer::start().await;
        let capture = mount_sequence(
            &server,
            vec![
                bodies::assistant_reply("r1", "a"),
                bodies::assistant_reply("r2", "b"),
            ],
        )
        .await;
        post(&server, user("only one")).await;
        assert_eq!(capture.len(), 1);
        let verified = tokio::spawn(async move { server.verify().await }).await;
        assert!(verified.is_err(), "two responses mounted, one asked for");
    }
}
