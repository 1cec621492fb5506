//! The Responses WebSocket (contract v2) against a plain WebSocket client: warm-up,
//! incremental frames and the `previous_response_id` check, capture fields, one queue shared
//! with HTTP, per-connection scripts, 101 headers, and the handshake and frame faults.

mod v2;

use std::time::Duration;

use codex_parity_sidecar::handshake::HandshakeError;
use codex_parity_sidecar::{ConnectionScript, Scripted, bodies, rate_limits};
use serde_json::{Value, json};
use v2::{Sidecar, create, stream_post, warmup, ws_connect, ws_read_response, ws_send};

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_up_then_incremental_frames_on_one_connection() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        bodies::assistant_reply("resp_1", "first"),
        Scripted::sse(bodies::assistant_reply("resp_2", "second"))
            .gap_ms(50)
            .to_json(),
    ]));
    let (mut ws, _) = ws_connect(
        &sidecar.ws_url(),
        &[
            ("authorization", "Bearer k"),
            ("openai-beta", "responses_websockets=2026-02-06"),
        ],
    )
    .await
    .unwrap();
    ws_send(&mut ws, &warmup()).await;
    let warm = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(warm.types(), ["response.created", "response.completed"]);
    let warm_id = warm.frames[1].0["response"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(warm_id, "resp_warmup_0_0");

    ws_send(&mut ws, &create("hi", Some(&warm_id))).await;
    let first = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(
        first.types(),
        [
            "response.created",
            "response.output_item.done",
            "response.completed"
        ]
    );
    assert_eq!(first.frames[1].0["item"]["content"][0]["text"], "first");

    ws_send(&mut ws, &create("more", Some("resp_1"))).await;
    let second = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(second.frames.len(), 3);
    assert!(!second.closed);
    let gaps: Vec<f64> = second.frames.windows(2).map(|p| p[1].1 - p[0].1).collect();
    assert!(gaps.iter().all(|g| *g >= 40.0), "{gaps:?}");

    // A frame naming an id this connection never completed is reported in the capture.
    sidecar.enqueue(json!([bodies::empty_response("resp_3")]));
    ws_send(&mut ws, &create("bad chain", Some("resp_unknown"))).await;
    ws_read_response(&mut ws, WAIT).await;

    let requests = sidecar.requests(4);
    assert_eq!(requests.len(), 4, "{requests:?}");
    for (n, request) in requests.iter().enumerate() {
        assert_eq!(request["transport"], "websocket");
        assert_eq!(request["connection"], 0);
        assert_eq!(request["frame"], n);
        assert_eq!(request["path"], "/v1/responses");
        assert_eq!(request["headers"]["authorization"], "Bearer k");
        assert_eq!(
            request["all_headers"]["openai-beta"],
            "responses_websockets=2026-02-06"
        );
        assert_eq!(request["body"]["type"], "response.create");
    }
    assert_eq!(requests[0]["auto_warmup"], true);
    assert!(requests[1].get("auto_warmup").is_none());
    assert!(requests[1].get("chain_error").is_none());
    assert!(requests[2].get("chain_error").is_none());
    assert!(
        requests[3]["chain_error"]
            .as_str()
            .unwrap()
            .contains("resp_unknown")
    );
    assert_eq!(requests[2]["events_sent_ms"].as_array().unwrap().len(), 3);
    // A frame continuing a response stands for that response's input and output, then its
    // own input: the warm-up's empty input, "hi", the reply "first", then "more".
    assert!(requests[0].get("resolved_input").is_none());
    let texts = |r: &Value| -> Vec<String> {
        r["resolved_input"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["content"][0]["text"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(texts(&requests[1]), ["hi"]);
    assert_eq!(texts(&requests[2]), ["hi", "first", "more"]);
    assert!(
        requests[3].get("resolved_input").is_none(),
        "a broken chain"
    );
    // The upgrade itself is captured too, but only with `all`.
    let all = sidecar.all_requests(5);
    assert_eq!(all[0]["method"], "GET");
    assert_eq!(all[0]["transport"], "websocket");
    assert!(all[0].get("frame").is_none());
    let (reply, status, stderr) = sidecar.shutdown();
    assert_eq!(reply["pending"], 0);
    assert!(status.success(), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_queue_serves_http_and_websocket_in_order_with_when_routing() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        bodies::assistant_reply("a", "A"),
        bodies::assistant_reply("b", "B"),
        Scripted::sse(bodies::assistant_reply("c", "C"))
            .when_body_contains("ROUTED")
            .to_json(),
    ]));
    let (mut ws, _) = ws_connect(&sidecar.ws_url(), &[]).await.unwrap();
    ws_send(&mut ws, &create("x ROUTED", None)).await;
    let routed = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(routed.frames[1].0["item"]["content"][0]["text"], "C");
    let http = stream_post(&sidecar.base_url(), &json!({}), None).await;
    assert!(http.events[1].0.contains("\"A\""));
    ws_send(&mut ws, &create("y", None)).await;
    let b = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(b.frames[1].0["item"]["content"][0]["text"], "B");
    // The script ran out: an error frame naming the frame, and an unscripted capture.
    ws_send(&mut ws, &create("z", None)).await;
    let none = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(none.frames[0].0["type"], "error");
    assert_eq!(none.frames[0].0["status"], 500);
    assert!(
        none.frames[0].0["error"]["message"]
            .as_str()
            .unwrap()
            .contains("WebSocket frame 2 on connection 0")
    );
    let requests = sidecar.requests(4);
    assert_eq!(requests[3]["outcome"], "unscripted");
    assert_eq!(sidecar.call(json!({"op": "status"}))["unscripted"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_up_from_the_queue_when_configured_or_routed() {
    let mut sidecar = Sidecar::start();
    // A queued response whose `when` matches the warm-up answers it even in auto mode.
    sidecar.enqueue(json!([Scripted::sse(bodies::empty_response("w_routed"))
        .when_body_contains("\"generate\":false")
        .to_json()]));
    let (mut ws, _) = ws_connect(&sidecar.ws_url(), &[]).await.unwrap();
    ws_send(&mut ws, &warmup()).await;
    let warm = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(warm.frames[0].0["response"]["id"], "w_routed");

    let reply = sidecar.call(json!({"op": "websocket", "warmup": "queue"}));
    assert_eq!(reply, json!({"type": "websocket", "connections": 0}));
    sidecar.enqueue(json!([bodies::empty_response("w_queued")]));
    let (mut ws, _) = ws_connect(&sidecar.ws_url(), &[]).await.unwrap();
    ws_send(&mut ws, &warmup()).await;
    let warm = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(warm.frames[0].0["response"]["id"], "w_queued");
    let requests = sidecar.requests(2);
    assert_eq!(requests[1]["connection"], 1);
    assert!(requests[1].get("auto_warmup").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_scripts_refuse_hang_add_headers_and_serve_their_own_responses() {
    let mut sidecar = Sidecar::start();
    let window = rate_limits::Window {
        used_percent: 80.7,
        window_minutes: Some(15),
        reset_at: None,
    };
    let mut accept = ConnectionScript::accept()
        .header("x-codex-turn-state", "ts-1")
        .response(Scripted::sse(bodies::assistant_reply("own", "mine")));
    for (name, value) in rate_limits::headers("codex", Some(&window), None) {
        accept = accept.header(&name, &value);
    }
    let reply = sidecar.call(json!({"op": "websocket", "connections": [
        ConnectionScript::refuse(426).header("x-why", "upgrade-required").to_json(),
        {"refuse": 500, "body": {"error": {"message": "boom"}}},
        ConnectionScript::hang().to_json(),
        accept.to_json(),
    ]}));
    assert_eq!(reply["connections"], 4);
    sidecar.enqueue(json!([bodies::assistant_reply("shared", "from the queue")]));
    let url = sidecar.ws_url();

    match ws_connect(&url, &[]).await {
        Err(HandshakeError::Refused(response)) => {
            assert_eq!(response.status(), 426);
            assert_eq!(response.headers()["x-why"], "upgrade-required");
        }
        other => panic!("expected a 426, got {:?}", other.map(|_| ())),
    }
    match ws_connect(&url, &[]).await {
        Err(HandshakeError::Refused(response)) => {
            assert_eq!(response.status(), 500);
            assert!(String::from_utf8_lossy(response.body()).contains("boom"));
        }
        other => panic!("expected a 500, got {:?}", other.map(|_| ())),
    }
    let hung = tokio::time::timeout(Duration::from_millis(500), ws_connect(&url, &[])).await;
    assert!(hung.is_err(), "the hung upgrade was answered");

    let (mut ws, headers) = ws_connect(&url, &[]).await.unwrap();
    let header = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(header("x-codex-turn-state").as_deref(), Some("ts-1"));
    assert_eq!(
        header("x-codex-primary-used-percent").as_deref(),
        Some("80.7")
    );
    ws_send(&mut ws, &create("x", None)).await;
    let own = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(own.frames[1].0["item"]["content"][0]["text"], "mine");
    ws_send(&mut ws, &create("y", None)).await;
    let shared = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(
        shared.frames[1].0["item"]["content"][0]["text"],
        "from the queue"
    );
    let all = sidecar.all_requests(6);
    let connections: Vec<Value> = all.iter().map(|r| r["connection"].clone()).collect();
    assert_eq!(connections[..4], [json!(0), json!(1), json!(2), json!(3)]);
    let (reply, status, _) = sidecar.shutdown();
    assert_eq!(reply["pending"], 0);
    assert!(status.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_faults_close_error_binary_and_invalid_json() {
    let mut sidecar = Sidecar::start();
    let five = bodies::streaming_reply("r", "m", &["a", "b"]);
    sidecar.enqueue(json!([
        Scripted::sse(five.clone()).disconnect_after(0).to_json(),
        Scripted::sse(five.clone()).disconnect_after(1).to_json(),
        {"status": 429, "body": {"error": {"type": "usage_limit_reached", "message": "limit"}},
         "headers": {"x-codex-primary-used-percent": "100.0", "x-codex-primary-window-minutes": "15"}},
        {"raw": "not json {", "content_type": "text/plain"},
        {"raw": "\u{1}\u{2}", "content_type": "application/octet-stream"},
        bodies::empty_response("fine"),
    ]));
    let url = sidecar.ws_url();

    let (mut ws, _) = ws_connect(&url, &[]).await.unwrap();
    ws_send(&mut ws, &create("a", None)).await;
    let closed = ws_read_response(&mut ws, WAIT).await;
    assert!(closed.closed && closed.frames.is_empty(), "{closed:?}");

    let (mut ws, _) = ws_connect(&url, &[]).await.unwrap();
    ws_send(&mut ws, &create("b", None)).await;
    let cut = ws_read_response(&mut ws, WAIT).await;
    assert!(cut.closed);
    assert_eq!(cut.types(), ["response.created"]);

    let (mut ws, _) = ws_connect(&url, &[]).await.unwrap();
    ws_send(&mut ws, &create("c", None)).await;
    let error = ws_read_response(&mut ws, WAIT).await;
    let frame = &error.frames[0].0;
    assert_eq!(frame["type"], "error");
    assert_eq!(frame["status"], 429);
    assert_eq!(frame["error"]["type"], "usage_limit_reached");
    assert_eq!(frame["headers"]["x-codex-primary-used-percent"], "100.0");

    ws_send(&mut ws, &create("d", None)).await;
    let invalid = ws_read_response(&mut ws, Duration::from_millis(500)).await;
    assert_eq!(invalid.frames[0].0, Value::String("not json {".into()));

    ws_send(&mut ws, &create("e", None)).await;
    let binary = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(binary.binary, vec![vec![1u8, 2]]);

    // The connection still serves after those.
    ws_send(&mut ws, &create("f", None)).await;
    let fine = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(fine.types(), ["response.created", "response.completed"]);

    let requests = sidecar.requests(6);
    assert_eq!(requests[0]["stream_end"], "disconnected");
    assert_eq!(requests[1]["stream_end"], "disconnected");
    assert_eq!(requests[2]["connection"], 2);
    assert_eq!(requests[5]["frame"], 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gate_and_a_stall_work_over_the_websocket_too() {
    let mut sidecar = Sidecar::start();
    let five = bodies::streaming_reply("r", "m", &["a", "b"]);
    sidecar.enqueue(json!([
        Scripted::sse(five.clone()).gate("ws-gate", 1).to_json(),
        Scripted::sse(five.clone()).stall_after(2).to_json(),
    ]));
    let (mut ws, _) = ws_connect(&sidecar.ws_url(), &[]).await.unwrap();
    ws_send(&mut ws, &create("a", None)).await;
    let before = ws_read_response(&mut ws, Duration::from_millis(400)).await;
    assert_eq!(before.types(), ["response.created"]);
    assert_eq!(
        sidecar.call(json!({"op": "wait_gate", "gate": "ws-gate", "timeout_ms": 5000}))["held"],
        1
    );
    assert_eq!(
        sidecar.call(json!({"op": "release", "gate": "ws-gate"}))["held"],
        1
    );
    let after = ws_read_response(&mut ws, WAIT).await;
    assert_eq!(after.frames.len(), 5);

    ws_send(&mut ws, &create("b", None)).await;
    let stalled = ws_read_response(&mut ws, Duration::from_millis(600)).await;
    assert_eq!(stalled.frames.len(), 2);
    assert!(!stalled.closed);
    drop(ws);
    let deadline = std::time::Instant::now() + WAIT;
    while sidecar.requests(2)[1]["stream_end"] != "client_closed" {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(50));
    }
}
