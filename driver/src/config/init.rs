//! `codex-parity config init`: a profile written from an existing codex home (its
//! `config.toml` and `NAME.config.toml` profile files) and the command line the integrator
//! launches codex with.
//!
//! Secrets never reach the profile: a setting whose key names one (`…token…`, `…secret…`,
//! `…password…`, `…api_key…`, `…bearer…`, `authorization`, `cookie`, and every value of an
//! MCP server's `env` and `http_headers`) has its value replaced by `"<redacted>"`, in the
//! files and in `-c` overrides alike, and each is listed for the user; `auth.json` and the
//! other files of the home are not read.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::Value;

use crate::config::profile::{self, Profile};

/// What a redacted value becomes.
pub const REDACTED: &str = "\"<redacted>\"";

/// A profile's text, and what was left out of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The profile.
    pub text: String,
    /// The settings whose values were redacted (`config.toml: mcp_servers.x.env.TOKEN`).
    pub redacted: Vec<String>,
    /// The files of the home that were copied.
    pub copied: Vec<String>,
}

/// Writes a profile from the home `dir` and `args` (what follows the codex program).
pub fn profile_from(dir: &Path, args: &[String]) -> anyhow::Result<Written> {
    anyhow::ensure!(
        dir.is_dir(),
        "{} is not a directory: --codex-home names a codex home (CODEX_HOME, usually ~/.codex)",
        dir.display()
    );
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n == "config.toml" || n.ends_with(".config.toml"))
        .collect();
    names.sort_by_key(|n| (n != "config.toml", n.clone()));
    let mut redacted = Vec::new();
    let mut text = format!(
        "# An integrator profile for `codex-parity config check` (docs/config.md), written by\n\
         # `codex-parity config init` from {}.\n\
         # Keep it next to your code and make it say what your program does.\n\n",
        dir.display()
    );
    let args: Vec<String> = args
        .iter()
        .enumerate()
        .map(|(i, a)| redact_arg(args, i, a, &mut redacted))
        .collect();
    let shown = if args.is_empty() {
        vec!["app-server".to_string()]
    } else {
        args
    };
    let quoted: Vec<String> = shown.iter().map(|a| basic(a)).collect();
    let _ = writeln!(
        text,
        "# What follows the codex program on your command line."
    );
    let _ = writeln!(text, "args = [{}]\n", quoted.join(", "));
    text.push_str(
        "# Paths your launcher expects inside the npm package @openai/codex-linux-x64, e.g.\n\
         # package = [\"vendor/x86_64-unknown-linux-musl/bin/codex\"]\n\n",
    );
    if !names.is_empty() {
        text.push_str("[home]\n");
    }
    for name in &names {
        let path = dir.join(name);
        let body = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let body = redact_file(name, &body, &mut redacted);
        let _ = writeln!(text, "{} = {}", basic(name), multiline(&body));
    }
    text.push_str(
        "\n# The params your program sends with thread/start, e.g.\n\
         # [thread_start]\n\
         # approvalPolicy = \"on-request\"\n\
         # sandbox = \"workspace-write\"\n",
    );
    // What we write must be a profile we can read.
    Profile::parse(Path::new("generated.toml"), &text).map_err(|e| {
        anyhow::anyhow!(
            "the profile written from {} does not read back: {e}",
            dir.display()
        )
    })?;
    Ok(Written {
        text,
        redacted,
        copied: names,
    })
}

/// Writes `written` to `out` (refusing to overwrite), or returns it for stdout.
pub fn write(out: Option<&PathBuf>, written: &Written) -> anyhow::Result<()> {
    let Some(path) = out else {
        print!("{}", written.text);
        return Ok(());
    };
    anyhow::ensure!(
        !path.exists(),
        "{} exists: choose another --out, or remove it first",
        path.display()
    );
    std::fs::write(path, &written.text).with_context(|| format!("writing {}", path.display()))
}

/// Whether a dotted key holds a secret.
pub fn secret_key(key: &str) -> bool {
    let k = key.to_lowercase();
    let last = k.rsplit('.').next().unwrap_or(&k);
    let parts: Vec<&str> = k.split('.').collect();
    let in_map = parts
        .windows(2)
        .any(|w| matches!(w[0], "env" | "http_headers") && !w[1].is_empty() && parts.len() > 2);
    in_map
        || [
            "token",
            "secret",
            "password",
            "passwd",
            "api_key",
            "apikey",
            "bearer",
            "authorization",
            "cookie",
            "credential",
        ]
        .iter()
        .any(|s| last.contains(s))
}

/// Whether a config file's leaf holds a secret: a secret key, or a whole `env` or
/// `http_headers` table.
fn secret_leaf(key: &str) -> bool {
    secret_key(key) || key.ends_with(".env") || key.ends_with(".http_headers")
}

/// The secret values a profile holds, each with where it is (the same keys [`write`]'s
/// profiles redact): `-c` overrides of secret keys, and the home files' secret leaves (an
/// `env` or `http_headers` table's every value), for what shows the profile to redact.
pub fn secret_values(profile: &Profile) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let args: Vec<String> = profile.args.iter().map(|a| a.value.clone()).collect();
    for i in 0..args.len() {
        if let Some((_, key, value)) = secret_override(&args, i) {
            let value = value.trim().trim_matches(|c| c == '"' || c == '\'');
            out.push((value.to_string(), format!("args: -c {key}")));
        }
    }
    for file in &profile.home {
        for leaf in profile::leaves(&file.text).unwrap_or_default() {
            if !secret_leaf(&leaf.key) {
                continue;
            }
            let values: Vec<&Value> = match &leaf.value {
                Value::Object(map) => map.values().collect(),
                value => vec![value],
            };
            for value in values.into_iter().filter_map(Value::as_str) {
                out.push((value.to_string(), format!("{}: {}", file.name, leaf.key)));
            }
        }
    }
    out.retain(|(value, _)| !value.is_empty());
    out
}

/// A config file's text with its secret values replaced (lines kept).
fn redact_file(name: &str, text: &str, redacted: &mut Vec<String>) -> String {
    let Ok(leaves) = profile::leaves(text) else {
        return text.to_string();
    };
    let mut out = text.to_string();
    // From the end, so that earlier offsets stay right.
    for leaf in leaves.iter().rev() {
        if !secret_leaf(&leaf.key) || !leaf.value.is_string() && !leaf.value.is_object() {
            continue;
        }
        let raw_start = leaf.span.end - leaf.raw.len();
        if out.get(raw_start..leaf.span.end) != Some(leaf.raw.as_str()) {
            continue;
        }
        let replacement = if leaf.value.is_object() {
            let keys: Vec<String> = leaf
                .value
                .as_object()
                .map(|m| {
                    m.keys()
                        .map(|k| format!("{} = {REDACTED}", bare(k)))
                        .collect()
                })
                .unwrap_or_default();
            format!("{{ {} }}", keys.join(", "))
        } else {
            REDACTED.to_string()
        };
        out.replace_range(raw_start..leaf.span.end, &replacement);
        redacted.push(format!("{name}: {}", leaf.key));
    }
    redacted.sort();
    out
}

/// Argument `i` of `args` when it is a `-c` (or `--config=`) override of a secret key: its
/// prefix as written (`--config=` or none), the key (trimmed) and the value as written.
fn secret_override(args: &[String], i: usize) -> Option<(&'static str, &str, &str)> {
    let arg = args[i].as_str();
    let after_c = i > 0 && matches!(args[i - 1].as_str(), "-c" | "--config");
    let (prefix, body) = match arg.strip_prefix("--config=") {
        Some(b) => ("--config=", b),
        None if after_c => ("", arg),
        None => return None,
    };
    let (key, value) = body.split_once('=')?;
    secret_key(key.trim()).then(|| (prefix, key.trim(), value))
}

/// An argument, its value redacted when it is a `-c` override of a secret key.
fn redact_arg(args: &[String], i: usize, arg: &str, redacted: &mut Vec<String>) -> String {
    match secret_override(args, i) {
        Some((prefix, key, _)) => {
            redacted.push(format!("args: -c {key}"));
            let written = arg[prefix.len()..].split_once('=').map_or(key, |(k, _)| k);
            format!("{prefix}{written}={REDACTED}")
        }
        None => arg.to_string(),
    }
}

/// A TOML key: bare when it can be.
fn bare(k: &str) -> String {
    let plain = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain { k.to_string() } else { basic(k) }
}

/// A TOML basic string.
fn basic(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A file's text as a TOML multi-line string: literal (`'''`) when it can be, so every line
/// stays as it is in the file.
fn multiline(text: &str) -> String {
    let body = if text.ends_with('\n') || text.is_empty() {
        text.to_string()
    } else {
        format!("{text}\n")
    };
    if !body.contains("'''") && !body.contains('\r') {
        return format!("'''\n{body}'''");
    }
    let escaped = body
        .replace('\\', "\\\\")
        .replace("\"\"\"", "\\\"\\\"\\\"")
        .replace('\r', "\\r");
    format!("\"\"\"\n{escaped}\"\"\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_becomes_a_profile_without_its_secrets() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "model = \"o3\"\nexperimental_bearer_token = \"sk-live-123\"\n\
             [mcp_servers.db]\ncommand = \"db-mcp\"\nenv = { DB_PASSWORD = \"hunter2\" }\n",
        )
        .unwrap();
        std::fs::write(
            home.path().join("work.config.toml"),
            "model_reasoning_effort = \"high\"\n",
        )
        .unwrap();
        std::fs::write(
            home.path().join("auth.json"),
            "{\"OPENAI_API_KEY\": \"sk-x\"}",
        )
        .unwrap();
        let args: Vec<String> = [
            "app-server",
            "-c",
            "model_providers.p.experimental_bearer_token=abc",
            "--listen",
            "stdio://",
        ]
        .map(String::from)
        .to_vec();
        let w = profile_from(home.path(), &args).unwrap();
        for secret in ["sk-live-123", "hunter2", "abc", "sk-x"] {
            assert!(!w.text.contains(secret), "{secret} in:\n{}", w.text);
        }
        assert_eq!(
            w.redacted,
            [
                "args: -c model_providers.p.experimental_bearer_token",
                "config.toml: experimental_bearer_token",
                "config.toml: mcp_servers.db.env",
            ]
        );
        assert_eq!(w.copied, ["config.toml", "work.config.toml"]);
        let p = Profile::parse(Path::new("p.toml"), &w.text).unwrap();
        assert_eq!(p.args.len(), 5);
        let config = p.home_file("config.toml").unwrap();
        assert!(
            config.text.contains("DB_PASSWORD = \"<redacted>\""),
            "{}",
            config.text
        );
        assert_eq!(config.text.lines().count(), 5);
        assert!(profile_from(&home.path().join("nope"), &[]).is_err());
        assert!(
            secret_key("mcp_servers.x.env.ANY") && !secret_key("model") && !secret_key("env_key")
        );
    }
}
