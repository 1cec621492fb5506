//! What the driver's two kinds of child process (`codex app-server`, the sidecar) share: the
//! last lines of their stderr, kept for error messages, and waiting for the exit or killing.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStderr};
use tokio::sync::oneshot;

use crate::lock;

/// The last lines a child process wrote to stderr.
#[derive(Debug)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
    max: usize,
}

impl StderrTail {
    /// A tail that keeps at most `max` lines.
    pub(crate) fn new(max: usize) -> StderrTail {
        StderrTail {
            lines: Mutex::new(VecDeque::new()),
            max,
        }
    }

    /// Reads `stderr` to its end, keeping the last lines; `each` sees every line first.
    pub(crate) async fn read(&self, stderr: ChildStderr, each: impl Fn(&str)) {
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
    pub(crate) fn text(&self) -> String {
        lock(&self.lines)
            .iter()
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Waits for `child` to end, or kills it (SIGKILL to its pid) when `kill` fires or its
/// sender is dropped. Returns the exit status as text, and whether the child ended on its
/// own (not killed here).
pub(crate) async fn wait_or_kill(child: &mut Child, kill: oneshot::Receiver<()>) -> (String, bool) {
    let (status, on_its_own) = tokio::select! {
        biased;
        status = child.wait() => (status, true),
        _ = kill => {
            let _ = child.start_kill();
            (child.wait().await, false)
        }
    };
    let text = match status {
        Ok(s) => s.to_string(),
        Err(e) => format!("wait failed: {e}"),
    };
    (text, on_its_own)
}
