//! The HTTP side of the mock, on hyper directly: the accept loop on the server's own thread,
//! one connection task each, and the service that captures every request and answers it from
//! the script queue: whole bodies, timed SSE streams ([`crate::mock::stream`]), compaction
//! JSON, the models body, the "no scripted response was left" 500, or the WebSocket upgrade
//! ([`crate::mock::websocket`]).

use std::convert::Infallible;
use std::net::TcpListener as StdListener;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::mock::body::ReplyBody;
use crate::mock::capture::{Capture, decoded_body, merge_headers};
use crate::mock::captured::Outcome;
use crate::mock::queue::Prepared;
use crate::mock::script::{Endpoint, ScriptedReply};
use crate::mock::shared::{Shared, unscripted_body, unscripted_message};
use crate::mock::stream::{self, SseSink};
use crate::mock::websocket;

/// The server thread: a current-thread runtime serving `listener` until `stop` fires.
/// `started` reports whether serving began.
pub(crate) fn run_thread(
    listener: StdListener,
    shared: Arc<Shared>,
    stop: oneshot::Receiver<()>,
    started: oneshot::Sender<anyhow::Result<()>>,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            let _ = started.send(Err(anyhow::anyhow!("cannot start the server runtime: {e}")));
            return;
        }
    };
    runtime.block_on(async move {
        let listener = match tokio::net::TcpListener::from_std(listener) {
            Ok(listener) => listener,
            Err(e) => {
                let _ = started.send(Err(anyhow::anyhow!("cannot use the listener: {e}")));
                return;
            }
        };
        let _ = started.send(Ok(()));
        tokio::pin!(stop);
        loop {
            tokio::select! {
                _ = &mut stop => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        let _ = stream.set_nodelay(true);
                        tokio::spawn(serve_connection(stream, Arc::clone(&shared)));
                    }
                    Err(e) => {
                        eprintln!("codex-parity-sidecar: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                },
            }
        }
    });
    // Held streams and hung upgrades end with the runtime.
    runtime.shutdown_background();
}

async fn serve_connection(stream: tokio::net::TcpStream, shared: Arc<Shared>) {
    let service = service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, Infallible>(handle(shared, request).await) }
    });
    // Errors here are the client going away or a scripted disconnect: nothing to report.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
}

/// Answers one request.
async fn handle(shared: Arc<Shared>, request: Request<Incoming>) -> Response<ReplyBody> {
    if websocket::is_upgrade(&request) {
        return websocket::upgrade(shared, request).await;
    }
    let (parts, body) = request.into_parts();
    let headers = merge_headers(
        parts
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_bytes())),
    );
    let raw = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let mut capture = Capture::new(
        parts.method.as_str().to_string(),
        parts.uri.path().to_string(),
        parts.uri.query().map(str::to_string),
        headers,
    );
    let (body, decode_error) = decoded_body(&capture.headers, &raw);
    capture.body = body;
    capture.decode_error = decode_error;
    enum Answer {
        Scripted(Arc<Prepared>),
        Models(Bytes),
        Unscripted(String),
    }
    let (capture, answer) = shared.record(capture, |state, capture| {
        let endpoint = if capture.is_model_request() {
            Some(Endpoint::Responses)
        } else if capture.method == "POST" && capture.path.ends_with("/responses/compact") {
            Some(Endpoint::Compact)
        } else {
            None
        };
        let taken = match endpoint {
            Some(endpoint) => state
                .queue
                .take(endpoint, &capture.body, &capture.headers)
                .map(|(_, prepared)| Answer::Scripted(prepared)),
            None if capture.method == "GET" && capture.path.ends_with("/models") => {
                Some(Answer::Models(state.models.clone()))
            }
            None => None,
        };
        taken.unwrap_or_else(|| {
            capture.outcome = Outcome::Unscripted;
            Answer::Unscripted(unscripted_message(capture, state.queue.len()))
        })
    });
    match answer {
        Answer::Scripted(prepared) => serve_scripted(&shared, &capture, prepared).await,
        Answer::Models(body) => json_response(StatusCode::OK, body),
        Answer::Unscripted(message) => {
            eprintln!("{message}");
            json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                Bytes::from(unscripted_body(&message).to_string()),
            )
        }
    }
}

fn json_response(status: StatusCode, body: Bytes) -> Response<ReplyBody> {
    let mut response = Response::new(ReplyBody::whole(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// How many chunks a timed stream may have in flight before its task waits for hyper.
const STREAM_BUFFER: usize = 16;

async fn serve_scripted(
    shared: &Arc<Shared>,
    capture: &Arc<Capture>,
    prepared: Arc<Prepared>,
) -> Response<ReplyBody> {
    let scripted = &prepared.scripted;
    if scripted.delay_ms > 0 {
        tokio::time::sleep(Duration::from_millis(scripted.delay_ms)).await;
    }
    let body = match &scripted.reply {
        ScriptedReply::Sse(events) if !scripted.timing.is_immediate() => {
            let (sender, receiver) = mpsc::channel(STREAM_BUFFER);
            let shared = Arc::clone(shared);
            let capture = Arc::clone(capture);
            let prepared = Arc::clone(&prepared);
            tokio::spawn(async move {
                let ScriptedReply::Sse(events) = &prepared.scripted.reply else {
                    return;
                };
                let mut sink = SseSink { sender };
                let events: &[Value] = events;
                stream::deliver(
                    &mut sink,
                    events,
                    &prepared.scripted.timing,
                    &shared.gates,
                    &capture.delivery,
                    capture.started,
                )
                .await;
            });
            ReplyBody::Stream(receiver)
        }
        ScriptedReply::Sse(events) => {
            stream::record_all_sent(&capture.delivery, capture.started, events.len());
            ReplyBody::whole(prepared.body.clone())
        }
        _ => ReplyBody::whole(prepared.body.clone()),
    };
    let mut response = Response::new(body);
    *response.status_mut() =
        StatusCode::from_u16(prepared.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if scripted.timing.close_delimited {
        // hyper frames an HTTP/1.0 response of unknown length by closing the connection.
        *response.version_mut() = http::Version::HTTP_10;
        response
            .headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    let headers = response.headers_mut();
    if let Some(content_type) = &prepared.content_type {
        headers.insert(CONTENT_TYPE, content_type.clone());
    }
    for (name, value) in &prepared.headers {
        headers.append(name.clone(), value.clone());
    }
    response
}
