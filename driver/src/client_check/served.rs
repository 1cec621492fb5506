//! What one launch of the mock codex saw ([`Served`]), written after every message so that
//! a mock killed by the check's time limit still leaves it, and read back by the checker:
//! `DIR/served/N.json` for app-server connection N (on stdio or the listener),
//! `exec-N.json` for the N-th `codex exec`, `refused-N.json` for a codex command the
//! session does not serve.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// How the client reached a launch of the mock.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// `codex app-server` on stdio.
    #[default]
    Stdio,
    /// A connection to the mock's WebSocket listener.
    WebSocket,
    /// `codex exec`.
    Exec,
    /// A codex command the session does not serve: refused with a message.
    Refused,
}

impl Via {
    /// The prefix of its records' file names.
    fn prefix(self) -> &'static str {
        match self {
            Via::Stdio | Via::WebSocket => "",
            Via::Exec => "exec-",
            Via::Refused => "refused-",
        }
    }

    /// Whether it is an app-server connection (on stdio or the listener).
    pub fn app_server(self) -> bool {
        matches!(self, Via::Stdio | Via::WebSocket)
    }
}

/// What one launch of the mock saw.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Served {
    /// How the client reached it.
    #[serde(default)]
    pub via: Via,
    /// Which launch it was, from 1 (app-server connections and exec runs are numbered
    /// apart).
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
    /// What else it saw (an exec's arguments or stdin other than the recorded ones; why a
    /// command was refused).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
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
    all.sort_by_key(|s| (!s.via.app_server(), s.via == Via::Refused, s.launch));
    Ok(all)
}

/// The record of a new launch of `via` in `dir`, with its file; an app-server launch N
/// serves connection N of `connections` (cycling, from 1), as the record says.
pub fn start(
    dir: &Path,
    via: Via,
    connections: usize,
    args: &[String],
) -> anyhow::Result<(Served, PathBuf)> {
    let (launch, path) = claim(dir, via)?;
    let served = Served {
        via,
        launch,
        connection: (launch - 1) % connections.max(1) + 1,
        pid: std::process::id(),
        pgid: rustix::process::getpgrp().as_raw_nonzero().get() as u32,
        args: args.to_vec(),
        ..Served::default()
    };
    save(&path, &served)?;
    Ok((served, path))
}

/// Records a codex command the session does not serve, and why.
pub fn refuse(dir: &Path, args: &[String], why: &str) -> anyhow::Result<()> {
    let (mut served, path) = start(dir, Via::Refused, 1, args)?;
    served.notes.push(why.to_string());
    served.ended = Some("refused".into());
    save(&path, &served)
}

/// Takes the next launch number of its kind: the first record file of `via`'s name that did
/// not exist; returns it and the file's path.
pub fn claim(dir: &Path, via: Via) -> anyhow::Result<(usize, PathBuf)> {
    let folder = served_dir(dir);
    std::fs::create_dir_all(&folder).with_context(|| format!("creating {}", folder.display()))?;
    for n in 1.. {
        let path = folder.join(format!("{}{n}.json", via.prefix()));
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

    #[test]
    fn each_kind_of_launch_is_numbered_apart_and_read_after_the_app_servers() {
        let dir = tempfile::tempdir().unwrap();
        let (a, _) = claim(dir.path(), Via::Exec).unwrap();
        let (b, pb) = claim(dir.path(), Via::Stdio).unwrap();
        let (c, pc) = claim(dir.path(), Via::Exec).unwrap();
        assert_eq!((a, b, c), (1, 1, 2));
        assert!(pc.ends_with("served/exec-2.json"), "{}", pc.display());
        let exec = Served {
            via: Via::Exec,
            launch: 2,
            ..Served::default()
        };
        save(&pc, &exec).unwrap();
        save(
            &pb,
            &Served {
                launch: 1,
                ..Served::default()
            },
        )
        .unwrap();
        let all = read_all(dir.path()).unwrap();
        assert_eq!(
            all.iter().map(|s| (s.via, s.launch)).collect::<Vec<_>>(),
            vec![(Via::Stdio, 1), (Via::Exec, 2)]
        );
    }
}
