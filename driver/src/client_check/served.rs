//! What one launch of the mock app-server saw ([`Served`]), written to `DIR/served/N.json`
//! after every message so that a mock killed by the check's time limit still leaves it, and
//! read back by the checker.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// What one launch of the mock saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// Which launch it was, from 1.
    pub launch: usize,
    /// Which of the session's connections it served, from 1.
    pub connection: usize,
    /// The mock's process id and process group.
    pub pid: u32,
    /// Its process group.
    pub pgid: u32,
    /// The arguments after `codex`.
    pub args: Vec<String>,
    /// How many messages it sent.
    pub sent: usize,
    /// The methods the client requested, in order.
    pub requests: Vec<String>,
    /// Client requests the session has no answer for.
    pub unmatched: Vec<String>,
    /// Client requests refused because `initialize` had not been answered yet.
    pub before_initialize: Vec<String>,
    /// Server requests sent and never answered.
    pub unanswered: Vec<String>,
    /// Answers to server requests that differ from the recorded ones.
    pub answers_differ: Vec<String>,
    /// Recorded answers passed because the client never asked for them.
    pub not_asked: Vec<String>,
    /// Client requests naming a thread the session never served.
    pub foreign_threads: Vec<String>,
    /// Lines from the client that were not JSON-RPC.
    pub malformed: Vec<String>,
    /// How many of the session's steps were not reached yet.
    pub not_reached: usize,
    /// The first step not reached yet.
    pub next: Option<String>,
    /// How it ended (`None` while it runs).
    pub ended: Option<String>,
}

/// The launches' records, in `DIR/served/`.
pub fn served_dir(dir: &Path) -> PathBuf {
    dir.join("served")
}

/// Every launch's record under `dir`, in launch order; a record that cannot be read is an
/// error naming it.
pub fn read_all(dir: &Path) -> anyhow::Result<Vec<Served>> {
    let folder = served_dir(dir);
    let entries = match std::fs::read_dir(&folder) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", folder.display())),
    };
    let mut all = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        if text.is_empty() {
            // Claimed, and killed before its first save.
            continue;
        }
        let served: Served = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a record of the mock", path.display()))?;
        all.push(served);
    }
    all.sort_by_key(|s| s.launch);
    Ok(all)
}

/// Writes `served` to `path` (through a temporary file, so a reader never sees half).
pub fn save(path: &Path, served: &Served) -> anyhow::Result<()> {
    let tmp = path.with_extension("tmp");
    let text = serde_json::to_string_pretty(served).context("serialising what was served")?;
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_read_back_in_launch_order_and_a_bad_one_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(served_dir(dir.path())).unwrap();
        for n in [2, 1] {
            let s = Served {
                launch: n,
                ..Served::default()
            };
            save(&served_dir(dir.path()).join(format!("{n}.json")), &s).unwrap();
        }
        std::fs::write(served_dir(dir.path()).join("3.json"), "").unwrap();
        let all = read_all(dir.path()).unwrap();
        assert_eq!(all.iter().map(|s| s.launch).collect::<Vec<_>>(), vec![1, 2]);
        std::fs::write(served_dir(dir.path()).join("4.json"), "{").unwrap();
        let err = format!("{:#}", read_all(dir.path()).unwrap_err());
        assert!(err.contains("4.json is not a record of the mock"), "{err}");
    }
}
