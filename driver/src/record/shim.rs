//! The `codex` a client is given: a script in a directory of its own, put first on the
//! client's `PATH` and named in `CODEX_PARITY_CODEX`. It execs `codex-parity COMMAND DIR
//! ARGS…`: for `record`, `record-relay SESSION` (see [`crate::record::relay`]), so whatever
//! the client runs as codex reaches the real binary through the relay; for `client-check`,
//! the mock app-server (`crate::client_check::serve`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The variable that names the shim for clients that take codex's path from the
/// environment.
pub const CODEX_ENV: &str = "CODEX_PARITY_CODEX";

/// The hidden subcommand the shim runs.
pub const RELAY_COMMAND: &str = "record-relay";

/// Writes `dir/codex`, which runs `exe COMMAND session ARGS…` (`command`: [`RELAY_COMMAND`]
/// for a recording); returns its path.
pub fn write(dir: &Path, exe: &Path, command: &str, session: &Path) -> anyhow::Result<PathBuf> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join("codex");
    let script = format!(
        "#!/bin/sh\n# codex, as codex-parity gives it to the client\nexec {} {command} {} \"$@\"\n",
        quote(&exe.to_string_lossy()),
        quote(&session.to_string_lossy())
    );
    std::fs::write(&path, script).with_context(|| format!("writing {}", path.display()))?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("making {} executable", path.display()))?;
    Ok(path)
}

/// `text` quoted for `sh`: in single quotes, each `'` written as `'\''`.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shim_passes_every_argument_through_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        // An "exe" that prints its arguments one per line stands in for codex-parity.
        let exe = dir.path().join("it's exe");
        std::fs::write(&exe, "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n").unwrap();
        std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        let shim = write(
            &dir.path().join("bin"),
            &exe,
            RELAY_COMMAND,
            Path::new("/s d"),
        )
        .unwrap();
        let out = std::process::Command::new(&shim)
            .args(["app-server", "a b", "$HOME"])
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "[record-relay]\n[/s d]\n[app-server]\n[a b]\n[$HOME]\n"
        );
    }
}
