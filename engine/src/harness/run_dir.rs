//! The run's own temporary directory, and the removal of those whose run died.
//!
//! A command that starts worlds first claims `TMPDIR/codex-parity-run-XXXXXX`: it holds an
//! exclusive lock on the directory's `.lock` for as long as the process lives, and every
//! temporary directory the process makes (worlds, codex homes, schema files) goes inside it
//! ([`tempfile::env::override_temp_dir`]). A normal end removes it. A run killed with
//! SIGKILL leaves it behind, but its lock dies with it: the next claim removes every
//! `codex-parity-run-*` whose lock it can take, and never one a live run holds. The lock
//! file is locked under another name and only then renamed to `.lock`, so a `.lock` is
//! never seen free while its run lives. A directory still without a `.lock` (a run between
//! making it and locking it) is left alone until it is a minute old.
//!
//! One thing a run makes outside its directory: the socket of a `codex app-server --listen
//! unix://PATH` (codex 0.161.0 and later make PATH a symbolic link to a socket in
//! `/tmp/codex-daemon-UID/`, with a `.lock` beside it). A listener removes both when it is
//! stopped; for a killed run, the links left in its directory lead the next run to them.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::Context;

/// A memory filesystem run directories go in when `TMPDIR` is not set ([`scratch_parent`]).
const MEMORY_FS: &str = "/dev/shm";

/// What a memory filesystem must have free to hold run directories (worlds are a few MB
/// each; group P's homes at scale are the largest).
const MEMORY_FS_ROOM: u64 = 4 << 30;

/// Where this process's run directory goes: `TMPDIR` when it is set (the user's choice);
/// otherwise `/dev/shm` when it is a writable memory filesystem with 4 GiB free; else the
/// system's temporary directory. Every world's codex creates and removes hundreds of files
/// (its home's databases, skills, rollouts): on a disk filesystem the kernel's inode
/// bookkeeping was a tenth of a run's CPU (0.271 s per scenario run on ext4, 0.242 s in
/// memory, 0.171.0 suite, docs/speed.md). Kept worlds (`--keep`) still go to the system's
/// temporary directory.
pub fn scratch_parent() -> PathBuf {
    if std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty()) {
        return std::env::temp_dir();
    }
    if memory_fs_with_room(Path::new(MEMORY_FS)) {
        return PathBuf::from(MEMORY_FS);
    }
    std::env::temp_dir()
}

/// Claims this process's run directory in [`scratch_parent`] and makes it where every
/// temporary directory of the process goes (`tempfile`'s, set once per process: a second
/// claim keeps the first); returns it and the directories of killed runs it removed.
pub fn claim_for_process() -> anyhow::Result<(RunDir, Vec<PathBuf>)> {
    let (dir, removed) = RunDir::claim(&scratch_parent())?;
    let _ = tempfile::env::override_temp_dir(dir.path());
    Ok((dir, removed))
}

/// Whether `dir` is a writable tmpfs with [`MEMORY_FS_ROOM`] free.
fn memory_fs_with_room(dir: &Path) -> bool {
    const TMPFS_MAGIC: i128 = 0x0102_1994;
    let Ok(fs) = rustix::fs::statfs(dir) else {
        return false;
    };
    let Ok(room) = rustix::fs::statvfs(dir) else {
        return false;
    };
    let free = room.f_bavail.saturating_mul(room.f_frsize);
    i128::from(fs.f_type) == TMPFS_MAGIC
        && free >= MEMORY_FS_ROOM
        && rustix::fs::access(dir, rustix::fs::Access::WRITE_OK).is_ok()
}

/// The name every run directory starts with.
pub const PREFIX: &str = "codex-parity-run-";

/// The lock file inside a run directory.
const LOCK: &str = ".lock";

/// The name the lock file has while it is being locked, before it becomes [`LOCK`].
const STAGING_LOCK: &str = ".lock.claiming";

/// How old a run directory without a lock file must be before it counts as abandoned.
const UNLOCKED_GRACE: Duration = Duration::from_secs(60);

/// This process's run directory; dropping it removes the directory.
#[derive(Debug)]
pub struct RunDir {
    /// The lock, held while the process lives (released just before `dir` is removed).
    _lock: File,
    dir: tempfile::TempDir,
}

impl RunDir {
    /// Removes the directories of dead runs under `parent`, then makes and locks this run's
    /// there. Returns it and the directories removed.
    pub fn claim(parent: &Path) -> anyhow::Result<(RunDir, Vec<PathBuf>)> {
        let removed = sweep(parent);
        // The user's alone: every temporary file of the run is made in it.
        let dir = tempfile::Builder::new()
            .prefix(PREFIX)
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)
            .with_context(|| format!("creating a run directory in {}", parent.display()))?;
        // Locked under another name first, then renamed: a `.lock` that another run's sweep
        // can see is always already held, so the sweep never mistakes this run for dead.
        let staging = dir.path().join(STAGING_LOCK);
        let lock =
            File::create(&staging).with_context(|| format!("creating {}", staging.display()))?;
        lock.try_lock()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .with_context(|| format!("locking {}", staging.display()))?;
        let path = dir.path().join(LOCK);
        std::fs::rename(&staging, &path)
            .with_context(|| format!("renaming {} to {}", staging.display(), path.display()))?;
        Ok((RunDir { _lock: lock, dir }, removed))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// Removes every run directory under `parent` whose run is dead (its lock free, or no lock
/// file after [`UNLOCKED_GRACE`]); returns those removed. Errors are skipped: a directory
/// that cannot be read or removed now is tried again by the next run.
pub fn sweep(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let is_run = entry.file_name().to_string_lossy().starts_with(PREFIX)
            && entry.file_type().is_ok_and(|t| t.is_dir());
        if is_run && abandoned(&path) {
            release_daemon_sockets(&path, 4);
            if std::fs::remove_dir_all(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed.sort();
    removed
}

/// Removes the run directory `dir` as soon as its run is dead (see [`sweep`]), trying for up
/// to `wait` (the run's processes may still be ending); whether it is gone. A live run's
/// directory is never touched.
pub fn remove_when_abandoned(dir: &Path, wait: Duration) -> bool {
    let deadline = std::time::Instant::now() + wait;
    loop {
        if !dir.exists() {
            return true;
        }
        if abandoned(dir) {
            release_daemon_sockets(dir, 4);
            if std::fs::remove_dir_all(dir).is_ok() || !dir.exists() {
                return true;
            }
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Removes the codex daemon sockets (and their `.lock` files) that symbolic links in `dir`,
/// up to `depth` levels down, lead to: a socket in a directory named `codex-daemon-…`.
fn release_daemon_sockets(dir: &Path, depth: usize) {
    use std::os::unix::fs::FileTypeExt;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() && depth > 0 {
            release_daemon_sockets(&entry.path(), depth - 1);
        } else if kind.is_symlink()
            && let Ok(target) = std::fs::read_link(entry.path())
            && target
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n.to_string_lossy().starts_with("codex-daemon-"))
            && std::fs::symlink_metadata(&target).is_ok_and(|m| m.file_type().is_socket())
        {
            let _ = std::fs::remove_file(&target);
            let mut lock = target.into_os_string();
            lock.push(".lock");
            let _ = std::fs::remove_file(lock);
        }
    }
}

/// Whether the run of `dir` is dead: its lock can be taken (a live run holds it), or it
/// has no lock file and is older than [`UNLOCKED_GRACE`].
fn abandoned(dir: &Path) -> bool {
    match File::open(dir.join(LOCK)) {
        Ok(file) => file.try_lock().is_ok(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::metadata(dir)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > UNLOCKED_GRACE),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_disk_directory_is_no_memory_filesystem_and_tmpdir_is_obeyed() {
        let disk = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        assert!(!memory_fs_with_room(disk.path()));
        assert!(!memory_fs_with_room(Path::new("/no/such/directory")));
        // cargo test runs this without TMPDIR or with it; either way the answer is one of
        // the two places, and TMPDIR wins when set.
        let parent = scratch_parent();
        if std::env::var_os("TMPDIR").is_some_and(|v| !v.is_empty()) {
            assert_eq!(parent, std::env::temp_dir());
        } else {
            assert!(parent == Path::new(MEMORY_FS) || parent == std::env::temp_dir());
        }
    }

    #[test]
    fn a_live_run_is_kept_and_a_dead_one_removed() {
        let parent = tempfile::tempdir().unwrap();
        let (live, removed) = RunDir::claim(parent.path()).unwrap();
        assert!(removed.is_empty());
        // A dead run: its lock file exists but nobody holds it.
        let dead = parent.path().join(format!("{PREFIX}dead"));
        std::fs::create_dir(&dead).unwrap();
        std::fs::write(dead.join(LOCK), "").unwrap();
        std::fs::write(dead.join("world"), "left by a killed run").unwrap();
        // Not ours: another prefix is never touched.
        let other = parent.path().join("codex-parity-other");
        std::fs::create_dir(&other).unwrap();
        // A run that has not locked yet: too young to count as dead.
        let young = parent.path().join(format!("{PREFIX}young"));
        std::fs::create_dir(&young).unwrap();
        let (second, removed) = RunDir::claim(parent.path()).unwrap();
        assert_eq!(removed, std::slice::from_ref(&dead));
        assert!(!dead.exists());
        assert!(live.path().exists(), "a live run's directory was removed");
        assert!(other.exists() && young.exists());
        let (live_path, second_path) = (live.path().to_path_buf(), second.path().to_path_buf());
        drop(live);
        drop(second);
        assert!(
            !live_path.exists() && !second_path.exists(),
            "dropping removes it"
        );
    }

    #[test]
    fn a_run_directory_is_removed_once_its_run_is_dead_and_never_before() {
        let parent = tempfile::tempdir().unwrap();
        let (live, _) = RunDir::claim(parent.path()).unwrap();
        let path = live.path().to_path_buf();
        assert!(
            !remove_when_abandoned(&path, Duration::from_millis(200)),
            "a live run's directory"
        );
        assert!(path.exists());
        // The run dies (its lock is released) but its directory stays, as after SIGKILL.
        let kept = live.dir.keep();
        drop(live._lock);
        assert!(remove_when_abandoned(&kept, Duration::from_secs(1)));
        assert!(!kept.exists());
    }

    #[test]
    fn a_dead_runs_daemon_sockets_go_with_it_and_others_stay() {
        let parent = tempfile::tempdir().unwrap();
        let daemon = parent.path().join("codex-daemon-0");
        std::fs::create_dir(&daemon).unwrap();
        let socket = |name: &str| {
            let path = daemon.join(name);
            let bound = std::os::unix::net::UnixListener::bind(&path).unwrap();
            std::fs::write(daemon.join(format!("{name}.lock")), "").unwrap();
            (path, bound)
        };
        let (ours, _a) = socket("ours");
        let (theirs, _b) = socket("theirs");
        let dead = parent.path().join(format!("{PREFIX}dead"));
        let world = dead.join("codex-parity-w");
        std::fs::create_dir_all(&world).unwrap();
        std::fs::write(dead.join(LOCK), "").unwrap();
        std::os::unix::fs::symlink(&ours, world.join("app-server-1.sock")).unwrap();
        // A link to something that is not a daemon socket is never followed to a removal.
        let plain = parent.path().join("plain.txt");
        std::fs::write(&plain, "keep").unwrap();
        std::os::unix::fs::symlink(&plain, world.join("other")).unwrap();
        assert_eq!(sweep(parent.path()), vec![dead.clone()]);
        assert!(!ours.exists() && !daemon.join("ours.lock").exists());
        assert!(theirs.exists() && daemon.join("theirs.lock").exists());
        assert!(plain.exists());
    }

    #[test]
    fn runs_claiming_at_once_never_remove_each_other() {
        let parent = tempfile::tempdir().unwrap();
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let parent = parent.path().to_path_buf();
                std::thread::spawn(move || {
                    for _ in 0..100 {
                        let (run, _) = RunDir::claim(&parent).unwrap();
                        assert!(
                            run.path().join(LOCK).exists(),
                            "another claim removed a live run's directory"
                        );
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
    }
}
