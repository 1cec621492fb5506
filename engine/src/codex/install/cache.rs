//! The per-user cache of installed Codex binaries (`<root>/<VERSION>/codex`) and where it is.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::{Result, anyhow};

use super::CACHE_ENV;
use crate::codex::binary::{self, CodexBinary};

/// The per-user cache of installed Codex binaries: `<root>/<VERSION>/codex` and
/// `<root>/<VERSION>/install.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cache {
    /// The directory holding one subdirectory per version.
    pub(super) root: PathBuf,
}

impl Cache {
    /// A cache rooted at `root` (created when first needed).
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// The default cache: `$CODEX_PARITY_CACHE` if set, else `$XDG_CACHE_HOME/codex-parity/codex`,
    /// else `$HOME/.cache/codex-parity/codex`.
    pub fn from_env() -> Result<Self> {
        let var = |name: &str| std::env::var_os(name);
        cache_root_from(var(CACHE_ENV), var("XDG_CACHE_HOME"), var("HOME")).map(Self::new).ok_or_else(|| {
            anyhow!("cannot choose a cache directory for Codex binaries: HOME is not set; set {CACHE_ENV}=DIR")
        })
    }

    /// The cache root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `<root>/<version>`.
    pub fn version_dir(&self, version: &str) -> PathBuf {
        self.root.join(version)
    }

    /// `<root>/<version>/codex`, where the binary of `version` is kept.
    pub fn binary_path(&self, version: &str) -> PathBuf {
        self.version_dir(version).join("codex")
    }

    /// `<root>/<version>/install.json`, describing where the binary came from.
    pub fn manifest_path(&self, version: &str) -> PathBuf {
        self.version_dir(version).join("install.json")
    }

    /// The lock file serialising installs of `version`.
    pub(super) fn lock_path(&self, version: &str) -> PathBuf {
        self.root.join(".locks").join(format!("{version}.lock"))
    }

    /// The lock file of the processes using `version` (each holds it shared while it uses
    /// the release; a removal takes it exclusively, never waiting).
    pub(super) fn held_path(&self, version: &str) -> PathBuf {
        self.root.join(".locks").join(format!("{version}.held"))
    }

    /// The directory holding temporary install directories of `version`.
    pub(super) fn tmp_dir(&self, version: &str) -> PathBuf {
        self.root.join(".tmp").join(version)
    }

    /// The cached binary of `version`, if present and `--version` reports `version`; marks it
    /// used now (its `last-used` stamp, which pruning reads).
    pub async fn cached(&self, version: &str) -> Option<CodexBinary> {
        let path = self.binary_path(version);
        if !path.is_file() {
            return None;
        }
        // An install of an older layout (the binary alone) is made again.
        let record = super::read_record(self, version).ok()?;
        if record.layout < super::LAYOUT {
            return None;
        }
        let binary = binary::probe(&path)
            .await
            .ok()
            .filter(|b| b.version == version)?;
        super::mark_used(&self.version_dir(version));
        Some(binary)
    }
}

/// Chooses the cache root from the values of `CODEX_PARITY_CACHE`, `XDG_CACHE_HOME` and `HOME`.
/// Empty values count as unset; a relative `XDG_CACHE_HOME` is ignored, as the XDG spec says.
pub fn cache_root_from(
    override_dir: Option<OsString>,
    xdg_cache_home: Option<OsString>,
    home: Option<OsString>,
) -> Option<PathBuf> {
    let non_empty = |v: Option<OsString>| v.filter(|v| !v.is_empty()).map(PathBuf::from);
    if let Some(dir) = non_empty(override_dir) {
        return Some(dir);
    }
    if let Some(xdg) = non_empty(xdg_cache_home).filter(|p| p.is_absolute()) {
        return Some(xdg.join("codex-parity").join("codex"));
    }
    non_empty(home).map(|h| h.join(".cache").join("codex-parity").join("codex"))
}
