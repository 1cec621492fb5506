//! The guard: a small process that outlives its owner by a moment, to clean up after it
//! when it is killed outright (SIGKILL, a CI job's timeout). An owner that runs a program of
//! the user's (`record`'s client, `client-check`'s COMMAND) in a process group of its own
//! tells the guard that group; the parent-death signal reaches only a direct child, so the
//! rest of the group (a `sh -c` client's own children, the relays and codex it started)
//! would otherwise live on.
//!
//! The guard runs as the hidden `codex-parity guard [--run-dir DIR]`, in a process group of
//! its own (a signal to the owner's group does not reach it), and reads lines on its stdin:
//! `watch PGID`, `release PGID` and `done`. When its stdin ends (the owner exited, however
//! it exited) it sends SIGKILL to every group still watched, removes the owner's run
//! directory once its lock is free (`crate::harness::run_dir`: only a dead run's, and only
//! one named `codex-parity-run-…`), and exits. An owner that ends normally says `done`
//! before its stdin ends (dropping its [`Guard`]): it removes its own directory, so the
//! guard kills what is still watched and exits at once, without waiting for that
//! directory's lock (which the owner holds while it waits for the guard).

use std::collections::BTreeSet;
use std::io::{BufRead, Write};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;

use crate::harness::run_dir;

/// The hidden subcommand that runs [`serve`].
pub const GUARD_COMMAND: &str = "guard";

/// How long the guard waits for the owner's run directory to be free to remove.
const REMOVE_WAIT: Duration = Duration::from_secs(5);

/// The owner's handle on its guard; dropping it ends the guard (after it killed what is
/// still watched).
#[derive(Debug)]
pub struct Guard {
    stdin: Option<ChildStdin>,
    child: Child,
}

impl Guard {
    /// Starts `exe guard`, given this process's run directory when it has one (the
    /// directory `tempfile` makes its directories in, when that is a run directory).
    pub fn start(exe: &Path) -> anyhow::Result<Guard> {
        let mut command = Command::new(exe);
        command.arg(GUARD_COMMAND);
        let temp = tempfile::env::temp_dir();
        if temp
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(run_dir::PREFIX))
        {
            command.arg("--run-dir").arg(&temp);
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .with_context(|| format!("starting the guard {} {GUARD_COMMAND}", exe.display()))?;
        let stdin = child.stdin.take();
        Ok(Guard { stdin, child })
    }

    /// Has the guard kill process group `pgid` if this process dies before releasing it.
    pub fn watch(&mut self, pgid: u32) -> anyhow::Result<()> {
        self.say(&format!("watch {pgid}"))
            .context("telling the guard a process group to watch")
    }

    /// The group `pgid` is gone (or no longer the guard's business).
    pub fn release(&mut self, pgid: u32) {
        let _ = self.say(&format!("release {pgid}"));
    }

    fn say(&mut self, line: &str) -> std::io::Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| std::io::Error::other("the guard's stdin is closed"))?;
        writeln!(stdin, "{line}")?;
        stdin.flush()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Alive and ending on its own: the run directory is this process's business.
        let _ = self.say("done");
        self.stdin = None;
        // The guard exits right after its stdin ends: reap it rather than leave a zombie.
        let deadline = Instant::now() + Duration::from_secs(2);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The guard's main loop (see the module documentation): returns when its stdin ends, after
/// cleaning up what its owner left.
pub fn serve(run_dir: Option<PathBuf>) -> i32 {
    let mut groups = BTreeSet::new();
    let mut owner_done = false;
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let mut words = line.split_whitespace();
        let (verb, pgid) = (
            words.next(),
            words.next().and_then(|p| p.parse::<u32>().ok()),
        );
        match (verb, pgid) {
            (Some("watch"), Some(pgid)) => {
                groups.insert(pgid);
            }
            (Some("release"), Some(pgid)) => {
                groups.remove(&pgid);
            }
            (Some("done"), None) => owner_done = true,
            _ => {}
        }
    }
    for pgid in &groups {
        if let Some(pid) = rustix::process::Pid::from_raw(*pgid as i32) {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    }
    if !owner_done
        && let Some(dir) = run_dir
        && dir
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(run_dir::PREFIX))
    {
        run_dir::remove_when_abandoned(&dir, REMOVE_WAIT);
    }
    0
}
