//! The real codex 0.171.0 against the sidecar (feature `codex-parity`): one turn over the
//! Responses WebSocket (warm-up answered by the sidecar, then an incremental frame), and one
//! HTTP turn whose first stream stalls mid-way until codex's idle timeout makes it retry.
//!
//! The binary: the 0.171.0 entry of `CODEX_TEST_BINS` (a PATH-like list; else its last entry),
//! else `0.171.0/codex` in the codex-parity cache (`CODEX_PARITY_CACHE`, else
//! `$XDG_CACHE_HOME/codex-parity/codex`, else `~/.cache/codex-parity/codex`). Codex runs
//! hermetically: its own temp `CODEX_HOME`, an environment without `OPENAI_*`/`CODEX_*`,
//! `--disable plugins`, and it is killed at the end.

#[path = "../../sidecar/tests/v2/mod.rs"]
mod v2;

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};
use v2::Sidecar;

const VERSION: &str = "0.171.0";

fn codex_binary() -> PathBuf {
    if let Some(list) = std::env::var_os("CODEX_TEST_BINS").filter(|v| !v.is_empty()) {
        let entries: Vec<PathBuf> = std::env::split_paths(&list).collect();
        let chosen = entries
            .iter()
            .find(|p| p.to_string_lossy().contains(VERSION))
            .or(entries.last())
            .cloned()
            .expect("CODEX_TEST_BINS lists no binary");
        assert!(
            chosen.exists(),
            "CODEX_TEST_BINS names {} which does not exist",
            chosen.display()
        );
        return chosen;
    }
    let non_empty = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let root = non_empty("CODEX_PARITY_CACHE")
        .or_else(|| {
            non_empty("XDG_CACHE_HOME")
                .filter(|p| p.is_absolute())
                .map(|p| p.join("codex-parity").join("codex"))
        })
        .or_else(|| non_empty("HOME").map(|h| h.join(".cache").join("codex-parity").join("codex")))
        .expect("no CODEX_PARITY_CACHE, XDG_CACHE_HOME or HOME to find codex in");
    let path = root.join(VERSION).join("codex");
    assert!(
        path.exists(),
        "codex {VERSION} is not installed at {}: run `codex-parity install {VERSION}` (or set CODEX_TEST_BINS)",
        path.display()
    );
    path
}

/// `codex app-server` in a temp home, spoken to over JSON-RPC lines; killed on drop.
struct Codex {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<Value>,
    seen: Vec<Value>,
    next_id: u64,
    _home: tempfile::TempDir,
}

impl Codex {
    fn start(base_url: &str, provider_extra: &str) -> Codex {
        let home = tempfile::tempdir().unwrap();
        let codex_home = home.path().join("codex-home");
        let workspace = home.path().join("workspace");
        std::fs::create_dir_all(&codex_home).unwrap();
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::create_dir_all(home.path().join("user-home")).unwrap();
        let config = format!(
            "model = \"mock-model\"\nmodel_provider = \"mock\"\napproval_policy = \"never\"\nsandbox_mode = \"read-only\"\n\n[model_providers.mock]\nname = \"Mock\"\nbase_url = \"{base_url}\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\nrequest_max_retries = 0\n{provider_extra}"
        );
        std::fs::write(codex_home.join("config.toml"), config).unwrap();
        let mut command = Command::new(codex_binary());
        command
            .args(["app-server", "--disable", "plugins"])
            .env_clear()
            .env("HOME", home.path().join("user-home"))
            .env("CODEX_HOME", &codex_home)
            .env("MOCK_API_KEY", "mock-key")
            .env("RUST_LOG", "warn")
            .env("LANG", "C.UTF-8")
            .current_dir(&workspace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(path) = std::env::var_os("PATH") {
            command.env("PATH", path);
        }
        let mut child = command.spawn().expect("spawn codex app-server");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if let Ok(value) = serde_json::from_str::<Value>(&line)
                    && sender.send(value).is_err()
                {
                    break;
                }
            }
        });
        let mut codex = Codex {
            child,
            stdin,
            lines,
            seen: Vec::new(),
            next_id: 1,
            _home: home,
        };
        codex.call(
            "initialize",
            json!({"clientInfo": {"name": "sidecar-test", "title": "sidecar-test", "version": "0.0.0"}}),
        );
        codex.send(json!({"method": "initialized"}));
        codex
    }

    fn send(&mut self, message: Value) {
        self.stdin
            .write_all(message.to_string().as_bytes())
            .unwrap();
        self.stdin.write_all(b"\n").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Waits for a message meeting `want`, keeping everything seen.
    fn wait_for(&mut self, what: &str, timeout: Duration, want: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let message = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "codex sent no {what} within {timeout:?}; seen: {:#?}",
                    self.seen
                )
            });
            self.seen.push(message.clone());
            if want(&message) {
                return message;
            }
        }
    }

    fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"id": id, "method": method, "params": params}));
        let reply = self.wait_for(method, Duration::from_secs(60), |m| {
            m["id"] == id && m.get("method").is_none()
        });
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }

    /// Starts a thread and one turn saying `text`; returns the `turn/completed` notification.
    fn one_turn(&mut self, text: &str, timeout: Duration) -> Value {
        let cwd = self.child_cwd();
        let thread = self.call("thread/start", json!({"cwd": cwd}));
        let thread_id = thread["thread"]["id"].as_str().unwrap().to_string();
        self.call(
            "turn/start",
            json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]}),
        );
        self.wait_for("turn/completed", timeout, |m| {
            m["method"] == "turn/completed"
        })
    }

    fn child_cwd(&self) -> String {
        self._home.path().join("workspace").display().to_string()
    }

    fn agent_texts(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter(|m| {
                m["method"] == "item/completed" && m["params"]["item"]["type"] == "agentMessage"
            })
            .filter_map(|m| m["params"]["item"]["text"].as_str().map(str::to_string))
            .collect()
    }
}

impl Drop for Codex {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn codex_runs_a_turn_over_the_websocket() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([bodies::assistant_reply(
        "resp_ws_1",
        "hello over the socket"
    )]));
    let mut codex = Codex::start(
        &sidecar.base_url(),
        "supports_websockets = true\nstream_max_retries = 0\n",
    );
    let done = codex.one_turn("hi", Duration::from_secs(60));
    assert_eq!(done["params"]["turn"]["status"], "completed", "{done}");
    assert_eq!(codex.agent_texts(), ["hello over the socket"]);
    let requests = sidecar.requests(2);
    assert_eq!(requests.len(), 2, "{requests:#?}");
    for request in &requests {
        assert_eq!(request["transport"], "websocket", "{request}");
        assert_eq!(request["connection"], 0);
        assert!(request.get("chain_error").is_none(), "{request}");
    }
    assert_eq!(requests[0]["auto_warmup"], true);
    assert_eq!(requests[0]["body"]["generate"], false);
    assert_eq!(requests[1]["frame"], 1);
    assert_eq!(
        requests[1]["body"]["previous_response_id"],
        "resp_warmup_0_0"
    );
    assert_eq!(
        requests[1]["all_headers"]["openai-beta"],
        "responses_websockets=2026-02-06"
    );
    assert_eq!(requests[1]["headers"]["authorization"], "Bearer mock-key");
    drop(codex);
    let (reply, status, stderr) = sidecar.shutdown();
    assert_eq!(reply["pending"], 0);
    assert!(status.success(), "{stderr}");
}

#[test]
fn codex_retries_a_stream_that_stalls_mid_way() {
    let mut sidecar = Sidecar::start();
    sidecar.enqueue(json!([
        Scripted::sse(bodies::streaming_reply(
            "resp_stall",
            "msg_stall",
            &["never ", "finished"]
        ))
        .stall_after(3)
        .to_json(),
        bodies::assistant_reply("resp_retry", "second try worked"),
    ]));
    let mut codex = Codex::start(
        &sidecar.base_url(),
        "stream_max_retries = 1\nstream_idle_timeout_ms = 1500\n",
    );
    let done = codex.one_turn("hi", Duration::from_secs(60));
    assert_eq!(done["params"]["turn"]["status"], "completed", "{done}");
    assert!(
        codex
            .agent_texts()
            .contains(&"second try worked".to_string()),
        "{:?}",
        codex.agent_texts()
    );
    let notice = codex
        .seen
        .iter()
        .find(|m| m["method"] == "error" && m["params"]["willRetry"] == true)
        .unwrap_or_else(|| panic!("no retry notice in {:#?}", codex.seen));
    assert!(
        notice["params"]["error"]["additionalDetails"]
            .as_str()
            .unwrap_or("")
            .contains("idle timeout"),
        "{notice}"
    );
    let requests = sidecar.requests(2);
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.get("transport").is_none()));
    let sent = requests[0]["events_sent_ms"].as_array().unwrap();
    assert_eq!(sent.len(), 3, "{}", requests[0]);
    // Codex waited for its idle timeout after the last event before retrying.
    let first = requests[0]["received_at_ms"].as_f64().unwrap() + sent[2].as_f64().unwrap();
    let retry = requests[1]["received_at_ms"].as_f64().unwrap();
    assert!(
        retry - first >= 1400.0,
        "retry {retry} only {} ms after the stall",
        retry - first
    );
    drop(codex);
    // The stalled stream ends when codex drops it.
    let deadline = Instant::now() + Duration::from_secs(10);
    while sidecar.requests(2)[0]["stream_end"] != "client_closed" {
        assert!(Instant::now() < deadline, "{}", sidecar.requests(2)[0]);
        std::thread::sleep(Duration::from_millis(50));
    }
}
