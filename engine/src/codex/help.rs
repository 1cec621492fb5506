//! What a codex command's own `--help` lists: its long flags, its subcommands, and the text
//! under each flag. Scenarios decide "not applicable" from these (with the schema), never
//! from a version number: `codex exec --help` for group X ([`crate::codex::exec_flags`]),
//! `codex app-server --help` for the listeners of group I
//! ([`crate::codex::app_server_flags`]).
//!
//! A help text is read once per binary: for a binary installed in the cache it is kept next
//! to it (`<key>/help/<command words joined by ->.txt`, see
//! [`crate::codex::fingerprint::cache_dir`]), written aside and renamed so that a reader sees
//! a whole file or none; a binary from elsewhere runs `--help` again in each process (a few
//! milliseconds).

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;

use crate::codex::binaries::CodexBinary;
use crate::codex::fingerprint;
use crate::codex::private_run;

/// How long one `codex … --help` may take.
const HELP_TIMEOUT: Duration = Duration::from_secs(10);

/// One command's help: what it lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Help {
    /// The long flags (`--json`, `--listen`, …).
    pub flags: BTreeSet<String>,
    /// The subcommands (`resume`, `daemon`, …; `help` left out).
    pub commands: BTreeSet<String>,
    /// The whole text, for what a flag's description says ([`Help::flag_text`]).
    pub text: String,
}

impl Help {
    /// Reads `codex WORDS… --help` of `binary`, from the cache when it is there.
    pub async fn read(binary: &CodexBinary, words: &[&str]) -> anyhow::Result<Help> {
        Ok(Help::parse(&help_text(binary, words).await?))
    }

    /// The flags and subcommands one help text lists.
    pub fn parse(help: &str) -> Help {
        let mut out = Help {
            text: help.to_string(),
            ..Help::default()
        };
        let mut in_commands = false;
        for line in help.lines() {
            let trimmed = line.trim_start();
            if !line.starts_with(' ') {
                in_commands = trimmed.starts_with("Commands:");
                continue;
            }
            if trimmed.starts_with('-') {
                // `-c, --config <key=value>`, `--json`, `-i, --image <FILE>...`
                out.flags.extend(flag_names(trimmed));
            } else if in_commands
                && let Some(word) = trimmed.split_whitespace().next()
                && word != "help"
            {
                out.commands.insert(word.to_string());
            }
        }
        out
    }

    /// The description under `flag` (the lines after its own, up to the next flag), joined
    /// by spaces; `None` when the help lists no such flag.
    pub fn flag_text(&self, flag: &str) -> Option<String> {
        let mut lines = self.text.lines();
        lines.find(|l| {
            let t = l.trim_start();
            t.starts_with('-') && flag_names(t).any(|f| f == flag)
        })?;
        let body: Vec<&str> = lines
            .take_while(|l| !l.trim_start().starts_with('-') && l.starts_with(' '))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        Some(body.join(" "))
    }

    /// `Ok` when every flag of `wanted` is listed, else the reason naming `what` (the command,
    /// e.g. `codex exec --help`) and the missing ones.
    pub fn require(&self, what: &str, wanted: &[&str]) -> Result<(), String> {
        let absent: Vec<&str> = wanted
            .iter()
            .copied()
            .filter(|f| !self.flags.contains(*f))
            .collect();
        if absent.is_empty() {
            Ok(())
        } else {
            Err(format!("{what} lists no {}", absent.join(", ")))
        }
    }
}

/// The long flag names of a flag line (`-c, --config <key=value>` gives `--config`).
fn flag_names(line: &str) -> impl Iterator<Item = String> + '_ {
    line.split([' ', ','])
        .take_while(|t| !t.starts_with('<') || t.starts_with("--"))
        .filter(|t| t.starts_with("--") && t.len() > 2)
        .map(|t| t.trim_end_matches("...").to_string())
}

/// The help text of `codex WORDS… --help`: cached for a binary of the cache, run otherwise.
async fn help_text(binary: &CodexBinary, words: &[&str]) -> anyhow::Result<String> {
    let Some(dir) = fingerprint::cache_dir(binary) else {
        return run_help(binary, words, HELP_TIMEOUT).await;
    };
    let path = dir.join("help").join(format!("{}.txt", words.join("-")));
    if let Ok(text) = std::fs::read_to_string(&path) {
        return Ok(text);
    }
    let text = run_help(binary, words, HELP_TIMEOUT).await?;
    if let Err(e) = store(&path, &text) {
        eprintln!(
            "codex-parity: {}: the help of codex {} is not cached ({e:#})",
            binary.label(),
            words.join(" ")
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

/// Runs `codex WORDS… --help` ([`crate::codex::private_run`]): its text when it exits 0.
async fn run_help(binary: &CodexBinary, words: &[&str], limit: Duration) -> anyhow::Result<String> {
    let mut args = words.to_vec();
    args.push("--help");
    let output = private_run::output(binary, &args, limit).await?;
    anyhow::ensure!(
        output.status.success(),
        "{} {} failed ({}): {}",
        binary.label(),
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const HELP: &str = "Run the app server

Usage: codex app-server [OPTIONS] [COMMAND]

Commands:
  daemon                Manage the local app-server daemon
  help                  Print this message or the help of the given subcommand(s)

Options:
  -c, --config <key=value>
          Override a configuration value, e.g. `--config x=1`

      --listen <URL>
          Transport endpoint URL. Supported values: `stdio://` (default), `unix://`,
          `ws://IP:PORT`, `off`
          
          [default: stdio://]

      --ws-auth <MODE>
          Websocket auth mode

  -i, --image <FILE>...
          Optional image(s)
";

    #[test]
    fn flags_commands_and_a_flags_text_come_from_their_sections() {
        let help = Help::parse(HELP);
        let flags: Vec<&str> = help.flags.iter().map(String::as_str).collect();
        assert_eq!(flags, ["--config", "--image", "--listen", "--ws-auth"]);
        let commands: Vec<&str> = help.commands.iter().map(String::as_str).collect();
        assert_eq!(commands, ["daemon"]);
        assert_eq!(
            help.flag_text("--listen").as_deref(),
            Some(
                "Transport endpoint URL. Supported values: `stdio://` (default), `unix://`, \
                 `ws://IP:PORT`, `off` [default: stdio://]"
            )
        );
        assert_eq!(help.flag_text("--nothing"), None);
        assert_eq!(
            help.require("codex app-server --help", &["--listen"]),
            Ok(())
        );
        assert_eq!(
            help.require("codex app-server --help", &["--listen", "--stdio", "--oss"]),
            Err("codex app-server --help lists no --stdio, --oss".to_string())
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
        let err = run_help(&binary, &["exec"], Duration::from_millis(500))
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
