//! One Codex CLI binary: where it is and the version it reports (`codex --version`, never
//! guessed from its path). Results name a binary by [`CodexBinary::label`]
//! (`codex-0.171.0`). Where binaries come from is [`crate::codex::binaries`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use crate::codex::versions;

/// How long `codex --version` may take before the binary is declared hung.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// A Codex CLI binary whose version has been checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodexBinary {
    /// Absolute path of the executable.
    pub path: PathBuf,
    /// The version it reports, without the `codex-cli ` prefix (e.g. `"0.171.0"`, or
    /// `"0.172.0-alpha.1"`).
    pub version: String,
}

impl CodexBinary {
    /// The name results use for this binary: `codex-<version>`, e.g. `codex-0.171.0`.
    pub fn label(&self) -> String {
        format!("codex-{}", self.version)
    }
}

/// Runs `<path> --version` (10 s timeout) and returns the binary with the version it reports.
///
/// A path without a directory part (`codex`) is looked up in the current directory, then on `PATH`.
pub async fn probe(path: &Path) -> Result<CodexBinary> {
    probe_with_timeout(path, PROBE_TIMEOUT).await
}

/// [`probe`] with a caller-chosen timeout.
pub async fn probe_with_timeout(path: &Path, timeout: Duration) -> Result<CodexBinary> {
    probe_located(locate(path)?, timeout).await
}

/// [`probe_with_timeout`] for a path [`locate`] already resolved.
pub(crate) async fn probe_located(path: PathBuf, timeout: Duration) -> Result<CodexBinary> {
    let shown = path.display();
    let output = run_version(&path, timeout).await?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!(
            "`{shown} --version` failed ({}); is this a Codex CLI binary?{}",
            output.status,
            quote_tail("stderr", &String::from_utf8_lossy(&output.stderr), 10)
        );
    }
    let version = parse_version_output(&stdout).ok_or_else(|| {
        anyhow!(
            "`{shown} --version` printed {:?}, expected `codex-cli X.Y.Z`; is this a Codex CLI binary?",
            truncate(stdout.trim(), 300)
        )
    })?;
    Ok(CodexBinary { path, version })
}

/// Makes `path` absolute; a bare name that is not in the current directory is searched on `PATH`.
pub(crate) fn locate(path: &Path) -> Result<PathBuf> {
    let bare =
        path.components().count() == 1 && path.parent().is_some_and(|p| p.as_os_str().is_empty());
    if bare && !path.exists() {
        if let Some(found) = find_on_path(path.as_os_str()) {
            return Ok(found);
        }
        bail!(
            "Codex binary `{}` not found (not in the current directory nor on PATH)",
            path.display()
        );
    }
    if !path.exists() {
        bail!("Codex binary not found: {} does not exist", path.display());
    }
    std::path::absolute(path).with_context(|| format!("cannot make {} absolute", path.display()))
}

/// Finds an executable named `name` on `PATH`.
pub(crate) fn find_on_path(name: &std::ffi::OsStr) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path_var = std::env::var_os("PATH")?;
    std::env::split_paths(&path_var)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join(name))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// Spawns `<path> --version` and waits for it, killing it after `timeout`. Codex writes
/// helper links under `$CODEX_HOME/tmp` even for `--version`: it runs with `HOME` and
/// `CODEX_HOME` in a temporary directory, so the user's `~/.codex` is never touched.
async fn run_version(path: &Path, timeout: Duration) -> Result<std::process::Output> {
    let shown = path.display();
    let home = tempfile::Builder::new()
        .prefix("codex-parity-probe-")
        .tempdir()
        .context("creating a home for `codex --version`")?;
    let mut attempt = 0;
    let child = loop {
        let spawned = tokio::process::Command::new(path)
            .arg("--version")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", home.path())
            .env("CODEX_HOME", home.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn();
        match spawned {
            Ok(child) => break child,
            // ETXTBSY: the file was just written and another thread's fork still holds it open for
            // writing. Transient.
            Err(e) if e.raw_os_error() == Some(26) && attempt < 20 => {
                attempt += 1;
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => {
                return Err(match e.kind() {
                    std::io::ErrorKind::NotFound => {
                        anyhow!(e).context(format!("Codex binary not found (or its interpreter is missing): {shown}"))
                    }
                    std::io::ErrorKind::PermissionDenied => anyhow!(e).context(format!(
                        "Codex binary is not executable (permission denied): {shown}; try `chmod +x {shown}`"
                    )),
                    _ => anyhow!(e).context(format!("cannot run `{shown} --version`")),
                });
            }
        }
    };
    match tokio::time::timeout(timeout, child.wait_with_output()).await {
        Ok(result) => result.with_context(|| format!("waiting for `{shown} --version`")),
        // Dropping the future drops the child, which kills it (kill_on_drop).
        Err(_) => bail!(
            "`{shown} --version` did not finish within {} s; the binary hangs",
            timeout.as_secs_f64()
        ),
    }
}

/// Extracts the version from `codex --version` output: `codex-cli 0.171.0` → `0.171.0`. A
/// pre-release suffix is kept (`codex-cli 0.172.0-alpha.1` → `0.172.0-alpha.1`); anything after the
/// version on the line is ignored.
pub fn parse_version_output(stdout: &str) -> Option<String> {
    stdout.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("codex-cli")?;
        let word = rest.split_whitespace().next()?;
        let word = word.strip_prefix('v').unwrap_or(word);
        versions::is_version(word).then(|| word.to_owned())
    })
}

/// `"\n<what> (last N lines):\n..."`, or an empty string if `text` is blank.
pub(crate) fn quote_tail(what: &str, text: &str, max_lines: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return String::new();
    }
    let tail = &lines[lines.len().saturating_sub(max_lines)..];
    let body: Vec<String> = tail
        .iter()
        .map(|l| format!("  {}", truncate(l, 400)))
        .collect();
    format!("\n{what} (last {} lines):\n{}", tail.len(), body.join("\n"))
}

/// At most `max` characters of `s`, with `…` if cut.
fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_owned()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// An executable shell script `dir/name` running `body`, with permission bits `mode`.
    pub(crate) fn script(dir: &Path, name: &str, body: &str, mode: u32) -> PathBuf {
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn label_names_the_version() {
        let b = CodexBinary {
            path: "/x/codex".into(),
            version: "0.171.0".into(),
        };
        assert_eq!(b.label(), "codex-0.171.0");
    }

    #[test]
    fn version_output_parsing() {
        let cases = [
            ("codex-cli 0.171.0\n", Some("0.171.0")),
            ("codex-cli 0.172.0-alpha.1\n", Some("0.172.0-alpha.1")),
            ("  codex-cli 0.131.0 (abc123)  ", Some("0.131.0")),
            ("WARN something\ncodex-cli 0.161.0\n", Some("0.161.0")),
            ("codex-cli v0.1.2", Some("0.1.2")),
            ("codex 0.171.0", None),
            ("codex-cli", None),
            ("codex-cli banana", None),
            ("", None),
        ];
        for (output, want) in cases {
            assert_eq!(parse_version_output(output).as_deref(), want, "{output:?}");
        }
    }

    #[tokio::test]
    async fn probe_reads_the_version() {
        let dir = tempfile::tempdir().unwrap();
        let path = script(dir.path(), "codex", "echo 'codex-cli 0.171.0'", 0o755);
        let b = probe(&path).await.unwrap();
        assert_eq!(b.version, "0.171.0");
        assert_eq!(b.path, path);
        assert_eq!(b.label(), "codex-0.171.0");
    }

    #[tokio::test]
    async fn probe_reports_failures() {
        let dir = tempfile::tempdir().unwrap();
        let failing = script(dir.path(), "fails", "echo boom >&2; exit 1", 0o755);
        let err = format!("{:#}", probe(&failing).await.unwrap_err());
        assert!(err.contains("failed") && err.contains("boom"), "{err}");

        let plain = script(dir.path(), "plain", "echo 'codex-cli 0.171.0'", 0o644);
        let err = format!("{:#}", probe(&plain).await.unwrap_err());
        assert!(err.contains("not executable"), "{err}");

        let err = format!(
            "{:#}",
            probe(&dir.path().join("missing")).await.unwrap_err()
        );
        assert!(err.contains("not found"), "{err}");

        let other = script(dir.path(), "other", "echo 'hello 1.2.3'", 0o755);
        let err = format!("{:#}", probe(&other).await.unwrap_err());
        assert!(
            err.contains("\"hello 1.2.3\"") && err.contains("codex-cli X.Y.Z"),
            "{err}"
        );

        let hangs = script(dir.path(), "hangs", "exec sleep 1000", 0o755);
        let started = std::time::Instant::now();
        let err = format!(
            "{:#}",
            probe_with_timeout(&hangs, Duration::from_millis(300))
                .await
                .unwrap_err()
        );
        assert!(err.contains("did not finish"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}
