//! The published releases of Codex on npm: `npm view @openai/codex versions --json`, reduced
//! to the stable releases (no `-alpha.N`, no other pre-release) that have a build for this
//! platform, oldest first.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use super::{NPM_PACKAGE, Platform, npm_error};
use crate::codex::versions::sort_key;
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
    let stdout = npm_view(npm, &["versions", "--json"]).await?;
    serde_json::from_slice(&stdout).with_context(|| {
        format!("`npm view {NPM_PACKAGE} versions --json` did not print a JSON list of versions")
    })
}

/// The name that stands for the release npm's `latest` dist-tag points at
/// (`--codex-version latest`).
pub const LATEST: &str = "latest";

/// The release npm's `latest` dist-tag of `@openai/codex` points at now (`npm` from PATH).
pub async fn latest_release() -> Result<String> {
    let npm = binary::find_on_path("npm".as_ref()).ok_or_else(|| {
        anyhow!(
            "cannot find the latest Codex release: `npm` is not on PATH. Install Node.js and \
             npm (https://nodejs.org), or name a version such as 0.171.0"
        )
    })?;
    latest_release_with(&npm).await
}

/// [`latest_release`] with this `npm`.
pub async fn latest_release_with(npm: &Path) -> Result<String> {
    let stdout = npm_view(npm, &["dist-tags.latest"])
        .await
        .context("finding the latest Codex release (`--codex-version latest`)")?;
    let version = String::from_utf8_lossy(&stdout).trim().to_string();
    versions::check_version(&version).with_context(|| {
        format!("`npm view {NPM_PACKAGE} dist-tags.latest` printed {version:?}, not a version")
    })?;
    Ok(version)
}

/// Runs `npm view @openai/codex ARGS…` with a time limit: its standard output.
async fn npm_view(npm: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let spec = format!("{NPM_PACKAGE} ({})", args.join(" "));
    let run = tokio::process::Command::new(npm)
        .args(["view", NPM_PACKAGE])
        .args(args)
        .arg("--loglevel=warn")
        .env("npm_config_update_notifier", "false")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(VIEW_TIMEOUT, run)
        .await
        .map_err(|_| {
            anyhow!(
                "`npm view {NPM_PACKAGE} {}` did not answer within {} s; check the network or \
                 npm's proxy/registry settings (`npm config get registry`)",
                args.join(" "),
                VIEW_TIMEOUT.as_secs()
            )
        })?
        .with_context(|| format!("cannot run {}", npm.display()))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(npm_error(&spec, &output.status.to_string(), &stderr));
    }
    Ok(output.stdout)
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

/// The releases from `older` to `newer`, both included, out of `releases` (any order); an
/// error when either is not among them, when they are equal, or when `older` is the newer.
pub fn between(releases: &[String], older: &str, newer: &str) -> Result<Vec<String>> {
    if older == newer {
        bail!("both ends are {older}: name two different releases");
    }
    let mut sorted = releases.to_vec();
    sorted.sort_by_key(|v| sort_key(v));
    sorted.dedup();
    let index = |v: &str| match sorted.iter().position(|r| r == v) {
        Some(i) => Ok(i),
        None => bail!(
            "{v} is not a published stable release of {NPM_PACKAGE}{}",
            nearest(&sorted, v)
        ),
    };
    let (a, b) = (index(older)?, index(newer)?);
    if a > b {
        bail!("{older} is newer than {newer}: name the older release first (swap them)");
    }
    Ok(sorted[a..=b].to_vec())
}

/// `; the nearest are A and B` for a version that is not in `sorted` (empty when none).
fn nearest(sorted: &[String], version: &str) -> String {
    let at = sorted.partition_point(|r| sort_key(r) < sort_key(version));
    let near: Vec<&str> = sorted[at.saturating_sub(1)..(at + 1).min(sorted.len())]
        .iter()
        .map(String::as_str)
        .collect();
    if near.is_empty() {
        String::new()
    } else {
        let are = if near.len() == 1 { "is" } else { "are" };
        format!(
            "; the nearest {are} {} (`npm view @openai/codex versions` lists them all)",
            near.join(" and ")
        )
    }
}

/// Every `every`-th release of `releases` (oldest first), starting with the first; the last
/// is always included, so a sweep covers both ends. `every` 0 counts as 1.
pub fn every_nth(releases: &[String], every: usize) -> Vec<String> {
    let step = every.max(1);
    let mut picked: Vec<String> = releases.iter().step_by(step).cloned().collect();
    if let Some(last) = releases.last()
        && picked.last() != Some(last)
    {
        picked.push(last.clone());
    }
    picked
}

/// Parses a sweep range `A..B` (both included) into its ends.
pub fn parse_range(text: &str) -> Result<(String, String)> {
    let Some((a, b)) = text.split_once("..") else {
        bail!(
            "--releases {text:?}: expected A..B, for example 0.161.0..0.171.0 or 0.131.0..latest"
        );
    };
    for v in [a, b].into_iter().filter(|v| *v != LATEST) {
        versions::check_version(v).with_context(|| format!("--releases {text}"))?;
    }
    Ok((a.to_string(), b.to_string()))
}

/// The published stable releases of the range `A..B` (both included; either end may be
/// `latest`), oldest first, with every release npm lists for this platform.
pub async fn releases_in(range: &str, platform: Platform) -> Result<(Vec<String>, Vec<String>)> {
    let (mut from, mut to) = parse_range(range)?;
    let published = published_releases(platform).await?;
    for end in [&mut from, &mut to] {
        if end == LATEST {
            *end = latest_release().await?;
        }
    }
    let picked = between(&published, &from, &to).with_context(|| format!("--releases {range}"))?;
    Ok((picked, published))
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

    #[test]
    fn the_range_between_good_and_bad() {
        let all: Vec<String> = ["0.3.0", "0.1.0", "0.2.0", "0.10.0"]
            .map(String::from)
            .into();
        assert_eq!(
            between(&all, "0.2.0", "0.10.0").unwrap(),
            ["0.2.0", "0.3.0", "0.10.0"]
        );
        assert_eq!(
            between(&all, "0.3.0", "0.10.0").unwrap(),
            ["0.3.0", "0.10.0"]
        );
        let err = between(&all, "0.2.0", "0.2.0").unwrap_err().to_string();
        assert!(err.contains("both ends are 0.2.0"), "{err}");
        let err = between(&all, "0.4.0", "0.10.0").unwrap_err().to_string();
        assert!(err.contains("0.4.0 is not a published") && err.contains("0.3.0 and 0.10.0"));
        let err = between(&all, "0.10.0", "0.2.0").unwrap_err().to_string();
        assert!(err.contains("newer"), "{err}");
    }

    #[test]
    fn sweeps_take_every_nth_and_both_ends() {
        let all: Vec<String> = (1..=7).map(|i| format!("0.{i}.0")).collect();
        assert_eq!(every_nth(&all, 1), all);
        assert_eq!(every_nth(&all, 3), ["0.1.0", "0.4.0", "0.7.0"]);
        assert_eq!(every_nth(&all, 4), ["0.1.0", "0.5.0", "0.7.0"]);
        assert_eq!(every_nth(&all, 10), ["0.1.0", "0.7.0"]);
        assert_eq!(
            parse_range("0.1.0..0.7.0").unwrap(),
            ("0.1.0".into(), "0.7.0".into())
        );
        assert!(parse_range("0.1.0").is_err());
        assert_eq!(
            parse_range("0.1.0..latest").unwrap(),
            ("0.1.0".into(), "latest".into())
        );
        assert!(parse_range("0.1.0..newest").is_err());
    }
}
