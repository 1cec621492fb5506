//! Benchmark of the built binary: spawn-to-ready time, scripted SSE requests per second with
//! 8 concurrent keep-alive clients (capture on), and peak RSS. Run with
//! `cargo bench -p codex-parity-sidecar` (release profile); prints one line per measure.

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use codex_parity_sidecar::{RequestFilter, Scripted, SidecarProcess, bodies};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio::runtime::Runtime;

const BIN: &str = env!("CARGO_BIN_EXE_codex-parity-sidecar");
const SPAWNS: usize = 41;
const CLIENTS: usize = 8;
/// Requests per round (script enqueued, requests served, capture read back, then `reset`);
/// `SIDECAR_BENCH_ROUND` overrides it. A parity scenario makes tens of model requests.
const ROUND: usize = 500;
/// Total requests per run.
const TOTAL: usize = 20_000;

/// Spawns the sidecar (`--lenient`) and reads its ready line; the time that took.
fn spawn(runtime: &Runtime) -> (SidecarProcess, Duration) {
    let started = Instant::now();
    let sidecar = runtime
        .block_on(SidecarProcess::spawn(BIN, ["--lenient"]))
        .expect("spawn the sidecar");
    (sidecar, started.elapsed())
}

fn shutdown(runtime: &Runtime, sidecar: SidecarProcess) {
    runtime
        .block_on(sidecar.shutdown())
        .expect("the sidecar shuts down");
}

fn median(mut values: Vec<Duration>) -> Duration {
    values.sort();
    values[values.len() / 2]
}

/// A model request body of realistic size (about 1.5 KB).
fn request_body(n: usize) -> Bytes {
    let tools: Vec<Value> = (0..6)
        .map(|i| json!({"type": "function", "name": format!("tool_{i}"), "description": "does a thing with a file and reports back", "strict": false, "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}))
        .collect();
    Bytes::from(
        json!({
            "model": "mock-model",
            "stream": true,
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("request {n}: please answer briefly")}]}],
            "tools": tools,
            "tool_choice": "auto",
            "parallel_tool_calls": true,
            "store": false,
            "prompt_cache_key": "bench"
        })
        .to_string(),
    )
}

/// One client: a keep-alive connection sending `count` requests one after another.
async fn client(authority: String, count: usize, body: Bytes) -> usize {
    let stream = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(connection);
    let mut ok = 0;
    for _ in 0..count {
        let request = hyper::Request::post("/v1/responses")
            .header("host", authority.as_str())
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))
            .expect("request");
        let response = sender.send_request(request).await.expect("send");
        let status = response.status();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes();
        if status == 200 && bytes.starts_with(b"event: response.created\n") {
            ok += 1;
        }
    }
    ok
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` runs a quick smoke pass.
    let quick = !std::env::args().any(|a| a == "--bench");
    let round = std::env::var("SIDECAR_BENCH_ROUND")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ROUND);
    let (spawns, rounds, round) = if quick {
        (3, 1, 200)
    } else {
        (SPAWNS, TOTAL.div_ceil(round), round)
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut ready_times = Vec::new();
    for _ in 0..spawns {
        let (sidecar, elapsed) = spawn(&runtime);
        ready_times.push(elapsed);
        shutdown(&runtime, sidecar);
    }
    let fastest = *ready_times.iter().min().expect("some spawns");
    println!(
        "spawn-to-ready: median {:.2} ms, min {:.2} ms over {spawns} spawns",
        median(ready_times).as_secs_f64() * 1e3,
        fastest.as_secs_f64() * 1e3
    );

    let (mut sidecar, _) = spawn(&runtime);
    let authority = sidecar
        .server_url()
        .strip_prefix("http://")
        .expect("server_url")
        .to_string();
    let script: Vec<Scripted> = (0..round)
        .map(|i| {
            Scripted::sse(bodies::assistant_reply(
                &format!("resp-{i}"),
                "Sure, here is a short answer.",
            ))
        })
        .collect();
    let body = request_body(1);
    let mut http_time = Duration::ZERO;
    let mut served = 0;
    for _ in 0..rounds {
        let pending = runtime.block_on(sidecar.enqueue(&script)).expect("enqueue");
        assert_eq!(pending, round);
        let started = Instant::now();
        served += runtime.block_on(async {
            let tasks: Vec<_> = (0..CLIENTS)
                .map(|c| {
                    let share = round / CLIENTS + usize::from(c < round % CLIENTS);
                    tokio::spawn(client(authority.clone(), share, body.clone()))
                })
                .collect();
            let mut ok = 0;
            for task in tasks {
                ok += task.await.expect("client task");
            }
            ok
        });
        http_time += started.elapsed();
        runtime.block_on(async {
            let status = sidecar.status().await.expect("status");
            assert_eq!(status.captured, round, "capture is on: {status:?}");
            // Reading the capture back is part of the job; then start the next round afresh.
            let requests = sidecar
                .requests(RequestFilter::default())
                .await
                .expect("requests");
            assert_eq!(requests.len(), round);
            sidecar.reset().await.expect("reset");
        });
    }
    assert_eq!(served, rounds * round, "every request got its SSE body");
    println!(
        "throughput: {:.0} requests/s ({served} scripted SSE requests in rounds of {round}, {CLIENTS} concurrent keep-alive clients, capture on)",
        served as f64 / http_time.as_secs_f64()
    );
    println!(
        "peak RSS (VmHWM): {:.1} MiB",
        support::peak_rss_kib(sidecar.pid().expect("the sidecar's pid")) as f64 / 1024.0
    );
    shutdown(&runtime, sidecar);
}
