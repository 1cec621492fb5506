//! The binary over its pipes: ready line, commands, bad input, exit statuses, EOF.

mod common;

use std::process::{Command, Stdio};

use common::raw::Sidecar;
use common::{BIN, config_file, post_json};
use serde_json::{Value, json};

/// Runs the binary with `args` and no stdin; returns (status code, stdout, stderr).
fn run(args: &[&str]) -> (Option<i32>, String, String) {
    let output = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn ready_line_carries_urls_protocol_and_pid() {
    let sidecar = Sidecar::start();
    let ready = sidecar.ready.clone();
    let server_url = ready["server_url"].as_str().unwrap();
    let port: u16 = server_url
        .strip_prefix("http://127.0.0.1:")
        .unwrap()
        .parse()
        .unwrap();
    assert!(port > 0);
    assert_eq!(ready["base_url"], format!("{server_url}/v1"));
    assert_eq!(ready["protocol"], 2);
    assert_eq!(ready["pid"], sidecar.child.id());
    let keys: Vec<&String> = ready.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["type", "server_url", "base_url", "protocol", "pid"]);
}

#[test]
fn host_and_port_options_are_honoured() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let port_text = port.to_string();
    let sidecar = Sidecar::spawn(&["--host", "127.0.0.1", "--port", &port_text]);
    assert_eq!(sidecar.server_url(), format!("http://127.0.0.1:{port}"));
    // The port is taken now: a second sidecar cannot listen and exits 2 before any ready line.
    let (code, stdout, stderr) = run(&["--port", &port_text]);
    assert_eq!(code, Some(2));
    assert_eq!(stdout, "");
    assert!(
        stderr.contains(&format!("cannot listen on 127.0.0.1:{port}")),
        "{stderr}"
    );
}

#[test]
fn every_reply_echoes_the_id() {
    let mut sidecar = Sidecar::start();
    let ids = [
        json!(1),
        json!("two"),
        json!(null),
        json!({"n": [3]}),
        json!(4.5),
    ];
    let commands = [
        json!({"op": "status"}),
        json!({"op": "enqueue", "responses": [[]]}),
        json!({"op": "requests"}),
        json!({"op": "bogus"}),
        json!({"op": "enqueue", "responses": [{"status": 1}]}),
        json!({"op": "models", "body": {}}),
        json!({"op": "reset"}),
    ];
    for command in &commands {
        for id in &ids {
            let mut command = command.clone();
            command["id"] = id.clone();
            let reply = sidecar.call(command.clone());
            assert_eq!(reply.get("id"), Some(id), "{command} -> {reply}");
        }
    }
    let reply = sidecar.call(json!({"op": "status"}));
    assert!(reply.get("id").is_none(), "no id, no echo: {reply}");
    let reply = sidecar.call(json!({"op": "shutdown", "id": "bye"}));
    assert_eq!(reply["id"], "bye");
}

#[test]
fn commands_reply_as_the_protocol_says() {
    let mut sidecar = Sidecar::start();
    assert_eq!(
        sidecar.call(json!({"op": "status"})),
        json!({"type": "status", "pending": 0, "served": 0, "unscripted": 0, "captured": 0})
    );
    assert_eq!(
        sidecar.enqueue(json!([[], {"status": 500}])),
        json!({"type": "enqueued", "pending": 2})
    );
    assert_eq!(
        sidecar.enqueue(json!([{"raw": "x"}])),
        json!({"type": "enqueued", "pending": 3})
    );
    assert_eq!(
        sidecar.call(json!({"op": "frobnicate"})),
        json!({"type": "error", "message": "unknown op: frobnicate"})
    );
    // A bad response anywhere in the list: error naming its index, nothing queued.
    let reply = sidecar.enqueue(json!([[], [{"no_type": 1}]]));
    assert_eq!(reply["type"], "error");
    let message = reply["message"].as_str().unwrap();
    assert!(message.contains("response 1"), "{message}");
    assert_eq!(sidecar.call(json!({"op": "status"}))["pending"], 3);
    assert_eq!(sidecar.call(json!({"op": "reset"})), json!({"type": "ok"}));
    assert_eq!(sidecar.call(json!({"op": "status"}))["pending"], 0);
}

#[test]
fn config_script_is_loaded_and_leftovers_exit_3() {
    let config = config_file(
        r#"{"responses": [[{"type":"response.created","response":{"id":"a"}}], {"status": 429, "headers": {"retry-after": "1"}}]}"#,
    );
    let mut sidecar = Sidecar::spawn(&["--config", config.path().to_str().unwrap()]);
    assert_eq!(sidecar.call(json!({"op": "status"}))["pending"], 2);
    let (reply, status, stderr) = sidecar.shutdown();
    assert_eq!(
        reply,
        json!({"type": "shutdown", "pending": 2, "unscripted": 0})
    );
    assert_eq!(status.code(), Some(3));
    assert!(
        stderr.contains("never served: scripted response #0: SSE body [response.created]"),
        "{stderr}"
    );
    assert!(
        stderr.contains("scripted response #1: HTTP 429"),
        "{stderr}"
    );
}

#[test]
fn lenient_exits_0_despite_leftovers() {
    let config = config_file(r#"{"responses": [[]]}"#);
    let sidecar = Sidecar::spawn(&["--lenient", "--config", config.path().to_str().unwrap()]);
    let (reply, status, _) = sidecar.shutdown();
    assert_eq!(reply["pending"], 1);
    assert_eq!(status.code(), Some(0));
}

#[test]
fn clean_shutdown_exits_0_with_nothing_after_the_reply() {
    let sidecar = Sidecar::start();
    let (reply, status, _) = sidecar.shutdown();
    assert_eq!(
        reply,
        json!({"type": "shutdown", "pending": 0, "unscripted": 0})
    );
    assert_eq!(status.code(), Some(0));
}

#[test]
fn eof_is_a_shutdown_without_reply() {
    let mut sidecar = Sidecar::start();
    sidecar.close_stdin();
    let (status, _) = sidecar.wait();
    assert_eq!(status.code(), Some(0));

    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([[]]));
    sidecar.close_stdin();
    let (status, stderr) = sidecar.wait();
    assert_eq!(status.code(), Some(3), "EOF with a leftover: {stderr}");
}

/// The sidecar's owner gone (its stdin closed) while a command waits: the sidecar ends
/// at once, not when the wait would have (an hour here, 10^12 ms in a scenario file).
#[test]
fn eof_during_a_long_wait_ends_the_sidecar_at_once() {
    for wait in [
        json!({"op": "requests", "min": 5, "timeout_ms": 3_600_000u64}),
        json!({"op": "wait_gate", "gate": "never", "timeout_ms": 3_600_000u64}),
    ] {
        let mut sidecar = Sidecar::start();
        sidecar.send_line(&wait.to_string());
        // The command is in flight once the line is in the pipe; the sidecar reads it.
        std::thread::sleep(std::time::Duration::from_millis(100));
        sidecar.close_stdin();
        let started = std::time::Instant::now();
        let (status, stderr) = sidecar.wait();
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{wait}: exited after {:?}",
            started.elapsed()
        );
        assert_eq!(status.code(), Some(0), "{wait}: {stderr}");
        assert!(stderr.contains("stdin closed"), "{wait}: {stderr}");
    }
}

#[test]
fn bad_configs_exit_2_before_any_ready_line() {
    let cases = [
        ("not json", "is not JSON"),
        ("[1]", "is not a JSON object"),
        (r#"{"responses": 5}"#, "must be an array"),
        (r#"{"responses": [[], [{"x": 1}]]}"#, "response 1"),
        (r#"{"responses": [{"status": 99}]}"#, "response 0"),
        (r#"{"responsez": []}"#, "unknown key"),
    ];
    for (text, needle) in cases {
        let config = config_file(text);
        let (code, stdout, stderr) = run(&["--config", config.path().to_str().unwrap()]);
        assert_eq!(code, Some(2), "{text}");
        assert_eq!(stdout, "", "{text}");
        assert!(stderr.contains(needle), "{text}: {stderr}");
    }
    let (code, stdout, stderr) = run(&["--config", "/nonexistent/sidecar.json"]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
    assert!(
        stderr.contains("cannot read config /nonexistent/sidecar.json"),
        "{stderr}"
    );
    let (code, stdout, _) = run(&["--no-such-flag"]);
    assert_eq!((code, stdout.as_str()), (Some(2), ""));
}

#[test]
fn help_and_version() {
    let (code, stdout, _) = run(&["--help"]);
    assert_eq!(code, Some(0));
    assert!(
        stdout.contains("--config") && stdout.contains("--lenient"),
        "{stdout}"
    );
    let (code, stdout, _) = run(&["--version"]);
    assert_eq!(code, Some(0));
    assert!(stdout.starts_with("codex-parity-sidecar "), "{stdout}");
}

/// A few hundred kinds of bad input, one line each.
fn malformed_lines() -> Vec<String> {
    let mut lines: Vec<String> = vec![
        "{".into(),
        "}".into(),
        "null".into(),
        "42".into(),
        "\"op\"".into(),
        "[]".into(),
        "[{\"op\":\"status\"}]".into(),
        "{}".into(),
        "{\"op\":null}".into(),
        "{\"op\":7}".into(),
        "{\"op\":[\"status\"]}".into(),
        "{\"op\":\"STATUS\"}".into(),
        "{\"op\":\"requests\",\"min\":\"2\"}".into(),
        "{\"op\":\"requests\",\"timeout_ms\":-5}".into(),
        "{\"op\":\"requests\",\"since\":1.5}".into(),
        "{\"op\":\"enqueue\",\"responses\":{}}".into(),
        "{\"op\":\"enqueue\",\"responses\":[5]}".into(),
        "{\"op\":\"enqueue\",\"responses\":[{\"events\":[],\"status\":200}]}".into(),
        "{\"op\":\"enqueue\",\"responses\":[{\"status\":200,\"headers\":{\"bad header\":\"x\"}}]}"
            .into(),
        "{\"op\":\"models\"}".into(),
        "\u{0}\u{1}\u{2}".into(),
        "{\"op\":\"status\"".into(),
        "{\"op\":\"status\"}}".into(),
        "\u{feff}{\"op\":\"status\"}".into(),
        "x".repeat(100_000),
        format!("{{\"op\":\"{}\"}}", "z".repeat(5000)),
        "[".repeat(10_000),
    ];
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    while lines.len() < 300 {
        // xorshift: printable noise of varied lengths, some JSON-looking.
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let len = 1 + (seed % 80) as usize;
        let noise: String = (0..len)
            .map(|i| {
                let c = ((seed >> (i % 56)) as u8 % 94) + 33;
                c as char
            })
            .collect();
        lines.push(match seed % 3 {
            0 => noise,
            1 => format!("{{\"op\":\"{}\"}}", noise.replace(['"', '\\'], "")),
            _ => format!("{{\"op\":\"enqueue\",\"responses\":[{noise}]}}"),
        });
    }
    lines
}

#[test]
fn hundreds_of_malformed_lines_each_get_an_error_and_the_sidecar_still_answers() {
    let mut sidecar = Sidecar::start();
    let lines = malformed_lines();
    for (n, line) in lines.iter().enumerate() {
        sidecar.send_line(line);
        let reply = sidecar
            .read_line()
            .unwrap_or_else(|| panic!("no reply to line {n}"));
        assert_eq!(reply["type"], "error", "line {n} {line:?} -> {reply}");
        assert!(!reply["message"].as_str().unwrap().is_empty());
    }
    assert_eq!(
        sidecar.call(json!({"op": "status", "id": "still here"})),
        json!({"type": "status", "pending": 0, "served": 0, "unscripted": 0, "captured": 0, "id": "still here"})
    );
    let (_, status, _) = sidecar.shutdown();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn invalid_utf8_and_blank_lines_do_not_break_the_stream() {
    let mut sidecar = Sidecar::start();
    sidecar.send_bytes(b"\xff\xfe{\"op\":\"status\"}\n");
    assert_eq!(sidecar.read_line().unwrap()["type"], "error");
    sidecar.send_bytes(b"{\"op\":\"status\",\"id\":\"\xc3\x28\"}\r\n");
    assert_eq!(sidecar.read_line().unwrap()["id"], "\u{fffd}(");
    // Blank lines are not commands and get no reply.
    sidecar.send_line("");
    sidecar.send_line("   ");
    assert_eq!(sidecar.call(json!({"op": "status", "id": 1}))["id"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_reply_parses_into_captured_requests() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([[]]));
    post_json(
        &sidecar.base_url(),
        &json!({"input": [], "instructions": "be brief"}),
    )
    .await;
    let reply_line = {
        sidecar.send_line(r#"{"op":"requests","min":1,"timeout_ms":2000}"#);
        sidecar.read_line().unwrap().to_string()
    };
    let (id, reply) = codex_parity_sidecar::protocol::Reply::parse_line(&reply_line).unwrap();
    assert_eq!(id, None);
    let codex_parity_sidecar::protocol::Reply::Requests { requests } = reply else {
        panic!("not a requests reply: {reply_line}");
    };
    assert_eq!(requests[0].instructions_text(), Some("be brief"));
    assert!(requests[0].is_model_request());
    let _: &Value = requests[0].body_json().unwrap();
}
