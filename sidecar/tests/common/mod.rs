//! Test support: spawn the built sidecar binary and drive it over pipes; a tiny hyper client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::Value;

/// A temporary config file holding `text`.
pub fn config_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

pub const BIN: &str = env!("CARGO_BIN_EXE_codex-parity-sidecar");

/// How long a test waits for one stdout line before failing instead of hanging.
const LINE_TIMEOUT: Duration = Duration::from_secs(30);

/// A running sidecar with its pipes.
pub struct Sidecar {
    pub child: Child,
    stdin: Option<ChildStdin>,
    /// Stdout lines, read on a thread so that a missing reply fails the test, not hangs it.
    stdout: mpsc::Receiver<String>,
    pub ready: Value,
}

impl Sidecar {
    /// Spawns the binary with `args` and reads the ready line.
    pub fn spawn(args: &[&str]) -> Sidecar {
        let mut child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn sidecar");
        let stdin = child.stdin.take();
        let mut pipe = BufReader::new(child.stdout.take().unwrap());
        let (sender, stdout) = mpsc::channel();
        std::thread::spawn(move || {
            loop {
                let mut line = String::new();
                match pipe.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut sidecar = Sidecar {
            child,
            stdin,
            stdout,
            ready: Value::Null,
        };
        sidecar.ready = sidecar.read_line().expect("ready line");
        assert_eq!(sidecar.ready["type"], "ready", "{}", sidecar.ready);
        sidecar
    }

    /// A sidecar with no config.
    pub fn start() -> Sidecar {
        Sidecar::spawn(&[])
    }

    pub fn server_url(&self) -> String {
        self.ready["server_url"].as_str().unwrap().to_string()
    }

    pub fn base_url(&self) -> String {
        self.ready["base_url"].as_str().unwrap().to_string()
    }

    /// Writes one raw line (a newline is added).
    pub fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes as they are.
    pub fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Reads one stdout line as JSON; `None` at EOF.
    pub fn read_line(&mut self) -> Option<Value> {
        let line = match self.stdout.recv_timeout(LINE_TIMEOUT) {
            Ok(line) => line,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("no stdout line within {LINE_TIMEOUT:?}")
            }
        };
        assert!(line.ends_with('\n'), "line without newline: {line:?}");
        Some(
            serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout line {line:?} is not JSON: {e}")),
        )
    }

    /// Sends a command and returns its reply.
    pub fn call(&mut self, command: Value) -> Value {
        self.send_line(&command.to_string());
        self.read_line().expect("reply")
    }

    /// `requests` with these options.
    pub fn requests(&mut self, options: Value) -> Vec<Value> {
        let mut command = serde_json::json!({"op": "requests"});
        for (k, v) in options.as_object().unwrap() {
            command[k] = v.clone();
        }
        let reply = self.call(command);
        assert_eq!(reply["type"], "requests", "{reply}");
        reply["requests"].as_array().unwrap().clone()
    }

    /// Enqueues responses and checks the reply.
    pub fn enqueue(&mut self, responses: Value) -> Value {
        self.call(serde_json::json!({"op": "enqueue", "responses": responses}))
    }

    /// Closes stdin (EOF).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the exit (at most 10 s) and returns the status and all of stderr.
    pub fn wait(mut self) -> (ExitStatus, String) {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(std::time::Instant::now() < deadline, "sidecar did not exit");
            std::thread::sleep(Duration::from_millis(5));
        };
        let mut stderr = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        // Nothing may follow the last reply on stdout.
        let rest: Vec<String> = self.stdout.iter().collect();
        assert!(rest.is_empty(), "unexpected stdout after the end: {rest:?}");
        (status, stderr)
    }

    /// Sends `shutdown`, returns its reply, the exit status and stderr.
    pub fn shutdown(mut self) -> (Value, ExitStatus, String) {
        let reply = self.call(serde_json::json!({"op": "shutdown"}));
        let (status, stderr) = self.wait();
        (reply, status, stderr)
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP response as the tests see it.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// One HTTP/1.1 request on a fresh connection to `url` (`http://HOST:PORT/path?query`).
pub async fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Response {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .unwrap();
    tokio::spawn(connection);
    let mut request = hyper::Request::builder()
        .method(method)
        .uri(path)
        .header("host", authority);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request.body(Full::new(Bytes::from(body))).unwrap();
    let response = sender.send_request(request).await.unwrap();
    let status = response.status().as_u16();
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_string()))
        .collect();
    let body = response
        .into_body()
        .collect()
        .await
        .unwrap()
        .to_bytes()
        .to_vec();
    Response {
        status,
        headers,
        body,
    }
}

/// `POST {base}/responses` with a JSON body.
pub async fn post_json(base_url: &str, body: &Value) -> Response {
    http(
        "POST",
        &format!("{base_url}/responses"),
        &[("content-type", "application/json")],
        body.to_string().into_bytes(),
    )
    .await
}
