//! A stand-in integrator program for the tests of `codex-parity record`.
//!
//! It launches `codex app-server` itself, as an integrator's program would, and speaks its
//! JSON-RPC over stdio: one JSON object per line. Codex is the program named by the environment
//! variable `CODEX_PARITY_CODEX`, else `codex` on `PATH`. The one argument is the mode:
//!
//! - `plain`: one turn, "say hello".
//! - `tool`: a thread with the dynamic tool `lookup`; its `item/tool/call` gets "x is 42".
//! - `approval`: an `untrusted`, read-only thread; command approvals are accepted.
//! - `steer`: `turn/steer` 300 ms after `turn/started`; the steer must succeed.
//! - `interrupt`: `turn/interrupt` 300 ms after `turn/started`; the interrupt must succeed.
//! - `exit-at-once`: exits 0 at once, without starting codex.
//! - `fail`: the `plain` flow, then exit status 3.
//!
//! Every mode but `exit-at-once` prints `turn <status>` when its turn completes. Any failure
//! exits non-zero with a message on stderr. No wait is longer than 30 s, and codex is killed on
//! exit. `driver/tests/record/client.py` is its Python twin: same modes, same behaviour.
//!
//! ```text
//! cargo run -p codex-parity --example record_client -- tool
//! ```

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use serde_json::{Value, json};

/// The longest any one wait may take.
const WAIT: Duration = Duration::from_secs(30);
/// How long codex gets to exit after its stdin is closed.
const EXIT_WAIT: Duration = Duration::from_secs(5);
/// The pause between `turn/started` and the steer or interrupt.
const PAUSE: Duration = Duration::from_millis(300);
/// The exit status of the `fail` mode.
const FAIL_STATUS: u8 = 3;

/// What the client does: the one argument.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Plain,
    Tool,
    Approval,
    Steer,
    Interrupt,
    ExitAtOnce,
    Fail,
}

impl Mode {
    /// Every mode with its name.
    const ALL: [(&'static str, Mode); 7] = [
        ("plain", Mode::Plain),
        ("tool", Mode::Tool),
        ("approval", Mode::Approval),
        ("steer", Mode::Steer),
        ("interrupt", Mode::Interrupt),
        ("exit-at-once", Mode::ExitAtOnce),
        ("fail", Mode::Fail),
    ];

    /// The mode named `name`.
    fn parse(name: &str) -> Option<Mode> {
        Self::ALL.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
    }

    /// The text of the mode's turn.
    fn turn_text(self) -> &'static str {
        match self {
            Mode::Plain | Mode::Fail | Mode::ExitAtOnce => "say hello",
            Mode::Tool => "look up the key x",
            Mode::Approval => "run the command",
            Mode::Steer => "write a fruit list",
            Mode::Interrupt => "take your time",
        }
    }

    /// The `thread/start` params of the mode, with `cwd` the client's directory.
    fn thread_params(self) -> anyhow::Result<Value> {
        let cwd = std::env::current_dir().context("reading the current directory")?;
        let mut params = json!({"cwd": cwd});
        match self {
            Mode::Tool => {
                params["dynamicTools"] = json!([{
                    "name": "lookup",
                    "description": "Look a key up.",
                    "inputSchema": {"type": "object", "properties": {"key": {"type": "string"}}}
                }]);
            }
            Mode::Approval => {
                params["approvalPolicy"] = json!("untrusted");
                params["sandbox"] = json!("read-only");
            }
            _ => {}
        }
        Ok(params)
    }

    /// The result this mode answers the server request `method` with, if it handles it.
    fn answer(self, method: &str) -> Option<Value> {
        match (self, method) {
            (Mode::Tool, "item/tool/call") => Some(json!({
                "success": true,
                "contentItems": [{"type": "inputText", "text": "x is 42"}]
            })),
            (Mode::Approval, "item/commandExecution/requestApproval") => {
                Some(json!({"decision": "accept"}))
            }
            (Mode::Approval, "execCommandApproval") => Some(json!({"decision": "approved"})),
            _ => None,
        }
    }
}

/// A running `codex app-server` and the state of the session with it. Dropping it kills codex
/// if it still runs.
struct Codex {
    child: Child,
    stdin: Option<ChildStdin>,
    /// Codex's stdout lines, from a reader thread; disconnected at the end of the output.
    inbox: Receiver<String>,
    next_id: u64,
    mode: Mode,
    /// The turn ids whose `turn/started` arrived.
    started: HashSet<String>,
    /// The status of each completed turn, by turn id.
    completed: HashMap<String, String>,
}

impl Codex {
    /// Starts `$CODEX_PARITY_CODEX app-server` (or `codex app-server`) with piped stdio.
    fn spawn(mode: Mode) -> anyhow::Result<Codex> {
        let program = std::env::var_os("CODEX_PARITY_CODEX")
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| "codex".into());
        let mut child = Command::new(&program)
            .arg("app-server")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("cannot start {} app-server", program.to_string_lossy()))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("codex's stdout is not piped")?;
        let (tx, inbox) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Ok(Codex {
            child,
            stdin,
            inbox,
            next_id: 1,
            mode,
            started: HashSet::new(),
            completed: HashMap::new(),
        })
    }

    /// Writes one message as a line on codex's stdin.
    fn send(&mut self, message: &Value) -> anyhow::Result<()> {
        let stdin = self.stdin.as_mut().context("codex's stdin is closed")?;
        let mut line = serde_json::to_string(message)?;
        line.push('\n');
        stdin
            .write_all(line.as_bytes())
            .and_then(|()| stdin.flush())
            .context("cannot write to codex (has it exited?)")
    }

    /// The next message from codex, handled (server requests answered, turn events noted);
    /// `None` once `deadline` passed. The end of codex's output is an error.
    fn next(&mut self, deadline: Instant, waiting_for: &str) -> anyhow::Result<Option<Value>> {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            let line = match self.inbox.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => return Ok(None),
                Err(RecvTimeoutError::Disconnected) => {
                    bail!("codex closed its stdout while the client waited for {waiting_for}")
                }
            };
            match serde_json::from_str::<Value>(&line) {
                Ok(message) if message.is_object() => {
                    self.handle(&message)?;
                    return Ok(Some(message));
                }
                _ => eprintln!("record-test-client: not a JSON object from codex: {line:?}"),
            }
        }
    }

    /// The next message from codex, handled; an error at `deadline`.
    fn receive(&mut self, deadline: Instant, waiting_for: &str) -> anyhow::Result<Value> {
        self.next(deadline, waiting_for)?.ok_or_else(|| {
            anyhow!(
                "timed out after {} s waiting for {waiting_for}",
                WAIT.as_secs()
            )
        })
    }

    /// Answers a server request; notes `turn/started` and `turn/completed`.
    fn handle(&mut self, message: &Value) -> anyhow::Result<()> {
        let method = message["method"].as_str();
        if let (Some(id), Some(method)) = (message.get("id"), method) {
            let reply = match self.mode.answer(method) {
                Some(result) => json!({"id": id, "result": result}),
                None => json!({"id": id, "error": {
                    "code": -32601,
                    "message": "not handled by the test client"
                }}),
            };
            return self.send(&reply);
        }
        let turn = &message["params"]["turn"];
        let id = turn["id"].as_str().unwrap_or_default().to_string();
        match method {
            Some("turn/started") => {
                self.started.insert(id);
            }
            Some("turn/completed") => {
                let status = turn["status"].as_str().unwrap_or("(no status)");
                self.completed.insert(id, status.to_string());
            }
            _ => {}
        }
        Ok(())
    }

    /// Sends a request and returns its result; an error reply is an error.
    fn request(&mut self, method: &str, params: Value) -> anyhow::Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + WAIT;
        let waiting_for = format!("the reply to {method}");
        loop {
            let mut reply = self.receive(deadline, &waiting_for)?;
            if reply.get("method").is_some() || reply["id"] != json!(id) {
                continue;
            }
            if let Some(error) = reply.get("error") {
                bail!("{method} failed: {error}");
            }
            match reply.get_mut("result") {
                Some(result) => return Ok(result.take()),
                None => bail!("{method}: a reply with neither result nor error: {reply}"),
            }
        }
    }

    /// Handles messages until `done` holds of the session, for at most [`WAIT`].
    fn wait_until(
        &mut self,
        done: impl Fn(&Codex) -> bool,
        waiting_for: &str,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + WAIT;
        while !done(self) {
            self.receive(deadline, waiting_for)?;
        }
        Ok(())
    }

    /// Handles the messages that arrive in the next `pause` (answering server requests).
    fn pause(&mut self, pause: Duration, before: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + pause;
        let waiting_for = format!("the end of the pause before {before}");
        while self.next(deadline, &waiting_for)?.is_some() {}
        Ok(())
    }

    /// Closes codex's stdin and waits for it to exit, killing it after [`EXIT_WAIT`].
    fn close(&mut self) -> anyhow::Result<()> {
        drop(self.stdin.take());
        let deadline = Instant::now() + EXIT_WAIT;
        while Instant::now() < deadline {
            if self.child.try_wait()?.is_some() {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.kill()?;
        self.child.wait()?;
        Ok(())
    }
}

impl Drop for Codex {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// A one-text user input.
fn text_input(text: &str) -> Value {
    json!([{"type": "text", "text": text}])
}

/// The session of `mode`, from the start of codex to its exit.
fn run(mode: Mode) -> anyhow::Result<()> {
    let mut codex = Codex::spawn(mode)?;
    codex.request(
        "initialize",
        json!({
            "clientInfo": {"name": "record-test-client", "version": "1.0.0"},
            "capabilities": {"experimentalApi": true}
        }),
    )?;
    codex.send(&json!({"method": "initialized"}))?;
    let started = codex.request("thread/start", mode.thread_params()?)?;
    let thread_id = started["thread"]["id"]
        .as_str()
        .with_context(|| format!("thread/start: no result.thread.id in {started}"))?
        .to_string();
    let input = text_input(mode.turn_text());
    let turn = codex.request("turn/start", json!({"threadId": thread_id, "input": input}))?;
    let turn_id = turn["turn"]["id"]
        .as_str()
        .with_context(|| format!("turn/start: no result.turn.id in {turn}"))?
        .to_string();
    if matches!(mode, Mode::Steer | Mode::Interrupt) {
        let id = turn_id.clone();
        codex.wait_until(
            move |c| c.started.contains(&id) || c.completed.contains_key(&id),
            "turn/started",
        )?;
        if codex.completed.contains_key(&turn_id) {
            bail!("the turn completed before the {mode:?} could be sent");
        }
        if mode == Mode::Steer {
            codex.pause(PAUSE, "turn/steer")?;
            let input = text_input("also mention bananas");
            codex.request(
                "turn/steer",
                json!({"threadId": thread_id, "input": input, "expectedTurnId": turn_id}),
            )?;
        } else {
            codex.pause(PAUSE, "turn/interrupt")?;
            codex.request(
                "turn/interrupt",
                json!({"threadId": thread_id, "turnId": turn_id}),
            )?;
        }
    }
    let id = turn_id.clone();
    codex.wait_until(move |c| c.completed.contains_key(&id), "turn/completed")?;
    if let Some(status) = codex.completed.get(&turn_id) {
        println!("turn {status}");
    }
    codex.close()
}

/// Runs the mode named by the one argument; returns the exit status.
fn client() -> anyhow::Result<u8> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = Mode::ALL.iter().map(|(n, _)| *n).collect();
    let mode = match args.as_slice() {
        [name] => Mode::parse(name),
        _ => None,
    }
    .with_context(|| {
        let names = names.join(", ");
        format!("record-test-client: usage: record_client MODE (one of {names})")
    })?;
    if mode == Mode::ExitAtOnce {
        return Ok(0);
    }
    run(mode).with_context(|| format!("record-test-client ({})", args.join(" ")))?;
    if mode == Mode::Fail {
        eprintln!("record-test-client (fail): failing on purpose with status {FAIL_STATUS}");
        return Ok(FAIL_STATUS);
    }
    Ok(0)
}

fn main() -> ExitCode {
    match client() {
        Ok(status) => ExitCode::from(status),
        // One line, whatever `RUST_BACKTRACE` says: the recorder's tests read this stderr.
        Err(err) => {
            eprintln!("{err:#}");
            ExitCode::FAILURE
        }
    }
}
