//! Pending expectations, reviewed before they count (as insta reviews snapshots): what
//! `run --bless` proposes for the golden requests and golden transcripts, and what
//! `baselines audit --bless` proposes for the baselines, is written beside the accepted
//! file as `FILE.pending`, never over it. `codex-parity review` shows each as a diff
//! against the accepted file and accepts it (the pending file replaces the accepted one)
//! or rejects it (the pending file is removed). Nothing reads a pending file as an
//! expectation: only accepted files judge a run, and only they are compiled in.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// What a pending file's name adds to the accepted file's.
pub const SUFFIX: &str = ".pending";

/// Lines of the accepted and pending files kept around each change in a diff.
const CONTEXT: usize = 2;

/// The longest diff (old lines × new lines after the common ends) computed line by line;
/// beyond it the whole middle is shown as replaced.
const MAX_CELLS: usize = 25_000_000;

/// `accepted` with [`SUFFIX`].
pub fn pending_path(accepted: &Path) -> PathBuf {
    let mut name = accepted.as_os_str().to_owned();
    name.push(SUFFIX);
    PathBuf::from(name)
}

/// Proposes `text` for the expectation file `accepted`: writes `accepted.pending` and
/// returns its path, or, when `text` is what `accepted` already holds, removes any
/// pending file and returns `None`.
pub fn propose(accepted: &Path, text: &str) -> anyhow::Result<Option<PathBuf>> {
    let pending = pending_path(accepted);
    if std::fs::read_to_string(accepted).is_ok_and(|old| old == text) {
        match std::fs::remove_file(&pending) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("removing {}", pending.display()));
            }
            _ => return Ok(None),
        }
    }
    if let Some(parent) = pending.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(&pending, text).with_context(|| format!("writing {}", pending.display()))?;
    Ok(Some(pending))
}

/// One pending expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The accepted file it would replace (perhaps not there yet).
    pub accepted: PathBuf,
    /// The pending file.
    pub pending: PathBuf,
}

/// Every pending file under `root`, recursively, sorted by path.
pub fn list(root: &Path) -> anyhow::Result<Vec<Pending>> {
    let mut found = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
        };
        for entry in entries {
            let path = entry
                .with_context(|| format!("reading {}", dir.display()))?
                .path();
            if path.is_dir() {
                dirs.push(path);
            } else if let Some(accepted) = path.to_str().and_then(|p| p.strip_suffix(SUFFIX)) {
                found.push(Pending {
                    accepted: PathBuf::from(accepted),
                    pending: path.clone(),
                });
            }
        }
    }
    found.sort_by(|a, b| a.pending.cmp(&b.pending));
    Ok(found)
}

impl Pending {
    /// What accepting it changes: `new file (N lines)`, or the changed lines as a diff
    /// (`-` accepted, `+` pending, with line numbers and a little context).
    pub fn diff(&self) -> anyhow::Result<String> {
        let new = std::fs::read_to_string(&self.pending)
            .with_context(|| format!("reading {}", self.pending.display()))?;
        match std::fs::read_to_string(&self.accepted) {
            Ok(old) => Ok(line_diff(&old, &new)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                Ok(format!("new file ({} lines)\n", new.lines().count()))
            }
            Err(e) => Err(e).with_context(|| format!("reading {}", self.accepted.display())),
        }
    }

    /// The pending file becomes the accepted one.
    pub fn accept(&self) -> anyhow::Result<()> {
        std::fs::rename(&self.pending, &self.accepted).with_context(|| {
            format!(
                "accepting {}: renaming it to {}",
                self.pending.display(),
                self.accepted.display()
            )
        })
    }

    /// The pending file is removed; the accepted one stays as it was.
    pub fn reject(&self) -> anyhow::Result<()> {
        std::fs::remove_file(&self.pending)
            .with_context(|| format!("rejecting {}: removing it", self.pending.display()))
    }
}

/// The lines that differ between `old` and `new`, in hunks with [`CONTEXT`] lines around
/// them: ` ` kept, `-` only in `old`, `+` only in `new`, each hunk headed by its line
/// numbers; empty when they are equal.
pub fn line_diff(old: &str, new: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (mid_a, mid_b) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if mid_a.is_empty() && mid_b.is_empty() {
        return String::new();
    }
    // Each line of both files as (old line, new line) positions: Some in both when kept.
    let mut ops: Vec<(Option<usize>, Option<usize>)> =
        (0..prefix).map(|i| (Some(i), Some(i))).collect();
    ops.extend(
        middle(mid_a, mid_b)
            .into_iter()
            .map(|(x, y)| (x.map(|i| i + prefix), y.map(|j| j + prefix))),
    );
    let (tail_a, tail_b) = (a.len() - suffix, b.len() - suffix);
    ops.extend((0..suffix).map(|k| (Some(tail_a + k), Some(tail_b + k))));
    render(&ops, &a, &b)
}

/// The middle of a diff (after the common ends), by longest common subsequence; all
/// removed then all added when it is too long for that.
fn middle(a: &[&str], b: &[&str]) -> Vec<(Option<usize>, Option<usize>)> {
    if a.len().saturating_mul(b.len()) > MAX_CELLS {
        let mut ops: Vec<_> = (0..a.len()).map(|i| (Some(i), None)).collect();
        ops.extend((0..b.len()).map(|j| (None, Some(j))));
        return ops;
    }
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let width = b.len() + 1;
    let mut lcs = vec![0u32; (a.len() + 1) * width];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i * width + j] = if a[i] == b[j] {
                lcs[(i + 1) * width + j + 1] + 1
            } else {
                lcs[(i + 1) * width + j].max(lcs[i * width + j + 1])
            };
        }
    }
    let (mut i, mut j, mut ops) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((Some(i), Some(j)));
            (i, j) = (i + 1, j + 1);
        } else if j == b.len()
            || (i < a.len() && lcs[(i + 1) * width + j] >= lcs[i * width + j + 1])
        {
            ops.push((Some(i), None));
            i += 1;
        } else {
            ops.push((None, Some(j)));
            j += 1;
        }
    }
    ops
}

/// The changed operations with [`CONTEXT`] kept lines around each, in hunks.
fn render(ops: &[(Option<usize>, Option<usize>)], a: &[&str], b: &[&str]) -> String {
    let changed = |k: usize| !matches!(ops[k], (Some(_), Some(_)));
    let shown: Vec<bool> = (0..ops.len())
        .map(|k| {
            let lo = k.saturating_sub(CONTEXT);
            let hi = (k + CONTEXT).min(ops.len() - 1);
            (lo..=hi).any(changed)
        })
        .collect();
    let mut out = String::new();
    let mut k = 0;
    while k < ops.len() {
        if !shown[k] {
            k += 1;
            continue;
        }
        let start = k;
        while k < ops.len() && shown[k] {
            k += 1;
        }
        let first_old = ops[start..k].iter().find_map(|o| o.0).map_or(0, |i| i + 1);
        let first_new = ops[start..k].iter().find_map(|o| o.1).map_or(0, |j| j + 1);
        out.push_str(&format!(
            "@@ accepted line {first_old}, pending line {first_new} @@\n"
        ));
        for op in &ops[start..k] {
            let line = match *op {
                (Some(i), Some(_)) => format!("  {}", a[i]),
                (Some(i), None) => format!("- {}", a[i]),
                (None, Some(j)) => format!("+ {}", b[j]),
                (None, None) => continue,
            };
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_shows_changed_lines_with_context_and_nothing_for_equal_texts() {
        assert_eq!(line_diff("a\nb\n", "a\nb\n"), "");
        let old = "1\n2\n3\n4\n5\n6\n7\n8\n";
        let new = "1\n2\n3\n4\nfive\n6\n7\n8\nnine\n";
        assert_eq!(
            line_diff(old, new),
            "@@ accepted line 3, pending line 3 @@\n  3\n  4\n- 5\n+ five\n  6\n  7\n  8\n+ nine\n"
        );
        assert_eq!(
            line_diff("x\n", ""),
            "@@ accepted line 1, pending line 0 @@\n- x\n"
        );
    }

    #[test]
    fn propose_writes_beside_the_accepted_file_and_accept_and_reject_settle_it() {
        let dir = tempfile::tempdir().unwrap();
        let accepted = dir.path().join("golden/0.1.0/s.json");
        // A new expectation: pending, the accepted file still absent.
        let p = propose(&accepted, "one\n").unwrap().unwrap();
        assert_eq!(p, dir.path().join("golden/0.1.0/s.json.pending"));
        assert!(!accepted.exists());
        let all = list(dir.path()).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].accepted, accepted);
        assert_eq!(all[0].diff().unwrap(), "new file (1 lines)\n");
        all[0].accept().unwrap();
        assert_eq!(std::fs::read_to_string(&accepted).unwrap(), "one\n");
        assert!(list(dir.path()).unwrap().is_empty());
        // The same text again proposes nothing.
        assert_eq!(propose(&accepted, "one\n").unwrap(), None);
        // A change: the accepted file untouched until accepted; a rejection leaves it.
        propose(&accepted, "two\n").unwrap().unwrap();
        assert_eq!(std::fs::read_to_string(&accepted).unwrap(), "one\n");
        let all = list(dir.path()).unwrap();
        assert!(all[0].diff().unwrap().contains("- one\n+ two\n"));
        all[0].reject().unwrap();
        assert_eq!(std::fs::read_to_string(&accepted).unwrap(), "one\n");
        assert!(list(dir.path()).unwrap().is_empty());
        // A pending proposal made stale by an equal one is removed.
        propose(&accepted, "three\n").unwrap().unwrap();
        assert_eq!(propose(&accepted, "one\n").unwrap(), None);
        assert!(list(dir.path()).unwrap().is_empty());
    }
}
