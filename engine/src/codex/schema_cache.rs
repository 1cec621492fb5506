//! A binary's protocol schema, generated once and, for a binary installed in the cache, kept
//! next to it under its key ([`crate::codex::fingerprint::cache_dir`]):
//! `<key>/schema/experimental` and `<key>/schema/stable`, as `generate-json-schema --out`
//! writes them. Every process that reads the binary's capabilities (each test process of a
//! nextest run, every `codex-parity` command) then reads two directories instead of running
//! codex twice. The entry appears complete or not at all (made aside, then renamed). A
//! binary from elsewhere, or a cache that cannot be written, gets its schema generated into
//! a temporary directory, as before.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::codex::binaries::CodexBinary;
use crate::codex::fingerprint;
use crate::codex::schema;

/// Where a binary's two schema directories are; holds the temporary directory when they
/// are not in the cache.
#[derive(Debug)]
pub struct SchemaDirs {
    /// The output of `generate-json-schema --experimental`.
    pub experimental: PathBuf,
    /// The output of `generate-json-schema` (the stable surface).
    pub stable: PathBuf,
    _scratch: Option<tempfile::TempDir>,
}

/// The schema directories of `binary`: from the cache, generated into it when missing, or
/// (when the cache cannot be used) generated into a temporary directory.
pub async fn schema_dirs(binary: &CodexBinary) -> anyhow::Result<SchemaDirs> {
    if let Some(parent) = fingerprint::cache_dir(binary) {
        match cached(binary, &parent).await {
            Ok(dir) => {
                return Ok(SchemaDirs {
                    experimental: dir.join("experimental"),
                    stable: dir.join("stable"),
                    _scratch: None,
                });
            }
            Err(e) => eprintln!(
                "codex-parity: {}: its schema is not cached ({e:#}); generating it",
                binary.label()
            ),
        }
    }
    let scratch = tempfile::tempdir().context("creating a directory for the schema")?;
    let dir = generate_both(binary, scratch.path()).await?;
    Ok(SchemaDirs {
        experimental: dir.join("experimental"),
        stable: dir.join("stable"),
        _scratch: Some(scratch),
    })
}

/// `parent/schema`, generated first when missing.
async fn cached(binary: &CodexBinary, parent: &Path) -> anyhow::Result<PathBuf> {
    let dest = parent.join("schema");
    if dest.is_dir() {
        return Ok(dest);
    }
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix(".making-schema-")
        .tempdir_in(parent)
        .with_context(|| format!("creating a scratch directory in {}", parent.display()))?;
    let made = generate_both(binary, scratch.path()).await?;
    // Another process may have won the race: its schema is the same.
    if let Err(e) = std::fs::rename(&made, &dest)
        && !dest.is_dir()
    {
        return Err(e).with_context(|| format!("moving the schema to {}", dest.display()));
    }
    Ok(dest)
}

/// Generates both schemas under `scratch` (codex gets a home of its own there for each run)
/// and gathers them in `scratch/schema/{experimental,stable}`; returns `scratch/schema`.
async fn generate_both(binary: &CodexBinary, scratch: &Path) -> anyhow::Result<PathBuf> {
    let gathered = scratch.join("schema");
    std::fs::create_dir(&gathered).with_context(|| format!("creating {}", gathered.display()))?;
    for (name, experimental) in [("experimental", true), ("stable", false)] {
        let home = scratch.join(format!("{name}-home"));
        std::fs::create_dir(&home).with_context(|| format!("creating {}", home.display()))?;
        let out = home.join("schema");
        schema::generate(binary, &out, experimental).await?;
        std::fs::rename(&out, gathered.join(name))
            .with_context(|| format!("moving {}", out.display()))?;
    }
    Ok(gathered)
}
