//! The mock codex process: what the client's `codex` runs during `client-check` (the hidden
//! `codex-parity client-check-serve DIR ARGS…`), serving the check's [`Script`]
//! (`DIR/script.json`):
//!
//! - `codex app-server` (global flags before it allowed) serves one connection of the
//!   session on stdio through a [`Mock`]: launch N takes connection N, cycling when a
//!   client starts more app-servers than the session has (a test suite starting one per
//!   test);
//! - `codex app-server --listen ws://HOST:PORT` listens there and serves each connection
//!   the next app-server connection of the session
//!   ([`crate::client_check::ws_serve`]): what `client-check --listen` starts for a
//!   client of a listener, and what a client that starts its own listener gets;
//! - `codex exec …` plays the next exec run ([`crate::client_check::exec_serve`]);
//! - `codex --version` prints the session's version.
//!
//! Anything else (another command, an app-server subcommand, a kind of session the script
//! does not hold) is refused with a message, exit 2, and recorded
//! (`DIR/served/refused-N.json`) for the row to name. Each launch's record is saved after
//! every message. The mock exits when the client closes its stdin, at an `exit` step, or
//! at the script's deadline whatever it is doing (a watchdog thread).

use std::ffi::OsString;
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::client_check::exec_args::ExecArgs;
use crate::client_check::mock::Mock;
use crate::client_check::script::{MockStep, Script};
use crate::client_check::served::{self, Served, Via};
use crate::client_check::{exec_serve, ws_serve};

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
        eprintln!("codex-parity client-check: the mock codex's deadline passed");
        std::process::exit(1);
    });
    let deadline = Instant::now() + left;
    let args: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let refuse = |why: String| -> anyhow::Result<i32> {
        eprintln!(
            "codex-parity client-check: this codex serves the session from {}: {why}",
            script.origin
        );
        served::refuse(dir, &args, &why)?;
        Ok(2)
    };
    if args.iter().any(|a| a == "--help" || a == "-h") {
        return refuse(format!(
            "`codex {}`: the mock has no help to print; ask the real codex",
            args.join(" ")
        ));
    }
    if ExecArgs::of(&args).is_some() {
        return match exec_serve::serve(dir, &script, &args)? {
            Some(code) => Ok(code),
            None => refuse(
                "`codex exec` is not part of it: the session holds app-server connections \
                 only (serve a session of exec runs: a recording of your exec client, an \
                 exec scenario file or an exec transcript)"
                    .into(),
            ),
        };
    }
    let listen = match app_server_args(&args) {
        Ok(listen) => listen,
        Err(_) if args.iter().any(|a| a == "--version" || a == "-V") => {
            println!("codex-cli {}", script.codex_version);
            return Ok(0);
        }
        Err(why) => return refuse(why),
    };
    if script.connections.is_empty() {
        return refuse(
            "`codex app-server` is not part of it: the session holds codex exec runs only".into(),
        );
    }
    if let Some(url) = listen {
        return ws_serve::listen(dir, &script, &args, &url, deadline);
    }
    let (served, path) = served::start(dir, Via::Stdio, script.connections.len(), &args)?;
    let steps: &[MockStep] = &script.connections[served.connection - 1];
    let save_to = path.clone();
    let mut mock = Mock::new(
        steps,
        script.thread_ids(),
        Duration::from_millis(script.gap_ms),
        std::io::stdout().lock(),
        served,
        Box::new(move |s: &Served| {
            let _ = served::save(&save_to, s);
        }),
    );
    let code = mock.run(&read_lines(), deadline);
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

/// `Ok` when `args` start an app-server, with the `ws://` URL it listens at (`None`:
/// stdio), else why not.
fn app_server_args(args: &[String]) -> Result<Option<String>, String> {
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
        None | Some("stdio://") => Ok(None),
        Some(url) if url.starts_with("ws://") => Ok(Some(url.to_string())),
        Some(url) => Err(format!(
            "--listen {url} is not served (stdio and ws:// are)"
        )),
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_app_server_on_stdio_or_a_websocket_listener_is_served() {
        let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        assert_eq!(
            app_server_args(&args("app-server --disable plugins")),
            Ok(None)
        );
        assert_eq!(
            app_server_args(&args("-c k=v app-server --listen stdio://")),
            Ok(None)
        );
        let schema = app_server_args(&args("app-server generate-json-schema --out x"));
        assert!(schema.unwrap_err().contains("generate-json-schema"));
        assert_eq!(
            app_server_args(&args("app-server --listen ws://127.0.0.1:0")),
            Ok(Some("ws://127.0.0.1:0".into()))
        );
        assert!(app_server_args(&args("app-server --listen unix:///tmp/s")).is_err());
        assert!(app_server_args(&args("exec --json hi")).is_err());
    }
}
