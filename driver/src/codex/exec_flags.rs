//! What `codex exec` accepts, read from the binary's own help: the long flags of
//! `codex exec --help`, its subcommands, and the long flags of `codex exec resume --help`.
//! Group X decides "not applicable" from these, never from a version number.
//!
//! The two help texts are read once per binary: for a binary installed in the cache they
//! are kept next to it (`<key>/exec-help/{exec,resume}.txt`, see
//! [`crate::codex::fingerprint::cache_dir`]), written aside and renamed so that a reader
//! sees a whole file or none; a binary from elsewhere runs `--help` again in each process
//! (a few milliseconds).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use crate::codex::binaries::CodexBinary;
use crate::codex::fingerprint;

/// How long one `codex exec … --help` may take.
const HELP_TIMEOUT: Duration = Duration::from_secs(10);

/// The flags and subcommands of `codex exec`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecFlags {
    /// The long flags of `codex exec --help` (`--json`, `--output-schema`, …).
    pub flags: BTreeSet<String>,
    /// The subcommands of `codex exec --help` (`resume`, `review`, …; `help` left out).
    pub commands: BTreeSet<String>,
    /// The long flags of `codex exec resume --help` (`--last`, …); empty without `resume`.
    pub resume_flags: BTreeSet<String>,
}

impl ExecFlags {
    /// Reads both help texts of `binary`, from the cache when they are there.
    pub async fn detect(binary: &CodexBinary) -> anyhow::Result<ExecFlags> {
        let exec = help_text(binary, "exec").await?;
        let mut flags = ExecFlags::parse(&exec);
        if flags.commands.contains("resume") {
            flags.resume_flags = ExecFlags::parse(&help_text(binary, "resume").await?).flags;
        }
        Ok(flags)
    }

    /// The flags and subcommands one help text lists (`resume_flags` left empty).
    pub fn parse(help: &str) -> ExecFlags {
        let mut out = ExecFlags::default();
        let mut in_commands = false;
        for line in help.lines() {
            let trimmed = line.trim_start();
            if !line.starts_with(' ') {
                in_commands = trimmed.starts_with("Commands:");
                continue;
            }
            if trimmed.starts_with('-') {
                // `-c, --config <key=value>`, `--json`, `-i, --image <FILE>...`
                out.flags.extend(
                    trimmed
                        .split([' ', ','])
                        .filter(|t| t.starts_with("--") && t.len() > 2)
                        .map(|t| t.trim_end_matches("...").to_string()),
                );
            } else if in_commands
                && let Some(word) = trimmed.split_whitespace().next()
                && word != "help"
            {
                out.commands.insert(word.to_string());
            }
        }
        out
    }

    /// `Ok` when `codex exec` lists every flag of `flags`, else the reason naming the
    /// missing ones.
    pub fn require(&self, flags: &[&str]) -> Result<(), String> {
        missing("codex exec --help", &self.flags, flags)
    }

    /// `Ok` when `codex exec resume` exists and lists every flag of `flags`.
    pub fn require_resume(&self, flags: &[&str]) -> Result<(), String> {
        if !self.commands.contains("resume") {
            return Err("codex exec --help lists no resume subcommand".into());
        }
        missing("codex exec resume --help", &self.resume_flags, flags)
    }
}

/// `Ok` when `listed` has every flag of `wanted`, else a reason naming `what` and the rest.
fn missing(what: &str, listed: &BTreeSet<String>, wanted: &[&str]) -> Result<(), String> {
    let absent: Vec<&str> = wanted
        .iter()
        .copied()
        .filter(|f| !listed.contains(*f))
        .collect();
    if absent.is_empty() {
        Ok(())
    } else {
        Err(format!("{what} lists no {}", absent.join(", ")))
    }
}

/// The help text of `codex exec --help` (`which` `exec`) or `codex exec resume --help`
/// (`resume`): cached for a binary of the cache, run otherwise.
async fn help_text(binary: &CodexBinary, which: &str) -> anyhow::Result<String> {
    let Some(dir) = fingerprint::cache_dir(binary) else {
        return run_help(binary, which, HELP_TIMEOUT).await;
    };
    let path = dir.join("exec-help").join(format!("{which}.txt"));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok(text);
    }
    let text = run_help(binary, which, HELP_TIMEOUT).await?;
    if let Err(e) = store(&path, &text) {
        eprintln!(
            "codex-parity: {}: its exec help is not cached ({e:#})",
            binary.label()
        );
    }
    Ok(text)
}

/// Writes `text` to `path` through a file beside it, renamed into place.
fn store(path: &Path, text: &str) -> anyhow::Result<()> {
    let parent = path.parent().context("a cache path without a directory")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let aside = tempfile::NamedTempFile::new_in(parent)
        .with_context(|| format!("creating a scratch file in {}", parent.display()))?;
    std::fs::write(aside.path(), text)
        .with_context(|| format!("writing {}", aside.path().display()))?;
    aside
        .persist(path)
        .with_context(|| format!("moving the help text to {}", path.display()))?;
    Ok(())
}

/// Runs `codex exec --help` or `codex exec resume --help` with a home of its own, in a
/// process group of its own that is killed after it (a binary that hangs leaves nothing).
async fn run_help(binary: &CodexBinary, which: &str, limit: Duration) -> anyhow::Result<String> {
    let home = tempfile::tempdir().context("creating a home for codex exec --help")?;
    let mut cmd = tokio::process::Command::new(&binary.path);
    cmd.arg("exec");
    if which == "resume" {
        cmd.arg("resume");
    }
    cmd.arg("--help")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODEX_HOME", home.path())
        .env("HOME", home.path())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let shown = format!(
        "{} exec{} --help",
        binary.label(),
        if which == "resume" { " resume" } else { "" }
    );
    let child = cmd.spawn().with_context(|| format!("cannot run {shown}"))?;
    let group = child
        .id()
        .and_then(|p| rustix::process::Pid::from_raw(p as i32));
    let output = tokio::time::timeout(limit, child.wait_with_output()).await;
    if let Some(group) = group {
        // What it started goes with it, whether it answered or hung.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
    let output = output
        .map_err(|_| anyhow::anyhow!("{shown} took over {limit:?}"))?
        .with_context(|| format!("cannot run {shown}"))?;
    anyhow::ensure!(
        output.status.success(),
        "{shown} failed ({}): {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "Run Codex non-interactively

Usage: codex exec [OPTIONS] [PROMPT]

Commands:
  resume  Resume a previous session by id or pick the most recent with --last
  review  Run a code review against the current repository
  help    Print this message or the help of the given subcommand(s)

Arguments:
  [PROMPT]
          Initial instructions for the agent. Use `-` for stdin, or --last

Options:
  -c, --config <key=value>
          Override a configuration value, e.g. `--config x=1`
  -i, --image <FILE>...
          Optional image(s) to attach to the initial prompt
      --json
          Print events to stdout as JSONL
";

    #[test]
    fn flags_and_commands_come_from_their_sections() {
        let flags = ExecFlags::parse(HELP);
        let names: Vec<&str> = flags.flags.iter().map(String::as_str).collect();
        assert_eq!(names, ["--config", "--image", "--json"]);
        let commands: Vec<&str> = flags.commands.iter().map(String::as_str).collect();
        assert_eq!(commands, ["resume", "review"]);
        assert_eq!(flags.require(&["--json"]), Ok(()));
        assert_eq!(
            flags.require(&["--json", "--output-schema", "--oss"]),
            Err("codex exec --help lists no --output-schema, --oss".to_string())
        );
        assert_eq!(
            flags.require_resume(&["--last"]),
            Err("codex exec resume --help lists no --last".to_string())
        );
        let none = ExecFlags::default();
        assert_eq!(
            none.require_resume(&[]),
            Err("codex exec --help lists no resume subcommand".to_string())
        );
    }

    #[tokio::test]
    async fn a_binary_that_hangs_on_help_is_stopped_with_what_it_started() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let (path, pid_file) = (dir.path().join("codex"), dir.path().join("pid"));
        let script = format!(
            "#!/bin/sh\nsleep 601 &\necho $! > {}\nexec sleep 600\n",
            pid_file.display()
        );
        std::fs::write(&path, script).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let binary = CodexBinary {
            path,
            version: "0.0.0".into(),
        };
        let err = run_help(&binary, "exec", Duration::from_millis(500))
            .await
            .unwrap_err();
        assert!(format!("{err:#}").contains("took over"), "{err:#}");
        let pid = std::fs::read_to_string(&pid_file).unwrap();
        let gone = (0..50).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
            // Gone, or a zombie waiting for init to reap it.
            stat.map_or(true, |s| s.split_whitespace().nth(2) == Some("Z"))
        });
        assert!(
            gone,
            "the help run's background process {} is still alive",
            pid.trim()
        );
    }
}
