//! Which Codex CLI binaries a run uses, and what version each one is.
//!
//! Resolution order: `--codex-bin PATH` (repeatable) wins; otherwise the paths in `CODEX_TEST_BINS`
//! (separated like `PATH`); otherwise the pinned version from `fixtures/codex-versions.json`,
//! installed on demand into the cache (see [`crate::codex::install`]). Every binary's version is
//! read from `codex --version`, never guessed from its path, and results name a binary by
//! [`CodexBinary::label`] (`codex-0.171.0`).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

pub use crate::codex::binary::{
    CodexBinary, PROBE_TIMEOUT, parse_version_output, probe, probe_with_timeout,
};
use crate::codex::binary::{locate, probe_located};
use crate::codex::install::{self, Cache, Progress};
use crate::codex::versions;

/// Name of the environment variable listing Codex binaries, separated like `PATH`.
pub const CODEX_TEST_BINS: &str = "CODEX_TEST_BINS";

/// Where the binaries for a run come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BinarySource {
    /// Paths given with `--codex-bin` (in order).
    Explicit(Vec<PathBuf>),
    /// Paths from `CODEX_TEST_BINS` (in order, empty entries dropped).
    Env(Vec<PathBuf>),
    /// The pinned version, installed into the cache on demand.
    Pinned(String),
    /// Versions named by the user (`--codex-version`, `--compare`), installed on demand.
    Versions(Vec<String>),
}

/// Chooses where binaries come from: `cli_bins` (from `--codex-bin`) if any, else the non-empty
/// entries of `env_value` (the value of `CODEX_TEST_BINS`), else the pinned version from
/// `fixtures/codex-versions.json`.
///
/// Fails only if the embedded version file is invalid.
pub fn choose_sources(cli_bins: &[PathBuf], env_value: Option<OsString>) -> Result<BinarySource> {
    if let Some(source) = choose_given(cli_bins, env_value) {
        return Ok(source);
    }
    Ok(BinarySource::Pinned(versions::load()?.pinned))
}

/// Like [`choose_sources`] with an explicit pinned version (no file access).
pub fn choose_sources_with_pinned(
    cli_bins: &[PathBuf],
    env_value: Option<OsString>,
    pinned: &str,
) -> BinarySource {
    choose_given(cli_bins, env_value).unwrap_or_else(|| BinarySource::Pinned(pinned.to_owned()))
}

/// The explicit or environment source, if either names at least one binary.
fn choose_given(cli_bins: &[PathBuf], env_value: Option<OsString>) -> Option<BinarySource> {
    if !cli_bins.is_empty() {
        return Some(BinarySource::Explicit(cli_bins.to_vec()));
    }
    let env_bins = env_value.map(|v| split_bins(&v)).unwrap_or_default();
    if env_bins.is_empty() {
        None
    } else {
        Some(BinarySource::Env(env_bins))
    }
}

/// Every binary a run (the CLI's `run` and `bench`, the parity test harness) asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BinaryRequest {
    /// Paths given with `--codex-bin`.
    pub paths: Vec<PathBuf>,
    /// Versions to install from npm (`--codex-version`, the `--compare` set).
    pub versions: Vec<String>,
    /// The value of `CODEX_TEST_BINS`, used when no path is given.
    pub env: Option<OsString>,
}

/// The binaries of a run: the named versions and the `--codex-bin` paths, both when both
/// are given; else the paths of `CODEX_TEST_BINS`, else the pinned version. One rule for
/// duplicates (see [`one_per_version`]): the same file twice counts once, two different
/// binaries of one version are refused.
pub async fn resolve_request(
    request: &BinaryRequest,
    cache: &Cache,
    progress: &dyn Progress,
) -> Result<Vec<CodexBinary>> {
    let mut found = Vec::new();
    if !request.versions.is_empty() {
        let source = BinarySource::Versions(request.versions.clone());
        found.extend(resolve(source, cache, progress).await?);
    }
    if request.versions.is_empty() || !request.paths.is_empty() {
        let source = choose_sources(&request.paths, request.env.clone())?;
        found.extend(resolve(source, cache, progress).await?);
    }
    one_per_version(found)
}

/// The one binary of a command that runs on one codex (`record`, `client-check`): the
/// file at `path` when given, else codex `version` from npm, else the pinned version.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OneBinary {
    /// `--codex-bin`.
    pub path: Option<PathBuf>,
    /// `--codex-version`.
    pub version: Option<String>,
}

impl OneBinary {
    /// Codex `version` from npm.
    pub fn version(version: &str) -> OneBinary {
        OneBinary {
            path: None,
            version: Some(version.to_string()),
        }
    }

    /// The binary (a version installed into the cache on first use, with progress on
    /// stderr).
    pub async fn resolve(&self) -> Result<CodexBinary> {
        let versions = match (&self.path, &self.version) {
            (Some(_), _) => vec![],
            (None, Some(v)) => vec![v.clone()],
            (None, None) => vec![versions::load()?.pinned.clone()],
        };
        let request = BinaryRequest {
            paths: self.path.iter().cloned().collect(),
            versions,
            env: None,
        };
        resolve_one(&request).await
    }
}

/// The last binary `request` resolves to.
async fn resolve_one(request: &BinaryRequest) -> Result<CodexBinary> {
    let cache = Cache::from_env()?;
    install::reserve(&cache, &request.versions);
    resolve_request(request, &cache, &install::StderrProgress::new())
        .await?
        .pop()
        .context("no codex binary was found")
}

/// The one rule for binaries of the same version: results are named by version, so two
/// different binaries of one version are refused; the same file named twice (a link, a
/// second path) is kept once, the first name winning.
pub fn one_per_version(binaries: Vec<CodexBinary>) -> Result<Vec<CodexBinary>> {
    let mut unique: Vec<CodexBinary> = Vec::new();
    for b in binaries {
        if let Some(first) = unique.iter().find(|u| u.version == b.version) {
            if same_file(&first.path, &b.path) {
                continue;
            }
            bail!(
                "{} and {} both report codex {}: results are named by version, so test them in separate runs",
                first.path.display(),
                b.path.display(),
                b.version
            );
        }
        unique.push(b);
    }
    Ok(unique)
}

/// Whether two paths name the same file (compared as given when either cannot be
/// resolved).
fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Resolves one command-line argument that is "a version or a path": a version such as
/// `0.131.0` is installed into `cache` on demand; anything else (or a version-like name of an
/// existing file) is probed as a path to a codex binary.
pub async fn resolve_spec(
    spec: &str,
    cache: &Cache,
    progress: &dyn Progress,
) -> Result<CodexBinary> {
    if is_version_spec(spec) {
        install::install(cache, spec, progress)
            .await
            .with_context(|| format!("installing Codex {spec}"))
    } else {
        probe(Path::new(spec)).await.with_context(|| {
            format!("checking the Codex binary {spec} (not a version such as 0.171.0)")
        })
    }
}

/// Whether [`resolve_spec`] takes `spec` for a version rather than a path.
fn is_version_spec(spec: &str) -> bool {
    (versions::is_version(spec) || spec == install::LATEST) && !Path::new(spec).exists()
}

/// Splits a `CODEX_TEST_BINS` value like `PATH` (`:` on Unix), dropping empty entries.
pub fn split_bins(value: &std::ffi::OsStr) -> Vec<PathBuf> {
    std::env::split_paths(value)
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// Turns a source into checked binaries: probes each given path (duplicates of the same file are
/// dropped, first one wins; two different files of one version are refused, see
/// [`one_per_version`]), or installs the pinned version into `cache` if needed.
pub async fn resolve(
    source: BinarySource,
    cache: &Cache,
    progress: &dyn Progress,
) -> Result<Vec<CodexBinary>> {
    let (paths, origin) = match source {
        BinarySource::Pinned(version) => {
            let binary = install::install(cache, &version, progress)
                .await
                .with_context(|| format!("installing the pinned Codex version {version}"))?;
            return Ok(vec![binary]);
        }
        BinarySource::Versions(versions) => {
            let mut binaries: Vec<CodexBinary> = Vec::new();
            for version in versions {
                if binaries.iter().any(|b| b.version == version) {
                    continue;
                }
                let binary = install::install(cache, &version, progress)
                    .await
                    .with_context(|| format!("installing Codex {version}"))?;
                binaries.push(binary);
            }
            return Ok(binaries);
        }
        BinarySource::Explicit(paths) => (paths, "--codex-bin"),
        BinarySource::Env(paths) => (paths, CODEX_TEST_BINS),
    };
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut binaries: Vec<CodexBinary> = Vec::new();
    for path in paths {
        let context = || format!("checking the Codex binary given by {origin}");
        let path = locate(&path).with_context(context)?;
        // Drop a second name of the same file before running it again.
        let identity = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
        if seen.contains(&identity) {
            continue;
        }
        seen.push(identity);
        let binary = probe_located(path, PROBE_TIMEOUT)
            .await
            .with_context(context)?;
        binaries.push(binary);
    }
    one_per_version(binaries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::binary::tests::script;

    #[test]
    fn a_spec_is_a_version_or_else_a_path() {
        assert!(is_version_spec("0.131.0"));
        assert!(is_version_spec("0.172.0-alpha.1"));
        assert!(!is_version_spec("./codex"));
        assert!(!is_version_spec("codex"));
        assert!(!is_version_spec("/opt/0.1.0/codex"));
    }

    #[tokio::test]
    async fn a_spec_that_is_no_file_says_so() {
        let cache = Cache::new("/nonexistent-cache");
        let err = resolve_spec("./no-such-codex", &cache, &install::NoProgress)
            .await
            .unwrap_err();
        let text = format!("{err:#}");
        assert!(
            text.contains("checking the Codex binary ./no-such-codex"),
            "{text}"
        );
        assert!(text.contains("does not exist"), "{text}");
    }

    #[test]
    fn bins_split_like_path() {
        let v = split_bins("/a/codex::/b/codex:".as_ref());
        assert_eq!(v, [PathBuf::from("/a/codex"), PathBuf::from("/b/codex")]);
        assert!(split_bins("".as_ref()).is_empty());
        assert!(split_bins(":::".as_ref()).is_empty());
    }

    #[test]
    fn resolution_order() {
        let cli = [PathBuf::from("/cli/codex")];
        let env = Some(OsString::from("/env/a:/env/b"));
        assert_eq!(
            choose_sources_with_pinned(&cli, env.clone(), "9.9.9"),
            BinarySource::Explicit(vec!["/cli/codex".into()])
        );
        assert_eq!(
            choose_sources_with_pinned(&[], env, "9.9.9"),
            BinarySource::Env(vec!["/env/a".into(), "/env/b".into()])
        );
        assert_eq!(
            choose_sources_with_pinned(&[], Some(OsString::from(":")), "9.9.9"),
            BinarySource::Pinned("9.9.9".into())
        );
        assert_eq!(
            choose_sources_with_pinned(&[], None, "9.9.9"),
            BinarySource::Pinned("9.9.9".into())
        );
        assert_eq!(
            choose_sources(&[], None).unwrap(),
            BinarySource::Pinned(versions::load().unwrap().pinned)
        );
    }

    #[tokio::test]
    async fn resolve_dedups_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = script(dir.path(), "codex", "echo 'codex-cli 0.171.0'", 0o755);
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let b = script(dir.path(), "codex2", "echo 'codex-cli 0.131.0'", 0o755);
        let cache = Cache::new(dir.path().join("cache"));
        let source = BinarySource::Env(vec![a.clone(), link, b.clone(), a.clone()]);
        let bins = resolve(source, &cache, &install::NoProgress).await.unwrap();
        let labels: Vec<String> = bins.iter().map(CodexBinary::label).collect();
        assert_eq!(labels, ["codex-0.171.0", "codex-0.131.0"]);
        assert_eq!(bins[0].path, a);

        let err = resolve(
            BinarySource::Explicit(vec![dir.path().join("nope")]),
            &cache,
            &install::NoProgress,
        )
        .await
        .unwrap_err();
        assert!(format!("{err:#}").contains("--codex-bin"), "{err:#}");
    }

    #[tokio::test]
    async fn two_binaries_of_one_version_are_refused_everywhere() {
        let dir = tempfile::tempdir().unwrap();
        let a = script(dir.path(), "codex", "echo 'codex-cli 0.171.0'", 0o755);
        let b = script(dir.path(), "other", "echo 'codex-cli 0.171.0'", 0o755);
        let cache = Cache::new(dir.path().join("cache"));
        let refused = |e: anyhow::Error| {
            let text = format!("{e:#}");
            assert!(
                text.contains("both report codex 0.171.0: results are named by version"),
                "{text}"
            );
        };
        let source = BinarySource::Env(vec![a.clone(), b.clone()]);
        refused(
            resolve(source, &cache, &install::NoProgress)
                .await
                .unwrap_err(),
        );
        let request = BinaryRequest {
            paths: vec![a.clone(), b.clone()],
            ..BinaryRequest::default()
        };
        refused(
            resolve_request(&request, &cache, &install::NoProgress)
                .await
                .unwrap_err(),
        );
        let from_env = BinaryRequest {
            env: Some(std::env::join_paths([&a, &b]).unwrap()),
            ..BinaryRequest::default()
        };
        refused(
            resolve_request(&from_env, &cache, &install::NoProgress)
                .await
                .unwrap_err(),
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&a, &link).unwrap();
        let same = BinaryRequest {
            paths: vec![a.clone(), link],
            ..BinaryRequest::default()
        };
        let bins = resolve_request(&same, &cache, &install::NoProgress)
            .await
            .unwrap();
        assert_eq!(
            bins,
            [CodexBinary {
                path: a,
                version: "0.171.0".into()
            }]
        );
    }

    #[test]
    fn one_per_version_keeps_the_first_name_of_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = script(dir.path(), "codex", "echo", 0o755);
        let bin = |path: &Path, v: &str| CodexBinary {
            path: path.to_path_buf(),
            version: v.into(),
        };
        let kept = one_per_version(vec![
            bin(&a, "0.171.0"),
            bin(&dir.path().join(".").join("codex"), "0.171.0"),
            bin(&a, "0.131.0"),
        ])
        .unwrap();
        assert_eq!(kept, [bin(&a, "0.171.0"), bin(&a, "0.131.0")]);
    }
}
