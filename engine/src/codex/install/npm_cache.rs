//! A release's tarball read straight from npm's own cache, where `npm pack` would spend 2 s of
//! node copying it (172 MB for 0.171.0): `npm view --prefer-offline SPEC dist --json` names
//! its integrity and SHA-1 (from npm's cached metadata, or the registry's), `npm config get
//! cache` where npm keeps its content, which is addressed by that integrity
//! (`_cacache/content-v2/sha512/ab/cd/ef…`, the layout of npm's `cacache`). The file found is
//! only a candidate: it is hashed while it is unpacked and the install keeps nothing unless
//! its SHA-512 is the integrity's. Anything missing, late or different: `npm pack` as before.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde::Deserialize;

/// How long either npm question may take before `npm pack` is used instead.
const ASK_TIMEOUT: Duration = Duration::from_secs(20);

/// A copy of a release's tarball in npm's cache, and what it must hash to.
#[derive(Debug, Clone)]
pub(super) struct Cached {
    /// The content file in npm's cache.
    pub(super) tarball: PathBuf,
    /// The SHA-512 the file must have.
    pub(super) sha512: Vec<u8>,
    /// The integrity string npm gave (`sha512-…`).
    pub(super) integrity: String,
    /// The SHA-1 npm gave, if any.
    pub(super) shasum: Option<String>,
}

/// The fields of `npm view SPEC dist --json` used here.
#[derive(Debug, Deserialize)]
struct Dist {
    /// Subresource integrity of the tarball, one or more `algo-base64` separated by spaces.
    integrity: Option<String>,
    /// SHA-1 of the tarball.
    shasum: Option<String>,
}

/// Where npm's cache holds `spec`'s tarball, if it does: `None` sends the caller to
/// `npm pack`. Asks npm both questions at once.
pub(super) async fn locate(npm: &Path, spec: &str) -> Option<Cached> {
    let view = ["view", spec, "dist", "--json", "--prefer-offline"];
    let (dist, cache) = tokio::join!(ask(npm, &view), ask(npm, &["config", "get", "cache"]));
    let dist: Dist = serde_json::from_slice(&dist?).ok()?;
    let cache = String::from_utf8(cache?).ok()?;
    let integrity = dist.integrity?;
    let (sha512, tarball) = content_path(Path::new(cache.trim()), &integrity)?;
    if !tarball.is_file() {
        return None;
    }
    Some(Cached {
        tarball,
        sha512,
        integrity,
        shasum: dist.shasum,
    })
}

/// The SHA-512 of an integrity string and the path of its content in the npm cache `cache`.
pub(super) fn content_path(cache: &Path, integrity: &str) -> Option<(Vec<u8>, PathBuf)> {
    let encoded = integrity
        .split_whitespace()
        .find_map(|hash| hash.strip_prefix("sha512-"))?;
    let digest = codex_parity_sidecar::base64::decode(encoded.split('?').next()?)?;
    if digest.len() != 64 {
        return None;
    }
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    let path = cache
        .join("_cacache/content-v2/sha512")
        .join(&hex[..2])
        .join(&hex[2..4])
        .join(&hex[4..]);
    Some((digest, path))
}

/// Whether `file` (named `path` in messages) has the SHA-512 `want`, read on a blocking
/// thread at its own offsets.
pub(super) async fn has_sha512(file: std::fs::File, path: &Path, want: &[u8]) -> Result<()> {
    use std::os::unix::fs::FileExt;
    let (path, want) = (path.to_owned(), want.to_vec());
    tokio::task::spawn_blocking(move || {
        let mut digest = ring::digest::Context::new(&ring::digest::SHA512);
        let mut buf = vec![0u8; 1 << 20];
        let mut at = 0u64;
        loop {
            let n = file
                .read_at(&mut buf, at)
                .with_context(|| format!("cannot read {}", path.display()))?;
            if n == 0 {
                break;
            }
            digest.update(&buf[..n]);
            at += n as u64;
        }
        if digest.finish().as_ref() != want.as_slice() {
            bail!(
                "{} does not have the SHA-512 its integrity names",
                path.display()
            );
        }
        Ok(())
    })
    .await
    .context("the hashing task panicked")?
}

/// Runs `npm ARGS` quietly, bounded by [`ASK_TIMEOUT`]: its standard output on success.
async fn ask(npm: &Path, args: &[&str]) -> Option<Vec<u8>> {
    let run = super::npm::quiet(npm)
        .args(args)
        .arg("--loglevel=error")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(ASK_TIMEOUT, run).await.ok()?.ok()?;
    output.status.success().then_some(output.stdout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_content_path_is_cacaches() {
        // The integrity of an empty file: sha512 of nothing.
        let integrity = "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk= \
                         sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==";
        let (digest, path) = content_path(Path::new("/c"), integrity).unwrap();
        assert_eq!(digest.len(), 64);
        assert_eq!(
            path,
            Path::new(
                "/c/_cacache/content-v2/sha512/cf/83/e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e"
            )
        );
        assert!(content_path(Path::new("/c"), "sha1-2jmj7l5rSw0yVb/vlWAYkK/YBwk=").is_none());
        assert!(content_path(Path::new("/c"), "sha512-AAAA").is_none());
    }
}
