//! What the driver's two kinds of child process (`codex app-server`, the sidecar) share: the
//! last lines of their stderr, kept for error messages, and waiting for the exit or killing.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::Child;
use tokio::sync::oneshot;

use crate::lock;

/// The last lines a child process wrote to stderr.
#[derive(Debug)]
pub struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    max: usize,
}

impl StderrTail {
    /// A tail that keeps at most `max` lines.
    pub fn new(max: usize) -> StderrTail {
        StderrTail {
            lines: Mutex::new(VecDeque::new()),
            max,
        }
    }

    /// Reads `stderr` (or any stream of lines) to its end, keeping the last lines; `each`
    /// sees every line first.
    pub async fn read(&self, stderr: impl AsyncRead + Unpin, each: impl Fn(&str)) {
        let mut lines = BufReader::new(stderr).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            each(&line);
            let mut tail = lock(&self.lines);
            if tail.len() == self.max {
                tail.pop_front();
            }
            tail.push_back(line);
        }
    }

    /// The kept lines, one per line.
    pub fn text(&self) -> String {
        lock(&self.lines)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// How a child process ended, kept typed (its code and signal stay readable); shown as
/// the standard library shows an exit status (`exit status: 0`, `signal: 9 (SIGKILL)`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChildExit {
    /// The process ended with this status.
    Exited(std::process::ExitStatus),
    /// Waiting for it failed (the status is unknown).
    WaitFailed(String),
    /// No process: the connection (an in-memory or socket transport) closed.
    Closed,
}

impl ChildExit {
    /// The exit code, when the process exited normally (not by a signal).
    pub fn code(&self) -> Option<i32> {
        match self {
            ChildExit::Exited(status) => status.code(),
            ChildExit::WaitFailed(_) | ChildExit::Closed => None,
        }
    }

    /// Whether the process exited with code 0.
    pub fn success(&self) -> bool {
        matches!(self, ChildExit::Exited(status) if status.success())
    }
}

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChildExit::Exited(status) => write!(f, "{status}"),
            ChildExit::WaitFailed(e) => write!(f, "wait failed: {e}"),
            ChildExit::Closed => write!(f, "the connection closed"),
        }
    }
}

/// Waits for `child` to end, or kills it (SIGKILL to its pid) when `kill` fires or its
/// sender is dropped. Returns how it ended, and whether the child ended on its own (not
/// killed here).
pub(crate) async fn wait_or_kill(
    child: &mut Child,
    kill: oneshot::Receiver<()>,
) -> (ChildExit, bool) {
    let (status, on_its_own) = tokio::select! {
        biased;
        status = child.wait() => (status, true),
        _ = kill => {
            let _ = child.start_kill();
            (child.wait().await, false)
        }
    };
    let exit = match status {
        Ok(s) => ChildExit::Exited(s),
        Err(e) => ChildExit::WaitFailed(e.to_string()),
    };
    (exit, on_its_own)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn child_exit_keeps_code_and_signal() {
        let ended = |script: &str| {
            let mut child = tokio::process::Command::new("sh")
                .args(["-c", script])
                .spawn()
                .unwrap();
            async move {
                let (_keep, kill) = oneshot::channel::<()>();
                wait_or_kill(&mut child, kill).await
            }
        };
        let (exit, on_its_own) = ended("exit 3").await;
        assert!(on_its_own);
        assert_eq!((exit.code(), exit.success()), (Some(3), false));
        assert_eq!(exit.to_string(), "exit status: 3");
        let (exit, _) = ended("exit 0").await;
        assert!(exit.success());
        let (exit, _) = ended("kill -9 $$").await;
        assert_eq!(exit.code(), None);
        assert_eq!(exit.to_string(), "signal: 9 (SIGKILL)");
    }
}
