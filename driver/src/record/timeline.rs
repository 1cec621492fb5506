//! The client side of a recording read back: each relay log as one [`AppSession`] of
//! JSON-RPC messages with their direction and time, in the order the client started them.

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

/// What the client ran as codex, read from the logs under `logs`: the app-server sessions
/// in the order they started, and the other codex commands it ran (not recorded).
pub fn read(logs: &Path) -> anyhow::Result<(Vec<AppSession>, Vec<Vec<String>>)> {
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(logs) {
        Ok(dir) => dir.flatten().map(|e| e.path()).collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    let (mut sessions, mut others) = (Vec::new(), Vec::new());
    for path in paths {
        let entries = relay::read_log(&path)?;
        match entries.first() {
            Some(LogEntry::Start {
                relayed: false,
                args,
                ..
            }) => others.push(args.clone()),
            Some(LogEntry::Start { .. }) => sessions.push(session(entries)),
            _ => {}
        }
    }
    sessions.sort_by_key(|s| s.started);
    Ok((sessions, others))
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
        }
    }
    s
}
