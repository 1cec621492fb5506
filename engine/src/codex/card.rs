//! The surface card of a codex release: what an integrator launches and configures, read
//! from the binary and its package once and kept with it. Its features (name, stage,
//! default: `codex features list`, [`crate::codex::features`]), its commands and their flags
//! with their values (`codex completion fish`, [`crate::codex::completion`]), its package's
//! files and entrypoint ([`crate::codex::package`]) and the protocol's enums (the schema's
//! string enums and unions, `AskForApproval`, `SandboxMode`, …).
//!
//! For a binary installed in the cache the card is kept under its key
//! (`<key>/card.json`, see [`crate::codex::fingerprint::cache_dir`]), written aside and
//! renamed; a binary from elsewhere gets its card made in each process (about a second),
//! without a package (it came from no npm package). [`diff`] compares two cards for
//! `schema-diff`; `surface check`'s `feature`, `flag` and `package` uses are judged on them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::codex::binaries::CodexBinary;
use crate::codex::completion::{self, Commands};
use crate::codex::features::{self, Feature};
use crate::codex::install::{self, Cache, Progress};
use crate::codex::package::PackageListing;
use crate::codex::schema::Schema;
use crate::codex::{fingerprint, schema_cache};

/// The card format; a card of another format is made again.
const FORMAT: u32 = 1;

/// One release's surface card.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Card {
    /// [`FORMAT`] when it was made.
    pub format: u32,
    /// The version the binary reports.
    pub version: String,
    /// `codex features list` in an empty home.
    pub features: Vec<Feature>,
    /// Every command (`""` is `codex` itself) with its flags and subcommands.
    pub commands: Commands,
    /// The npm package's files, or `None` for a binary that came from no package.
    pub package: Option<PackageListing>,
    /// Why there is no package listing, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub package_note: Option<String>,
    /// The protocol's string enums: type -> values (a union's object variants as `{name}`).
    pub enums: BTreeMap<String, Vec<String>>,
}

impl Card {
    /// The feature named `name`, when listed.
    pub fn feature(&self, name: &str) -> Option<&Feature> {
        self.features.iter().find(|f| f.name == name)
    }

    /// The command at `path` (`""`, `exec`, `exec resume`).
    pub fn command(&self, path: &str) -> Option<&completion::CommandSpec> {
        self.commands.get(path)
    }
}

/// The card of `binary`: from the cache when kept there, else made (and kept when the
/// binary is the cache's). `progress` tells of a package listed again from the registry.
pub async fn card(binary: &CodexBinary, progress: &dyn Progress) -> anyhow::Result<Card> {
    let Some(dir) = fingerprint::cache_dir(binary) else {
        return make(binary, None, progress).await;
    };
    let path = dir.join("card.json");
    if let Ok(text) = std::fs::read_to_string(&path)
        && let Ok(card) = serde_json::from_str::<Card>(&text)
        && card.format == FORMAT
    {
        return Ok(card);
    }
    let cache = Cache::from_env()?;
    let card = make(binary, Some(&cache), progress).await?;
    if let Err(e) = store(&path, &card) {
        eprintln!(
            "codex-parity: {}: its surface card is not cached ({e:#})",
            binary.label()
        );
    }
    Ok(card)
}

/// Makes the card of `binary`; its package is listed only when `cache` is the cache it was
/// installed into.
async fn make(
    binary: &CodexBinary,
    cache: Option<&Cache>,
    progress: &dyn Progress,
) -> anyhow::Result<Card> {
    let features = features::read(binary).await?;
    let commands = completion::read(binary).await?;
    let dirs = schema_cache::schema_dirs(binary).await?;
    let schema = Schema::read(&dirs.experimental)
        .with_context(|| format!("{}: reading its schema", binary.label()))?;
    let (package, package_note) = match cache {
        Some(cache) => (
            Some(install::package_listing(cache, &binary.version, progress).await?),
            None,
        ),
        None => (
            None,
            Some(format!(
                "{} is not an installed npm release ({}): it has no package to list",
                binary.label(),
                binary.path.display()
            )),
        ),
    };
    Ok(Card {
        format: FORMAT,
        version: binary.version.clone(),
        features,
        commands,
        package,
        package_note,
        enums: enums(&schema),
    })
}

/// The string enums of a schema: each type with values, a union's object variants added as
/// `{name}`.
fn enums(schema: &Schema) -> BTreeMap<String, Vec<String>> {
    schema
        .types
        .iter()
        .filter(|(_, t)| !t.values.is_empty())
        .map(|(name, t)| {
            let mut values = t.values.clone();
            values.extend(t.variants.keys().map(|v| format!("{{{v}}}")));
            (name.clone(), values)
        })
        .collect()
}

/// Writes `card` to `path` through a file beside it, renamed into place.
fn store(path: &Path, card: &Card) -> anyhow::Result<()> {
    let parent = path.parent().context("a cache path without a directory")?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let aside = tempfile::NamedTempFile::new_in(parent)
        .with_context(|| format!("creating a scratch file in {}", parent.display()))?;
    std::fs::write(aside.path(), serde_json::to_vec_pretty(card)?)
        .with_context(|| format!("writing {}", aside.path().display()))?;
    aside
        .persist(path)
        .with_context(|| format!("moving the card to {}", path.display()))?;
    Ok(())
}

/// What changed from one card to another (the protocol's enums are `schema-diff`'s).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CardDiff {
    /// The older card's version.
    pub from: String,
    /// The newer card's version.
    pub to: String,
    /// Features added (`name stage default`).
    pub features_added: Vec<String>,
    /// Features no longer listed.
    pub features_removed: Vec<String>,
    /// Features whose stage or default changed (`name: stage default -> stage default`).
    pub features_changed: Vec<String>,
    /// Commands added (`exec resume`).
    pub commands_added: Vec<String>,
    /// Commands gone.
    pub commands_removed: Vec<String>,
    /// Flags added (`exec --json`).
    pub flags_added: Vec<String>,
    /// Flags gone.
    pub flags_removed: Vec<String>,
    /// Flag values added or gone (`+ --ask-for-approval granular`, `- … on-failure`).
    pub values: Vec<String>,
    /// Package files added.
    pub files_added: Vec<String>,
    /// Package files gone.
    pub files_removed: Vec<String>,
    /// The entrypoint, when it moved (`old -> new`).
    pub entrypoint: Option<String>,
    /// What could not be compared (a card without a package).
    pub notes: Vec<String>,
}

/// `a` -> `b`.
pub fn diff(a: &Card, b: &Card) -> CardDiff {
    let mut d = CardDiff {
        from: a.version.clone(),
        to: b.version.clone(),
        ..CardDiff::default()
    };
    let fa: BTreeMap<&str, &Feature> = a.features.iter().map(|f| (f.name.as_str(), f)).collect();
    let fb: BTreeMap<&str, &Feature> = b.features.iter().map(|f| (f.name.as_str(), f)).collect();
    let show = |f: &Feature| format!("{} ({}, {})", f.name, f.stage, on_off(f.default));
    for (name, f) in &fb {
        match fa.get(name) {
            None => d.features_added.push(show(f)),
            Some(old) if (&old.stage, old.default) != (&f.stage, f.default) => {
                d.features_changed.push(format!(
                    "{name}: {} {} -> {} {}",
                    old.stage,
                    on_off(old.default),
                    f.stage,
                    on_off(f.default)
                ))
            }
            Some(_) => {}
        }
    }
    d.features_removed = fa
        .iter()
        .filter(|(n, _)| !fb.contains_key(*n))
        .map(|(_, f)| show(f))
        .collect();
    let shown = |path: &str| {
        if path.is_empty() {
            "codex".to_string()
        } else {
            path.to_string()
        }
    };
    for (path, cb) in &b.commands {
        let Some(ca) = a.commands.get(path) else {
            d.commands_added.push(shown(path));
            continue;
        };
        for (flag, spec) in &cb.flags {
            match ca.flags.get(flag) {
                None => d.flags_added.push(format!("{} {flag}", shown(path))),
                Some(old) => {
                    let (va, vb): (BTreeSet<&String>, BTreeSet<&String>) =
                        (old.values.iter().collect(), spec.values.iter().collect());
                    for v in va.difference(&vb) {
                        d.values.push(format!("- {} {flag} {v}", shown(path)));
                    }
                    for v in vb.difference(&va) {
                        d.values.push(format!("+ {} {flag} {v}", shown(path)));
                    }
                }
            }
        }
        for flag in ca.flags.keys().filter(|f| !cb.flags.contains_key(*f)) {
            d.flags_removed.push(format!("{} {flag}", shown(path)));
        }
    }
    d.commands_removed = a
        .commands
        .keys()
        .filter(|p| !b.commands.contains_key(*p))
        .map(|p| shown(p))
        .collect();
    match (&a.package, &b.package) {
        (Some(pa), Some(pb)) => {
            let (la, lb): (BTreeSet<&str>, BTreeSet<&str>) =
                (pa.paths().collect(), pb.paths().collect());
            d.files_added = lb.difference(&la).map(|p| p.to_string()).collect();
            d.files_removed = la.difference(&lb).map(|p| p.to_string()).collect();
            let (ea, eb) = (pa.entrypoint(), pb.entrypoint());
            if ea != eb {
                d.entrypoint = Some(format!(
                    "{} -> {}",
                    ea.as_deref().unwrap_or("none"),
                    eb.as_deref().unwrap_or("none")
                ));
            }
        }
        _ => {
            for card in [a, b] {
                if let Some(note) = &card.package_note {
                    d.notes.push(format!("package not compared: {note}"));
                }
            }
        }
    }
    d
}

fn on_off(on: bool) -> &'static str {
    if on { "on" } else { "off" }
}

impl CardDiff {
    /// The diff as text, in `schema-diff`'s style: a section per kind, `-` gone, `+` new,
    /// `~` changed.
    pub fn to_text(&self) -> String {
        let mut out = format!(
            "\nconfiguration surface {} -> {} (features, flags, package)\n",
            self.from, self.to
        );
        let mut section = |label: &str, removed: &[String], added: &[String]| {
            let _ = writeln!(out, "{label}: +{} -{}", added.len(), removed.len());
            for r in removed {
                let _ = writeln!(out, "  - {r}");
            }
            for a in added {
                let _ = writeln!(out, "  + {a}");
            }
        };
        section("features", &self.features_removed, &self.features_added);
        section("commands", &self.commands_removed, &self.commands_added);
        section("flags", &self.flags_removed, &self.flags_added);
        section("package files", &self.files_removed, &self.files_added);
        let _ = writeln!(out, "features changed: {}", self.features_changed.len());
        for c in &self.features_changed {
            let _ = writeln!(out, "  ~ {c}");
        }
        let _ = writeln!(out, "flag values changed: {}", self.values.len());
        for v in &self.values {
            let _ = writeln!(out, "  {v}");
        }
        if let Some(e) = &self.entrypoint {
            let _ = writeln!(out, "entrypoint: {e}");
        }
        for n in &self.notes {
            let _ = writeln!(out, "note: {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::completion::{CommandSpec, FlagSpec};

    fn card(version: &str, features: &[(&str, &str, bool)], approval: &[&str], bin: &str) -> Card {
        let mut top = CommandSpec::default();
        top.flags.insert(
            "--ask-for-approval".into(),
            FlagSpec {
                short: Some('a'),
                takes_value: true,
                values: approval.iter().map(|v| v.to_string()).collect(),
            },
        );
        let mut package = PackageListing::default();
        package.add(bin, 200 << 20, 0o755);
        package.finish();
        Card {
            format: FORMAT,
            version: version.into(),
            features: features
                .iter()
                .map(|(n, s, d)| Feature {
                    name: n.to_string(),
                    stage: s.to_string(),
                    default: *d,
                })
                .collect(),
            commands: [(String::new(), top)].into_iter().collect(),
            package: Some(package),
            package_note: None,
            enums: BTreeMap::new(),
        }
    }

    #[test]
    fn features_flags_values_and_the_entrypoint_are_compared() {
        let a = card(
            "0.131.0",
            &[
                ("goals", "experimental", false),
                ("child_agents_md", "stable", true),
            ],
            &["untrusted", "on-failure", "on-request", "never"],
            "vendor/x/codex/codex",
        );
        let b = card(
            "0.171.0",
            &[("goals", "stable", true), ("sleep_tool", "stable", true)],
            &["on-request", "never"],
            "vendor/x/bin/codex",
        );
        let d = diff(&a, &b);
        assert_eq!(d.features_added, ["sleep_tool (stable, on)"]);
        assert_eq!(d.features_removed, ["child_agents_md (stable, on)"]);
        assert_eq!(d.features_changed, ["goals: experimental off -> stable on"]);
        assert_eq!(
            d.values,
            [
                "- codex --ask-for-approval on-failure",
                "- codex --ask-for-approval untrusted"
            ]
        );
        assert_eq!(
            d.entrypoint.as_deref(),
            Some("vendor/x/codex/codex -> vendor/x/bin/codex")
        );
        assert_eq!(d.files_added, ["vendor/x/bin/codex"]);
        let text = d.to_text();
        assert!(
            text.contains("  ~ goals: experimental off -> stable on"),
            "{text}"
        );
        assert!(diff(&a, &a).to_text().contains("features: +0 -0"));
    }
}
