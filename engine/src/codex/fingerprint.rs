//! A codex binary's identity on disk, and, for a binary installed in the cache, the
//! directory next to it where what is derived from the binary alone is kept between runs
//! (its `CODEX_HOME` template, see `crate::harness::home_template`; its protocol schema, see
//! [`crate::codex::schema_cache`]). A binary from elsewhere (`--codex-bin`,
//! `CODEX_TEST_BINS`) has no such directory: nothing is written for it outside the run's
//! temporary directories, and each process derives what it needs once.
//!
//! The key is cheap by design: hashing a 300 MB executable costs more CPU than what the
//! cache saves in a one-scenario process (nextest runs one process per test). It is a hash of
//! the canonical path, the size, the modification time (nanoseconds), the inode and the
//! version the binary reports: a binary rewritten in place gets a new modification time
//! (and, unpacked anew, a new inode), so a stale entry is never found under a new binary's
//! key. The hash is FNV-1a, written out here so that the key does not change with the Rust
//! toolchain (std's `DefaultHasher` may).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::codex::binary::CodexBinary;
use crate::codex::install::Cache;

/// The key of `binary` in the cache: 16 hex digits (see the module documentation).
pub fn fingerprint(binary: &CodexBinary) -> anyhow::Result<String> {
    let path = binary
        .path
        .canonicalize()
        .with_context(|| format!("resolving {}", binary.path.display()))?;
    let meta = std::fs::metadata(&path).with_context(|| format!("reading {}", path.display()))?;
    let identity = format!(
        "{}\0{}\0{}.{}\0{}\0{}",
        path.display(),
        meta.len(),
        meta.mtime(),
        meta.mtime_nsec(),
        meta.ino(),
        binary.version
    );
    Ok(format!("{:016x}", fnv1a(identity.as_bytes())))
}

/// The 64-bit FNV-1a hash of `bytes`.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// `<cache root>/<version>/derived/<fingerprint>` when `binary` is the cache's binary of its
/// version (`<cache root>/<version>/codex`), where what is derived from it is kept (not
/// created here; pruning the release removes it too); `None` for a binary from elsewhere or
/// when there is no cache.
pub fn cache_dir(binary: &CodexBinary) -> Option<PathBuf> {
    cache_dir_in(&Cache::from_env().ok()?, binary)
}

/// [`cache_dir`] in `cache`.
pub fn cache_dir_in(cache: &Cache, binary: &CodexBinary) -> Option<PathBuf> {
    let installed = cache.binary_path(&binary.version).canonicalize().ok()?;
    if installed != binary.path.canonicalize().ok()? {
        return None;
    }
    let key = fingerprint(binary).ok()?;
    Some(derived(&cache.version_dir(&binary.version)).join(key))
}

/// `<version dir>/derived`.
fn derived(version_dir: &Path) -> PathBuf {
    version_dir.join("derived")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_reference_values() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn a_rewritten_binary_gets_another_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("codex");
        std::fs::write(&path, "one").unwrap();
        let binary = CodexBinary {
            path: path.clone(),
            version: "0.1.0".into(),
        };
        let first = fingerprint(&binary).unwrap();
        assert_eq!(first, fingerprint(&binary).unwrap());
        assert_eq!(first.len(), 16);
        std::fs::write(&path, "two, longer").unwrap();
        assert_ne!(first, fingerprint(&binary).unwrap());
        let other = CodexBinary {
            version: "0.2.0".into(),
            ..binary
        };
        assert_ne!(first, fingerprint(&other).unwrap());
    }

    #[test]
    fn only_a_binary_installed_in_the_cache_has_a_cache_directory() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().join("cache"));
        let installed = cache.binary_path("0.1.0");
        std::fs::create_dir_all(installed.parent().unwrap()).unwrap();
        std::fs::write(&installed, "codex").unwrap();
        let binary = CodexBinary {
            path: installed.clone(),
            version: "0.1.0".into(),
        };
        let derived = cache_dir_in(&cache, &binary).unwrap();
        assert_eq!(
            derived,
            cache
                .version_dir("0.1.0")
                .join("derived")
                .join(fingerprint(&binary).unwrap())
        );
        let elsewhere = dir.path().join("codex");
        std::fs::write(&elsewhere, "codex").unwrap();
        let other = CodexBinary {
            path: elsewhere,
            version: "0.1.0".into(),
        };
        assert_eq!(cache_dir_in(&cache, &other), None);
        let mislabelled = CodexBinary {
            version: "0.2.0".into(),
            ..binary
        };
        assert_eq!(cache_dir_in(&cache, &mislabelled), None);
    }
}
