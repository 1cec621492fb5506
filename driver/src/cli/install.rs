//! `codex-parity install`: fetch codex versions from npm into the cache.

use std::process::ExitCode;

use codex_parity::codex::binaries;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;

/// `install`: the named versions, the `--compare` set, or else the pinned version.
pub(crate) async fn install_versions(
    mut wanted: Vec<String>,
    compare: bool,
) -> anyhow::Result<ExitCode> {
    if compare {
        wanted.extend(versions::load()?.compare);
    }
    if wanted.is_empty() {
        wanted.push(versions::load()?.pinned);
    }
    let source = binaries::BinarySource::Versions(wanted);
    for binary in binaries::resolve(source, &Cache::from_env()?, &StderrProgress::new()).await? {
        println!("{} {}", binary.label(), binary.path.display());
    }
    Ok(ExitCode::SUCCESS)
}
