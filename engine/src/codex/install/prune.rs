//! Keeping the cache of installed releases bounded: `install --prune` and the size cap
//! (`CODEX_PARITY_CACHE_MAX`), least recently used first.
//!
//! Each release directory gets a `last-used` stamp (its modification time) whenever a cached
//! binary is handed out or installed; a directory without one counts from its
//! `install.json`. Pruning never removes a release whose binary (or a file under its
//! directory) is the executable of a running process (`/proc/*/exe`), one this process has
//! handed out, one being installed (its lock is held) or one the caller keeps. Whatever is
//! removed is returned, to be printed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};

use super::{Cache, read_record};
use crate::codex::versions;
use crate::lock;

/// The environment variable that caps the cache's size (`2G`, `1500M`, bytes).
pub const CACHE_MAX_ENV: &str = "CODEX_PARITY_CACHE_MAX";

/// The stamp file whose modification time is a release's last use.
const LAST_USED: &str = "last-used";

/// Release directories this process handed out: never pruned by it while it runs.
static HANDED_OUT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// One installed release in the cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedRelease {
    /// Its version.
    pub version: String,
    /// Its directory (`<root>/<version>`).
    pub dir: PathBuf,
    /// Bytes of the files under it.
    pub bytes: u64,
    /// When it was last used (or installed).
    pub last_used: SystemTime,
}

/// What a prune did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// The releases removed, least recently used first.
    pub removed: Vec<CachedRelease>,
    /// Releases that would have gone but were in use or kept, with why.
    pub spared: Vec<(CachedRelease, String)>,
    /// The cache's size before and after, in bytes.
    pub bytes_before: u64,
    /// See `bytes_before`.
    pub bytes_after: u64,
}

/// Marks `dir` as used now (its `last-used` stamp) and as handed out by this process.
pub(super) fn mark_used(dir: &Path) {
    lock(&HANDED_OUT).insert(dir.to_path_buf());
    let stamp = dir.join(LAST_USED);
    let touched = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&stamp)
        .and_then(|f| f.set_modified(SystemTime::now()));
    // A read-only cache still works; its releases then count from their install time.
    let _ = touched;
}

/// Spares `versions` from pruning by this process while it runs, before they are installed:
/// a run that installs several releases one after the other never evicts the ones it still
/// needs to keep under the cap.
pub fn reserve(cache: &Cache, versions: &[String]) {
    let mut handed_out = lock(&HANDED_OUT);
    for v in versions {
        handed_out.insert(cache.version_dir(v));
    }
}

/// A hold on one cached release: while it lives, no prune of any process removes the
/// release (a shared `flock` on its `.held` lock file, which a removal takes exclusively
/// without waiting; the kernel releases it when the process dies). Installs do not take it,
/// so a process holding a release never waits on itself. Taken by what uses a release's derived
/// data
/// without running its binary all along, e.g. the homes the performance scenarios prepare
/// next to it.
#[derive(Debug)]
pub struct ReleaseHold {
    _file: std::fs::File,
}

/// The releases this process holds until it exits (see [`keep_held`]), by lock file.
static HELD: Mutex<BTreeMap<PathBuf, std::fs::File>> = Mutex::new(BTreeMap::new());

/// Holds `version` in `cache` until this process exits (a [`ReleaseHold`] that is never
/// dropped), unless another process is removing it right now (then nothing is held).
pub fn keep_held(cache: &Cache, version: &str) {
    let path = cache.held_path(version);
    if let Some(parent) = path.parent() {
        let _ = std::fs::create_dir_all(parent);
    }
    let mut held = lock(&HELD);
    if held.contains_key(&path) {
        return;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path);
    if let Ok(file) = file
        && file.try_lock_shared().is_ok()
    {
        held.insert(path, file);
    }
}

/// Holds `version` in `cache` (see [`ReleaseHold`]), waiting while it is being installed.
pub async fn hold(cache: &Cache, version: &str) -> Result<ReleaseHold> {
    let path = cache.held_path(version);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open the lock file {}", path.display()))?;
    let file = tokio::task::spawn_blocking(move || file.lock_shared().map(|()| file))
        .await
        .context("waiting for the release's lock")?
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(ReleaseHold { _file: file })
}

/// Parses a size: bytes, or a number with `K`, `M`, `G` or `T` (powers of 1000, an optional
/// trailing `B`): `2G`, `1500M`, `3.5GB`.
pub fn parse_size(text: &str) -> Result<u64> {
    let t = text.trim().to_ascii_uppercase();
    let t = t.strip_suffix('B').unwrap_or(&t);
    let (number, unit) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((at, _)) => t.split_at(at),
        None => (t, ""),
    };
    let scale: f64 = match unit {
        "" => 1.0,
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        _ => bail!("size {text:?}: the unit must be K, M, G or T (for example 2G or 1500M)"),
    };
    match number.trim().parse::<f64>() {
        Ok(n) if n.is_finite() && n >= 0.0 => Ok((n * scale) as u64),
        _ => bail!("size {text:?} is not a number of bytes, or one with K, M, G or T (2G)"),
    }
}

/// The cap from `CODEX_PARITY_CACHE_MAX`, if set (and not empty).
pub fn cap_from_env() -> Result<Option<u64>> {
    match std::env::var(CACHE_MAX_ENV) {
        Ok(v) if !v.trim().is_empty() => parse_size(&v)
            .map(Some)
            .with_context(|| format!("{CACHE_MAX_ENV}={v}")),
        _ => Ok(None),
    }
}

/// Which releases to remove, least recently used first: every one not spared when `cap` is
/// `None`, else as many as bring the total to `cap` or under. `spare` says why a release
/// must stay, if it must. Pure: the caller removes them.
pub fn choose(
    releases: &[CachedRelease],
    cap: Option<u64>,
    spare: &dyn Fn(&CachedRelease) -> Option<String>,
) -> Pruned {
    let mut order: Vec<&CachedRelease> = releases.iter().collect();
    order.sort_by_key(|r| (r.last_used, versions::sort_key(&r.version)));
    let before: u64 = releases.iter().map(|r| r.bytes).sum();
    let mut pruned = Pruned {
        bytes_before: before,
        bytes_after: before,
        ..Pruned::default()
    };
    for r in order {
        if cap.is_some_and(|cap| pruned.bytes_after <= cap) {
            break;
        }
        match spare(r) {
            Some(why) => pruned.spared.push((r.clone(), why)),
            None => {
                pruned.bytes_after -= r.bytes;
                pruned.removed.push(r.clone());
            }
        }
    }
    pruned
}

/// The releases installed in `cache` (directories named by a version, holding `codex`).
pub fn cached_releases(cache: &Cache) -> Result<Vec<CachedRelease>> {
    let entries = match std::fs::read_dir(cache.root()) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", cache.root().display())),
    };
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let version = entry.file_name().to_string_lossy().into_owned();
        let dir = entry.path();
        if !versions::is_version(&version) || !dir.join("codex").exists() {
            continue;
        }
        found.push(CachedRelease {
            bytes: tree_size(&dir),
            last_used: last_used(cache, &version, &dir),
            version,
            dir,
        });
    }
    Ok(found)
}

/// The `last-used` stamp, else the install time, else the directory's modification time.
fn last_used(cache: &Cache, version: &str, dir: &Path) -> SystemTime {
    let mtime = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    mtime(&dir.join(LAST_USED))
        .or_else(|| {
            read_record(cache, version)
                .ok()
                .map(|r| UNIX_EPOCH + std::time::Duration::from_secs(r.installed_at))
        })
        .or_else(|| mtime(dir))
        .unwrap_or(UNIX_EPOCH)
}

/// Bytes of the regular files under `dir` (symbolic links not followed).
fn tree_size(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| Some((e.path(), std::fs::symlink_metadata(e.path()).ok()?)))
        .map(|(path, meta)| {
            if meta.is_dir() {
                tree_size(&path)
            } else if meta.is_file() {
                meta.len()
            } else {
                0
            }
        })
        .sum()
}

/// The executables of running processes (`/proc/*/exe`), as paths.
pub fn running_executables() -> Vec<PathBuf> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_link(e.path().join("exe")).ok())
        .collect()
}

/// Why `release` must stay, if it must: a running process's executable lies under it, this
/// process handed it out, or it is in `keep`.
pub fn why_spared(release: &CachedRelease, running: &[PathBuf], keep: &[String]) -> Option<String> {
    if keep.contains(&release.version) {
        return Some("wanted now".into());
    }
    if running.iter().any(|exe| exe.starts_with(&release.dir)) {
        return Some("in use by a running process".into());
    }
    if lock(&HANDED_OUT).contains(&release.dir) {
        return Some("in use by this run".into());
    }
    None
}

/// Removes from `cache` what [`choose`] picks, sparing releases in use or in `keep`, and
/// skipping one whose install lock another process holds.
pub fn prune(cache: &Cache, cap: Option<u64>, keep: &[String]) -> Result<Pruned> {
    let releases = cached_releases(cache)?;
    let running = running_executables();
    let mut pruned = choose(&releases, cap, &|r| why_spared(r, &running, keep));
    let mut removed = Vec::new();
    for r in std::mem::take(&mut pruned.removed) {
        match remove_release(cache, &r) {
            Ok(true) => removed.push(r),
            Ok(false) => {
                pruned.bytes_after += r.bytes;
                pruned
                    .spared
                    .push((r, "being installed or held by another process".into()));
            }
            Err(e) => return Err(e),
        }
    }
    pruned.removed = removed;
    Ok(pruned)
}

/// Removes one release under its install lock; false when another process holds the lock
/// (installing it, or holding it: [`hold`]).
fn remove_release(cache: &Cache, release: &CachedRelease) -> Result<bool> {
    let lock_path = cache.lock_path(&release.version);
    if let Some(parent) = lock_path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open the lock file {}", lock_path.display()))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", lock_path.display()));
        }
    }
    // Nobody may hold it either (see [`ReleaseHold`]).
    let held_path = cache.held_path(&release.version);
    let held = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&held_path)
        .with_context(|| format!("cannot open the lock file {}", held_path.display()))?;
    match held.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => return Ok(false),
        Err(std::fs::TryLockError::Error(e)) => {
            return Err(e).with_context(|| format!("cannot lock {}", held_path.display()));
        }
    }
    // The binary first: without it the directory is no longer a complete install.
    let _ = std::fs::remove_file(release.dir.join("codex"));
    std::fs::remove_dir_all(&release.dir).with_context(|| {
        format!(
            "cannot remove {}: check its permissions, or delete it by hand",
            release.dir.display()
        )
    })?;
    Ok(true)
}

/// One line per removed release, for people: version, size, when last used.
pub fn describe(pruned: &Pruned) -> Vec<String> {
    let now = SystemTime::now();
    let mut lines: Vec<String> = pruned
        .removed
        .iter()
        .map(|r| {
            let ago = now.duration_since(r.last_used).unwrap_or_default();
            format!(
                "removed codex {} ({:.1} MB, last used {} ago) from {}",
                r.version,
                r.bytes as f64 / 1e6,
                human(ago),
                r.dir.display()
            )
        })
        .collect();
    for (r, why) in &pruned.spared {
        lines.push(format!("kept codex {} ({why})", r.version));
    }
    lines.push(format!(
        "cache: {:.1} MB before, {:.1} MB after",
        pruned.bytes_before as f64 / 1e6,
        pruned.bytes_after as f64 / 1e6
    ));
    lines
}

/// `3 h`, `12 min`, `40 s`, `2 d`.
fn human(d: std::time::Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s} s"),
        120..7200 => format!("{} min", s / 60),
        7200..172800 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86400),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A fake release `version` of `bytes` bytes in `cache`, last used `ago` seconds ago.
    fn release(cache: &Cache, version: &str, bytes: usize, ago: u64) -> PathBuf {
        let dir = cache.version_dir(version);
        std::fs::create_dir_all(dir.join("codex-resources")).unwrap();
        std::fs::write(dir.join("codex"), vec![0u8; bytes]).unwrap();
        std::fs::write(dir.join("codex-resources/bwrap"), b"x").unwrap();
        let stamp = std::fs::File::create(dir.join(LAST_USED)).unwrap();
        stamp
            .set_modified(SystemTime::now() - Duration::from_secs(ago))
            .unwrap();
        dir
    }

    fn versions_of(list: &[CachedRelease]) -> Vec<&str> {
        list.iter().map(|r| r.version.as_str()).collect()
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("1234").unwrap(), 1234);
        assert_eq!(parse_size("2G").unwrap(), 2_000_000_000);
        assert_eq!(parse_size("1500m").unwrap(), 1_500_000_000);
        assert_eq!(parse_size("3.5GB").unwrap(), 3_500_000_000);
        assert_eq!(parse_size("10K").unwrap(), 10_000);
        for bad in ["", "G", "2X", "-1G", "two"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_cap_removes_the_least_recently_used_first() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        release(&cache, "0.1.0", 1000, 300);
        release(&cache, "0.2.0", 1000, 100);
        release(&cache, "0.3.0", 1000, 200);
        release(&cache, "0.4.0", 1000, 10);
        std::fs::create_dir_all(tmp.path().join(".tmp/0.5.0")).unwrap();
        let all = cached_releases(&cache).unwrap();
        assert_eq!(all.len(), 4, "{all:?}");
        // Each is its binary and its one-byte resource.
        assert!(all.iter().all(|r| r.bytes == 1001), "{all:?}");
        let pruned = prune(&cache, Some(2100), &[]).unwrap();
        assert_eq!(versions_of(&pruned.removed), ["0.1.0", "0.3.0"]);
        assert_eq!((pruned.bytes_before, pruned.bytes_after), (4004, 2002));
        assert!(!cache.version_dir("0.1.0").exists());
        assert!(cache.binary_path("0.2.0").exists());
        let lines = describe(&pruned);
        assert!(lines[0].starts_with("removed codex 0.1.0"), "{lines:?}");
        assert!(lines[0].contains("last used 5 min ago"), "{lines:?}");
        // Under the cap, nothing more goes.
        assert!(prune(&cache, Some(2100), &[]).unwrap().removed.is_empty());
    }

    #[test]
    fn without_a_cap_everything_not_kept_goes() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        release(&cache, "0.1.0", 10, 30);
        release(&cache, "0.2.0", 10, 20);
        release(&cache, "0.3.0", 10, 10);
        let pruned = prune(&cache, None, &["0.2.0".to_string()]).unwrap();
        assert_eq!(versions_of(&pruned.removed), ["0.1.0", "0.3.0"]);
        assert_eq!(pruned.spared.len(), 1);
        assert_eq!(pruned.spared[0].1, "wanted now");
        assert_eq!(versions_of(&cached_releases(&cache).unwrap()), ["0.2.0"]);
    }

    #[test]
    fn a_binary_a_process_runs_an_install_in_progress_or_a_held_release_is_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let running = release(&cache, "0.1.0", 0, 300);
        std::fs::copy("/bin/sleep", running.join("codex")).unwrap();
        let mut child = std::process::Command::new(running.join("codex"))
            .arg("30")
            .spawn()
            .unwrap();
        release(&cache, "0.2.0", 10, 200);
        release(&cache, "0.3.0", 10, 100);
        std::fs::create_dir_all(cache.lock_path("0.2.0").parent().unwrap()).unwrap();
        let lock = std::fs::File::create(cache.lock_path("0.2.0")).unwrap();
        lock.lock().unwrap();
        // A release whose derived data another user holds (a leased home) stays too.
        release(&cache, "0.4.0", 10, 400);
        let held = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(hold(&cache, "0.4.0"))
            .unwrap();
        let pruned = prune(&cache, Some(0), &[]).unwrap();
        drop(held);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(versions_of(&pruned.removed), ["0.3.0"]);
        let spared: Vec<(&str, &str)> = pruned
            .spared
            .iter()
            .map(|(r, why)| (r.version.as_str(), why.as_str()))
            .collect();
        assert_eq!(
            spared,
            [
                ("0.1.0", "in use by a running process"),
                ("0.4.0", "being installed or held by another process"),
                ("0.2.0", "being installed or held by another process")
            ]
        );
        assert!(running.join("codex").exists());
        assert!(cache.binary_path("0.2.0").exists());
    }

    #[test]
    fn using_a_release_makes_it_the_most_recent_and_spares_it_in_this_process() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = Cache::new(tmp.path());
        let old = release(&cache, "0.1.0", 10, 300);
        release(&cache, "0.2.0", 10, 100);
        mark_used(&old);
        let all = cached_releases(&cache).unwrap();
        let newest = all.iter().max_by_key(|r| r.last_used).unwrap();
        assert_eq!(newest.version, "0.1.0");
        let pruned = prune(&cache, Some(0), &[]).unwrap();
        assert_eq!(versions_of(&pruned.removed), ["0.2.0"]);
        assert_eq!(pruned.spared[0].1, "in use by this run");
        // A release reserved before it is installed is spared the same way.
        release(&cache, "0.3.0", 10, 500);
        reserve(&cache, &["0.3.0".to_string()]);
        assert!(prune(&cache, Some(0), &[]).unwrap().removed.is_empty());
    }
}
