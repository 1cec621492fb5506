//! The app-server client against fake server processes (small shell scripts), never as
//! evidence of parity: what only a process shows (crashes, hangs, a binary that cannot run,
//! no process left behind). The protocol itself (correlation, errors, server requests) is
//! unit-tested over an in-memory transport in `app_server/client.rs`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use codex_parity::app_server::{AppServer, AppServerCommand, CallError};
use serde_json::json;

/// Writes an executable fake `codex` whose `app-server` runs `body` (bash).
fn fake(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("codex");
    std::fs::write(&path, format!("#!/bin/bash\nshift\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn command(program: PathBuf, dir: &Path) -> AppServerCommand {
    AppServerCommand {
        program,
        args: vec![],
        env: vec![("PATH".into(), std::env::var_os("PATH").unwrap_or_default())],
        cwd: dir.to_path_buf(),
        label: "codex-fake".into(),
    }
}

fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat.contains(") Z "),
        Err(_) => false,
    }
}

#[tokio::test]
async fn a_codex_that_exits_gives_an_error_with_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake(dir.path(), "echo 'fatal: config is broken' >&2; exit 7");
    let app = AppServer::spawn(&command(program, dir.path())).unwrap();
    let started = std::time::Instant::now();
    let err = app.call("initialize", json!({})).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
    let text = err.to_string();
    assert!(matches!(err, CallError::Exited { .. }), "{text}");
    assert!(
        text.contains("initialize") && text.contains("config is broken") && text.contains('7'),
        "{text}"
    );
}

#[tokio::test]
async fn a_codex_that_hangs_times_out_with_method_timeout_and_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake(dir.path(), "echo 'warming up' >&2; exec sleep 60");
    let app = AppServer::spawn(&command(program, dir.path())).unwrap();
    let err = app
        .call_with_timeout("initialize", json!({}), Duration::from_millis(300))
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, CallError::Timeout { .. }), "{text}");
    assert!(
        text.contains("initialize") && text.contains("300ms") && text.contains("warming up"),
        "{text}"
    );
}

#[tokio::test]
async fn a_binary_that_is_not_executable_is_named_in_the_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("codex");
    std::fs::write(&path, "not a program").unwrap();
    let err = AppServer::spawn(&command(path.clone(), dir.path()))
        .err()
        .expect("spawn must fail");
    assert!(
        err.to_string().contains(&path.display().to_string()),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_client_kills_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake(dir.path(), "exec sleep 60");
    let app = AppServer::spawn(&command(program, dir.path())).unwrap();
    let pid = app.pid().unwrap();
    assert!(alive(pid));
    drop(app);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while alive(pid) && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!alive(pid), "process {pid} survived the client");
}

#[tokio::test]
async fn shutdown_closes_stdin_and_reports_the_exit() {
    let dir = tempfile::tempdir().unwrap();
    let program = fake(dir.path(), "cat > /dev/null; exit 0");
    let app = AppServer::spawn(&command(program, dir.path())).unwrap();
    let status = app.shutdown(Duration::from_secs(5)).await;
    assert!(status.contains("exit status: 0"), "{status}");
}
