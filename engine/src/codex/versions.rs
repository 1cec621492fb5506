//! The Codex CLI versions this project tests against.
//!
//! The data lives in `fixtures/codex-versions.json` at the repository root, not in code. The file
//! is embedded at build time (`include_str!`), so an installed `codex-parity` binary still knows
//! its pinned version.

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// The embedded contents of `fixtures/codex-versions.json`.
const VERSIONS_JSON: &str = include_str!("../../../fixtures/codex-versions.json");

/// Where the version data comes from, for error messages.
const VERSIONS_FILE: &str = "fixtures/codex-versions.json";

/// The pinned Codex version and the comparison set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VersionSet {
    /// The version installed on demand when no binary is given (e.g. `"0.171.0"`).
    pub pinned: String,
    /// The versions the parity suite is compared across, oldest first.
    pub compare: Vec<String>,
    /// Releases strictly between the comparison versions that CI also runs (`--sample`).
    pub sample: Vec<String>,
}

impl VersionSet {
    /// The versions `--compare` and `--sample` name, in that order (none when neither).
    pub fn chosen(&self, compare: bool, sample: bool) -> Vec<String> {
        let mut out = Vec::new();
        if compare {
            out.extend(self.compare.iter().cloned());
        }
        if sample {
            out.extend(self.sample.iter().cloned());
        }
        out
    }
}

/// The file's shape; `_comment` is free text for humans.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVersionSet {
    pinned: String,
    compare: Vec<String>,
    #[serde(default)]
    sample: Vec<String>,
    #[serde(rename = "_comment", default)]
    _comment: Option<String>,
}

/// Loads the version set embedded from `fixtures/codex-versions.json`.
pub fn load() -> Result<VersionSet> {
    parse(VERSIONS_JSON)
        .with_context(|| format!("invalid {VERSIONS_FILE} (embedded at build time)"))
}

/// Parses and validates a version set from JSON text.
pub fn parse(text: &str) -> Result<VersionSet> {
    let raw: RawVersionSet = serde_json::from_str(text)
        .context("expected a JSON object {\"pinned\": ..., \"compare\": [...]}")?;
    let set = VersionSet {
        pinned: raw.pinned,
        compare: raw.compare,
        sample: raw.sample,
    };
    check_version(&set.pinned).context("field `pinned`")?;
    if set.compare.is_empty() {
        bail!("field `compare` is empty: list at least one version");
    }
    for (i, v) in set.compare.iter().enumerate() {
        check_version(v).with_context(|| format!("field `compare[{i}]`"))?;
    }
    for (i, v) in set.sample.iter().enumerate() {
        check_version(v).with_context(|| format!("field `sample[{i}]`"))?;
        if set.compare.contains(v) {
            bail!("field `sample[{i}]`: {v} is in `compare` too; the sample lies between them");
        }
    }
    Ok(set)
}

/// Returns an error unless `version` looks like `X.Y.Z` (digits), optionally followed by a
/// pre-release suffix such as `-alpha.1`.
pub fn check_version(version: &str) -> Result<()> {
    if is_version(version) {
        Ok(())
    } else {
        bail!("`{version}` is not a version of the form X.Y.Z (for example 0.171.0)")
    }
}

/// True if `version` is `X.Y.Z` (ASCII digits) optionally followed by `-` and a pre-release suffix
/// made of ASCII letters, digits, `.` and `-` (for example `0.172.0-alpha.1`). Platform suffixes
/// such as `-linux-x64` are accepted by this syntax but are added by the installer, so callers
/// should pass the plain version.
pub fn is_version(version: &str) -> bool {
    let (core, suffix) = match version.split_once('-') {
        Some((core, suffix)) => (core, Some(suffix)),
        None => (version, None),
    };
    let parts: Vec<&str> = core.split('.').collect();
    let core_ok = parts.len() == 3
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let suffix_ok = suffix.is_none_or(|s| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-')
    });
    core_ok && suffix_ok
}

/// The sort key of a version, oldest first: `0.20.0` before `0.131.0` (numerically),
/// `0.172.0-alpha.1` before `0.172.0` (a pre-release before its release).
pub fn sort_key(version: &str) -> (Vec<u64>, bool, String) {
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (version, None),
    };
    let numbers = core
        .split('.')
        .map(|p| p.parse::<u64>().unwrap_or(0))
        .collect();
    (numbers, pre.is_none(), pre.unwrap_or("").to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_file_is_valid() {
        let set = load().unwrap();
        assert_eq!(set.pinned, "0.171.0");
        assert_eq!(set.compare, ["0.131.0", "0.161.0", "0.171.0"]);
        for v in &set.sample {
            let (oldest, newest) = (&set.compare[0], &set.compare[set.compare.len() - 1]);
            assert!(
                sort_key(v) > sort_key(oldest) && sort_key(v) < sort_key(newest),
                "{v}"
            );
        }
        assert!(!set.sample.is_empty());
        assert!(set.compare.contains(&set.pinned));
    }

    #[test]
    fn version_syntax() {
        for ok in [
            "0.171.0",
            "1.2.3",
            "10.0.12",
            "0.172.0-alpha.1",
            "0.1.0-rc-2",
        ] {
            assert!(is_version(ok), "{ok}");
        }
        for bad in [
            "",
            "0.171",
            "0.171.0.1",
            "v0.171.0",
            "0.171.x",
            "latest",
            "0.171.0-",
            "0..1",
            "0.1.0 ",
            "--help",
        ] {
            assert!(!is_version(bad), "{bad}");
        }
    }

    #[test]
    fn parse_rejects_bad_data() {
        assert!(parse(r#"{"pinned":"0.1.0","compare":["0.1.0"]}"#).is_ok());
        let err = parse(r#"{"pinned":"latest","compare":["0.1.0"]}"#).unwrap_err();
        assert!(format!("{err:#}").contains("pinned"), "{err:#}");
        let err = parse(r#"{"pinned":"0.1.0","compare":["0.1"]}"#).unwrap_err();
        assert!(format!("{err:#}").contains("compare[0]"), "{err:#}");
        assert!(parse(r#"{"pinned":"0.1.0","compare":[]}"#).is_err());
        assert!(parse(r#"{"pinned":"0.1.0"}"#).is_err());
        assert!(parse(r#"{"pinned":"0.1.0","compare":["0.1.0"],"typo":1}"#).is_err());
    }
}
