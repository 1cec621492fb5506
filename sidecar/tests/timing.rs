//! Timed SSE (contract v2) against a plain streaming client: gaps measured against the
//! script, stalls, disconnects, gates released by command, the capture's per-event send
//! times, refused impossible scripts, leftovers, and the compaction endpoint.
//!
//! Tolerances are for a loaded 2-core machine: an event never leaves before its gap, and at
//! most `LATE_MS` after it.

mod common;
mod v2;

use std::time::{Duration, Instant};

use codex_parity_sidecar::{Scripted, bodies, compaction, rate_limits};
use serde_json::{Value, json};
use v2::{Sidecar, stream_post, stream_to};

/// How late an event may leave on a loaded machine before a timing test fails.
const LATE_MS: f64 = 250.0;

fn five_events(id: &str) -> Vec<Value> {
    bodies::streaming_reply(id, "msg-1", &["a"])
}

fn sent_ms(request: &Value) -> Vec<f64> {
    request["events_sent_ms"]
        .as_array()
        .unwrap_or_else(|| panic!("no events_sent_ms in {request}"))
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gaps_release_events_one_by_one_and_the_capture_times_them() {
    let mut sidecar = Sidecar::start();
    let body = five_events("r1");
    assert_eq!(body.len(), 5);
    sidecar.enqueue(json!([
        Scripted::sse(body.clone()).gap_ms(100).to_json(),
        Scripted::sse(body.clone())
            .gaps_ms(vec![0, 300, 0, 0, 150])
            .to_json(),
    ]));
    let seen = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert!(seen.clean_end);
    assert_eq!(seen.events.len(), 5);
    assert_eq!(seen.header("content-type"), Some("text/event-stream"));
    // Client side: each event arrives no earlier than the gaps allow.
    for (n, (_, at)) in seen.events.iter().enumerate() {
        let due = 100.0 * (n as f64 + 1.0);
        assert!(*at >= due - 5.0, "event {n} at {at} ms, due {due}");
        assert!(
            *at <= due + LATE_MS * 2.0,
            "event {n} at {at} ms, due {due}"
        );
    }
    let second = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert_eq!(second.events.len(), 5);

    let requests = sidecar.requests(2);
    let first = sent_ms(&requests[0]);
    assert_eq!(first.len(), 5);
    for pair in first.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            (99.0..100.0 + LATE_MS).contains(&gap),
            "gap {gap} in {first:?}"
        );
    }
    assert_eq!(requests[0]["stream_end"], "completed");
    let second = sent_ms(&requests[1]);
    let gaps: Vec<f64> = second.windows(2).map(|p| p[1] - p[0]).collect();
    assert!((299.0..300.0 + LATE_MS).contains(&gaps[0]), "{gaps:?}");
    assert!(gaps[1] < LATE_MS && gaps[2] < LATE_MS, "{gaps:?}");
    assert!((149.0..150.0 + LATE_MS).contains(&gaps[3]), "{gaps:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_untimed_body_still_goes_out_whole_with_its_send_times() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([bodies::assistant_reply("r", "hi")]));
    let seen = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert_eq!(seen.events.len(), 3);
    assert!(seen.header("content-length").is_some());
    let requests = sidecar.requests(1);
    assert_eq!(sent_ms(&requests[0]).len(), 3);
    assert_eq!(requests[0]["stream_end"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_holds_the_stream_until_the_client_closes_and_the_next_request_is_served() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(five_events("stalled"))
            .stall_after(2)
            .to_json(),
        bodies::assistant_reply("next", "ok")
    ]));
    let base = sidecar.base_url();
    let client = tokio::spawn(async move {
        let (mut sender, authority) = v2::connect(&base).await;
        let request = hyper::Request::builder()
            .method("POST")
            .uri("/v1/responses")
            .header("host", authority)
            .body(http_body_util::Full::new(bytes::Bytes::from("{}")))
            .unwrap();
        let response = sender.send_request(request).await.unwrap();
        let mut body = response.into_body();
        let mut text = String::new();
        // Read what comes within 800 ms, then give up (dropping the connection).
        let deadline = tokio::time::Instant::now() + Duration::from_millis(800);
        loop {
            use http_body_util::BodyExt;
            match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return (text, false),
                Ok(None) => return (text, true),
                Ok(Some(Ok(frame))) => {
                    text.push_str(&String::from_utf8_lossy(&frame.into_data().unwrap()))
                }
                Ok(Some(Err(_))) => return (text, true),
            }
        }
    });
    let (text, ended) = client.await.unwrap();
    assert!(!ended, "the stalled stream ended: {text}");
    assert_eq!(text.matches("\n\n").count(), 2, "{text}");
    // The sidecar notices the client left and keeps serving.
    let next = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert_eq!(next.types().last().unwrap(), "response.completed");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let requests = sidecar.requests(2);
        if requests[0]["stream_end"] == "client_closed" {
            assert_eq!(sent_ms(&requests[0]).len(), 2);
            break;
        }
        assert!(Instant::now() < deadline, "{}", requests[0]);
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stall_gate_release_lets_the_rest_through() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([Scripted::sse(five_events("s"))
        .stall_after(1)
        .stall_gate("go")
        .to_json()]));
    let base = sidecar.base_url();
    let client = tokio::spawn(async move { stream_post(&base, &json!({}), None).await });
    let held = sidecar.call(json!({"op": "wait_gate", "gate": "go", "timeout_ms": 5000}));
    assert_eq!(held, json!({"type": "gate", "gate": "go", "held": 1}));
    std::thread::sleep(Duration::from_millis(200));
    let released_at = Instant::now();
    let reply = sidecar.call(json!({"op": "release", "gate": "go"}));
    assert_eq!(reply, json!({"type": "released", "gate": "go", "held": 1}));
    let seen = client.await.unwrap();
    assert!(seen.clean_end);
    assert_eq!(seen.events.len(), 5);
    assert!(seen.events[1].1 >= 200.0, "{:?}", seen.events);
    assert!(released_at.elapsed() < Duration::from_secs(5));
    let (reply, status, _) = sidecar.shutdown();
    assert_eq!(reply["pending"], 0);
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnects_cut_the_connection_without_completing() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(five_events("d"))
            .disconnect_after(2)
            .to_json(),
        Scripted::sse(five_events("t"))
            .gap_ms(200)
            .disconnect_after_ms(500)
            .to_json(),
        Scripted::sse(five_events("z"))
            .disconnect_after(0)
            .to_json(),
    ]));
    let base = sidecar.base_url();
    let cut = stream_post(&base, &json!({}), None).await;
    assert!(!cut.clean_end);
    assert_eq!(cut.events.len(), 2, "{:?}", cut.events);
    let timed = stream_post(&base, &json!({}), None).await;
    assert!(!timed.clean_end);
    assert_eq!(timed.events.len(), 2, "{:?}", timed.events);
    let none = stream_post(&base, &json!({}), None).await;
    assert!(!none.clean_end);
    assert!(none.events.is_empty());
    assert_eq!(none.status, 200);
    let requests = sidecar.requests(3);
    for request in &requests {
        assert_eq!(request["stream_end"], "disconnected", "{request}");
    }
    assert_eq!(sent_ms(&requests[0]).len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_close_delimited_body_ends_with_the_connection_so_a_cut_reads_as_its_end() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(five_events("c"))
            .close_delimited()
            .disconnect_after(2)
            .to_json(),
        Scripted::sse(five_events("w")).close_delimited().to_json(),
    ]));
    let base = sidecar.base_url();
    let cut = stream_post(&base, &json!({}), None).await;
    // No chunked framing to break: the client sees two events and a clean end of the body.
    assert!(cut.clean_end);
    assert_eq!(cut.events.len(), 2, "{:?}", cut.events);
    let te = cut.headers.iter().find(|(n, _)| n == "transfer-encoding");
    assert_eq!(te, None, "{:?}", cut.headers);
    assert!(cut.headers.contains(&("connection".into(), "close".into())));
    let whole = stream_post(&base, &json!({}), None).await;
    assert!(whole.clean_end);
    assert_eq!(whole.events.len(), 5);
    let requests = sidecar.requests(2);
    assert_eq!(requests[0]["stream_end"], "disconnected");
    assert_eq!(requests[1]["stream_end"], "completed");
    let (reply, status, _) = sidecar.shutdown();
    assert_eq!(reply["pending"], 0);
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_lets_a_scenario_act_between_two_events() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(five_events("gated")).gate("mid", 2).to_json(),
        Scripted::sse(bodies::assistant_reply("between", "x"))
            .when_body_contains("BETWEEN")
            .to_json(),
    ]));
    let base = sidecar.base_url();
    let gated = tokio::spawn({
        let base = base.clone();
        async move { stream_post(&base, &json!({}), None).await }
    });
    let held = sidecar.call(json!({"op": "wait_gate", "gate": "mid", "timeout_ms": 5000}));
    assert_eq!(held["held"], 1);
    // Act between events 1 and 2: another request is served meanwhile.
    let between = stream_post(&base, &json!({"x": "BETWEEN"}), None).await;
    assert!(between.clean_end);
    assert_eq!(
        sidecar.call(json!({"op": "release", "gate": "mid"}))["held"],
        1
    );
    let seen = gated.await.unwrap();
    assert!(seen.clean_end);
    assert_eq!(seen.events.len(), 5);
    let requests = sidecar.requests(2);
    let gated_sent = sent_ms(&requests[0]);
    let between_sent = sent_ms(&requests[1]);
    // Event 2 of the gated response left after the other response (clocks: ms since each
    // request; compare through received_at_ms).
    let gated_start = requests[0]["received_at_ms"].as_f64().unwrap();
    let between_start = requests[1]["received_at_ms"].as_f64().unwrap();
    assert!(gated_start + gated_sent[2] + 2.0 >= between_start + between_sent[2]);
    assert!(gated_start + gated_sent[1] <= between_start + 2.0);
    // A gate already released does not hold later responses.
    sidecar.enqueue(json!([Scripted::sse(five_events("again"))
        .gate("mid", 1)
        .to_json()]));
    assert!(stream_post(&base, &json!({}), None).await.clean_end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_leaving_a_gated_or_delayed_response_does_not_stop_the_sidecar() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(five_events("g")).gate("never", 1).to_json(),
        Scripted::sse(five_events("slow")).delay_ms(2000).to_json(),
        bodies::assistant_reply("after", "fine")
    ]));
    let base = sidecar.base_url();
    let gated = stream_post(&base, &json!({}), Some(1)).await;
    assert_eq!(gated.events.len(), 1);
    let slow = tokio::time::timeout(
        Duration::from_millis(300),
        stream_post(&base, &json!({}), None),
    )
    .await;
    assert!(slow.is_err(), "the delayed response came early");
    let after = stream_post(&base, &json!({}), None).await;
    assert!(after.clean_end);
    assert!(after.events[1].0.contains("fine"));
    let deadline = Instant::now() + Duration::from_secs(5);
    while sidecar.requests(3)[0]["stream_end"] != "client_closed" {
        assert!(
            Instant::now() < deadline,
            "the gated stream never saw the client leave"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // The gate was never released: a leftover, exit 3.
    let (_, status, stderr) = sidecar.shutdown();
    assert_eq!(status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("gate never released: \"never\""),
        "{stderr}"
    );
}

#[test]
fn impossible_scripts_are_refused_when_enqueued() {
    let mut sidecar = Sidecar::start();
    let cases = [
        (
            json!({"events": five_events("a"), "gates": {"g": 5}}),
            "only 5 events",
        ),
        (
            json!({"events": five_events("a"), "disconnect_after": 6}),
            "more events than the body has",
        ),
        (
            json!({"events": five_events("a"), "stall_after": 1, "disconnect_after": 2}),
            "cannot both",
        ),
        (
            json!({"events": five_events("a"), "gap_ms": [1, 2]}),
            "lists 2 gaps",
        ),
        (
            json!({"status": 500, "gap_ms": 5}),
            "unknown field \"gap_ms\"",
        ),
        (
            json!({"events": [], "endpoint": "elsewhere"}),
            "\"endpoint\"",
        ),
    ];
    for (scripted, needle) in cases {
        let reply = sidecar.enqueue(json!([bodies::empty_response("ok"), scripted]));
        assert_eq!(reply["type"], "error", "{reply}");
        let message = reply["message"].as_str().unwrap();
        assert!(message.starts_with("enqueue: response 1: "), "{message}");
        assert!(message.contains(needle), "{message}");
    }
    assert_eq!(sidecar.call(json!({"op": "status"}))["pending"], 0);
    for bad in [
        json!({"op": "release"}),
        json!({"op": "wait_gate", "gate": ""}),
    ] {
        assert_eq!(sidecar.call(bad)["type"], "error");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_headers_and_rate_limits_ride_on_sse() {
    let mut sidecar = Sidecar::start();
    let window = rate_limits::Window {
        used_percent: 42.5,
        window_minutes: Some(300),
        reset_at: Some(1_796_089_227),
    };
    let mut scripted = Scripted::sse(bodies::assistant_reply("r", "x")).gap_ms(1);
    for (name, value) in rate_limits::headers("codex", Some(&window), None)
        .into_iter()
        .chain(rate_limits::credits_headers(true, false, "12.34"))
    {
        scripted = scripted.header(&name, &value);
    }
    sidecar.enqueue(json!([scripted
        .header("openai-model", "mock-model")
        .to_json()]));
    let seen = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert_eq!(seen.header("x-codex-primary-used-percent"), Some("42.5"));
    assert_eq!(seen.header("x-codex-primary-window-minutes"), Some("300"));
    assert_eq!(seen.header("x-codex-credits-balance"), Some("12.34"));
    assert_eq!(seen.header("openai-model"), Some("mock-model"));
    assert_eq!(seen.events.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_requests_take_only_compact_scripts() {
    let mut sidecar = Sidecar::start();
    let body = compaction::compact_body(vec![
        compaction::user_message("hi"),
        compaction::item("cmp_1", "SUMMARY"),
    ]);
    sidecar.enqueue(json!([
        bodies::assistant_reply("turn", "after compaction"),
        Scripted::compact(body.clone()).to_json(),
    ]));
    let base = sidecar.base_url();
    let compact = v2::stream_to(&base, "/responses/compact", &json!({"input": []}), None).await;
    assert_eq!(compact.status, 200);
    assert_eq!(compact.header("content-type"), Some("application/json"));
    let text: String = compact.events.iter().map(|(t, _)| t.as_str()).collect();
    assert!(text.is_empty(), "a JSON body has no SSE events: {text}");
    let turn = stream_to(&base, "/responses", &json!({}), None).await;
    assert!(turn.events[1].0.contains("after compaction"));
    // The compact request is captured (with `all`) but is not a model request.
    assert_eq!(sidecar.requests(1).len(), 1);
    let all = sidecar.all_requests(2);
    assert_eq!(all[0]["path"], "/v1/responses/compact");
    assert_eq!(all[0]["outcome"], "scripted");
    // With no compact script left, a compact request is unscripted even though
    // model responses wait.
    sidecar.enqueue(json!([bodies::empty_response("later")]));
    let unscripted = stream_to(&base, "/responses/compact", &json!({}), None).await;
    assert_eq!(unscripted.status, 500);
    assert_eq!(sidecar.call(json!({"op": "status"}))["pending"], 1);
}

/// The same gate through the typed client: `wait_gate` sees the held response, `release`
/// lets it finish, and the capture records when each event left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_typed_client_waits_at_and_releases_a_gate() {
    let mut sidecar = common::start().await;
    let script = Scripted::sse(five_events("t")).gate("mid", 2);
    sidecar.enqueue(&[script]).await.unwrap();
    let base = sidecar.client().base_url().to_string();
    let client = tokio::spawn(async move { stream_post(&base, &json!({}), None).await });
    let held = sidecar
        .wait_gate("mid", Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(held, 1);
    assert_eq!(sidecar.release("mid").await.unwrap(), 1);
    let seen = client.await.unwrap();
    assert!(seen.clean_end);
    assert_eq!(seen.events.len(), 5);
    let filter = codex_parity_sidecar::RequestFilter::default();
    let requests = sidecar
        .wait_for(filter, 1, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(requests[0].events_sent_ms.len(), 5, "{:?}", requests[0]);
    assert_eq!(sidecar.release("nobody").await.unwrap(), 0);
    sidecar.shutdown().await.unwrap();
}
