//! The raw wire: the built sidecar binary driven line by line over pipes, for the tests
//! that check the protocol's exact lines (`protocol.rs`). Every other test steers the
//! sidecar with the typed client ([`super::start`]).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::BIN;

/// How long a test waits for one stdout line before failing instead of hanging.
const LINE_TIMEOUT: Duration = Duration::from_secs(30);

/// A running sidecar with its raw pipes.
pub(crate) struct Sidecar {
    pub child: Child,
    stdin: Option<ChildStdin>,
    /// Stdout lines, read on a thread so that a missing reply fails the test, not hangs it.
    stdout: mpsc::Receiver<String>,
    pub ready: Value,
}

impl Sidecar {
    /// Spawns the binary with `args` and reads the ready line.
    pub(crate) fn spawn(args: &[&str]) -> Sidecar {
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
    pub(crate) fn start() -> Sidecar {
        Sidecar::spawn(&[])
    }

    pub(crate) fn server_url(&self) -> String {
        self.ready["server_url"].as_str().unwrap().to_string()
    }

    pub(crate) fn base_url(&self) -> String {
        self.ready["base_url"].as_str().unwrap().to_string()
    }

    /// Writes one raw line (a newline is added).
    pub(crate) fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).unwrap();
        stdin.write_all(b"\n").unwrap();
        stdin.flush().unwrap();
    }

    /// Writes raw bytes as they are.
    pub(crate) fn send_bytes(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).unwrap();
        stdin.flush().unwrap();
    }

    /// Reads one stdout line as JSON; `None` at EOF.
    pub(crate) fn read_line(&mut self) -> Option<Value> {
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
    pub(crate) fn call(&mut self, command: Value) -> Value {
        self.send_line(&command.to_string());
        self.read_line().expect("reply")
    }

    /// Enqueues responses and checks the reply.
    pub(crate) fn enqueue(&mut self, responses: Value) -> Value {
        self.call(serde_json::json!({"op": "enqueue", "responses": responses}))
    }

    /// Closes stdin (EOF).
    pub(crate) fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits for the exit (at most 10 s) and returns the status and all of stderr.
    pub(crate) fn wait(mut self) -> (ExitStatus, String) {
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
    pub(crate) fn shutdown(mut self) -> (Value, ExitStatus, String) {
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
