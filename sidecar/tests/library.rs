//! The in-process library surface: [`Server`] at the root, its captured requests, `wait_for`
//! saying whether it was satisfied, and verify-on-drop of leftovers.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Duration;

use codex_parity_sidecar::{Outcome, RequestFilter, Scripted, Server, bodies};
use common::post_json;
use serde_json::json;

/// The text of a caught panic.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_requests_are_readable_in_process_and_wait_for_says_if_it_was_satisfied() {
    let server = Server::start("127.0.0.1", 0).await.unwrap();
    server
        .enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "hi"))])
        .unwrap();
    let models = RequestFilter::default();
    assert!(!server.wait_for(models, 1, Duration::from_millis(50)).await);
    let response = post_json(&server.base_url(), &json!({"input": [], "n": 1})).await;
    assert_eq!(response.status, 200);
    let other = common::http(
        "GET",
        &format!("{}/elsewhere", server.server_url()),
        &[],
        vec![],
    )
    .await;
    assert_eq!(other.status, 500);
    assert!(server.wait_for(models, 1, Duration::from_secs(5)).await);

    let model_requests = server.requests(models);
    assert_eq!(model_requests.len(), 1);
    assert_eq!(model_requests[0].body["n"], 1);
    let all = server.received_requests();
    assert_eq!(
        all.iter()
            .map(|r| (r.method.as_str(), r.path.as_str(), r.outcome))
            .collect::<Vec<_>>(),
        [
            ("POST", "/v1/responses", Outcome::Scripted),
            ("GET", "/elsewhere", Outcome::Unscripted)
        ]
    );
    let leftovers = server.verify().unwrap_err();
    assert!(leftovers.pending.is_empty());
    assert_eq!(
        leftovers.to_string(),
        "unscripted request: GET /elsewhere (request index 1)\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_on_drop_panics_naming_the_leftovers_only_when_asked() {
    let script = [
        Scripted::sse(bodies::assistant_reply("resp-1", "never asked for")),
        Scripted::sse(bodies::empty_response("served")).when_body_contains("SERVE"),
    ];
    let quiet = Server::start("127.0.0.1", 0).await.unwrap();
    quiet.enqueue(&script).unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(quiet))).is_ok());

    let verified = Server::start("127.0.0.1", 0).await.unwrap();
    verified.verify_on_drop().enqueue(&script).unwrap();
    let served = post_json(&verified.base_url(), &json!({"input": [], "x": "SERVE"})).await;
    assert_eq!(served.status, 200);
    let message = panic_text(catch_unwind(AssertUnwindSafe(|| drop(verified))).unwrap_err());
    assert!(
        message.starts_with("the mock server is dropped with leftovers:\nnever served: "),
        "{message}"
    );
    assert_eq!(message.lines().count(), 2, "{message}");

    let clean = Server::start("127.0.0.1", 0).await.unwrap();
    clean.verify_on_drop();
    assert!(catch_unwind(AssertUnwindSafe(|| drop(clean))).is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_on_drop_does_not_panic_again_while_panicking() {
    let server = Server::start("127.0.0.1", 0).await.unwrap();
    server
        .verify_on_drop()
        .enqueue(&[Scripted::sse(bodies::empty_response("left"))])
        .unwrap();
    // A second panic in Drop would abort the test process instead of unwinding.
    let caught = catch_unwind(AssertUnwindSafe(move || {
        let _server = server;
        panic!("the test's own failure");
    }));
    assert_eq!(panic_text(caught.unwrap_err()), "the test's own failure");
}

#[tokio::test]
async fn a_sidecar_process_that_dies_before_its_ready_line_is_explained() {
    let error = codex_parity_sidecar::SidecarProcess::spawn(
        common::BIN,
        ["--config", "/nonexistent/sidecar.json"],
    )
    .await
    .unwrap_err();
    let text = format!("{error:#}");
    assert!(text.contains("exited (exit status: 2)"), "{text}");
    assert!(
        text.contains("cannot read config /nonexistent/sidecar.json"),
        "{text}"
    );
    assert!(
        text.contains("the sidecar closed its stdout before answering ready"),
        "{text}"
    );
}
