//! The mock over HTTP: exact SSE bytes, capture fields, decoding, routing, faults.

mod common;

use std::io::Write;
use std::time::{Duration, Instant};

use codex_parity_sidecar::protocol::Status;
use codex_parity_sidecar::{Outcome, RequestFilter, Scripted, ShutdownReply, bodies, events, sse};
use common::{config_file, http, post_json, scripts};
use serde_json::{Value, json};

/// Model requests only.
const MODEL: RequestFilter = RequestFilter {
    since: 0,
    all: false,
};
/// Every request.
const ALL: RequestFilter = RequestFilter {
    since: 0,
    all: true,
};

/// The events of the protocol doc's example; `sse`'s unit tests check their exact bytes.
fn doc_events() -> Vec<Value> {
    vec![
        events::response_created("resp-1"),
        events::assistant_message("msg-1", "hello"),
        events::completed("resp-1"),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_response_is_served_as_the_exact_sse_bytes() {
    let config = config_file(&json!({"responses": [doc_events()]}).to_string());
    let sidecar = common::spawn(&["--config", config.path().to_str().unwrap()]).await;
    let response = post_json(sidecar.base_url(), &json!({"input": []})).await;
    let body = sse::frame(&doc_events()).unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(response.header("content-type"), Some("text/event-stream"));
    assert_eq!(response.text(), body);
    assert_eq!(
        response.header("content-length"),
        Some(body.len().to_string().as_str())
    );
    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(ended.reply, ShutdownReply::default());
    assert_eq!(ended.exit.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn capture_records_every_field() {
    let mut sidecar = common::start().await;
    sidecar
        .enqueue(&[Scripted::sse(bodies::empty_response("r"))])
        .await
        .unwrap();
    let body = json!({"model": "m", "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}]});
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    let response = http(
        "POST",
        &format!("{}/api/codex/responses?a=1&b=x%20y", sidecar.server_url()),
        &[
            ("Authorization", "Bearer k"),
            ("ChatGPT-Account-Id", "acct"),
            ("Content-Type", "application/json"),
            ("User-Agent", "codex_cli_rs/0.171.0"),
            ("x-codex-parent-thread-id", "p"),
            ("x-codex-turn-metadata", "{\"turn_id\":\"t1\"}"),
            ("x-codex-window-id", "w"),
            ("x-openai-subagent", "review"),
            ("X-Extra", "e1"),
        ],
        body.to_string().into_bytes(),
    )
    .await;
    assert_eq!(response.status, 200);
    let requests = sidecar
        .wait_for(MODEL, 1, Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.index, 0);
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/api/codex/responses");
    assert_eq!(r.query.as_deref(), Some("a=1&b=x%20y"));
    assert_eq!(r.body, body);
    assert_eq!(r.outcome, Outcome::Scripted);
    assert!(r.pairing_violations.is_empty());
    let received = r.received_at_ms;
    assert!(received >= before && received < before + 10_000);
    let headers = &r.headers;
    assert_eq!(headers.len(), 8, "{headers:?}");
    assert_eq!(headers["authorization"], "Bearer k");
    assert_eq!(headers["chatgpt-account-id"], "acct");
    assert_eq!(headers["x-openai-subagent"], "review");
    assert!(!headers.contains_key("x-extra"));
    assert_eq!(r.all_headers["x-extra"], "e1");
    assert_eq!(
        r.all_headers["content-length"],
        body.to_string().len().to_string()
    );

    let typed = r;
    assert_eq!(typed.query_param("b").as_deref(), Some("x y"));
    assert_eq!(typed.last_user_text().as_deref(), Some("hi"));
    assert_eq!(typed.turn_metadata().unwrap(), json!({"turn_id": "t1"}));
    assert_eq!(typed.header("X-Codex-Window-Id"), Some("w"));
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zstd_and_gzip_bodies_are_decoded_and_bad_ones_reported() {
    let mut sidecar = common::start().await;
    let body = json!({"input": [], "note": "compressed"});
    let plain = body.to_string().into_bytes();
    let url = format!("{}/responses", sidecar.base_url());
    sidecar
        .enqueue(&scripts(json!([[], [], [], []])))
        .await
        .unwrap();
    let zstd = ruzstd::encoding::compress_to_vec(
        plain.as_slice(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    for (encoding, bytes) in [
        ("zstd", zstd.clone()),
        ("gzip", gzip(&plain)),
        (
            "gzip, zstd",
            ruzstd::encoding::compress_to_vec(
                gzip(&plain).as_slice(),
                ruzstd::encoding::CompressionLevel::Fastest,
            ),
        ),
        ("zstd", b"not zstd at all".to_vec()),
    ] {
        let response = http(
            "POST",
            &url,
            &[
                ("content-type", "application/json"),
                ("content-encoding", encoding),
            ],
            bytes,
        )
        .await;
        assert_eq!(response.status, 200);
    }
    let requests = sidecar.requests(MODEL).await.unwrap();
    assert_eq!(requests.len(), 4);
    for r in &requests[..3] {
        assert_eq!(r.body, body, "{r:?}");
        assert!(r.decode_error.is_none());
    }
    assert_eq!(requests[0].headers["content-encoding"], "zstd");
    assert_eq!(requests[3].body, Value::Null);
    assert!(
        requests[3]
            .decode_error
            .as_deref()
            .unwrap()
            .contains("zstd")
    );
    assert_eq!(requests[3].body_text.as_deref(), Some("not zstd at all"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_requests_get_responses_in_script_order() {
    let mut sidecar = common::start().await;
    let script: Vec<Scripted> = (0..5)
        .map(|i| {
            Scripted::sse(bodies::assistant_reply(
                &format!("resp-{i}"),
                &format!("answer {i}"),
            ))
        })
        .collect();
    assert_eq!(sidecar.enqueue(&script).await.unwrap(), 5);
    for i in 0..5 {
        let response = post_json(sidecar.base_url(), &json!({"input": [], "n": i})).await;
        let expected = sse::frame(&bodies::assistant_reply(
            &format!("resp-{i}"),
            &format!("answer {i}"),
        ))
        .unwrap();
        assert_eq!(response.text(), expected);
    }
    let requests = sidecar.requests(MODEL).await.unwrap();
    let order: Vec<&Value> = requests.iter().map(|r| &r.body["n"]).collect();
    assert_eq!(order, [0, 1, 2, 3, 4]);
    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(ended.exit.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_routing_serves_concurrent_threads_independently() {
    let mut sidecar = common::start().await;
    // Generic responses first, then specific ones: specific must still win.
    let mut script = vec![Scripted::sse(bodies::assistant_reply("generic", "g"))];
    for t in 0..8 {
        script.push(
            Scripted::sse(bodies::assistant_reply(
                &format!("thread-{t}"),
                &format!("for {t}"),
            ))
            .when_body_contains(&format!("FORKWORD_{t}\"")),
        );
        script.push(
            Scripted::sse(bodies::assistant_reply(&format!("window-{t}"), "w"))
                .when_header("x-codex-window-id", &format!("win-{t}")),
        );
    }
    sidecar.enqueue(&script).await.unwrap();
    let base = sidecar.base_url().to_string();
    let mut tasks = Vec::new();
    for t in (0..8).rev() {
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let body = json!({"input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": format!("FORKWORD_{t}")}]}]});
            let by_body = post_json(&base, &body).await.text();
            let window = format!("win-{t}");
            let by_header = http(
                "POST",
                &format!("{base}/responses"),
                &[("x-codex-window-id", window.as_str())],
                b"{}".to_vec(),
            )
            .await
            .text();
            (t, by_body, by_header)
        }));
    }
    for task in tasks {
        let (t, by_body, by_header) = task.await.unwrap();
        assert!(
            by_body.contains(&format!("\"id\":\"thread-{t}\"")),
            "{t}: {by_body}"
        );
        assert!(
            by_header.contains(&format!("\"id\":\"window-{t}\"")),
            "{t}: {by_header}"
        );
    }
    // The generic response is left for a request that fits nothing specific.
    let leftover = post_json(&base, &json!({"input": []})).await;
    assert!(leftover.text().contains("\"id\":\"generic\""));
    let requests = sidecar.requests(MODEL).await.unwrap();
    assert_eq!(requests.len(), 17);
    let indexes: Vec<u64> = requests.iter().map(|r| r.index).collect();
    assert_eq!(indexes, (0..17).collect::<Vec<u64>>());
    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(ended.reply.pending, 0);
    assert_eq!(ended.exit.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_each_take_one_response() {
    let mut sidecar = common::start().await;
    let script: Vec<Scripted> = (0..40)
        .map(|i| Scripted::sse(bodies::empty_response(&format!("r{i}"))))
        .collect();
    sidecar.enqueue(&script).await.unwrap();
    let base = sidecar.base_url().to_string();
    let tasks: Vec<_> = (0..40)
        .map(|_| {
            let base = base.clone();
            tokio::spawn(async move { post_json(&base, &json!({"input": []})).await.text() })
        })
        .collect();
    let mut ids = Vec::new();
    for task in tasks {
        let text = task.await.unwrap();
        let first: Value =
            serde_json::from_str(text.lines().nth(1).unwrap().strip_prefix("data: ").unwrap())
                .unwrap();
        ids.push(first["response"]["id"].as_str().unwrap().to_string());
    }
    ids.sort();
    let mut expected: Vec<String> = (0..40).map(|i| format!("r{i}")).collect();
    expected.sort();
    assert_eq!(ids, expected, "every response served exactly once");
    assert_eq!(
        sidecar.status().await.unwrap(),
        Status {
            pending: 0,
            served: 40,
            unscripted: 0,
            captured: 40
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_delays_and_raw_bodies() {
    let mut sidecar = common::start().await;
    sidecar.enqueue(&scripts(json!([
        {"status": 429, "body": {"error": {"message": "slow down", "type": "rate_limit"}}, "headers": {"retry-after": "1"}},
        {"status": 503, "body": "plain failure"},
        {"events": bodies::empty_response("late"), "delay_ms": 300, "headers": {"x-mock": "yes"}},
        {"raw": "event: response.created\ndata: {\"type\":", "content_type": "text/event-stream"},
        {"status": 500, "delay_ms": 200}
    ]))).await.unwrap();
    let base = sidecar.base_url().to_string();
    let limited = post_json(&base, &json!({})).await;
    assert_eq!(limited.status, 429);
    assert_eq!(limited.header("retry-after"), Some("1"));
    assert_eq!(limited.header("content-type"), Some("application/json"));
    assert_eq!(limited.json()["error"]["message"], "slow down");

    let plain = post_json(&base, &json!({})).await;
    assert_eq!(
        (plain.status, plain.text().as_str()),
        (503, "plain failure")
    );

    let started = Instant::now();
    let late = post_json(&base, &json!({})).await;
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(late.header("x-mock"), Some("yes"));
    assert_eq!(
        late.text(),
        sse::frame(&bodies::empty_response("late")).unwrap()
    );

    let raw = post_json(&base, &json!({})).await;
    assert_eq!(raw.text(), "event: response.created\ndata: {\"type\":");

    let started = Instant::now();
    let slow_error = post_json(&base, &json!({})).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!((slow_error.status, slow_error.body.len()), (500, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_response_does_not_block_others() {
    let mut sidecar = common::start().await;
    sidecar
        .enqueue(&[
            Scripted::sse(bodies::empty_response("slow"))
                .delay_ms(1500)
                .when_body_contains("SLOW"),
            Scripted::sse(bodies::empty_response("fast")),
        ])
        .await
        .unwrap();
    let base = sidecar.base_url().to_string();
    let slow = tokio::spawn({
        let base = base.clone();
        async move { post_json(&base, &json!({"input": [], "x": "SLOW"})).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let fast = post_json(&base, &json!({"input": []})).await;
    assert!(started.elapsed() < Duration::from_millis(1000));
    assert!(fast.text().contains("fast"));
    assert!(slow.await.unwrap().text().contains("slow"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unscripted_requests_get_a_500_naming_them_and_are_captured() {
    let mut sidecar = common::start().await;
    sidecar
        .enqueue(&[Scripted::sse(bodies::empty_response("only"))])
        .await
        .unwrap();
    let base = sidecar.base_url().to_string();
    assert_eq!(post_json(&base, &json!({"input": []})).await.status, 200);
    let second = post_json(&base, &json!({"input": [], "turn": 2})).await;
    assert_eq!(second.status, 500);
    let message = second.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        message.contains("no scripted response was left"),
        "{message}"
    );
    assert!(message.contains("POST /v1/responses"), "{message}");
    assert!(message.contains("request index 1"), "{message}");

    let other = http(
        "DELETE",
        &format!("{}/v1/files/x", sidecar.server_url()),
        &[],
        vec![],
    )
    .await;
    assert_eq!(other.status, 500);
    assert!(
        other.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("DELETE /v1/files/x")
    );

    let model_requests = sidecar.requests(MODEL).await.unwrap();
    assert_eq!(model_requests.len(), 2);
    assert_eq!(model_requests[1].outcome, Outcome::Unscripted);
    assert_eq!(model_requests[1].body["turn"], 2);
    let all = sidecar.requests(ALL).await.unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(
        (all[2].method.as_str(), all[2].outcome),
        ("DELETE", Outcome::Unscripted)
    );

    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(
        ended.reply,
        ShutdownReply {
            pending: 0,
            unscripted: 2
        }
    );
    assert_eq!(ended.exit.code(), Some(3));
    let stderr = ended.stderr;
    assert!(
        stderr.contains("unscripted request: POST /v1/responses (request index 1)"),
        "{stderr}"
    );
    assert!(stderr.contains("DELETE /v1/files/x"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_answers_empty_or_the_set_body_and_stays_out_of_requests() {
    let mut sidecar = common::start().await;
    let url = format!("{}/models?client_version=0.171.0", sidecar.base_url());
    let response = http("GET", &url, &[], vec![]).await;
    assert_eq!(
        (response.status, response.json()),
        (200, json!({"models": []}))
    );
    let body = json!({"models": [{"slug": "mock-model"}]});
    sidecar.set_models(&body).await.unwrap();
    let response = http(
        "GET",
        &format!("{}/models", sidecar.base_url()),
        &[],
        vec![],
    )
    .await;
    assert_eq!(response.json(), body);

    assert_eq!(sidecar.requests(MODEL).await.unwrap(), Vec::new());
    let all = sidecar.wait_for(ALL, 2, Duration::ZERO).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].query.as_deref(), Some("client_version=0.171.0"));
    assert_eq!(all[0].outcome, Outcome::Scripted);
    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(ended.exit.code(), Some(0), "models calls are not leftovers");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_waits_for_min_and_filters_since() {
    let mut sidecar = common::start().await;
    sidecar
        .enqueue(&scripts(json!([[], [], []])))
        .await
        .unwrap();
    let base = sidecar.base_url().to_string();
    // Nothing arrives: a short list after the timeout, not an error.
    let started = Instant::now();
    assert!(
        sidecar
            .wait_for(MODEL, 1, Duration::from_millis(150))
            .await
            .unwrap()
            .is_empty()
    );
    assert!(started.elapsed() >= Duration::from_millis(150));

    let poster = tokio::spawn(async move {
        for n in 0..3 {
            tokio::time::sleep(Duration::from_millis(50)).await;
            post_json(&base, &json!({"input": [], "n": n})).await;
        }
    });
    let started = Instant::now();
    let waited = sidecar
        .wait_for(MODEL, 2, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(started.elapsed() < Duration::from_millis(4000));
    assert!(waited.len() >= 2);
    poster.await.unwrap();
    let since_1 = RequestFilter {
        since: 1,
        all: false,
    };
    let since = sidecar
        .wait_for(since_1, 2, Duration::from_secs(2))
        .await
        .unwrap();
    let ns: Vec<&Value> = since.iter().map(|r| &r.body["n"]).collect();
    assert_eq!(ns, [1, 2]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reset_empties_script_and_capture() {
    let mut sidecar = common::start().await;
    sidecar.enqueue(&scripts(json!([[], []]))).await.unwrap();
    post_json(sidecar.base_url(), &json!({"input": []})).await;
    sidecar.reset().await.unwrap();
    assert_eq!(sidecar.status().await.unwrap(), Status::default());
    sidecar.enqueue(&scripts(json!([[]]))).await.unwrap();
    post_json(sidecar.base_url(), &json!({"input": []})).await;
    let requests = sidecar.requests(MODEL).await.unwrap();
    assert_eq!((requests.len(), requests[0].index), (1, 0));
    let ended = sidecar.shutdown().await.unwrap();
    assert_eq!(ended.exit.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_violations_are_recorded_with_the_request() {
    let mut sidecar = common::start().await;
    sidecar.enqueue(&scripts(json!([[], []]))).await.unwrap();
    let base = sidecar.base_url().to_string();
    post_json(
        &base,
        &json!({"input": [
            {"type": "function_call", "call_id": "c1", "name": "shell", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "ok"}
        ]}),
    )
    .await;
    post_json(
        &base,
        &json!({"input": [
            {"type": "function_call", "call_id": "lonely", "name": "shell", "arguments": "{}"}
        ]}),
    )
    .await;
    let requests = sidecar.requests(MODEL).await.unwrap();
    assert!(requests[0].pairing_violations.is_empty());
    assert_eq!(
        requests[0].function_call_output_text("c1").as_deref(),
        Some("ok")
    );
    assert_eq!(
        requests[1].pairing_violations,
        vec!["function_call \"lonely\" has no function_call_output in the same input"]
    );
}
