//! What `codex exec` accepts, read from the binary's own help (see [`crate::codex::help`]):
//! the long flags of `codex exec --help`, its subcommands, and the long flags of `codex exec
//! resume --help`. Group X decides "not applicable" from these, never from a version number.

use crate::codex::binaries::CodexBinary;
use crate::codex::help::Help;

/// The help of `codex exec` and of `codex exec resume`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecFlags {
    /// `codex exec --help`: its flags (`--json`, `--output-schema`, …) and subcommands
    /// (`resume`, `review`, …).
    pub exec: Help,
    /// `codex exec resume --help` (`--last`, …); empty without `resume`.
    pub resume: Help,
}

impl ExecFlags {
    /// Reads both help texts of `binary`, from the cache when they are there.
    pub async fn detect(binary: &CodexBinary) -> anyhow::Result<ExecFlags> {
        let exec = Help::read(binary, &["exec"]).await?;
        let resume = if exec.commands.contains("resume") {
            Help::read(binary, &["exec", "resume"]).await?
        } else {
            Help::default()
        };
        Ok(ExecFlags { exec, resume })
    }

    /// `Ok` when `codex exec` lists every flag of `flags`, else the reason naming the
    /// missing ones.
    pub fn require(&self, flags: &[&str]) -> Result<(), String> {
        self.exec.require("codex exec --help", flags)
    }

    /// `Ok` when `codex exec resume` exists and lists every flag of `flags`.
    pub fn require_resume(&self, flags: &[&str]) -> Result<(), String> {
        if !self.exec.commands.contains("resume") {
            return Err("codex exec --help lists no resume subcommand".into());
        }
        self.resume.require("codex exec resume --help", flags)
    }
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
        let flags = ExecFlags {
            exec: Help::parse(HELP),
            resume: Help::default(),
        };
        let names: Vec<&str> = flags.exec.flags.iter().map(String::as_str).collect();
        assert_eq!(names, ["--config", "--image", "--json"]);
        let commands: Vec<&str> = flags.exec.commands.iter().map(String::as_str).collect();
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
}
