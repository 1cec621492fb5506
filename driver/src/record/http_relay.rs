//! One HTTP request of codex relayed by the recording proxy: the request (method, path below
//! the proxy's `/v1`, query, headers, body) sent on to the upstream, and the upstream's
//! answer streamed back chunk by chunk as it arrives while a task records it: the SSE events
//! with their times ([`SseEvents`]), or the whole body as text, and how it ended. An
//! upstream that cannot be reached gets codex a `502` with a JSON error naming it.

use std::convert::Infallible;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{CONTENT_ENCODING, CONTENT_TYPE};
use http::{HeaderMap, HeaderValue, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::{Body, Frame, Incoming, SizeHint};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::exchange::{End, Exchange, Transport, is_final_event, now_us};
use super::headers::{forwarded_request, forwarded_response, recorded};
use super::journal::Journal;
use super::sse_events::SseEvents;
use super::upstream::Upstream;

/// The path of the proxy's base URL, stripped from what codex asks for.
pub const BASE_PATH: &str = "/v1";

/// How many chunks wait between the upstream and codex before the upstream is read no more.
const CHUNKS_IN_FLIGHT: usize = 16;

/// What codex asked for below the proxy's base URL: the path without [`BASE_PATH`], with
/// the query (`/models?client_version=1`); a path outside it is kept whole.
pub fn below_base(uri: &Uri) -> String {
    let path = uri.path();
    let rest = match path.strip_prefix(BASE_PATH) {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => rest,
        _ => path,
    };
    match uri.query() {
        Some(query) => format!("{rest}?{query}"),
        None => rest.to_string(),
    }
}

/// A body the proxy answers codex with: whole, or the upstream's chunks as they come (an
/// error chunk breaks the connection, as the upstream's did).
pub enum RelayBody {
    /// All of it (taken when sent).
    Whole(Option<Bytes>),
    /// Chunks from the task relaying the upstream's body.
    Stream(mpsc::Receiver<io::Result<Bytes>>),
}

impl Body for RelayBody {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            RelayBody::Whole(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            RelayBody::Stream(chunks) => chunks
                .poll_recv(cx)
                .map(|chunk| chunk.map(|c| c.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, RelayBody::Whole(None))
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            RelayBody::Whole(bytes) => {
                SizeHint::with_exact(bytes.as_ref().map_or(0, |b| b.len() as u64))
            }
            RelayBody::Stream(_) => SizeHint::default(),
        }
    }
}

/// A whole response of the proxy's own.
pub fn answer(status: StatusCode, content_type: &str, body: Bytes) -> Response<RelayBody> {
    let mut response = Response::new(RelayBody::Whole((!body.is_empty()).then_some(body)));
    *response.status_mut() = status;
    if let Ok(value) = HeaderValue::from_str(content_type) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    response
}

/// The `502` codex gets when the upstream could not be reached: an OpenAI-style error JSON.
pub fn bad_gateway(message: &str) -> Response<RelayBody> {
    let body = json!({"error": {"type": "upstream_error", "message": message}});
    answer(
        StatusCode::BAD_GATEWAY,
        "application/json",
        Bytes::from(body.to_string()),
    )
}

/// An exchange waiting for the upstream's answer: recorded as [`End::ClientClosed`] when
/// dropped before it is taken (codex closed the connection, or the proxy stopped).
struct Abandoned {
    journal: Arc<Journal>,
    exchange: Option<Exchange>,
}

impl Drop for Abandoned {
    fn drop(&mut self) {
        if let Some(mut exchange) = self.exchange.take() {
            exchange.end = End::ClientClosed { at: now_us() };
            self.journal.finish(exchange);
        }
    }
}

/// Relays one HTTP request of codex to the upstream; the answer streams on after this
/// returns, and the exchange is recorded when it ends.
pub async fn forward(
    journal: Arc<Journal>,
    upstream: Arc<Upstream>,
    request: Request<Incoming>,
) -> Result<Response<RelayBody>, Infallible> {
    let request_at = now_us();
    let index = journal.next_index();
    let path = below_base(request.uri());
    let (parts, body) = request.into_parts();
    let name = format!("exchange {index} ({} {path})", parts.method);
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            journal.problem(format!(
                "{name}: codex's request body could not be read: {e}"
            ));
            let message = format!("the recording proxy could not read the request body: {e}");
            let body = Bytes::from(json!({"error": {"message": message}}).to_string());
            return Ok(answer(StatusCode::BAD_REQUEST, "application/json", body));
        }
    };
    let exchange = Exchange {
        index,
        transport: Transport::Http,
        method: parts.method.to_string(),
        path: path.clone(),
        request_at,
        request: request_json(&journal, &name, &parts.headers, &bytes),
        status: StatusCode::BAD_GATEWAY.as_u16(),
        headers: Vec::new(),
        events: Vec::new(),
        body: None,
        end: End::Completed,
    };
    // Until the upstream answers, codex may go away (an interrupt while the model thinks):
    // this future is then dropped, and the guard records the exchange as abandoned.
    let mut pending = Abandoned {
        journal: journal.clone(),
        exchange: Some(exchange),
    };
    let target = upstream.target(&path);
    let sent = match Request::builder()
        .method(parts.method)
        .uri(&target)
        .body(Full::new(bytes))
    {
        Ok(mut outgoing) => {
            *outgoing.headers_mut() = forwarded_request(&parts.headers, &upstream.authority());
            upstream.send(outgoing).await
        }
        Err(e) => Err(anyhow::Error::new(e).context(format!(
            "the upstream target {target} of {} is not a valid URI",
            upstream.url()
        ))),
    };
    let Some(mut exchange) = pending.exchange.take() else {
        return Ok(bad_gateway("the recording proxy lost track of the request"));
    };
    match sent {
        Ok(response) => Ok(relay(journal, exchange, response, name)),
        Err(e) => {
            let message = format!("{e:#}");
            journal.problem(format!("{name}: {message}"));
            exchange.end = End::UpstreamError {
                message: message.clone(),
            };
            journal.finish(exchange);
            Ok(bad_gateway(&message))
        }
    }
}

/// The request body as JSON, decoded as its `content-encoding` says (`Null` when empty or
/// not JSON); a body that cannot be decoded is a problem.
fn request_json(journal: &Journal, name: &str, headers: &HeaderMap, bytes: &[u8]) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    let encoding = headers.get(CONTENT_ENCODING).and_then(|v| v.to_str().ok());
    match codex_parity_sidecar::decode::decode_body(encoding, bytes) {
        Ok(decoded) => serde_json::from_slice(&decoded).unwrap_or(Value::Null),
        Err(e) => {
            journal.problem(format!(
                "{name}: the request body is relayed but not recorded: {e}"
            ));
            Value::Null
        }
    }
}

/// How the body is recorded.
enum Reading {
    /// As SSE events.
    Sse(SseEvents),
    /// As text.
    Text(Vec<u8>),
    /// Not at all: it is compressed.
    Opaque,
}

/// Starts relaying the upstream's response; returns the response codex gets.
fn relay(
    journal: Arc<Journal>,
    mut exchange: Exchange,
    response: Response<Incoming>,
    name: String,
) -> Response<RelayBody> {
    let (parts, body) = response.into_parts();
    exchange.status = parts.status.as_u16();
    exchange.headers = recorded(&parts.headers);
    let text = |name| {
        parts
            .headers
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(|v| v.trim().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let encoding = text(CONTENT_ENCODING);
    let reading = if !encoding.is_empty() && encoding != "identity" {
        journal.problem(format!(
            "{name}: the upstream answered with content-encoding {encoding}: the body is \
             relayed but not recorded"
        ));
        Reading::Opaque
    } else if text(CONTENT_TYPE).starts_with("text/event-stream") {
        Reading::Sse(SseEvents::default())
    } else {
        Reading::Text(Vec::new())
    };
    let (chunks, receiver) = mpsc::channel(CHUNKS_IN_FLIGHT);
    let task_journal = journal.clone();
    journal.spawn(pump(task_journal, exchange, body, chunks, reading, name));
    let mut answer = Response::new(RelayBody::Stream(receiver));
    *answer.status_mut() = parts.status;
    *answer.headers_mut() = forwarded_response(&parts.headers);
    answer
}

/// Moves the upstream's body to codex chunk by chunk, recording as it goes; the exchange is
/// recorded before codex sees the body end, so a finished response is always in the journal.
async fn pump(
    journal: Arc<Journal>,
    mut exchange: Exchange,
    mut body: Incoming,
    chunks: mpsc::Sender<io::Result<Bytes>>,
    mut reading: Reading,
    name: String,
) {
    let end = loop {
        let frame = tokio::select! {
            biased;
            frame = body.frame() => frame,
            () = chunks.closed() => break codex_left(&exchange),
        };
        let data = match frame {
            None => break End::Completed,
            Some(Err(e)) => {
                let at = now_us();
                journal.problem(format!(
                    "{name}: the upstream closed the connection before the body ended: {e}"
                ));
                let _ = chunks
                    .send(Err(io::Error::other(format!("the upstream closed: {e}"))))
                    .await;
                break End::UpstreamClosed { at };
            }
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                // Trailers: not relayed (codex reads none).
                Err(_) => continue,
            },
        };
        let at = now_us();
        match &mut reading {
            Reading::Sse(sse) => exchange.events.extend(sse.push(&data, at)),
            Reading::Text(text) => text.extend_from_slice(&data),
            Reading::Opaque => {}
        }
        if chunks.send(Ok(data)).await.is_err() {
            break codex_left(&exchange);
        }
    };
    if let Reading::Text(text) = reading
        && !text.is_empty()
    {
        exchange.body = Some(String::from_utf8_lossy(&text).into_owned());
    }
    exchange.end = end;
    journal.finish(exchange);
    drop(chunks);
}

/// How a response ends when codex goes away from it now: [`End::Completed`] once codex had
/// its final event (codex may close before the upstream ends the body), else
/// [`End::ClientClosed`].
fn codex_left(exchange: &Exchange) -> End {
    if exchange.events.iter().any(|(_, e)| is_final_event(e)) {
        End::Completed
    } else {
        End::ClientClosed { at: now_us() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxys_own_base_path_is_stripped_and_the_query_kept() {
        let uri = |s: &str| s.parse::<Uri>().unwrap();
        assert_eq!(below_base(&uri("/v1/responses")), "/responses");
        assert_eq!(
            below_base(&uri("/v1/models?client_version=0.1")),
            "/models?client_version=0.1"
        );
        assert_eq!(below_base(&uri("/v1")), "");
        assert_eq!(below_base(&uri("/v10/x")), "/v10/x");
        assert_eq!(below_base(&uri("/other")), "/other");
    }
}
