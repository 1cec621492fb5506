//! `codex-parity install`: fetch codex versions from npm into the cache, and `--prune` it.

use std::process::ExitCode;

use anyhow::Context;
use codex_parity::codex::binaries;
use codex_parity::codex::install::{self, Cache, StderrProgress};
use codex_parity::codex::versions;

/// `install --prune`: remove the releases not installed now, down to a cap if there is one.
#[derive(Debug)]
pub(crate) struct Prune {
    /// `--cache-max`, else `CODEX_PARITY_CACHE_MAX`, else no cap.
    pub(crate) cache_max: Option<String>,
}

/// `install`: the named versions, the `--compare` set, the `--sample`, or else the pinned
/// version; then the prune, if asked.
pub(crate) async fn install_versions(
    mut wanted: Vec<String>,
    compare: bool,
    sample: bool,
    prune: Option<Prune>,
) -> anyhow::Result<ExitCode> {
    wanted.extend(versions::load()?.chosen(compare, sample));
    if wanted.is_empty() {
        wanted.push(versions::load()?.pinned);
    }
    let cap = match prune.as_ref().and_then(|p| p.cache_max.as_deref()) {
        Some(text) => Some(install::parse_size(text).context("--cache-max")?),
        None => install::cap_from_env()?,
    };
    let cache = Cache::from_env()?;
    let source = binaries::BinarySource::Versions(wanted.clone());
    for binary in binaries::resolve(source, &cache, &StderrProgress::new()).await? {
        println!("{} {}", binary.label(), binary.path.display());
    }
    if prune.is_some() {
        let pruned = install::prune(&cache, cap, &wanted)?;
        for line in install::describe(&pruned) {
            println!("{line}");
        }
        if let Some(cap) = cap.filter(|&cap| pruned.bytes_after > cap) {
            eprintln!(
                "codex-parity: the cache is still over its cap ({:.0} MB > {:.0} MB): what is \
                 left is installed now or in use",
                pruned.bytes_after as f64 / 1e6,
                cap as f64 / 1e6
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}
