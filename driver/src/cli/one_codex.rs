//! The arguments of a command that runs on one codex (`record`, `client-check`):
//! `--codex-bin PATH` or `--codex-version VERSION`, else the pinned version.

use std::path::PathBuf;

use codex_parity::codex::binaries::OneBinary;

/// `--codex-bin` / `--codex-version`.
#[derive(Debug, Clone, clap::Args)]
pub(crate) struct OneCodex {
    /// The codex binary to run.
    #[arg(
        long = "codex-bin",
        value_name = "PATH",
        conflicts_with = "codex_version"
    )]
    pub(crate) codex_bin: Option<PathBuf>,
    /// A codex version from npm (installed into the cache on first use); default: the
    /// pinned version.
    #[arg(long = "codex-version", value_name = "VERSION")]
    pub(crate) codex_version: Option<String>,
}

impl OneCodex {
    /// The binary they name.
    pub(crate) fn binary(&self) -> OneBinary {
        OneBinary {
            path: self.codex_bin.clone(),
            version: self.codex_version.clone(),
        }
    }
}
