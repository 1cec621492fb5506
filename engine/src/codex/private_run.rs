//! Runs a codex command that only prints (`--help`, `features list`, `completion fish`) the
//! way every reader of a binary's card does: an empty home of its own (`HOME` and
//! `CODEX_HOME`, also its working directory), no environment but `PATH`, no stdin, a time
//! limit, and a process group of its own that is killed after it, so a binary that hangs or
//! leaves a child behind leaves nothing.

use std::process::Output;
use std::time::Duration;

use anyhow::Context;

use crate::codex::binaries::CodexBinary;

/// `binary ARGS…` run as the module documentation says; its output whatever its exit
/// status, or an error naming `binary` and the command when it cannot run or takes over
/// `limit`.
pub async fn output(
    binary: &CodexBinary,
    args: &[&str],
    limit: Duration,
) -> anyhow::Result<Output> {
    let shown = format!("{} {}", binary.label(), args.join(" "));
    let home = tempfile::tempdir().with_context(|| format!("creating a home for {shown}"))?;
    let mut cmd = tokio::process::Command::new(&binary.path);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .current_dir(home.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let child = cmd.spawn().with_context(|| format!("cannot run {shown}"))?;
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let output = tokio::time::timeout(limit, child.wait_with_output()).await;
    if let Some(group) = group {
        // What it started goes with it, whether it answered or hung.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    output
        .map_err(|_| anyhow::anyhow!("{shown} took over {limit:?}"))?
        .with_context(|| format!("cannot run {shown}"))
}
