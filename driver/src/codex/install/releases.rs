//! The published releases of Codex on npm: `npm view @openai/codex versions --json`, reduced
//! to the stable releases (no `-alpha.N`, no other pre-release) that have a build for this
//! platform, oldest first.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, anyhow};

use super::{NPM_PACKAGE, Platform, npm_error};
use crate::codex::{binary, versions};

/// How long `npm view` may take.
const VIEW_TIMEOUT: Duration = Duration::from_secs(120);

/// The stable releases of `@openai/codex` that have a build for `platform`, oldest first, as
/// the npm registry lists them now (`npm view`, the registry npm is configured with).
pub async fn published_releases(platform: Platform) -> Result<Vec<String>> {
    let npm = binary::find_on_path("npm".as_ref()).ok_or_else(|| {
        anyhow!(
            "cannot list the Codex releases: `npm` is not on PATH. Install Node.js and npm \
             (https://nodejs.org)"
        )
    })?;
    let all = npm_view_versions(&npm).await?;
    Ok(stable_releases(&all, platform))
}

/// Runs `npm view @openai/codex versions --json`: every version string it lists.
async fn npm_view_versions(npm: &Path) -> Result<Vec<String>> {
    let spec = format!("{NPM_PACKAGE} (versions)");
    let run = tokio::process::Command::new(npm)
        .args(["view", NPM_PACKAGE, "versions", "--json", "--loglevel=warn"])
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(VIEW_TIMEOUT, run)
        .await
        .map_err(|_| {
            anyhow!(
                "`npm view {NPM_PACKAGE} versions` did not answer within {} s; check the \
                 network or npm's proxy/registry settings (`npm config get registry`)",
                VIEW_TIMEOUT.as_secs()
            )
        })?
        .with_context(|| format!("cannot run {}", npm.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(npm_error(&spec, &output.status.to_string(), &stderr));
    }
    serde_json::from_slice(&output.stdout).with_context(|| {
        format!("`npm view {NPM_PACKAGE} versions --json` did not print a JSON list of versions")
    })
}

/// The stable versions among `all` (plain `X.Y.Z`) whose platform build
/// (`X.Y.Z-linux-x64`) is also listed, sorted oldest first, without duplicates.
pub fn stable_releases(all: &[String], platform: Platform) -> Vec<String> {
    let listed: std::collections::HashSet<&str> = all.iter().map(String::as_str).collect();
    let mut stable: Vec<String> = all
        .iter()
        .filter(|v| versions::is_version(v) && !v.contains('-'))
        .filter(|v| listed.contains(format!("{v}-{}", platform.npm_suffix).as_str()))
        .cloned()
        .collect();
    stable.sort_by_key(|v| versions::sort_key(v));
    stable.dedup();
    stable
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::install::LINUX_X64;

    #[test]
    fn keeps_stable_releases_with_a_linux_build_in_order() {
        let all: Vec<String> = [
            "0.9.0",
            "0.9.0-linux-x64",
            "0.10.0-alpha.1",
            "0.10.0-alpha.1-linux-x64",
            "0.10.0",
            "0.10.0-linux-x64",
            "0.8.0",
            "0.11.0",
        ]
        .map(String::from)
        .into();
        assert_eq!(stable_releases(&all, LINUX_X64), ["0.9.0", "0.10.0"]);
    }
}
