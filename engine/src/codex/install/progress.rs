//! How an install reports what it does: the [`Progress`] trait, a stderr reporter with a status
//! line while npm runs and a tarball unpacks, and a silent one.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::lock;

/// Receives human-readable progress messages.
pub trait Progress: Send + Sync {
    /// A message that should stay visible (one line).
    fn message(&self, msg: &str);

    /// A transient status that replaces the previous one (download or unpack progress). Called
    /// several times a second; implementations decide how often to show it. The default shows every
    /// update as a message.
    fn update(&self, msg: &str) {
        self.message(msg);
    }
}

/// Interval between status lines when stderr is not a terminal.
pub(super) const STATUS_LINE_INTERVAL: Duration = Duration::from_secs(5);

/// Writes progress to stderr: `\r`-updated status line on a terminal, otherwise one line every few
/// seconds.
#[derive(Debug)]
pub struct StderrProgress {
    /// Whether stderr is a terminal.
    pub(super) tty: bool,
    /// Mutable display state.
    pub(super) state: Mutex<StderrState>,
}

/// What [`StderrProgress`] has shown so far.
#[derive(Debug, Default)]
pub(super) struct StderrState {
    /// A `\r` status line is on screen and needs clearing before the next message.
    pub(super) status_shown: bool,
    /// When the last non-terminal status line was printed.
    pub(super) last_line: Option<Instant>,
}

impl StderrProgress {
    /// A reporter that detects whether stderr is a terminal.
    pub fn new() -> Self {
        Self {
            tty: std::io::stderr().is_terminal(),
            state: Mutex::new(StderrState::default()),
        }
    }
}

impl Default for StderrProgress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress for StderrProgress {
    fn message(&self, msg: &str) {
        let mut state = lock(&self.state);
        let mut err = std::io::stderr().lock();
        if state.status_shown {
            let _ = write!(err, "\r\x1b[K");
            state.status_shown = false;
        }
        let _ = writeln!(err, "{msg}");
        state.last_line = None;
    }

    fn update(&self, msg: &str) {
        let mut state = lock(&self.state);
        let mut err = std::io::stderr().lock();
        if self.tty {
            let _ = write!(err, "\r\x1b[K{msg}");
            let _ = err.flush();
            state.status_shown = true;
        } else if state
            .last_line
            .is_none_or(|t| t.elapsed() >= STATUS_LINE_INTERVAL)
        {
            let _ = writeln!(err, "{msg}");
            state.last_line = Some(Instant::now());
        }
    }
}

/// Discards all progress.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoProgress;

impl Progress for NoProgress {
    fn message(&self, _msg: &str) {}
}
