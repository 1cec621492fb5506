//! A codex binary's command line, read from `codex completion fish`: every subcommand (two
//! levels deep: `exec`, `exec resume`) and every flag of each, hidden ones included, with
//! its short form, whether it takes a value, and the values clap accepts when it lists them
//! (`--sandbox read-only|workspace-write|danger-full-access`). It is the most complete list
//! the binary prints of itself; `--help` leaves hidden flags out.
//!
//! The fish script is a list of `complete -c codex -n CONDITION OPTIONS` lines. The condition
//! names the command (`__fish_codex_needs_command`: the top level; `__fish_codex_using_subcommand
//! exec; and not __fish_seen_subcommand_from …`: `exec` itself; `…; and
//! __fish_seen_subcommand_from resume`: `exec resume`). A line with `-l`/`-s` is a flag (`-r`:
//! it takes a value; `-a "v\t'…'\n…"`: its values); one with only `-a NAME` is a subcommand.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codex::binaries::CodexBinary;
use crate::codex::private_run;

/// How long `codex completion fish` may take.
const TIMEOUT: Duration = Duration::from_secs(20);

/// One flag of one command.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagSpec {
    /// Its short form (`c` for `-c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub short: Option<char>,
    /// Whether it takes a value.
    pub takes_value: bool,
    /// The values clap accepts, when it lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// One command: its flags (by long name, `--config`) and its subcommands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommandSpec {
    /// Long flag (`--sandbox`) -> what it takes.
    pub flags: BTreeMap<String, FlagSpec>,
    /// Its subcommands (`help` left out).
    pub subcommands: BTreeSet<String>,
}

impl CommandSpec {
    /// The long name of a flag given as `-c` or `--config`.
    pub fn long_of(&self, flag: &str) -> Option<String> {
        if flag.starts_with("--") {
            return self.flags.contains_key(flag).then(|| flag.to_string());
        }
        let short = flag.strip_prefix('-')?.chars().next()?;
        self.flags
            .iter()
            .find(|(_, f)| f.short == Some(short))
            .map(|(name, _)| name.clone())
    }
}

/// Every command of a binary: `""` is `codex` itself, `"exec"`, `"exec resume"`.
pub type Commands = BTreeMap<String, CommandSpec>;

/// The commands of `binary`, from `codex completion fish`.
pub async fn read(binary: &CodexBinary) -> anyhow::Result<Commands> {
    let output = private_run::output(binary, &["completion", "fish"], TIMEOUT).await?;
    anyhow::ensure!(
        output.status.success(),
        "{} completion fish failed ({}): {}",
        binary.label(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let commands = parse(&String::from_utf8_lossy(&output.stdout));
    anyhow::ensure!(
        commands.contains_key(""),
        "{}: codex completion fish listed no top-level flags",
        binary.label()
    );
    Ok(commands)
}

/// Reads a fish completion script.
pub fn parse(script: &str) -> Commands {
    let mut commands = Commands::new();
    for words in statements(script) {
        if words.first().map(String::as_str) != Some("complete") {
            continue;
        }
        let mut condition = None;
        let (mut long, mut short, mut takes_value, mut args) = (None, None, false, None);
        let mut i = 1;
        while i < words.len() {
            let next = words.get(i + 1).cloned();
            match words[i].as_str() {
                "-n" => condition = next,
                "-l" => long = next,
                "-s" => short = next.and_then(|s| s.chars().next()),
                "-a" => args = next,
                "-d" | "-c" => {}
                "-r" => {
                    takes_value = true;
                    i += 1;
                    continue;
                }
                _ => {
                    i += 1;
                    continue;
                }
            }
            i += 2;
        }
        let Some(path) = condition.as_deref().and_then(command_path) else {
            continue;
        };
        let spec = commands.entry(path).or_default();
        let values: Vec<String> = args
            .as_deref()
            .filter(|a| !a.starts_with('('))
            .map(|a| {
                a.lines()
                    .filter_map(|l| l.split("\\t").next()?.split('\t').next())
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        match (long, short) {
            (None, None) => {
                for name in values {
                    if name != "help" {
                        spec.subcommands.insert(name);
                    }
                }
            }
            (long, short) => {
                let name = match (long, short) {
                    (Some(l), _) => format!("--{l}"),
                    (None, Some(s)) => format!("-{s}"),
                    (None, None) => continue,
                };
                spec.flags.insert(
                    name,
                    FlagSpec {
                        short,
                        takes_value: takes_value || !values.is_empty(),
                        values,
                    },
                );
            }
        }
    }
    commands
}

/// The command a `-n` condition names: `""`, `"exec"` or `"exec resume"`; `None` for the
/// `help` command's own completions and conditions not of this shape.
fn command_path(condition: &str) -> Option<String> {
    if condition == "__fish_codex_needs_command" {
        return Some(String::new());
    }
    let rest = condition.strip_prefix("__fish_codex_using_subcommand ")?;
    let (first, tail) = rest.split_once(';').unwrap_or((rest, ""));
    let first = first.trim();
    if first == "help" {
        return None;
    }
    let tail = tail.trim().strip_prefix("and ").unwrap_or("").trim();
    match tail.strip_prefix("__fish_seen_subcommand_from ") {
        Some(second) => {
            let second = second.split_whitespace().next()?;
            (second != "help").then(|| format!("{first} {second}"))
        }
        None => Some(first.to_string()),
    }
}

/// The statements of a fish script, each as its words with quotes removed (a quoted word may
/// span lines).
fn statements(script: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    let (mut words, mut word, mut in_word) = (Vec::new(), String::new(), false);
    let mut chars = script.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            // A comment (`# Print an optspec … cmd's options`) runs to the end of its line.
            '#' if !in_word => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        break;
                    }
                }
                if !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            '\'' | '"' => {
                in_word = true;
                while let Some(q) = chars.next() {
                    if q == '\\' && matches!(chars.peek(), Some(&n) if n == c || n == '\\') {
                        word.extend(chars.next());
                    } else if q == c {
                        break;
                    } else {
                        word.push(q);
                    }
                }
            }
            '\n' | ' ' | '\t' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
                if c == '\n' && !words.is_empty() {
                    out.push(std::mem::take(&mut words));
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    if !words.is_empty() {
        out.push(words);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of codex 0.171.0's `completion fish`, as it prints them.
    const FISH: &str = r#"# Print an optspec for argparse to handle cmd's options.
function __fish_codex_needs_command
	set -l cmd (commandline -opc)
end
complete -c codex -n "__fish_codex_needs_command" -s c -l config -d 'Override a configuration value' -r
complete -c codex -n "__fish_codex_needs_command" -s a -l ask-for-approval -d 'Configure when the model requires human approval' -r -f -a "on-request\t'The model decides when to ask the user for approval'
never\t'Never ask for user approval Execution failures are immediately returned to the model'"
complete -c codex -n "__fish_codex_needs_command" -s s -l sandbox -d 'Select' -r -f -a "untrusted\t'Only run "trusted" commands'
on-failure\t'DEPRECATED'"
complete -c codex -n "__fish_codex_needs_command" -l add-dir -d 'Additional directories' -r -f -a "(__fish_complete_directories)"
complete -c codex -n "__fish_codex_needs_command" -l oss -d 'Use open-source provider'
complete -c codex -n "__fish_codex_needs_command" -a "exec" -d 'Run Codex non-interactively'
complete -c codex -n "__fish_codex_needs_command" -a "help" -d 'Print this message'
complete -c codex -n "__fish_codex_using_subcommand exec; and not __fish_seen_subcommand_from resume fork review help" -l full-auto -d 'Legacy compatibility trap for the removed `--full-auto` flag'
complete -c codex -n "__fish_codex_using_subcommand exec; and not __fish_seen_subcommand_from resume fork review help" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c codex -n "__fish_codex_using_subcommand exec; and not __fish_seen_subcommand_from resume fork review help" -a "resume" -d 'Resume a previous session'
complete -c codex -n "__fish_codex_using_subcommand exec; and __fish_seen_subcommand_from resume" -l last -d 'Resume the most recent session'
complete -c codex -n "__fish_codex_using_subcommand help; and not __fish_seen_subcommand_from exec" -f -a "exec" -d 'Run Codex'
"#;

    #[test]
    fn commands_flags_values_and_subcommands() {
        let commands = parse(FISH);
        let paths: Vec<&str> = commands.keys().map(String::as_str).collect();
        assert_eq!(paths, ["", "exec", "exec resume"]);
        let top = &commands[""];
        assert_eq!(
            top.flags["--ask-for-approval"],
            FlagSpec {
                short: Some('a'),
                takes_value: true,
                values: vec!["on-request".into(), "never".into()],
            }
        );
        assert!(top.flags["--add-dir"].takes_value && top.flags["--add-dir"].values.is_empty());
        assert_eq!(top.flags["--sandbox"].values, ["untrusted", "on-failure"]);
        assert!(!top.flags["--oss"].takes_value);
        assert_eq!(top.long_of("-a").as_deref(), Some("--ask-for-approval"));
        assert_eq!(top.long_of("--config").as_deref(), Some("--config"));
        assert_eq!(top.long_of("--nope"), None);
        assert_eq!(top.subcommands.iter().collect::<Vec<_>>(), ["exec"]);
        let exec = &commands["exec"];
        assert!(exec.flags.contains_key("--full-auto") && exec.flags.contains_key("--help"));
        assert!(exec.subcommands.contains("resume"));
        assert!(commands["exec resume"].flags.contains_key("--last"));
    }
}
