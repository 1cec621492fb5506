//! A profile checked on several releases: each release judged ([`crate::config::judge`]), and
//! for each item whose outcome differs between two releases named next to each other, the
//! first release where it changed, found by a binary search over the stable releases
//! between them (installed as they are probed, into the same cache). The outcome compared is
//! the status, the warning's kind and its detail (`remapped on-request`), not codex's wording.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::codex::binaries::CodexBinary;
use crate::codex::card::{self, Card};
use crate::codex::install::Progress;
use crate::codex::versions;
use crate::config::isolation::Isolation;
use crate::config::items::{self, Grammar, Item, Layout};
use crate::config::judge::{self, Inputs, Judged};
use crate::config::profile::Profile;
use crate::config::verdict::Verdict;
use crate::record::redact::Redactor;

/// Where releases to probe come from: the published list, and installs.
#[allow(async_fn_in_trait)]
pub trait Probe {
    /// The stable releases strictly between `older` and `newer`, oldest first.
    async fn between(&self, older: &str, newer: &str) -> anyhow::Result<Vec<String>>;
    /// The binary of `version`.
    async fn install(&self, version: &str) -> anyhow::Result<CodexBinary>;
}

/// The whole check.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The profile file.
    pub profile: String,
    /// The releases named, oldest first.
    pub releases: Vec<String>,
    /// The releases probed in between to place changes.
    pub probed: Vec<String>,
    /// Every item with its verdict per release and where it changed.
    pub items: Vec<ItemReport>,
    /// Per release: notes, leaks, connections, runs, time.
    pub runs: Vec<ReleaseReport>,
    /// What the check did about the host's own configuration.
    pub isolation: String,
    /// Whether warnings fail.
    pub strict: bool,
}

/// One item across releases.
#[derive(Debug, Clone, Serialize)]
pub struct ItemReport {
    /// Its index.
    pub id: usize,
    /// Its family (`command line`, `config.toml`, `thread/start`, `package`).
    pub family: String,
    /// What it is, as written.
    pub item: String,
    /// Where it is.
    pub at: String,
    /// Its verdict on each release named (and probed), by version.
    pub verdicts: BTreeMap<String, Verdict>,
    /// Each change between releases named next to each other: the last release with the old
    /// outcome, the first with the new.
    pub changes: Vec<Change>,
}

/// Where one item's outcome changed.
#[derive(Debug, Clone, Serialize)]
pub struct Change {
    /// The last release with the old outcome.
    pub last_before: String,
    /// The first release with the new one.
    pub first: String,
    /// Whether the releases in between were all probed (false: `first` is only the next
    /// release named, with unprobed releases before it).
    pub exact: bool,
    /// The old outcome.
    pub from: String,
    /// The new outcome.
    pub to: String,
}

/// One release's run.
#[derive(Debug, Clone, Serialize)]
pub struct ReleaseReport {
    /// The version.
    pub version: String,
    /// Whether it was named (false: probed).
    pub named: bool,
    /// What codex said that names no item, and how the run was adapted.
    pub notes: Vec<String>,
    /// What codex applied from outside the check's home and flags.
    pub leaks: Vec<String>,
    /// Connections codex tried.
    pub connections: Vec<String>,
    /// How many times codex was started.
    pub runs: usize,
    /// Milliseconds.
    pub took_ms: u128,
}

impl Report {
    /// Replaces every secret `redactor` finds in the report's text (outcomes compare the
    /// same: a value is replaced the same way on every release).
    fn redact(&mut self, redactor: &mut Redactor) {
        for item in &mut self.items {
            item.item = redactor.text(&item.item);
            for v in item.verdicts.values_mut() {
                v.detail = v.detail.as_deref().map(|d| redactor.text(d));
                v.messages = v.messages.iter().map(|m| redactor.text(m)).collect();
            }
            for c in &mut item.changes {
                (c.from, c.to) = (redactor.text(&c.from), redactor.text(&c.to));
            }
        }
        for run in &mut self.runs {
            for list in [&mut run.notes, &mut run.leaks, &mut run.connections] {
                *list = list.iter().map(|l| redactor.text(l)).collect();
            }
        }
    }

    /// Whether every item passes on every release named (warnings fail when strict).
    pub fn passes(&self) -> bool {
        self.items.iter().all(|i| {
            self.releases
                .iter()
                .all(|r| i.verdicts.get(r).is_some_and(|v| v.passes(self.strict)))
        })
    }
}

/// The items of a profile read with the grammar of `cards`.
pub fn items_of(profile: &Profile, cards: &[&Card]) -> (Vec<Item>, Layout) {
    items::items(profile, &Grammar::of(cards))
}

/// How a check runs.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// How codex is started.
    pub isolation: &'a Isolation,
    /// Warnings fail.
    pub strict: bool,
    /// Place each change between releases named next to each other by probing those between.
    pub bisect: bool,
}

/// Checks `profile` on `binaries` (sorted here, oldest first), placing each change with
/// `probe` when `options.bisect`.
pub async fn check(
    profile: &Profile,
    binaries: Vec<CodexBinary>,
    options: Options<'_>,
    probe: &impl Probe,
    progress: &dyn Progress,
) -> anyhow::Result<Report> {
    let Options {
        isolation,
        strict,
        bisect,
    } = options;
    let mut binaries = binaries;
    binaries.sort_by_key(|b| versions::sort_key(&b.version));
    let mut cards = Vec::new();
    for b in &binaries {
        cards.push(card::card(b, progress).await?);
    }
    let (items, layout) = items_of(profile, &cards.iter().collect::<Vec<_>>());
    let inputs = Inputs {
        profile,
        items: &items,
        layout: &layout,
        isolation,
    };
    let mut judged: BTreeMap<String, Judged> = BTreeMap::new();
    for (b, c) in binaries.iter().zip(&cards) {
        progress.message(&format!(
            "config check: {} ({} items)",
            b.label(),
            items.len()
        ));
        let j = judge::judge(b, c, inputs).await?;
        judged.insert(b.version.clone(), j);
    }
    let named: Vec<String> = binaries.iter().map(|b| b.version.clone()).collect();
    let mut changes: BTreeMap<usize, Vec<Change>> = BTreeMap::new();
    let mut probed = Vec::new();
    for pair in named.windows(2) {
        let (older, newer) = (&pair[0], &pair[1]);
        let differing: Vec<usize> = items
            .iter()
            .map(|i| i.id)
            .filter(|id| outcome(&judged[older], *id) != outcome(&judged[newer], *id))
            .collect();
        if differing.is_empty() {
            continue;
        }
        let exact = bisect && versions::is_version(older) && versions::is_version(newer);
        let between = if exact {
            probe.between(older, newer).await?
        } else {
            Vec::new()
        };
        for id in differing {
            let (mut lo, mut hi) = (None::<usize>, between.len());
            // Invariant: releases[..=lo] (or `older`) share older's outcome; `hi` (or `newer`)
            // has another.
            let old = outcome(&judged[older], id);
            while hi > lo.map_or(0, |l| l + 1) {
                let mid = (lo.map_or(0, |l| l + 1) + hi) / 2;
                let version = &between[mid];
                if !judged.contains_key(version) {
                    let binary = probe.install(version).await?;
                    let c = card::card(&binary, progress).await?;
                    progress.message(&format!("config check: probing {}", binary.label()));
                    let j = judge::judge(&binary, &c, inputs).await?;
                    probed.push(version.clone());
                    judged.insert(version.clone(), j);
                }
                if outcome(&judged[version], id) == old {
                    lo = Some(mid);
                } else {
                    hi = mid;
                }
            }
            let last_before = lo.map_or_else(|| older.clone(), |l| between[l].clone());
            let first = between.get(hi).cloned().unwrap_or_else(|| newer.clone());
            changes.entry(id).or_default().push(Change {
                from: judged[&last_before].verdicts[id].to_string(),
                to: judged[&first].verdicts[id].to_string(),
                last_before,
                first,
                exact,
            });
        }
    }
    probed.sort_by_key(|v| versions::sort_key(v));
    let mut all: Vec<&String> = judged.keys().collect();
    all.sort_by_key(|v| versions::sort_key(v));
    let report_items = items
        .iter()
        .map(|i| ItemReport {
            id: i.id,
            family: i.kind.family(),
            item: i.kind.to_string(),
            at: i.at.clone(),
            verdicts: all
                .iter()
                .map(|v| ((*v).clone(), judged[*v].verdicts[i.id].clone()))
                .collect(),
            changes: changes.remove(&i.id).unwrap_or_default(),
        })
        .collect();
    let runs = all
        .iter()
        .map(|v| {
            let j = &judged[*v];
            ReleaseReport {
                version: j.version.clone(),
                named: named.contains(v),
                notes: j.notes.clone(),
                leaks: j.leaks.clone(),
                connections: j.connections.clone(),
                runs: j.runs,
                took_ms: j.took.as_millis(),
            }
        })
        .collect();
    let mut report = Report {
        profile: profile.path.display().to_string(),
        releases: named,
        probed,
        items: report_items,
        runs,
        isolation: isolation.describe(),
        strict,
    };
    // What the report shows (the profile's items as written, codex's own words) holds no
    // secret: the values of secret-named variables, the profile's own secret settings and
    // secret shapes are replaced.
    let env = std::env::vars_os();
    report.redact(&mut Redactor::for_recording(
        &[],
        "OPENAI_API_KEY",
        env,
        crate::config::init::secret_values(profile),
    )?);
    Ok(report)
}

/// An item's outcome on one release, as compared.
fn outcome(
    j: &Judged,
    id: usize,
) -> (
    crate::config::verdict::Status,
    Option<crate::config::verdict::Warning>,
    Option<String>,
) {
    let (s, w, d) = j.verdicts[id].outcome();
    (s, w, d.map(String::from))
}
