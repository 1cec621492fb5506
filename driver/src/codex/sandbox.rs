//! What codex needs from the machine to run commands in its sandbox: on Linux, a
//! bubblewrap (`bwrap`) on `PATH`. Without one codex looks for a copy bundled beside its
//! executable (which the install keeps out of the cache) and, failing that, fails the
//! sandboxed commands of approval and file scenarios now and then.

use std::path::{Path, PathBuf};

/// The `bwrap` that codex would find on `path` (a `PATH`-style list), if any.
pub fn bwrap_on(path: &std::ffi::OsStr) -> Option<PathBuf> {
    std::env::split_paths(path)
        .map(|dir| dir.join("bwrap"))
        .find(|candidate| is_executable(candidate))
}

/// A warning to print when this machine has no `bwrap` on `PATH` (Linux only), saying what to
/// install; `None` when all is well.
pub fn missing_bwrap_warning() -> Option<String> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    bwrap_on(&path).is_none().then(|| {
        "codex-parity: warning: no bubblewrap (`bwrap`) on PATH; codex sandboxes the commands it \
         runs with it, and without one the approval and file-change scenarios may fail at \
         random. Install it (Debian/Ubuntu: apt-get install bubblewrap)."
            .to_string()
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_an_executable_bwrap_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let empty = tempfile::tempdir().unwrap();
        let list = std::env::join_paths([empty.path(), dir.path()]).unwrap();
        assert_eq!(bwrap_on(&list), None);
        let bwrap = dir.path().join("bwrap");
        std::fs::write(&bwrap, "#!/bin/sh\n").unwrap();
        assert_eq!(bwrap_on(&list), None, "not executable");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bwrap, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(bwrap_on(&list), Some(bwrap));
    }
}
