//! Benchmark of the built binary: spawn-to-ready time, scripted SSE requests per second with
//! 8 concurrent keep-alive clients (capture on), and peak RSS. Run with
//! `cargo bench -p codex-parity-sidecar` (release profile); prints one line per measure.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use codex_parity_sidecar::{Scripted, bodies};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_codex-parity-sidecar");
const SPAWNS: usize = 41;
const CLIENTS: usize = 8;
/// Requests per round (script enqueued, requests served, capture read back, then `reset`);
/// `SIDECAR_BENCH_ROUND` overrides it. A parity scenario makes tens of model requests.
const ROUND: usize = 500;
/// Total requests per run.
const TOTAL: usize = 20_000;

struct Sidecar {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
}

impl Sidecar {
    fn spawn() -> (Sidecar, Value, Duration) {
        let started = Instant::now();
        let mut child = Command::new(BIN)
            .arg("--lenient")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn the sidecar");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout"));
        let mut sidecar = Sidecar {
            child,
            stdin,
            stdout,
        };
        let ready = sidecar.read();
        let elapsed = started.elapsed();
        assert_eq!(ready["type"], "ready");
        (sidecar, ready, elapsed)
    }

    fn read(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("read stdout");
        serde_json::from_str(&line).expect("a JSON line")
    }

    fn call(&mut self, command: &Value) -> Value {
        let mut line = command.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).expect("write stdin");
        self.stdin.flush().expect("flush stdin");
        self.read()
    }

    fn peak_rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .expect("read /proc/PID/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmHWM")
    }

    fn shutdown(mut self) {
        self.call(&json!({"op": "shutdown"}));
        let _ = self.child.wait();
    }
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

    let mut ready_times = Vec::new();
    for _ in 0..spawns {
        let (sidecar, _, elapsed) = Sidecar::spawn();
        ready_times.push(elapsed);
        sidecar.shutdown();
    }
    let fastest = *ready_times.iter().min().expect("some spawns");
    println!(
        "spawn-to-ready: median {:.2} ms, min {:.2} ms over {spawns} spawns",
        median(ready_times).as_secs_f64() * 1e3,
        fastest.as_secs_f64() * 1e3
    );

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (mut sidecar, ready, _) = Sidecar::spawn();
    let authority = ready["server_url"]
        .as_str()
        .and_then(|u| u.strip_prefix("http://"))
        .expect("server_url")
        .to_string();
    let script: Vec<Value> = (0..round)
        .map(|i| {
            Scripted::sse(bodies::assistant_reply(
                &format!("resp-{i}"),
                "Sure, here is a short answer.",
            ))
            .to_json()
        })
        .collect();
    let enqueue = json!({"op": "enqueue", "responses": script});
    let body = request_body(1);
    let mut http_time = Duration::ZERO;
    let mut served = 0;
    for _ in 0..rounds {
        let reply = sidecar.call(&enqueue);
        assert_eq!(reply["pending"], round, "{reply}");
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
        let status = sidecar.call(&json!({"op": "status"}));
        assert_eq!(status["captured"], round, "capture is on: {status}");
        // Reading the capture back is part of the job; then start the next round afresh.
        let requests = sidecar.call(&json!({"op": "requests"}));
        assert_eq!(requests["requests"].as_array().map(Vec::len), Some(round));
        sidecar.call(&json!({"op": "reset"}));
    }
    assert_eq!(served, rounds * round, "every request got its SSE body");
    println!(
        "throughput: {:.0} requests/s ({served} scripted SSE requests in rounds of {round}, {CLIENTS} concurrent keep-alive clients, capture on)",
        served as f64 / http_time.as_secs_f64()
    );
    println!(
        "peak RSS (VmHWM): {:.1} MiB",
        sidecar.peak_rss_kib() as f64 / 1024.0
    );
    sidecar.shutdown();
}
