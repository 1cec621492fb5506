//! The sidecar under load from a plain HTTP client, against a bare `hyper` server that
//! returns the same SSE body with no script and no capture. Both get the same requests
//! (a realistic model request body) over the same number of keep-alive connections, in
//! alternating rounds, so the two are measured under the same conditions in one run.
//!
//! The sidecar runs as its own process with capture on, as scenarios use it; between
//! rounds the script is refilled (`enqueue`) and the capture emptied (`reset`), outside
//! the measured time. The bare server runs in this process on one thread of its own, the
//! way the sidecar serves its own.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use codex_parity_sidecar::{Scripted, bodies, sse};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpListener;

use super::{memory_kib, percentile};
use crate::harness::sidecar::{Sidecar, SidecarLauncher};

/// Requests per round: the script the sidecar holds at once.
const ROUND: usize = 500;

/// The reply both servers send.
fn reply_events() -> Vec<Value> {
    bodies::assistant_reply("resp-1", "Sure, here is a short answer.")
}

/// A model request of realistic size (about 1.5 KB): model, one user message, six tools.
pub fn request_body() -> Bytes {
    let tools: Vec<Value> = (0..6)
        .map(|i| {
            json!({"type": "function", "name": format!("tool_{i}"),
                "description": "reads a file and reports what it found", "strict": false,
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}})
        })
        .collect();
    Bytes::from(
        json!({
            "model": "mock-model",
            "stream": true,
            "input": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "load: please answer briefly"}]}],
            "tools": tools,
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "store": false,
            "prompt_cache_key": "bench"
        })
        .to_string(),
    )
}

/// Throughput and latency of one server.
#[derive(Debug, Clone)]
pub struct Throughput {
    /// Requests answered.
    pub requests: usize,
    /// Time spent sending them (rounds only, no set-up).
    pub elapsed: Duration,
    /// Latency of each request (sent → whole body read).
    pub latencies: Vec<Duration>,
}

impl Throughput {
    fn new() -> Throughput {
        Throughput {
            requests: 0,
            elapsed: Duration::ZERO,
            latencies: Vec::new(),
        }
    }

    /// Requests per second.
    pub fn per_second(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(f64::EPSILON)
    }

    /// One line: requests/s, p50, p99.
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{:.0} requests/s, p50 {:.2} ms, p99 {:.2} ms ({} requests)",
            self.per_second(),
            ms(percentile(&self.latencies, 50)),
            ms(percentile(&self.latencies, 99)),
            self.requests
        )
    }
}

/// Both servers' numbers and the sidecar's memory.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// The sidecar (capture on).
    pub sidecar: Throughput,
    /// The bare hyper server.
    pub bare: Throughput,
    /// The sidecar's resident and peak memory at the end, KiB.
    pub sidecar_memory_kib: Option<(u64, u64)>,
}

impl LoadReport {
    /// Sidecar requests per second over the bare server's.
    pub fn ratio(&self) -> f64 {
        self.sidecar.per_second() / self.bare.per_second().max(f64::EPSILON)
    }
}

/// Sends `total` requests to each server over `clients` connections, in alternating rounds.
pub async fn load(
    launcher: &SidecarLauncher,
    total: usize,
    clients: usize,
) -> anyhow::Result<LoadReport> {
    let sidecar = Sidecar::start(launcher).await?;
    let sidecar_addr = authority(sidecar.base_url())?;
    let bare = BareServer::start(sse::frame(&reply_events())?).await?;
    let body = request_body();
    let (mut on_sidecar, mut on_bare) = (Throughput::new(), Throughput::new());
    let mut left = total;
    while left > 0 {
        let n = left.min(ROUND);
        left -= n;
        let script: Vec<Scripted> = (0..n).map(|_| Scripted::sse(reply_events())).collect();
        sidecar.enqueue(&script).await?;
        fire(&sidecar_addr, &body, n, clients, &mut on_sidecar).await?;
        sidecar.reset().await.context("emptying the capture")?;
        fire(&bare.addr.to_string(), &body, n, clients, &mut on_bare).await?;
    }
    let sidecar_memory_kib = sidecar.pid().and_then(memory_kib);
    let report = sidecar.shutdown().await?;
    if report.pending > 0 || report.unscripted > 0 {
        bail!(
            "the sidecar ended with {} unserved and {} unscripted requests",
            report.pending,
            report.unscripted
        );
    }
    Ok(LoadReport {
        sidecar: on_sidecar,
        bare: on_bare,
        sidecar_memory_kib,
    })
}

/// `127.0.0.1:PORT` of a base URL `http://127.0.0.1:PORT/v1`.
fn authority(base_url: &str) -> anyhow::Result<String> {
    base_url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .map(str::to_string)
        .with_context(|| format!("unexpected base URL {base_url}"))
}

/// `n` requests to `addr` over `clients` keep-alive connections; adds to `into`.
async fn fire(
    addr: &str,
    body: &Bytes,
    n: usize,
    clients: usize,
    into: &mut Throughput,
) -> anyhow::Result<()> {
    let clients = clients.clamp(1, n.max(1));
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let share = n / clients + usize::from(c < n % clients);
        tasks.spawn(client(addr.to_string(), share, body.clone()));
    }
    while let Some(done) = tasks.join_next().await {
        into.latencies
            .extend(done.context("a load client panicked")??);
    }
    into.elapsed += started.elapsed();
    into.requests += n;
    Ok(())
}

/// One keep-alive connection sending `count` requests one after the other; their latencies.
async fn client(addr: String, count: usize, body: Bytes) -> anyhow::Result<Vec<Duration>> {
    let stream = tokio::net::TcpStream::connect(&addr)
        .await
        .with_context(|| format!("connecting to {addr}"))?;
    stream.set_nodelay(true)?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .context("HTTP handshake")?;
    tokio::spawn(connection);
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let request = hyper::Request::post("/v1/responses")
            .header("host", addr.as_str())
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .context("building a request")?;
        let sent = Instant::now();
        let response = sender.send_request(request).await.context("sending")?;
        let status = response.status();
        let bytes = response.into_body().collect().await?.to_bytes();
        latencies.push(sent.elapsed());
        if status != 200 || !bytes.starts_with(b"event: response.created") {
            bail!(
                "{addr} answered {status}: {}",
                String::from_utf8_lossy(&bytes)
            );
        }
    }
    Ok(latencies)
}

/// A minimal hyper server: reads each request body and answers the same SSE body. Like
/// the sidecar's server (hyper on one thread with a current-thread
/// runtime), it runs on one thread of its own, until dropped.
struct BareServer {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl BareServer {
    async fn start(sse_body: String) -> anyhow::Result<BareServer> {
        let listener =
            std::net::TcpListener::bind("127.0.0.1:0").context("binding the bare server")?;
        listener.set_nonblocking(true)?;
        let addr = listener.local_addr()?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("the bare server's runtime")?;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let body = Bytes::from(sse_body);
        std::thread::Builder::new()
            .name("bare-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let Ok(listener) = TcpListener::from_std(listener) else {
                        return;
                    };
                    tokio::select! {
                        () = accept(listener, body) => {}
                        _ = stopped => {}
                    }
                });
            })
            .context("starting the bare server's thread")?;
        Ok(BareServer {
            addr,
            stop: Some(stop),
        })
    }
}

async fn accept(listener: TcpListener, body: Bytes) {
    while let Ok((stream, _)) = listener.accept().await {
        let _ = stream.set_nodelay(true);
        let body = body.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| answer(request, body.clone()));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn answer(
    request: hyper::Request<Incoming>,
    body: Bytes,
) -> Result<hyper::Response<Full<Bytes>>, hyper::Error> {
    request.into_body().collect().await?;
    let mut response = hyper::Response::new(Full::new(body));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    Ok(response)
}

impl Drop for BareServer {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_bare_server_answers_the_sse_body() {
        let server = BareServer::start(sse::frame(&reply_events()).unwrap())
            .await
            .unwrap();
        let mut into = Throughput::new();
        fire(&server.addr.to_string(), &request_body(), 10, 3, &mut into)
            .await
            .unwrap();
        assert_eq!((into.requests, into.latencies.len()), (10, 10));
        assert!(into.per_second() > 0.0);
    }

    #[test]
    fn authority_of_a_base_url() {
        assert_eq!(
            authority("http://127.0.0.1:4321/v1").unwrap(),
            "127.0.0.1:4321"
        );
        assert!(authority("https://x").is_err());
    }
}
