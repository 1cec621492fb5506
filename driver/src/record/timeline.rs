//! The client side of a recording read back ([`read`]): each relay log of an app-server as
//! one [`AppSession`] of JSON-RPC messages with their direction and time, each of an `exec`
//! as one [`ExecSession`] (its arguments, stdin, event stream and exit), in the order the
//! client started them, and the other codex commands it ran.

use std::path::{Path, PathBuf};

use crate::app_server::message::Message;
use crate::record::exchange::Micros;
use crate::record::relay::{self, LogEntry};

/// One JSON-RPC message the relay passed, parsed.
#[derive(Debug, Clone)]
pub struct Rpc {
    /// When the relay read it.
    pub at: Micros,
    /// Sent by the client (else by codex).
    pub from_client: bool,
    /// The message.
    pub message: Message,
}

/// One `codex app-server` the client started, and what went through it.
#[derive(Debug, Clone, Default)]
pub struct AppSession {
    /// When the client started it.
    pub started: Micros,
    /// The arguments after `codex`.
    pub args: Vec<String>,
    /// The client's working directory.
    pub cwd: PathBuf,
    /// The messages, in the order the relay read them.
    pub rpcs: Vec<Rpc>,
    /// Codex's exit status: `None` while it ran (the log has no exit line), `Some(None)`
    /// when a signal ended it.
    pub exit: Option<Option<i32>>,
    /// Lines that were not JSON-RPC (each with why), skipped.
    pub unreadable: Vec<String>,
    /// The relay's process id.
    pub pid: u32,
}

/// One `codex exec` the client ran, and what went through it.
#[derive(Debug, Clone, Default)]
pub struct ExecSession {
    /// When the client started it.
    pub started: Micros,
    /// The arguments after `codex` (`exec` first).
    pub args: Vec<String>,
    /// The client's working directory.
    pub cwd: PathBuf,
    /// What the client wrote to its stdin (`None`: not logged, stdin never closed).
    pub stdin: Option<String>,
    /// The event stream, line by line, with when each line came.
    pub lines: Vec<(Micros, String)>,
    /// The files its arguments named: (flag, path as given, content).
    pub files: Vec<(String, String, Option<String>)>,
    /// Codex's exit status: `None` while it ran, `Some(None)` when a signal ended it.
    pub exit: Option<Option<i32>>,
    /// When it exited.
    pub ended: Micros,
}

/// Everything the client ran as codex.
#[derive(Debug, Clone, Default)]
pub struct Sessions {
    /// The app-server sessions, in the order they started.
    pub app: Vec<AppSession>,
    /// The `exec` runs, in the order they started.
    pub exec: Vec<ExecSession>,
    /// The other codex commands it ran (not recorded), each as its arguments.
    pub others: Vec<Vec<String>>,
}

impl Sessions {
    /// Whether the client started no app-server and ran no `exec`.
    pub fn is_empty(&self) -> bool {
        self.app.is_empty() && self.exec.is_empty()
    }
}

/// What the client ran as codex, read from the logs under `logs`.
pub fn read(logs: &Path) -> anyhow::Result<Sessions> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(logs) {
        Ok(dir) => dir.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let mut all = Sessions::default();
    for path in paths {
        let entries = relay::read_log(&path)?;
        match entries.first() {
            Some(LogEntry::Start {
                relayed: false,
                args,
                ..
            }) => all.others.push(args.clone()),
            Some(LogEntry::Start { exec: true, .. }) => all.exec.push(exec_session(entries)),
            Some(LogEntry::Start { .. }) => all.app.push(session(entries)),
            _ => {}
        }
    }
    all.app.sort_by_key(|s| s.started);
    all.exec.sort_by_key(|s| s.started);
    Ok(all)
}

/// One relay log of `exec` as a session.
pub fn exec_session(entries: Vec<LogEntry>) -> ExecSession {
    let mut s = ExecSession::default();
    for entry in entries {
        match entry {
            LogEntry::Start { at, args, cwd, .. } => (s.started, s.args, s.cwd) = (at, args, cwd),
            LogEntry::Line(line) => s.lines.push((line.at, line.text)),
            LogEntry::Stdin { text, .. } => s.stdin = Some(text),
            LogEntry::File {
                flag, path, text, ..
            } => s.files.push((flag, path, text)),
            LogEntry::Exit { at, code } => (s.exit, s.ended) = (Some(code), at),
        }
    }
    s
}

/// One relay log as a session.
pub fn session(entries: Vec<LogEntry>) -> AppSession {
    let mut s = AppSession::default();
    for entry in entries {
        match entry {
            LogEntry::Start {
                at, args, cwd, pid, ..
            } => {
                (s.started, s.args, s.cwd, s.pid) = (at, args, cwd, pid);
            }
            LogEntry::Line(line) => match Message::parse(&line.text) {
                Ok(message) => s.rpcs.push(Rpc {
                    at: line.at,
                    from_client: line.from_client,
                    message,
                }),
                Err(e) => {
                    let who = if line.from_client {
                        "the client"
                    } else {
                        "codex"
                    };
                    s.unreadable
                        .push(format!("a line from {who} that is not JSON-RPC ({e})"));
                }
            },
            LogEntry::Exit { code, .. } => s.exit = Some(code),
            LogEntry::Stdin { .. } | LogEntry::File { .. } => {}
        }
    }
    s
}
