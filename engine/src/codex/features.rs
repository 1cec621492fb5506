//! A codex binary's feature flags as `codex features list` prints them: one line per feature,
//! name, stage and state in aligned columns (`goals  stable  true`, `foo  under development
//! false`). Run in an empty private `CODEX_HOME`, the state is the feature's default. The
//! stages are `stable`, `experimental`, `under development`, `deprecated` and `removed`; a
//! legacy alias (`codex_hooks` for `hooks` from 0.129.0) is accepted by `--enable` but not
//! listed ([`alias_target`] finds what it stands for).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::codex::binaries::CodexBinary;
use crate::codex::private_run;

/// How long one `codex features list` may take.
const LIST_TIMEOUT: Duration = Duration::from_secs(20);

/// One feature of `codex features list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Feature {
    /// Its key (`goals`).
    pub name: String,
    /// Its stage as the CLI prints it (`stable`, `under development`, …).
    pub stage: String,
    /// Its state with an empty config: the default.
    pub default: bool,
}

impl Feature {
    /// Whether the stage says the feature is gone (`removed`) or going (`deprecated`).
    pub fn retired(&self) -> bool {
        matches!(self.stage.as_str(), "removed" | "deprecated")
    }
}

/// Reads the text of `codex features list`; a line that is not `NAME STAGE… true|false` is
/// an error naming it.
pub fn parse(text: &str) -> anyhow::Result<Vec<Feature>> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let words: Vec<&str> = line.split_whitespace().collect();
        let (Some(name), Some(state)) = (words.first(), words.last()) else {
            continue;
        };
        let default = match *state {
            "true" => true,
            "false" => false,
            _ => anyhow::bail!("not a feature line of `codex features list`: {line:?}"),
        };
        anyhow::ensure!(
            words.len() >= 3,
            "not a feature line of `codex features list`: {line:?}"
        );
        out.push(Feature {
            name: name.to_string(),
            stage: words[1..words.len() - 1].join(" "),
            default,
        });
    }
    Ok(out)
}

/// `codex ARGS… features list` of `binary` in an empty private home: `Ok(text)` when it exits
/// 0, `Err` with codex's own first error line otherwise (e.g. `Unknown feature flag: x`).
pub async fn list_with(
    binary: &CodexBinary,
    args: &[&str],
) -> anyhow::Result<Result<String, String>> {
    let mut all = args.to_vec();
    all.extend(["features", "list"]);
    let output = private_run::output(binary, &all, LIST_TIMEOUT).await?;
    if output.status.success() {
        return Ok(Ok(String::from_utf8_lossy(&output.stdout).into_owned()));
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    Ok(Err(error_line(&stderr)))
}

/// The first line of codex's stderr that reports an error (`Error: …`, `error: …`), else
/// its last non-empty line.
pub fn error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines
        .iter()
        .find(|l| l.starts_with("Error") || l.starts_with("error"))
        .or(lines.last())
        .map_or_else(String::new, |l| l.to_string())
}

/// The features of `binary` with their defaults (`codex features list` in an empty home).
pub async fn read(binary: &CodexBinary) -> anyhow::Result<Vec<Feature>> {
    match list_with(binary, &[]).await? {
        Ok(text) => parse(&text).with_context(|| format!("{}: features list", binary.label())),
        Err(e) => anyhow::bail!("{}: codex features list failed: {e}", binary.label()),
    }
}

/// What an unlisted feature name is to `binary`: `Ok(Some(target))` when `--disable NAME`
/// (or `--enable NAME`) is accepted and turns the listed feature `target` off (on): a
/// legacy alias; `Ok(None)` when accepted but nothing listed changes; `Err(message)` with
/// codex's refusal (`Unknown feature flag: NAME`) when it is not a feature at all.
pub async fn alias_target(
    binary: &CodexBinary,
    name: &str,
    defaults: &[Feature],
) -> anyhow::Result<Result<Option<String>, String>> {
    let before: BTreeMap<&str, bool> = defaults
        .iter()
        .map(|f| (f.name.as_str(), f.default))
        .collect();
    for flag in ["--disable", "--enable"] {
        let text = match list_with(binary, &[flag, name]).await? {
            Ok(text) => text,
            Err(refusal) => return Ok(Err(refusal)),
        };
        let after = parse(&text)?;
        if let Some(changed) = after
            .iter()
            .find(|f| before.get(f.name.as_str()).is_some_and(|d| *d != f.default))
        {
            return Ok(Ok(Some(changed.name.clone())));
        }
    }
    Ok(Ok(None))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_of_one_or_two_words_and_the_default() {
        let text = "goals                                    stable             true\n\
                    agent_message_board                      under development  false\n\
                    use_legacy_landlock                      deprecated         false\n";
        let features = parse(text).unwrap();
        assert_eq!(features.len(), 3);
        assert_eq!(
            features[1],
            Feature {
                name: "agent_message_board".into(),
                stage: "under development".into(),
                default: false
            }
        );
        assert!(features[0].default && !features[0].retired() && features[2].retired());
        assert!(parse("goals stable maybe\n").is_err());
        assert!(parse("goals true\n").is_err());
    }

    #[test]
    fn the_error_line_is_codexs_own() {
        let stderr = "WARNING: proceeding, even though …\nError: Unknown feature flag: x\n";
        assert_eq!(error_line(stderr), "Error: Unknown feature flag: x");
        assert_eq!(error_line("a\nb\n\n"), "b");
    }
}
