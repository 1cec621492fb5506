//! Benchmark of the v2 transports on the built binary: WebSocket frames per second on one
//! connection (scripted responses of many events, answered frame by frame), the accuracy of
//! scripted SSE gaps (p50/p99 error, from the capture's send times and at the client), and
//! peak RSS. Run with `cargo bench -p codex-parity-sidecar --bench transports`; prints one
//! line per measure. (It sits beside `sidecar.rs`, which measures HTTP throughput.)

mod support;

use std::time::{Duration, Instant};

use bytes::Bytes;
use codex_parity_sidecar::{RequestFilter, Scripted, SidecarProcess, events};
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

const BIN: &str = env!("CARGO_BIN_EXE_codex-parity-sidecar");

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(|a, b| a.total_cmp(b));
    let index = ((values.len() as f64 - 1.0) * p).round() as usize;
    values[index]
}

/// Frames per second on one WebSocket connection: `responses` responses of `deltas` + 3
/// events each, one `response.create` frame per response.
async fn websocket_frames(
    sidecar: &mut SidecarProcess,
    responses: usize,
    deltas: usize,
) -> (usize, Duration) {
    let script: Vec<Scripted> = (0..responses)
        .map(|i| {
            let id = format!("resp_{i}");
            let mut body = vec![events::response_created(&id)];
            body.extend((0..deltas).map(|_| events::output_text_delta("tok ")));
            body.push(events::assistant_message(&format!("msg_{i}"), "done"));
            body.push(events::completed(&id));
            Scripted::sse(body)
        })
        .collect();
    sidecar.enqueue(&script).await.expect("enqueue");
    let url = sidecar.base_url().replacen("http://", "ws://", 1) + "/responses";
    let authority = url["ws://".len()..]
        .split('/')
        .next()
        .expect("authority")
        .to_string();
    let stream = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let request = codex_parity_sidecar::handshake::request(&url).expect("a ws:// URL");
    let (mut ws, _) = codex_parity_sidecar::handshake::connect(stream, request)
        .await
        .expect("the WebSocket handshake");
    let started = Instant::now();
    let mut frames = 0;
    for i in 0..responses {
        let create = json!({"type": "response.create", "model": "m", "input": [], "previous_response_id": (i > 0).then(|| format!("resp_{}", i - 1))});
        ws.send(Message::text(create.to_string()))
            .await
            .expect("send");
        loop {
            let Some(Ok(Message::Text(text))) = ws.next().await else {
                panic!("the WebSocket ended early");
            };
            frames += 1;
            if text.as_str().contains("\"response.completed\"") {
                break;
            }
        }
    }
    (frames, started.elapsed())
}

/// Gap errors (actual − scripted, ms) of `count` events `gap_ms` apart, from the capture and
/// at the client.
async fn gap_errors(
    sidecar: &mut SidecarProcess,
    count: usize,
    gap_ms: u64,
) -> (Vec<f64>, Vec<f64>) {
    let body: Vec<Value> = std::iter::once(events::response_created("g"))
        .chain((0..count.saturating_sub(2)).map(|_| events::output_text_delta("x")))
        .chain(std::iter::once(events::completed("g")))
        .collect();
    sidecar.reset().await.expect("reset");
    sidecar
        .enqueue(&[Scripted::sse(body).gap_ms(gap_ms)])
        .await
        .expect("enqueue");
    let authority = sidecar.base_url()["http://".len()..]
        .split('/')
        .next()
        .expect("authority")
        .to_string();
    let stream = tokio::net::TcpStream::connect(&authority)
        .await
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .expect("handshake");
    tokio::spawn(connection);
    let request = hyper::Request::post("/v1/responses")
        .header("host", authority.as_str())
        .body(Full::new(Bytes::from_static(b"{}")))
        .expect("request");
    let response = sender.send_request(request).await.expect("send");
    let mut body = response.into_body();
    let mut arrivals = Vec::new();
    while let Some(Ok(frame)) = body.frame().await {
        if frame.is_data() {
            arrivals.push(Instant::now());
        }
    }
    let client: Vec<f64> = arrivals
        .windows(2)
        .map(|p| (p[1] - p[0]).as_secs_f64() * 1e3 - gap_ms as f64)
        .collect();
    let requests = sidecar
        .wait_for(RequestFilter::default(), 1, Duration::from_secs(5))
        .await
        .expect("requests");
    let sent = requests[0].events_sent_ms.clone();
    let server: Vec<f64> = sent
        .windows(2)
        .map(|p| p[1] - p[0] - gap_ms as f64)
        .collect();
    (server, client)
}

fn main() {
    let quick = !std::env::args().any(|a| a == "--bench");
    let (responses, deltas, gaps) = if quick { (20, 20, 20) } else { (500, 100, 400) };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut sidecar = runtime
        .block_on(SidecarProcess::spawn(BIN, ["--lenient"]))
        .expect("spawn the sidecar");
    let (frames, elapsed) = runtime.block_on(websocket_frames(&mut sidecar, responses, deltas));
    println!(
        "websocket: {:.0} frames/s on one connection ({frames} frames, {responses} responses of {} events, one response.create each)",
        frames as f64 / elapsed.as_secs_f64(),
        deltas + 3
    );
    let gap_ms = 10;
    let (mut server, mut client) = runtime.block_on(gap_errors(&mut sidecar, gaps, gap_ms));
    let abs = |v: &[f64]| v.iter().map(|e| e.abs()).collect::<Vec<f64>>();
    let (mut server_abs, mut client_abs) = (abs(&server), abs(&client));
    println!(
        "gap accuracy ({gaps} events, {gap_ms} ms gaps): send-time error p50 {:.2} ms, p99 {:.2} ms (signed p50 {:+.2}); client arrival error p50 {:.2} ms, p99 {:.2} ms (signed p50 {:+.2})",
        percentile(&mut server_abs, 0.5),
        percentile(&mut server_abs, 0.99),
        percentile(&mut server, 0.5),
        percentile(&mut client_abs, 0.5),
        percentile(&mut client_abs, 0.99),
        percentile(&mut client, 0.5),
    );
    println!(
        "peak RSS (VmHWM): {:.1} MiB",
        support::peak_rss_kib(sidecar.pid().expect("the sidecar's pid")) as f64 / 1024.0
    );
}
