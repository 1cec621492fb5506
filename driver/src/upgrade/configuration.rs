//! The integration's configuration in `upgrade --profile FILE`: its `config check` profile
//! (docs/config.md) judged on A and on B, and each item B does not take as written.

use crate::codex::binary::CodexBinary;
use crate::codex::install::StderrProgress;
use crate::config::check::{self, Options, Probe};
use crate::config::isolation::{HostConfig, Isolation};
use crate::config::profile::Profile;
use crate::config::render;
use crate::config::verdict::cell;

use super::verdict::{ConfigItem, ConfigPart};

/// Judges `profile` on `from` and `to` (the host's `/etc/codex` hidden, as `config check`
/// does by default); warnings do not break it, as they do not break `config check` unless
/// strict.
pub async fn judge(
    profile: &Profile,
    from: &CodexBinary,
    to: &CodexBinary,
) -> anyhow::Result<ConfigPart> {
    let isolation = Isolation::detect(HostConfig::Hide).await;
    let options = Options {
        isolation: &isolation,
        strict: false,
        bisect: false,
    };
    let binaries = vec![from.clone(), to.clone()];
    let report = check::check(profile, binaries, options, &NoProbe, &StderrProgress::new()).await?;
    let accepted = |item: &check::ItemReport, version: &str| {
        item.verdicts.get(version).is_some_and(|v| v.passes(false))
    };
    let broken = report
        .items
        .iter()
        .filter(|i| !accepted(i, &to.version))
        .map(|i| ConfigItem {
            item: format!("{} {}", i.at.rsplit('/').next().unwrap_or(&i.at), i.item),
            on_to: i.verdicts.get(&to.version).map_or_else(|| "-".into(), cell),
            held_on_from: accepted(i, &from.version),
        })
        .collect();
    Ok(ConfigPart {
        text: render::text(&report),
        broken,
    })
}

/// `upgrade` places no change between A and B: it never probes.
struct NoProbe;

impl Probe for NoProbe {
    async fn between(&self, _older: &str, _newer: &str) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }

    async fn install(&self, version: &str) -> anyhow::Result<CodexBinary> {
        anyhow::bail!("upgrade does not probe releases between A and B (asked for {version})")
    }
}
