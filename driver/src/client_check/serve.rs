//! The mock app-server process: what the client's `codex` runs during `client-check` (the
//! hidden `codex-parity client-check-serve DIR ARGS…`). `codex app-server` (global flags
//! before it allowed) serves one connection of the check's [`Script`] (`DIR/script.json`)
//! on stdio through a [`Mock`]: launch N takes connection N, cycling when a client starts
//! more app-servers than the session has (a test suite starting one per test). `codex
//! --version` prints the session's version; anything else (another command, an app-server
//! subcommand, another listener) is refused with a message and claims no launch.
//!
//! Each launch's record is `DIR/served/N.json` ([`crate::client_check::served`]), saved
//! after every message. The mock exits when the client closes its stdin, at an `exit`
//! step, or at the script's deadline whatever it is doing (a watchdog thread).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Context;
use serde_json::Value;

use crate::client_check::mock::Mock;
use crate::client_check::script::{Reply, Script, Step};
use crate::client_check::served::{self, Served};

/// The hidden subcommand the shim runs.
pub const SERVE_COMMAND: &str = "client-check-serve";

/// The subcommands of `codex app-server` the mock does not serve.
const SUBCOMMANDS: [&str; 5] = [
    "daemon",
    "proxy",
    "generate-ts",
    "generate-json-schema",
    "help",
];

/// The check's script, in its directory.
pub fn script_path(dir: &Path) -> PathBuf {
    dir.join("script.json")
}

/// Milliseconds since the epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Serves one launch (see the module docs); returns the exit status.
pub fn serve(dir: &Path, args: Vec<OsString>) -> anyhow::Result<i32> {
    let script = Script::read(&script_path(dir))?;
    let left = Duration::from_millis(script.deadline_ms.saturating_sub(now_ms()));
    std::thread::spawn(move || {
        std::thread::sleep(left);
        eprintln!("codex-parity client-check: the mock app-server's deadline passed");
        std::process::exit(1);
    });
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if let Err(why) = app_server_args(&args) {
        if args.iter().any(|a| a == "--version" || a == "-V") {
            println!("codex-cli {}", script.codex_version);
            return Ok(0);
        }
        eprintln!(
            "codex-parity client-check: this codex serves the session from {} over stdio \
             only: {why}",
            script.origin
        );
        return Ok(2);
    }
    let (launch, path) = claim(dir)?;
    let connection = (launch - 1) % script.connections.len().max(1);
    let steps: &[Step] = script
        .connections
        .get(connection)
        .map_or(&[], Vec::as_slice);
    let served = Served {
        launch,
        connection: connection + 1,
        pid: std::process::id(),
        pgid: rustix::process::getpgrp().as_raw_nonzero().get() as u32,
        args,
        ..Served::default()
    };
    let save_to = path.clone();
    let mut mock = Mock::new(
        steps,
        thread_ids(&script),
        Duration::from_millis(script.gap_ms),
        std::io::stdout().lock(),
        served,
        Box::new(move |s: &Served| {
            let _ = served::save(&save_to, s);
        }),
    );
    let code = mock.run(&read_lines(), Instant::now() + left);
    if code != 0
        && mock
            .served
            .ended
            .as_deref()
            .is_some_and(|e| e.starts_with("exited"))
    {
        eprintln!("codex-parity client-check: the app-server exits mid-turn (exit-mid-turn)");
    }
    served::save(&path, &mock.served)?;
    Ok(code)
}

/// `Ok` when `args` start an app-server on stdio, else why not.
fn app_server_args(args: &[String]) -> Result<(), String> {
    let Some(at) = args.iter().position(|a| a == "app-server") else {
        return Err(format!(
            "`codex {}` is not `codex app-server`",
            args.join(" ")
        ));
    };
    let after = &args[at + 1..];
    if let Some(sub) = after.iter().find(|a| SUBCOMMANDS.contains(&a.as_str())) {
        return Err(format!(
            "`codex app-server {sub}` is not part of the session"
        ));
    }
    let listen = after
        .iter()
        .position(|a| a == "--listen")
        .and_then(|i| after.get(i + 1))
        .map(String::as_str)
        .or_else(|| after.iter().find_map(|a| a.strip_prefix("--listen=")));
    match listen {
        Some(url) if url != "stdio://" => Err(format!("--listen {url} is not served")),
        _ => Ok(()),
    }
}

/// Takes the next launch number: the first `served/N.json` that did not exist.
fn claim(dir: &Path) -> anyhow::Result<(usize, PathBuf)> {
    let folder = served::served_dir(dir);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for n in 1.. {
        let path = folder.join(format!("{n}.json"));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => return Ok((n, path)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("creating {}", path.display())),
        }
    }
    anyhow::bail!("no launch number left")
}

/// Stdin's lines, read on a thread of their own (`None` at the end).
fn read_lines() -> mpsc::Receiver<Option<String>> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        let _ = tx.send(None);
    });
    rx
}

/// Every thread id the session serves, on any connection.
fn thread_ids(script: &Script) -> BTreeSet<String> {
    fn walk(value: &Value, key: Option<&str>, out: &mut BTreeSet<String>) {
        match value {
            Value::Object(obj) => {
                for (k, v) in obj {
                    if k == "thread"
                        && let Some(id) = v.get("id").and_then(Value::as_str)
                    {
                        out.insert(id.to_string());
                    }
                    walk(v, Some(k), out);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, key, out)),
            Value::String(s) if key == Some("threadId") => {
                out.insert(s.clone());
            }
            _ => {}
        }
    }
    let mut out = BTreeSet::new();
    for step in script.connections.iter().flatten() {
        match step {
            Step::Notify { params, .. } | Step::Ask { params, .. } => walk(params, None, &mut out),
            Step::Answer {
                reply: Reply::Result(result),
                ..
            } => walk(result, None, &mut out),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_an_app_server_on_stdio_is_served() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert!(app_server_args(&args("app-server --disable plugins")).is_ok());
        assert!(app_server_args(&args("-c k=v app-server --listen stdio://")).is_ok());
        let schema = app_server_args(&args("app-server generate-json-schema --out x"));
        assert!(schema.unwrap_err().contains("generate-json-schema"));
        assert!(app_server_args(&args("app-server --listen ws://127.0.0.1:0")).is_err());
        assert!(app_server_args(&args("exec --json hi")).is_err());
    }

    #[test]
    fn thread_ids_are_read_from_every_connection() {
        let script = Script {
            connections: vec![
                vec![Step::Answer {
                    method: "thread/start".into(),
                    reply: Reply::Result(json!({"thread": {"id": "t1"}})),
                    thread: None,
                }],
                vec![Step::Notify {
                    method: "turn/started".into(),
                    params: json!({"threadId": "t2"}),
                    extra: Default::default(),
                }],
            ],
            ..Script::default()
        };
        assert_eq!(
            thread_ids(&script).into_iter().collect::<Vec<_>>(),
            vec!["t1".to_string(), "t2".to_string()]
        );
    }
}
