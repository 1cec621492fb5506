//! Unpacking the native `codex` binary and its bundled resources from an npm tarball, and finding
//! the binary inside the package.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{MIN_BINARY_SIZE, Progress, TICK, mb};
use crate::codex::package::{DESCRIPTOR, Descriptor, PackageListing};

/// Sizes seen while unpacking, and what the package holds.
#[derive(Debug, Clone)]
pub struct Unpacked {
    /// Size of the `.tgz`.
    pub compressed_bytes: u64,
    /// Bytes of tar stream read (the unpacked package size, roughly).
    pub unpacked_bytes: u64,
    /// Every regular file of the package and its descriptor (`spec` left empty).
    pub listing: PackageListing,
}

/// The largest descriptor read into memory; a bigger one is listed but not read.
const MAX_DESCRIPTOR_BYTES: u64 = 64 * 1024;

/// Unpacks from the gzip-compressed tarball `tgz` into `dest` only the entries that may be the
/// native binary (regular files named `codex` larger than [`MIN_BINARY_SIZE`]) and the bundled
/// resources codex needs beside it ([`super::RESOURCES`]); the rest of the package is read and
/// skipped. Shows MB unpacked. Errors mean the tarball is corrupt (bad gzip or
/// tar data, truncation, CRC mismatch).
pub async fn unpack(tgz: &Path, dest: &Path, progress: &dyn Progress) -> Result<Unpacked> {
    let file = File::open(tgz).with_context(|| format!("cannot open {}", tgz.display()))?;
    unpack_file(file, tgz, dest, progress).await
}

/// [`unpack`] from `file`, already open (`tgz` is its path, for the progress shown).
pub(super) async fn unpack_file(
    file: File,
    tgz: &Path,
    dest: &Path,
    progress: &dyn Progress,
) -> Result<Unpacked> {
    let counter = Arc::new(AtomicU64::new(0));
    let task = {
        let (dest, counter) = (dest.to_owned(), Arc::clone(&counter));
        tokio::task::spawn_blocking(move || unpack_blocking(file, Some(&dest), &counter))
    };
    let total = gzip_uncompressed_size(tgz);
    let started = Instant::now();
    tokio::pin!(task);
    let result = loop {
        tokio::select! {
            joined = &mut task => break joined.context("the unpack task panicked")?,
            () = tokio::time::sleep(TICK) => {
                let done = counter.load(Ordering::Relaxed);
                let of = total.map(|t| format!(" of {}", mb(t))).unwrap_or_default();
                progress.update(&format!("unpacking … {}{of}, {} s", mb(done), started.elapsed().as_secs()));
            }
        }
    };
    let unpacked = result?;
    progress.message(&format!(
        "unpacked {} in {:.1} s",
        mb(unpacked.unpacked_bytes),
        started.elapsed().as_secs_f64()
    ));
    Ok(unpacked)
}

/// The uncompressed size recorded in a gzip trailer (modulo 4 GiB), for progress display only.
pub(super) fn gzip_uncompressed_size(path: &Path) -> Option<u64> {
    use std::io::{Seek, SeekFrom};
    let mut file = File::open(path).ok()?;
    file.seek(SeekFrom::End(-4)).ok()?;
    let mut buf = [0u8; 4];
    file.read_exact(&mut buf).ok()?;
    Some(u64::from(u32::from_le_bytes(buf)))
}

/// Counts bytes read through it.
pub(super) struct CountingReader<R> {
    /// The wrapped reader.
    pub(super) inner: R,
    /// Running total, shared with the progress display.
    pub(super) count: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Synchronous body of [`unpack`], reading `file`.
/// With `dest` `None` nothing is unpacked: the package is only listed.
pub(super) fn unpack_blocking(
    file: File,
    dest: Option<&Path>,
    counter: &Arc<AtomicU64>,
) -> Result<Unpacked> {
    let compressed_bytes = file.metadata().map(|m| m.len()).unwrap_or(0);
    if let Some(dest) = dest {
        std::fs::create_dir_all(dest)
            .with_context(|| format!("cannot create {}", dest.display()))?;
    }
    let gz = flate2::read::GzDecoder::new(std::io::BufReader::with_capacity(1 << 20, file));
    let mut reader = CountingReader {
        inner: gz,
        count: Arc::clone(counter),
    };
    let mut listing = PackageListing::default();
    {
        let mut archive = tar::Archive::new(&mut reader);
        let entries = archive
            .entries()
            .context("not a gzip-compressed tar archive")?;
        for entry in entries {
            let mut entry = entry.context("bad tar entry (truncated or not a tar archive)")?;
            let header = entry.header();
            if header.entry_type().is_file()
                && let Ok(path) = entry.path()
            {
                let (path, size) = (path.display().to_string(), header.size().unwrap_or(0));
                listing.add(&path, size, header.mode().unwrap_or(0));
                if path.ends_with(DESCRIPTOR) && size <= MAX_DESCRIPTOR_BYTES {
                    let mut text = String::new();
                    entry
                        .read_to_string(&mut text)
                        .with_context(|| format!("cannot read {path}"))?;
                    let content = serde_json::from_str(&text)
                        .with_context(|| format!("{path} is not JSON"))?;
                    let path = crate::codex::package::normalize(&path).to_string();
                    listing.descriptor = Some(Descriptor { path, content });
                    continue;
                }
            }
            let header = entry.header();
            let is_candidate = header.entry_type().is_file()
                && entry.path().is_ok_and(|p| {
                    p.file_name()
                        .is_some_and(|n| is_native_binary(n, header.size().unwrap_or(0)))
                        || super::RESOURCES.iter().any(|r| p.ends_with(r))
                });
            if let (true, Some(dest)) = (is_candidate, dest) {
                let name = entry
                    .path()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default();
                let unpacked = entry
                    .unpack_in(dest)
                    .with_context(|| format!("cannot unpack {name}"))?;
                if !unpacked {
                    bail!("refusing to unpack {name}: the path leaves the package directory");
                }
            }
        }
    }
    // Read to the end so that gzip verifies its CRC and length trailer (tar stops at its
    // end-of-archive marker).
    std::io::copy(&mut reader, &mut std::io::sink())
        .context("bad gzip data after the tar archive")?;
    listing.finish();
    Ok(Unpacked {
        compressed_bytes,
        unpacked_bytes: counter.load(Ordering::Relaxed),
        listing,
    })
}

/// The rule that tells the native binary apart: a file named `codex` larger than
/// [`MIN_BINARY_SIZE`] (the package also holds small `codex` launcher scripts and directories).
pub(super) fn is_native_binary(name: &std::ffi::OsStr, size: u64) -> bool {
    name == "codex" && size > MIN_BINARY_SIZE
}

/// Finds the native Codex binary under `root`: the regular file (not a symlink) named `codex`
/// larger than [`MIN_BINARY_SIZE`]. If there are several, the one under `vendor/<triple>/` wins
/// when `triple` picks exactly one.
pub fn find_binary(root: &Path, triple: Option<&str>) -> Result<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in
            std::fs::read_dir(&dir).with_context(|| format!("cannot list {}", dir.display()))?
        {
            let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
            let meta = entry
                .metadata()
                .with_context(|| format!("cannot stat {}", entry.path().display()))?;
            if meta.is_dir() {
                stack.push(entry.path());
            } else if meta.is_file() && is_native_binary(&entry.file_name(), meta.len()) {
                found.push(entry.path());
            }
        }
    }
    found.sort();
    if found.len() > 1
        && let Some(triple) = triple
    {
        let marker = Path::new("vendor").join(triple);
        let preferred: Vec<&PathBuf> = found
            .iter()
            .filter(|p| {
                p.strip_prefix(root)
                    .is_ok_and(|rel| rel.ancestors().any(|a| a.ends_with(&marker)))
            })
            .collect();
        if let [only] = preferred.as_slice() {
            return Ok((*only).clone());
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 => bail!(
            "no codex binary inside the package (no regular file named `codex` larger than {} MB)",
            MIN_BINARY_SIZE / (1024 * 1024)
        ),
        _ => {
            let list: Vec<String> = found.iter().map(|p| p.display().to_string()).collect();
            bail!(
                "several candidate codex binaries inside the package: {}",
                list.join(", ")
            )
        }
    }
}

/// Makes `path` executable (`0o755`).
pub(super) fn set_executable(path: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .with_context(|| format!("cannot make {} executable", path.display()))
}

/// Lists the package in the tarball `tgz` without unpacking anything.
pub(super) async fn list_package(tgz: &Path) -> Result<PackageListing> {
    let tgz = tgz.to_owned();
    let file = File::open(&tgz).with_context(|| format!("cannot open {}", tgz.display()))?;
    let counter = Arc::new(AtomicU64::new(0));
    let unpacked = tokio::task::spawn_blocking(move || unpack_blocking(file, None, &counter))
        .await
        .context("the listing task panicked")??;
    Ok(unpacked.listing)
}
