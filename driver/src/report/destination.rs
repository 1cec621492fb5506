//! Where a command writes its report (`run --report`, `merge --report`, `client-check
//! --report`, `upgrade --report`): a directory that holds this invocation's files and
//! nothing else, so that no verdict, and no later command reading the directory (`merge`,
//! `surface init --from`, `client-check --from … as:VERSION`), takes another run's file for
//! this run's.
//!
//! [`prepare`] is called before anything runs: a new or empty directory is taken as it is;
//! one holding files is refused, unless the user asked to replace them
//! ([`REPLACE_FLAG`]) and every one of them is a name codex-parity writes there
//! ([`OWN_NAMES`]), which are then removed. Either way the directory is proved writable
//! before the run, not found unwritable after it.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The flag that lets a command replace the files of an earlier report.
pub const REPLACE_FLAG: &str = "--replace-report";

/// The names codex-parity writes into a report directory: what [`REPLACE_FLAG`] may
/// remove. (`run.log` is the log `sweep` keeps beside a release's report.)
pub const OWN_NAMES: [&str; 11] = [
    "results.json",
    "junit.xml",
    "report.md",
    "report.html",
    "transcripts",
    "client-check.json",
    "runs",
    "run.log",
    "upgrade.json",
    "upgrade.md",
    PROBE,
];

/// The file written and removed to prove the directory writable.
const PROBE: &str = ".codex-parity-write-probe";

/// Makes `dir` ready for this invocation's report (see the module docs); `flag` is the
/// option that named it (`--report`), for messages.
pub fn prepare(dir: &Path, flag: &str, replace: bool) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        bail!(
            "{flag} {}: not a directory; give a new or empty directory",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir)
        .with_context(|| format!("{flag} {}: cannot create it", dir.display()))?;
    let held = entries(dir)?;
    if !held.is_empty() {
        let shown = show(&held);
        if !replace {
            bail!(
                "{flag} {}: holds another run's files ({shown}), which would be read as this \
                 run's; give a new or empty directory, or {REPLACE_FLAG} to remove them first",
                dir.display()
            );
        }
        let foreign: Vec<&String> = held
            .iter()
            .filter(|n| !OWN_NAMES.contains(&n.as_str()))
            .collect();
        if !foreign.is_empty() {
            bail!(
                "{flag} {}: holds files codex-parity does not write there ({}); {REPLACE_FLAG} \
                 removes only a report's own files: give a new or empty directory",
                dir.display(),
                show(&foreign.into_iter().cloned().collect::<Vec<_>>())
            );
        }
        for name in &held {
            remove(&dir.join(name))?;
        }
    }
    let probe = dir.join(PROBE);
    std::fs::write(&probe, b"")
        .with_context(|| format!("{flag} {}: cannot write into it", dir.display()))?;
    std::fs::remove_file(&probe).with_context(|| format!("removing {}", probe.display()))
}

/// The names in `dir`, sorted.
fn entries(dir: &Path) -> anyhow::Result<Vec<String>> {
    let list = std::fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))?;
    let mut names: Vec<String> = list
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Ok(names)
}

/// A few names for a message.
fn show(names: &[String]) -> String {
    const SHOWN: usize = 4;
    let mut text = names
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        text.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    text
}

fn remove(path: &PathBuf) -> anyhow::Result<()> {
    let removed = if path.is_dir() && !path.is_symlink() {
        std::fs::remove_dir_all(path)
    } else {
        std::fs::remove_file(path)
    };
    removed.with_context(|| format!("removing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_or_empty_directory_is_taken_and_another_runs_files_are_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b");
        prepare(&dir, "--report", false).unwrap();
        assert!(dir.is_dir());
        assert!(entries(&dir).unwrap().is_empty(), "the probe is removed");
        prepare(&dir, "--report", false).unwrap();
        std::fs::write(dir.join("results.json"), "{}").unwrap();
        std::fs::create_dir_all(dir.join("transcripts/0.171.0")).unwrap();
        let err = format!("{:#}", prepare(&dir, "--report", false).unwrap_err());
        assert!(
            err.contains("holds another run's files (results.json, transcripts)"),
            "{err}"
        );
        assert!(err.contains("--replace-report"), "{err}");
        prepare(&dir, "--report", true).unwrap();
        assert!(entries(&dir).unwrap().is_empty(), "replaced");
    }

    #[test]
    fn files_codex_parity_did_not_write_are_never_removed() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("results.json"), "{}").unwrap();
        std::fs::write(root.path().join("notes.txt"), "mine").unwrap();
        let err = format!("{:#}", prepare(root.path(), "--report", true).unwrap_err());
        assert!(err.contains("(notes.txt)"), "{err}");
        assert!(root.path().join("notes.txt").is_file());
        assert!(root.path().join("results.json").is_file());
        let file = root.path().join("notes.txt");
        let err = format!("{:#}", prepare(&file, "--report", false).unwrap_err());
        assert!(err.contains("not a directory"), "{err}");
    }
}
