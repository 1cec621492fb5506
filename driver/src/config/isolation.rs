//! Keeping the host's own codex configuration out of a check, and saying what could not be.
//!
//! Every codex on Linux reads `/etc/codex/config.toml` (a `system` layer),
//! `/etc/codex/requirements.toml` (limits: allowed approval policies, sandbox modes, …) and
//! `/etc/codex/managed_config.toml`, whatever `CODEX_HOME` says; no flag or variable turns
//! them off (the strings `CODEX_APP_SERVER_DISABLE_MANAGED_CONFIG` and the like are in no
//! binary from 0.131.0 to 0.171.0). A check's private home, cleaned environment and scratch
//! working directory keep out the user's config, project layers and cloud requirements (no
//! login); `/etc/codex` is hidden only by running codex in a mount namespace of its own where
//! an empty tmpfs covers it (`unshare`, as root or with user namespaces). When that is not
//! possible, or `--host-config keep` is given, codex reads it and the check says so.
//!
//! Whatever was done, each live run asks codex itself: `config/read` with its layers and
//! `configRequirements/read`; a layer other than the private home's and the check's flags that
//! set anything, and requirements in effect, are reported by name ([`leaks`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::Value;

/// Where codex reads host-managed configuration on Linux.
pub const MANAGED_DIR: &str = "/etc/codex";

/// The shell snippet the namespace runs: cover the directory, then become codex.
const COVER: &str = "mount -t tmpfs -o size=64k codex-parity /etc/codex && exec \"$0\" \"$@\"";

/// What to do with the host's managed configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum HostConfig {
    /// Hide `/etc/codex` from codex when it exists (a mount namespace); say so when it cannot.
    #[default]
    Hide,
    /// Let codex read it (the check then reports what it applied).
    Keep,
}

/// How codex is started for a check: directly, or in a namespace that hides `/etc/codex`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Isolation {
    /// The files found under `/etc/codex`.
    pub found: Vec<PathBuf>,
    /// The `unshare` arguments that hide them, when hiding works here.
    wrapper: Option<Vec<String>>,
    /// Why they are not hidden, when they exist and are not.
    pub not_hidden: Option<String>,
}

impl Isolation {
    /// Looks at `/etc/codex` and, when something is there and `mode` is [`HostConfig::Hide`],
    /// tries a mount namespace (as root, then with a user namespace).
    pub async fn detect(mode: HostConfig) -> Isolation {
        Isolation::detect_in(Path::new(MANAGED_DIR), mode).await
    }

    /// [`Isolation::detect`] for another directory (tests).
    pub async fn detect_in(dir: &Path, mode: HostConfig) -> Isolation {
        let found = list(dir);
        if found.is_empty() {
            return Isolation {
                found,
                wrapper: None,
                not_hidden: None,
            };
        }
        if mode == HostConfig::Keep {
            return Isolation {
                found,
                wrapper: None,
                not_hidden: Some("--host-config keep".into()),
            };
        }
        let mut why = Vec::new();
        for user_ns in [false, true] {
            let mut wrapper: Vec<String> = ["unshare", "--mount", "--propagation", "private"]
                .map(String::from)
                .to_vec();
            if user_ns {
                wrapper.extend(["--user", "--map-root-user"].map(String::from));
            }
            wrapper.extend(["--", "sh", "-c", COVER].map(String::from));
            match probe(&wrapper).await {
                Ok(()) => {
                    return Isolation {
                        found,
                        wrapper: Some(wrapper),
                        not_hidden: None,
                    };
                }
                Err(e) => why.push(e),
            }
        }
        Isolation {
            found,
            wrapper: None,
            not_hidden: Some(format!("no mount namespace here ({})", why.join("; "))),
        }
    }

    /// Isolation with nothing to hide (tests, or a host without `/etc/codex`).
    pub fn none() -> Isolation {
        Isolation {
            found: Vec::new(),
            wrapper: None,
            not_hidden: None,
        }
    }

    /// A command that runs `program ARGS` as the check wants it: inside the hiding namespace
    /// when there is one.
    pub fn command(&self, program: &Path, args: &[String]) -> tokio::process::Command {
        match &self.wrapper {
            Some(wrapper) => {
                let mut cmd = tokio::process::Command::new(&wrapper[0]);
                cmd.args(&wrapper[1..]).arg(program).args(args);
                cmd
            }
            None => {
                let mut cmd = tokio::process::Command::new(program);
                cmd.args(args);
                cmd
            }
        }
    }

    /// Whether codex runs with `/etc/codex` hidden.
    pub fn hides(&self) -> bool {
        self.wrapper.is_some()
    }

    /// What the report says about the host's configuration.
    pub fn describe(&self) -> String {
        let files: Vec<String> = self.found.iter().map(|p| p.display().to_string()).collect();
        match (files.is_empty(), &self.not_hidden) {
            (true, _) => format!("no host configuration in {MANAGED_DIR}"),
            (false, None) => format!(
                "{} hidden from codex (an empty tmpfs over {MANAGED_DIR} in a mount namespace)",
                files.join(", ")
            ),
            (false, Some(why)) => format!(
                "NOT ISOLATED: codex reads {} ({why}); what it applied is reported per release",
                files.join(", ")
            ),
        }
    }
}

/// The files under `dir` (not recursive), sorted.
fn list(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    found.sort();
    found
}

/// Runs `ls -A /etc/codex` through `wrapper`: `Ok` when it works and shows nothing.
async fn probe(wrapper: &[String]) -> Result<(), String> {
    let mut cmd = tokio::process::Command::new(&wrapper[0]);
    cmd.args(&wrapper[1..])
        .args(["ls", "-A", MANAGED_DIR])
        .stdin(Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(std::time::Duration::from_secs(10), cmd.output())
        .await
        .map_err(|_| "unshare did not answer".to_string())?
        .map_err(|e| format!("cannot run unshare: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(err.lines().next().unwrap_or("failed").trim().to_string());
    }
    if !out.stdout.is_empty() {
        return Err(format!(
            "{MANAGED_DIR} still shows files inside the namespace"
        ));
    }
    Ok(())
}

/// What codex applied from outside the check's own home and flags, read from `config/read`
/// (with `includeLayers`) and `configRequirements/read`: one line per layer that set
/// something and for requirements in effect.
pub fn leaks(config_read: Option<&Value>, requirements: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    let layers = config_read
        .and_then(|c| c.get("layers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for layer in layers {
        let kind = layer
            .pointer("/name/type")
            .and_then(Value::as_str)
            .unwrap_or("?");
        if matches!(kind, "user" | "sessionFlags") {
            continue;
        }
        let keys: Vec<&str> = layer
            .get("config")
            .and_then(Value::as_object)
            .map(|m| m.keys().map(String::as_str).collect())
            .unwrap_or_default();
        if keys.is_empty() {
            continue;
        }
        let file = layer
            .pointer("/name/file")
            .and_then(Value::as_str)
            .map(|f| format!(" {f}"))
            .unwrap_or_default();
        out.push(format!("layer {kind}{file} set {}", keys.join(", ")));
    }
    if let Some(req) = requirements
        .and_then(|r| r.get("requirements"))
        .filter(|r| !r.is_null())
    {
        let set: Vec<String> = req
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, v)| !v.is_null() && k.as_str() != "allowedLoginMethods")
                    .map(|(k, v)| format!("{k}={v}"))
                    .collect()
            })
            .unwrap_or_default();
        if !set.is_empty() {
            out.push(format!("requirements in effect: {}", set.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn nothing_to_hide_is_said_and_a_kept_directory_is_not_isolated() {
        let empty = tempfile::tempdir().unwrap();
        let none = Isolation::detect_in(empty.path(), HostConfig::Hide).await;
        assert!(none.found.is_empty() && !none.hides());
        assert_eq!(none.describe(), "no host configuration in /etc/codex");
        std::fs::write(empty.path().join("requirements.toml"), "").unwrap();
        let kept = Isolation::detect_in(empty.path(), HostConfig::Keep).await;
        assert!(!kept.hides());
        assert!(
            kept.describe().starts_with("NOT ISOLATED: codex reads "),
            "{}",
            kept.describe()
        );
    }

    #[test]
    fn layers_and_requirements_that_set_something_are_leaks() {
        let read = json!({"layers": [
            {"name": {"type": "sessionFlags"}, "config": {"features": {"plugins": false}}},
            {"name": {"type": "user", "file": "/h/config.toml"}, "config": {"model": "m"}},
            {"name": {"type": "system", "file": "/etc/codex/config.toml"}, "config": {}},
            {"name": {"type": "system", "file": "/etc/codex/config.toml"},
             "config": {"model_reasoning_effort": "high"}}
        ]});
        let req = json!({"requirements": {"allowedApprovalPolicies": ["never"],
                                          "allowedSandboxModes": null,
                                          "allowedLoginMethods": ["api", "chatgpt"]}});
        assert_eq!(
            leaks(Some(&read), Some(&req)),
            [
                "layer system /etc/codex/config.toml set model_reasoning_effort",
                "requirements in effect: allowedApprovalPolicies=[\"never\"]"
            ]
        );
        assert!(leaks(Some(&read), Some(&json!({"requirements": null}))).len() == 1);
    }
}
