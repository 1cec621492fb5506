//! The npm side of an install: the platform package to fetch (`@openai/codex@VERSION-linux-x64`)
//! and `npm pack` with its errors.

use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use serde::Deserialize;
use tokio::io::AsyncReadExt;
use tokio::process::Child;

use super::{NPM_PACKAGE, NPM_TIMEOUT, Progress, TICK};
use crate::codex::binary;

/// The npm platform build matching an OS and CPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Platform {
    /// Suffix of the npm version, e.g. `linux-x64`.
    pub npm_suffix: &'static str,
    /// Rust target triple of the vendored binary, e.g. `x86_64-unknown-linux-musl`.
    pub triple: &'static str,
}

/// The linux-x64 build.
pub const LINUX_X64: Platform = Platform {
    npm_suffix: "linux-x64",
    triple: "x86_64-unknown-linux-musl",
};

/// The platform build for `os`/`arch` (values of `std::env::consts::{OS, ARCH}`), or an error
/// naming what is missing.
pub fn platform_for(os: &str, arch: &str) -> Result<Platform> {
    match (os, arch) {
        ("linux", "x86_64") => Ok(LINUX_X64),
        ("linux", "aarch64") => Ok(Platform {
            npm_suffix: "linux-arm64",
            triple: "aarch64-unknown-linux-musl",
        }),
        _ => bail!(
            "downloading Codex is only supported on Linux (x86_64, aarch64), not {os}/{arch}; install the Codex CLI \
             yourself and pass it with --codex-bin PATH or CODEX_TEST_BINS"
        ),
    }
}

/// The platform build for this machine.
pub fn current_platform() -> Result<Platform> {
    platform_for(std::env::consts::OS, std::env::consts::ARCH)
}

/// The npm spec of a version's build for `platform`: `@openai/codex@0.171.0-linux-x64`.
pub fn npm_package_spec_for(version: &str, platform: Platform) -> String {
    format!("{NPM_PACKAGE}@{version}-{}", platform.npm_suffix)
}

/// The npm spec of a version's linux-x64 build, the one this project tests:
/// `@openai/codex@0.171.0-linux-x64`.
pub fn npm_package_spec(version: &str) -> String {
    npm_package_spec_for(version, LINUX_X64)
}

/// What `npm pack` produced.
#[derive(Debug)]
pub(super) struct Packed {
    /// The downloaded `.tgz`.
    pub(super) tarball: PathBuf,
    /// SHA-1 reported by `npm pack --json`.
    pub(super) shasum: Option<String>,
    /// Integrity string reported by `npm pack --json`.
    pub(super) integrity: Option<String>,
}

/// One entry of `npm pack --json` output (fields we use).
#[derive(Debug, Deserialize)]
pub(super) struct PackJson {
    /// Tarball file name inside the pack destination.
    pub(super) filename: Option<String>,
    /// SHA-1 of the tarball.
    pub(super) shasum: Option<String>,
    /// Subresource integrity of the tarball.
    pub(super) integrity: Option<String>,
}

/// Runs `npm pack <spec> --pack-destination <dest>`, showing elapsed time and tarball size while it
/// runs.
pub(super) async fn npm_pack(
    npm: &Path,
    spec: &str,
    dest: &Path,
    progress: &dyn Progress,
) -> Result<Packed> {
    tokio::fs::create_dir_all(dest)
        .await
        .with_context(|| format!("cannot create {}", dest.display()))?;
    progress.message(&format!("downloading {spec} with npm pack"));
    let started = Instant::now();
    let (mut status, mut stdout, mut stderr) =
        run_npm_pack(npm, spec, dest, Freshness::PreferOffline, progress, started).await?;
    if !status.success() && names_no_such_version(&stderr) {
        progress.message(&format!(
            "npm's cached list of @openai/codex versions lacks {spec}; asking the registry"
        ));
        (status, stdout, stderr) =
            run_npm_pack(npm, spec, dest, Freshness::AskRegistry, progress, started).await?;
    }
    if !status.success() {
        return Err(npm_error(spec, &status.to_string(), &stderr));
    }
    let info: Option<PackJson> = serde_json::from_slice::<Vec<PackJson>>(&stdout)
        .ok()
        .and_then(|v| v.into_iter().next());
    let tarball = packed_tarball(info.as_ref(), dest)?;
    if !tarball.is_file() {
        bail!(
            "npm pack {spec} succeeded but {} is missing{}",
            tarball.display(),
            binary::quote_tail("npm output", &stderr, 10)
        );
    }
    let size = std::fs::metadata(&tarball).map(|m| m.len()).unwrap_or(0);
    progress.message(&format!(
        "downloaded {spec}: {} in {:.1} s",
        mb(size),
        started.elapsed().as_secs_f64()
    ));
    Ok(Packed {
        tarball,
        shasum: info.as_ref().and_then(|i| i.shasum.clone()),
        integrity: info.as_ref().and_then(|i| i.integrity.clone()),
    })
}

/// How `npm pack` treats its cache of the package's metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Freshness {
    /// `--prefer-offline`: npm's cached metadata is used without asking the registry whether
    /// it is current. A published version never changes, so for an exact version (the only
    /// kind installed) this saves the registry's round trip (0.7 s measured) and nothing else;
    /// a cache older than the version is answered by [`Freshness::AskRegistry`].
    PreferOffline,
    /// npm's default: the registry is asked.
    AskRegistry,
}

/// Whether npm's output says the version does not exist (as npm knows it).
fn names_no_such_version(stderr: &str) -> bool {
    ["E404", "ETARGET", "No matching version", "404 Not Found"]
        .iter()
        .any(|m| stderr.contains(m))
}

/// Runs `npm pack` once: its status, standard output and standard error.
async fn run_npm_pack(
    npm: &Path,
    spec: &str,
    dest: &Path,
    freshness: Freshness,
    progress: &dyn Progress,
    started: Instant,
) -> Result<(ExitStatus, Vec<u8>, String)> {
    let mut child = spawn_npm_pack(npm, spec, dest, freshness)?;
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    let status = wait_with_progress(&mut child, spec, dest, progress, started).await?;
    let stdout = stdout.await.unwrap_or_default();
    let stderr = String::from_utf8_lossy(&stderr.await.unwrap_or_default()).into_owned();
    Ok((status, stdout, stderr))
}

/// `npm` with its notices off (update, funding and audit messages), for every call the
/// install makes.
pub(super) fn quiet(npm: &Path) -> tokio::process::Command {
    let mut command = tokio::process::Command::new(npm);
    command
        .env("npm_config_update_notifier", "false")
        .env("npm_config_fund", "false")
        .env("npm_config_audit", "false");
    command
}

/// Starts `npm pack <spec> --json` into `dest`, quiet and with npm's notices off.
fn spawn_npm_pack(npm: &Path, spec: &str, dest: &Path, freshness: Freshness) -> Result<Child> {
    let mut command = quiet(npm);
    command
        .arg("pack")
        .arg(spec)
        .arg("--pack-destination")
        .arg(dest)
        .args(["--json", "--loglevel=warn"]);
    if freshness == Freshness::PreferOffline {
        command.arg("--prefer-offline");
    }
    command
        .current_dir(dest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| {
            format!(
                "cannot run {}: install Node.js and npm (https://nodejs.org), or pass an existing Codex binary with \
                 --codex-bin PATH",
                npm.display()
            )
        })
}

/// Waits for `npm pack`, showing elapsed time and what it has written so far; kills it after
/// `NPM_TIMEOUT`.
async fn wait_with_progress(
    child: &mut Child,
    spec: &str,
    dest: &Path,
    progress: &dyn Progress,
    started: Instant,
) -> Result<ExitStatus> {
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.with_context(|| format!("waiting for npm pack {spec}"))?,
            () = tokio::time::sleep(TICK) => {
                let elapsed = started.elapsed();
                if elapsed > NPM_TIMEOUT {
                    let _ = child.kill().await;
                    bail!("npm pack {spec} did not finish within {} min; check the network or npm's proxy settings",
                        NPM_TIMEOUT.as_secs() / 60);
                }
                let written = dir_size(dest);
                let size = if written > 0 { format!(", {} written", mb(written)) } else { String::new() };
                progress.update(&format!("downloading {spec} … {} s{size}", elapsed.as_secs()));
            }
        }
    };
    Ok(status)
}

/// The tarball `npm pack` wrote: the file its JSON names, else the one `.tgz` in `dest`.
fn packed_tarball(info: Option<&PackJson>, dest: &Path) -> Result<PathBuf> {
    Ok(match info.and_then(|i| i.filename.as_deref()) {
        Some(name) => dest.join(
            name.trim_start_matches("./")
                .rsplit('/')
                .next()
                .unwrap_or(name),
        ),
        None => find_tgz(dest)?,
    })
}

/// The error for a failed `npm pack`, classified by what npm printed.
pub fn npm_error(spec: &str, status: &str, stderr: &str) -> anyhow::Error {
    let tail = binary::quote_tail("npm stderr", stderr, 8);
    if names_no_such_version(stderr) {
        anyhow!(
            "no such version: {spec} is not on the npm registry. Run `npm view {NPM_PACKAGE} versions` to list them \
             (linux builds end in -linux-x64; pass the part before the suffix){tail}"
        )
    } else if [
        "ENOTFOUND",
        "EAI_AGAIN",
        "ECONNREFUSED",
        "ECONNRESET",
        "ETIMEDOUT",
        "network",
    ]
    .iter()
    .any(|m| stderr.contains(m))
    {
        anyhow!(
            "npm could not reach the registry to fetch {spec}; check the network and npm's proxy/registry settings \
             (`npm config get registry`), or pass an existing Codex binary with --codex-bin PATH{tail}"
        )
    } else {
        anyhow!("npm pack {spec} failed ({status}){tail}")
    }
}

/// Reads a child's pipe to the end in the background.
pub(super) fn drain<R>(pipe: Option<R>) -> tokio::task::JoinHandle<Vec<u8>>
where
    R: tokio::io::AsyncRead + Unpin + Send + 'static,
{
    tokio::spawn(async move {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.read_to_end(&mut buf).await;
        }
        buf
    })
}

/// Total size of the regular files directly inside `dir` (the growing tarball).
pub(super) fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// The single `.tgz` in `dir`.
pub(super) fn find_tgz(dir: &Path) -> Result<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "tgz"))
        .collect();
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!("npm pack wrote no .tgz into {}", dir.display()),
        _ => bail!("npm pack wrote several .tgz files into {}", dir.display()),
    }
}

/// `12.3 MB`.
pub(super) fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}
