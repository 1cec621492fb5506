//! Every item of a profile judged on one release.
//!
//! 1. From the release's surface card, without running codex: each package path is in the
//!    package or missing; each feature name is listed (a `removed` or `deprecated` stage is a
//!    warning), a legacy alias (`--disable NAME features list` turns another feature off) or
//!    not a feature at all; for a command line codex-parity does not start (not `app-server`
//!    or `exec`), each subcommand and flag is on the card or unknown.
//! 2. Live, as the integrator launches it ([`crate::config::oracle`]): when codex refuses
//!    (exits before answering, or `thread/start` fails), the item codex's message names is
//!    given that verdict and codex's words, taken out, and the run repeated, until codex takes
//!    what is left. Codex names an item by its file and line (`<CODEX_HOME>/config.toml:3:16`),
//!    its key (`` in `model_context_window` ``, `` `features.x` is ignored ``), its flag or
//!    value (clap's `unexpected argument '--stdio'`), or, for a `thread/start` param, by
//!    failing when that param is sent alone.
//! 3. On the run codex took: each warning it sent (`configWarning`, `deprecationNotice`,
//!    `warning`, and `WARN` lines on stderr) goes to the items it names; a value codex
//!    applied differently (`thread/start`'s `approvalPolicy`, `config/read`, a feature's
//!    `enabled` in `experimentalFeature/list`) is a remap; a
//!    setting in a file codex did not load (no layer of `config/read` is that file) is not
//!    read. A warning that names no item is a note of the release.
//! 4. With `--strict-config` (when the command has it and the profile does not pass it): the
//!    first key codex would ignore, taken out and repeated until none is left; each is a
//!    warning, `ignored`.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{Value, json};

use crate::codex::binaries::CodexBinary;
use crate::codex::card::Card;
use crate::codex::features;
use crate::config::isolation::{self, Isolation};
use crate::config::items::{APP_SERVER, Item, ItemKind, Layout};
use crate::config::oracle::{self, Mode, Observed, Outcome, Run};
use crate::config::profile::{self, Profile};
use crate::config::verdict::{Status, Verdict, Warning};

/// The detail of a key codex ignores and says so only in a log line on stderr.
const ON_STDERR: &str = "on stderr only";

/// The detail of a key codex ignores without a word (only `--strict-config` tells).
const SILENTLY: &str = "silently";

/// The prompt given to `exec` when the profile's command line has none.
const EXEC_PROMPT: &str = "codex-parity config check";

/// One release's verdicts.
#[derive(Debug, Clone)]
pub struct Judged {
    /// The version.
    pub version: String,
    /// The binary's label.
    pub label: String,
    /// One verdict per item, by id.
    pub verdicts: Vec<Verdict>,
    /// What codex said that names no item, and how the run was adapted.
    pub notes: Vec<String>,
    /// What codex applied from outside the check's home and flags.
    pub leaks: Vec<String>,
    /// Connections codex tried through the proxies.
    pub connections: Vec<String>,
    /// How many times codex was started.
    pub runs: usize,
    /// How long the release took.
    pub took: Duration,
}

/// The inputs of a judgement that do not change from release to release.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    /// The profile.
    pub profile: &'a Profile,
    /// Its items.
    pub items: &'a [Item],
    /// Its command line's layout.
    pub layout: &'a Layout,
    /// How codex is started.
    pub isolation: &'a Isolation,
}

/// How a profile's command line is started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Launch {
    AppServer,
    Exec,
    /// Not started: judged on the card only.
    Static,
}

/// Judges every item on `binary`, whose card is `card`.
pub async fn judge(
    binary: &CodexBinary,
    card: &Card,
    inputs: Inputs<'_>,
) -> anyhow::Result<Judged> {
    let started = Instant::now();
    let mut j = Judgement {
        binary,
        card,
        inputs,
        verdicts: vec![None; inputs.items.len()],
        removed: BTreeSet::new(),
        notes: Vec::new(),
        leaks: Vec::new(),
        connections: Vec::new(),
        runs: 0,
        stopped: false,
    };
    let launch = match inputs.layout.path.as_str() {
        APP_SERVER => Launch::AppServer,
        "exec" | "e" => Launch::Exec,
        _ => Launch::Static,
    };
    j.packages();
    if inputs
        .items
        .iter()
        .any(|i| i.kind.feature().is_some_and(|(n, _)| n == "plugins"))
    {
        j.notes.push(
            "the check starts codex with --disable plugins (hermetic): the profile's plugins \
             setting is judged, but its effect is the check's"
                .into(),
        );
    }
    j.features(launch).await?;
    match launch {
        Launch::Static => {
            j.notes.push(format!(
                "codex {} is not started by the check (only app-server and exec are): its command \
                 line is judged on the surface card",
                if inputs.layout.path.is_empty() {
                    "(the TUI)"
                } else {
                    &inputs.layout.path
                }
            ));
            j.command_line_on_card().await?;
        }
        Launch::AppServer | Launch::Exec => {
            j.live(launch).await?;
            j.strict(launch).await?;
        }
    }
    let verdicts = j
        .verdicts
        .into_iter()
        .map(|v| v.unwrap_or_else(Verdict::accepted))
        .collect();
    Ok(Judged {
        version: binary.version.clone(),
        label: binary.label(),
        verdicts,
        notes: j.notes,
        leaks: j.leaks,
        connections: j.connections,
        runs: j.runs,
        took: started.elapsed(),
    })
}

/// A judgement in progress.
struct Judgement<'a> {
    binary: &'a CodexBinary,
    card: &'a Card,
    inputs: Inputs<'a>,
    verdicts: Vec<Option<Verdict>>,
    /// Items taken out of the runs (refused, or found ignored by `--strict-config`).
    removed: BTreeSet<usize>,
    notes: Vec<String>,
    leaks: Vec<String>,
    connections: Vec<String>,
    runs: usize,
    /// Set when codex could not be brought to start: nothing more is run.
    stopped: bool,
}

impl Judgement<'_> {
    fn items(&self) -> &[Item] {
        self.inputs.items
    }

    fn give(&mut self, id: usize, verdict: Verdict) {
        match &mut self.verdicts[id] {
            Some(v) => {
                // How codex told of an ignored key: a notification (no detail) outranks a
                // stderr line, which outranks nothing but --strict-config ("silently").
                let told = |d: &Option<String>| match d.as_deref() {
                    None => 0,
                    Some(ON_STDERR) => 1,
                    Some(_) => 2,
                };
                let both_ignored = v.warning == Some(Warning::Ignored)
                    && verdict.warning == Some(Warning::Ignored);
                let better = both_ignored && told(&verdict.detail) < told(&v.detail);
                let detail = verdict.detail.clone();
                v.merge(verdict);
                if better {
                    v.detail = detail;
                }
            }
            slot => *slot = Some(verdict),
        }
    }

    /// Package paths against the card's listing.
    fn packages(&mut self) {
        let card = self.card;
        for item in self.inputs.items {
            let ItemKind::Package { path } = &item.kind else {
                continue;
            };
            let verdict = match &card.package {
                None => Verdict::new(Status::NotChecked, None, None, card.package_note.clone()),
                Some(p) if p.contains(path) => Verdict::accepted(),
                Some(p) => Verdict::new(
                    Status::MissingFromPackage,
                    None,
                    None,
                    Some(format!(
                        "{path} is not in {} (its entrypoint is {})",
                        p.spec,
                        p.entrypoint().unwrap_or_else(|| "unknown".into())
                    )),
                ),
            };
            self.give(item.id, verdict);
        }
    }

    /// Feature names against the card: retired, deprecated, alias, or none at all.
    async fn features(&mut self, launch: Launch) -> anyhow::Result<()> {
        let mut probed: BTreeMap<String, Result<Option<String>, String>> = BTreeMap::new();
        for item in self.inputs.items {
            let Some((name, _)) = item.kind.feature() else {
                continue;
            };
            if let Some(f) = self.card.feature(name) {
                let kind = match f.stage.as_str() {
                    "removed" => Warning::Retired,
                    "deprecated" => Warning::Deprecated,
                    _ => continue,
                };
                self.give(
                    item.id,
                    Verdict::warning(
                        kind,
                        None,
                        format!(
                            "codex features list: {name} is {} (default {})",
                            f.stage,
                            if f.default { "on" } else { "off" }
                        ),
                    ),
                );
                continue;
            }
            if !probed.contains_key(name) {
                let found = features::alias_target(self.binary, name, &self.card.features).await?;
                probed.insert(name.to_string(), found);
            }
            let verdict = match &probed[name] {
                Ok(Some(target)) => Verdict::warning(
                    Warning::Alias,
                    Some(target.clone()),
                    format!(
                        "{name} is not in codex features list; codex takes it for {target} (a \
                         legacy alias: --disable {name} turns {target} off)"
                    ),
                ),
                Ok(None) => Verdict::warning(
                    Warning::Alias,
                    None,
                    format!(
                        "{name} is not in codex features list; --enable/--disable {name} are \
                         accepted but change no listed feature"
                    ),
                ),
                Err(refusal) => match (&item.kind, launch) {
                    // A live run shows the refusal in codex's own terms.
                    (ItemKind::Feature { .. }, Launch::AppServer | Launch::Exec) => continue,
                    (ItemKind::Feature { .. }, Launch::Static) => {
                        Verdict::new(Status::RefusedAtStart, None, None, Some(refusal.clone()))
                    }
                    _ => Verdict::warning(
                        Warning::Ignored,
                        Some(SILENTLY.into()),
                        format!(
                            "{name} is not a feature of this release (codex --disable {name} \
                             features list: {refusal})"
                        ),
                    ),
                },
            };
            self.give(item.id, verdict);
        }
        Ok(())
    }

    /// A command line that is not started: its subcommands and flags against the card.
    async fn command_line_on_card(&mut self) -> anyhow::Result<()> {
        let card = self.card;
        for item in self.inputs.items {
            let verdict = match &item.kind {
                ItemKind::Subcommand { path, .. } if card.command(path).is_none() => {
                    let word = path.rsplit(' ').next().unwrap_or(path);
                    Verdict::new(
                        Status::UnknownFlag,
                        None,
                        None,
                        Some(help_refusal(self.binary, path).await.unwrap_or_else(|| {
                            format!("codex completion lists no subcommand {word}")
                        })),
                    )
                }
                ItemKind::Flag {
                    command,
                    flag,
                    long,
                    value,
                    ..
                } => {
                    let spec = card.command(command);
                    let found = spec.and_then(|s| {
                        long.as_ref()
                            .and_then(|l| s.flags.get(l))
                            .or_else(|| s.long_of(flag).and_then(|l| s.flags.get(&l)))
                    });
                    let shown = if command.is_empty() {
                        "codex".to_string()
                    } else {
                        format!("codex {command}")
                    };
                    match (found, value) {
                        (None, _) => Verdict::new(
                            Status::UnknownFlag,
                            None,
                            None,
                            Some(format!("codex completion lists no {flag} for {shown}")),
                        ),
                        (Some(f), Some(v)) if !f.values.is_empty() && !f.values.contains(v) => {
                            Verdict::new(
                                Status::UnknownFlag,
                                None,
                                None,
                                Some(format!(
                                    "{shown} {flag} takes {}, not {v}",
                                    f.values.join(", ")
                                )),
                            )
                        }
                        _ => continue,
                    }
                }
                _ => continue,
            };
            self.give(item.id, verdict);
        }
        Ok(())
    }

    /// The args of a run: the profile's without the removed items, ours after the last
    /// subcommand word.
    fn argv(&mut self, launch: Launch, strict: bool) -> Vec<String> {
        let args = &self.inputs.profile.args;
        let mut skip = BTreeSet::new();
        for id in &self.removed {
            if let Some(r) = self.inputs.items[*id].kind.args() {
                skip.extend(r);
            }
        }
        let mut extra = vec!["--disable".to_string(), "plugins".to_string()];
        extra.extend(oracle::provider_args());
        if strict {
            extra.push("--strict-config".into());
        }
        let exec_spec = self.card.command(&self.inputs.layout.path);
        let has = |flag: &str| args.iter().any(|a| a.value == flag);
        if launch == Launch::Exec
            && exec_spec.is_some_and(|s| s.flags.contains_key("--skip-git-repo-check"))
            && !has("--skip-git-repo-check")
        {
            extra.push("--skip-git-repo-check".into());
        }
        let at = self.inputs.layout.last_subcommand.map_or(0, |i| i + 1);
        let mut out = Vec::new();
        let mut listen_value = false;
        for (i, a) in args.iter().enumerate() {
            if i == at {
                out.extend(extra.iter().cloned());
            }
            if skip.contains(&i) {
                continue;
            }
            let mut value = a.value.clone();
            // The handshake speaks stdio: a listener URL becomes stdio://.
            if launch == Launch::AppServer {
                if listen_value && !value.starts_with("stdio") {
                    value = "stdio://".into();
                }
                if let Some(url) = value.strip_prefix("--listen=")
                    && !url.starts_with("stdio")
                {
                    value = "--listen=stdio://".into();
                }
                listen_value = value == "--listen";
            }
            out.push(value);
        }
        if at >= args.len() {
            out.extend(extra);
        }
        if launch == Launch::Exec && !self.inputs.layout.positional {
            out.push(EXEC_PROMPT.into());
        }
        out
    }

    /// The home's files with the removed settings blanked out.
    fn files(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for file in &self.inputs.profile.home {
            let mut text = file.text.clone();
            for id in &self.removed {
                match &self.inputs.items[*id].kind {
                    ItemKind::Key { file: f, span, .. } if *f == file.name => {
                        text = profile::blank(&text, span);
                    }
                    ItemKind::File { file: f, .. } if *f == file.name => text = String::new(),
                    _ => {}
                }
            }
            out.push((file.name.clone(), text));
        }
        out
    }

    /// The thread/start params still in, as (item id, JSON part).
    fn thread(&self) -> Vec<(String, Value)> {
        self.items()
            .iter()
            .filter(|i| !self.removed.contains(&i.id))
            .filter_map(|i| match &i.kind {
                ItemKind::ThreadParam { name, value } => {
                    Some((i.id.to_string(), json!({ name.clone(): value.clone() })))
                }
                ItemKind::ThreadConfig { key, value } => Some((
                    i.id.to_string(),
                    json!({ "config": nest(key, value.clone()) }),
                )),
                _ => None,
            })
            .collect()
    }

    async fn run(&mut self, launch: Launch, strict: bool) -> anyhow::Result<Observed> {
        let mode = match (launch, strict) {
            (Launch::Exec, _) => Mode::Exec,
            (_, true) => Mode::Start,
            _ => Mode::Handshake,
        };
        let run = Run {
            binary: self.binary,
            argv: self.argv(launch, strict),
            files: self.files(),
            thread: self.thread(),
            mode,
            isolation: self.inputs.isolation,
        };
        self.runs += 1;
        let seen = oracle::run(&run).await?;
        for c in &seen.connections {
            if !self.connections.contains(c) {
                self.connections.push(c.clone());
            }
        }
        Ok(seen)
    }

    /// The live runs: refusals taken out one by one, then the warnings of the run codex took.
    async fn live(&mut self, launch: Launch) -> anyhow::Result<()> {
        if self.inputs.layout.path != APP_SERVER
            && self.inputs.items.iter().any(|i| {
                matches!(
                    i.kind,
                    ItemKind::ThreadParam { .. } | ItemKind::ThreadConfig { .. }
                )
            })
        {
            let ids: Vec<usize> = self
                .items()
                .iter()
                .filter(|i| {
                    matches!(
                        i.kind,
                        ItemKind::ThreadParam { .. } | ItemKind::ThreadConfig { .. }
                    )
                })
                .map(|i| i.id)
                .collect();
            for id in ids {
                self.give(
                    id,
                    Verdict::new(
                        Status::NotChecked,
                        None,
                        None,
                        Some("thread/start params are sent only to an app-server".into()),
                    ),
                );
                self.removed.insert(id);
            }
        }
        let limit = self.items().len() + 2;
        for _ in 0..limit {
            let seen = self.run(launch, false).await?;
            match &seen.outcome {
                Outcome::NoAnswer(why) => {
                    self.unjudged(&format!("codex did not answer: {why}"));
                    return Ok(());
                }
                Outcome::Refused(message) => {
                    let found = self.attribute_refusal(message);
                    if found.is_empty() {
                        self.notes
                            .push(format!("codex refused the profile at start: {message}"));
                        self.unjudged(&format!(
                            "codex refused to start for a reason tied to no single item: {message}"
                        ));
                        return Ok(());
                    }
                    let status = if clap_error(message) {
                        Status::UnknownFlag
                    } else {
                        Status::RefusedAtStart
                    };
                    for id in found {
                        self.give(id, Verdict::new(status, None, None, Some(message.clone())));
                        self.removed.insert(id);
                    }
                }
                Outcome::Started => {
                    if self.thread_refusals(&seen) {
                        continue;
                    }
                    self.warnings(&seen);
                    return Ok(());
                }
            }
        }
        self.unjudged("codex kept refusing after every item it named was taken out");
        Ok(())
    }

    /// Every item no verdict reached yet is not checked, for `why`; no later run is made.
    fn unjudged(&mut self, why: &str) {
        self.stopped = true;
        for id in 0..self.items().len() {
            let live = !matches!(self.items()[id].kind, ItemKind::Package { .. });
            if live && self.verdicts[id].is_none() && !self.removed.contains(&id) {
                self.give(
                    id,
                    Verdict::new(Status::NotChecked, None, None, Some(why.to_string())),
                );
            }
        }
    }

    /// Gives the items a failed `thread/start` names their verdict and takes them out;
    /// `false` when `thread/start` did not fail.
    fn thread_refusals(&mut self, seen: &Observed) -> bool {
        let Some(Err(message)) = &seen.thread else {
            return false;
        };
        let mut found: Vec<(usize, String)> = Vec::new();
        match &seen.bare_thread {
            Some(Err(bare)) => {
                // The configuration itself does not load: a setting of the home or -c.
                for id in self.attribute_config(bare) {
                    found.push((id, bare.clone()));
                }
            }
            _ => {
                for (label, result) in &seen.alone {
                    if let (Err(m), Ok(id)) = (result, label.parse::<usize>()) {
                        found.push((id, m.clone()));
                    }
                }
                if found.is_empty() {
                    for (label, _) in &seen.alone {
                        if let Ok(id) = label.parse::<usize>() {
                            found.push((id, message.clone()));
                        }
                    }
                }
            }
        }
        if found.is_empty() {
            self.notes.push(format!("thread/start failed: {message}"));
            self.unjudged(&format!(
                "thread/start failed for a reason tied to no single item: {message}"
            ));
            return false;
        }
        for (id, m) in found {
            self.give(
                id,
                Verdict::new(Status::RefusedAtThreadStart, None, None, Some(m)),
            );
            self.removed.insert(id);
        }
        true
    }

    /// The items codex's refusal at start names.
    fn attribute_refusal(&self, message: &str) -> Vec<usize> {
        let live = |i: &&Item| !self.removed.contains(&i.id);
        let items: Vec<&Item> = self.items().iter().filter(live).collect();
        if let Some(found) = clap_item(&items, message) {
            return vec![found];
        }
        if let Some(name) = capture(r"Unknown feature flag: (\S+)", message) {
            let ids: Vec<usize> = items
                .iter()
                .filter(|i| matches!(&i.kind, ItemKind::Feature { name: n, .. } if *n == name))
                .map(|i| i.id)
                .collect();
            if !ids.is_empty() {
                return ids;
            }
        }
        let config = self.attribute_config(message);
        if !config.is_empty() {
            return config;
        }
        // `error parsing -c overrides: Invalid override (missing '='): model`
        if message.to_lowercase().contains("override") {
            let found: Vec<usize> = items
                .iter()
                .filter(|i| match &i.kind {
                    ItemKind::Override { key, raw, .. } => {
                        message.trim_end().ends_with(&format!("{key}{raw}"))
                    }
                    _ => false,
                })
                .map(|i| i.id)
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        // A flag the message names (`--profile only applies to …`).
        items
            .iter()
            .filter(|i| match &i.kind {
                ItemKind::Flag { long: Some(l), .. } | ItemKind::Flag { flag: l, .. } => {
                    Regex::new(&format!(r"(^|[^\w-]){}($|[^\w-])", regex::escape(l)))
                        .is_ok_and(|r| r.is_match(message))
                }
                _ => false,
            })
            .map(|i| i.id)
            .collect()
    }

    /// The settings a configuration message names: by file and line, else by key.
    fn attribute_config(&self, message: &str) -> Vec<usize> {
        let items: Vec<&Item> = self
            .items()
            .iter()
            .filter(|i| !self.removed.contains(&i.id))
            .collect();
        let by_line = by_file_line(&items, message);
        if !by_line.is_empty() {
            return by_line;
        }
        let by_key = by_key(&items, message);
        prefer_source(&items, by_key, message)
    }

    /// The warnings of the run codex took, remaps, files not read, leaks.
    fn warnings(&mut self, seen: &Observed) {
        let items: Vec<Item> = self
            .items()
            .iter()
            .filter(|i| !self.removed.contains(&i.id))
            .cloned()
            .collect();
        let refs: Vec<&Item> = items.iter().collect();
        let mut texts: Vec<(String, String)> = seen.warnings.clone();
        for line in &seen.stderr {
            // `2026-…Z WARN target: message` (the time left out), or the CLI's own
            // `warning: …` (exec's `--full-auto is deprecated`); a line said twice once.
            let at = if line.starts_with("warning:") {
                Some(0)
            } else {
                line.find("WARN ")
            };
            let Some(at) = at else {
                continue;
            };
            let text = line[at..].trim().to_string();
            if !texts.iter().any(|(m, t)| m == "stderr" && *t == text) {
                texts.push(("stderr".into(), text));
            }
        }
        let mut noted = BTreeSet::new();
        for (method, text) in texts {
            let kind = warning_kind(&text);
            let mut ids = by_file_line(&refs, &text);
            ids.extend(prefer_source(&refs, by_key(&refs, &text), &text));
            ids.extend(by_flag(&refs, &text));
            if kind == Warning::Managed {
                // Requirements name the setting (`approval_policy`), whatever set it.
                ids.extend(managed_params(&refs, &text));
            }
            if let Some(name) = capture(r"unknown feature key in config: (\S+)", &text) {
                ids.extend(
                    refs.iter()
                        .filter(|i| i.kind.feature().is_some_and(|(n, _)| n == name))
                        .map(|i| i.id),
                );
            }
            if ids.is_empty() {
                ids = by_value(&refs, &text);
            }
            ids.sort_unstable();
            ids.dedup();
            if ids.is_empty() {
                // A log line of codex's that names no item is not a warning to the integrator.
                if method != "stderr" && noted.insert(text.clone()) {
                    self.notes.push(format!("{method}: {text}"));
                }
                continue;
            }
            for id in ids {
                let detail = match (kind, method.as_str()) {
                    (Warning::Managed, _) => Some("by requirements".to_string()),
                    (Warning::Ignored, "stderr") => Some(ON_STDERR.to_string()),
                    _ => None,
                };
                self.give(
                    id,
                    Verdict::warning(kind, detail, format!("{method}: {text}")),
                );
            }
        }
        self.remaps(seen, &refs);
        self.not_read(seen, &refs);
        self.leaks = isolation::leaks(seen.config.as_ref(), seen.requirements.as_ref());
    }

    /// Values codex applied otherwise than given: the thread's approval policy and sandbox,
    /// and the effective configuration (`config/read`).
    fn remaps(&mut self, seen: &Observed, items: &[&Item]) {
        let Some(Ok(thread)) = &seen.thread else {
            return;
        };
        for (setting, param, config_key) in [
            ("approval policy", "approvalPolicy", "approval_policy"),
            ("sandbox", "sandbox", "sandbox_mode"),
        ] {
            let Some(applied) = applied(thread, param) else {
                continue;
            };
            let Some((id, given)) = strongest(items, param, config_key) else {
                continue;
            };
            if self.has_warning(id, Warning::Remapped) {
                continue;
            }
            if normalize(&given) != normalize(&applied) {
                self.give(
                    id,
                    Verdict::warning(
                        Warning::Remapped,
                        Some(applied.clone()),
                        format!("asked for {given}, thread/start says the {setting} is {applied}"),
                    ),
                );
            }
        }
        self.feature_states(seen, items);
        let Some(config) = seen.config.as_ref().and_then(|c| c.get("config")) else {
            return;
        };
        let mut by_key: BTreeMap<&str, &Item> = BTreeMap::new();
        for item in items {
            let strong = match &item.kind {
                ItemKind::Override { key, .. } => Some((key.as_str(), 2)),
                ItemKind::Key { key, file, .. } if file == "config.toml" => Some((key.as_str(), 1)),
                _ => None,
            };
            if let Some((key, rank)) = strong {
                let keep = by_key
                    .get(key)
                    .is_none_or(|have| matches!(have.kind, ItemKind::Key { .. }) && rank == 2);
                if keep {
                    by_key.insert(key, item);
                }
            }
        }
        for (key, item) in by_key {
            if key.starts_with("model_provider") || key == "features.plugins" {
                continue;
            }
            let (Some(Value::String(given)), Some(Value::String(now))) =
                (item.kind.value(), lookup(config, key))
            else {
                continue;
            };
            if given != now && !given.contains('/') && !self.has_warning(item.id, Warning::Remapped)
            {
                self.give(
                    item.id,
                    Verdict::warning(
                        Warning::Remapped,
                        Some(now.clone()),
                        format!("set to {given}, config/read says {key} is {now}"),
                    ),
                );
            }
        }
    }

    /// Features turned on or off otherwise than asked: `experimentalFeature/list`'s
    /// `enabled` against the strongest item naming the feature (`--enable`/`--disable`, then
    /// `-c`, then a home file).
    fn feature_states(&mut self, seen: &Observed, items: &[&Item]) {
        let Some(listed) = &seen.features else {
            return;
        };
        let mut strongest: BTreeMap<&str, (u8, usize, bool)> = BTreeMap::new();
        for item in items {
            let rank = match item.kind {
                ItemKind::Feature { .. } => 3,
                ItemKind::Override { .. } => 2,
                ItemKind::Key { .. } => 1,
                _ => continue,
            };
            let Some((name, on)) = item.kind.feature() else {
                continue;
            };
            if name == "plugins" {
                // The check turns plugins off itself (--disable plugins).
                continue;
            }
            if strongest.get(name).is_none_or(|(r, _, _)| rank >= *r) {
                strongest.insert(name, (rank, item.id, on));
            }
        }
        for (name, (_, id, on)) in strongest {
            let Some(enabled) = listed
                .iter()
                .find(|f| f["name"] == name)
                .and_then(|f| f["enabled"].as_bool())
            else {
                continue;
            };
            if enabled != on && !self.has_warning(id, Warning::Remapped) {
                let state = |b: bool| if b { "on" } else { "off" };
                self.give(
                    id,
                    Verdict::warning(
                        Warning::Remapped,
                        Some(state(enabled).into()),
                        format!(
                            "asked for {name} {}, experimentalFeature/list says it is {}",
                            state(on),
                            state(enabled)
                        ),
                    ),
                );
            }
        }
    }

    fn has_warning(&self, id: usize, kind: Warning) -> bool {
        self.verdicts[id]
            .as_ref()
            .is_some_and(|v| v.warning == Some(kind))
    }

    /// Settings in a home file no layer of `config/read` is.
    fn not_read(&mut self, seen: &Observed, items: &[&Item]) {
        let Some(layers) = seen
            .config
            .as_ref()
            .and_then(|c| c.get("layers"))
            .and_then(Value::as_array)
        else {
            return;
        };
        let loaded: BTreeSet<String> = layers
            .iter()
            .filter_map(|l| l.pointer("/name/file").and_then(Value::as_str))
            .map(|f| f.replace(&seen.home, "<CODEX_HOME>"))
            .collect();
        for item in items {
            if let ItemKind::Key { file, .. } = &item.kind
                && !loaded.contains(&format!("<CODEX_HOME>/{file}"))
            {
                self.give(
                    item.id,
                    Verdict::warning(
                        Warning::NotRead,
                        None,
                        format!("codex did not load {file} (config/read lists no layer for it)"),
                    ),
                );
            }
        }
    }

    /// The `--strict-config` runs: each key codex would ignore.
    async fn strict(&mut self, launch: Launch) -> anyhow::Result<()> {
        let has_flag = self
            .card
            .command(&self.inputs.layout.path)
            .is_some_and(|c| c.flags.contains_key("--strict-config"));
        let given = self
            .inputs
            .profile
            .args
            .iter()
            .any(|a| a.value == "--strict-config");
        if !has_flag || given || self.stopped {
            return Ok(());
        }
        let before = self.removed.clone();
        for _ in 0..self.items().len() + 1 {
            let seen = self.run(launch, true).await?;
            let Outcome::Refused(message) = &seen.outcome else {
                break;
            };
            if !message.contains("unknown configuration field") {
                self.notes
                    .push(format!("--strict-config run refused: {message}"));
                break;
            }
            let found = self.attribute_config(message);
            if found.is_empty() {
                self.notes.push(format!(
                    "--strict-config: {message} (no item of the profile)"
                ));
                break;
            }
            for id in found {
                self.give(
                    id,
                    Verdict::warning(
                        Warning::Ignored,
                        Some(SILENTLY.into()),
                        format!("codex ignores it; with --strict-config: {message}"),
                    ),
                );
                self.removed.insert(id);
            }
        }
        self.removed = before;
        Ok(())
    }
}

/// `codex help WORDS…`'s refusal of a subcommand (`error: unrecognized subcommand 'x'`).
async fn help_refusal(binary: &CodexBinary, path: &str) -> Option<String> {
    let home = tempfile::tempdir().ok()?;
    let out = tokio::process::Command::new(&binary.path)
        .arg("help")
        .args(path.split(' '))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home.path())
        .env("CODEX_HOME", home.path())
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .ok()?;
    (!out.status.success()).then(|| {
        let stderr: Vec<String> = String::from_utf8_lossy(&out.stderr)
            .lines()
            .map(String::from)
            .collect();
        oracle::error_of(&stderr)
    })
}

/// Whether codex's refusal is clap's (an unknown flag, value or subcommand).
fn clap_error(message: &str) -> bool {
    [
        "unexpected argument",
        "invalid value",
        "unrecognized subcommand",
        "a value is required",
    ]
    .iter()
    .any(|m| message.contains(m))
}

/// The item a clap error names.
fn clap_item(items: &[&Item], message: &str) -> Option<usize> {
    if let Some(arg) = capture(r"unexpected argument '([^']+)'", message) {
        let name = arg.split('=').next().unwrap_or(&arg).to_string();
        return items.iter().find_map(|i| match &i.kind {
            ItemKind::Flag { flag, .. } | ItemKind::Feature { name: flag, .. } if *flag == name => {
                Some(i.id)
            }
            ItemKind::Flag {
                flag,
                value: Some(v),
                ..
            } if *v == arg || format!("{flag}={v}") == arg => Some(i.id),
            _ => None,
        });
    }
    if let Some(caps) = Regex::new(r"invalid value '([^']*)' for '(-[^' ]+)")
        .ok()?
        .captures(message)
    {
        let (value, flag) = (&caps[1], &caps[2]);
        return items.iter().find_map(|i| match &i.kind {
            ItemKind::Flag {
                flag: f,
                long,
                value: Some(v),
                ..
            } if v == value && (f == flag || long.as_deref() == Some(flag)) => Some(i.id),
            _ => None,
        });
    }
    if let Some(word) = capture(r"unrecognized subcommand '([^']+)'", message) {
        return items.iter().find_map(|i| match &i.kind {
            ItemKind::Subcommand { path, .. } if path.rsplit(' ').next() == Some(word.as_str()) => {
                Some(i.id)
            }
            _ => None,
        });
    }
    None
}

/// The first capture of `pattern` in `text`.
fn capture(pattern: &str, text: &str) -> Option<String> {
    Regex::new(pattern)
        .ok()?
        .captures(text)
        .map(|c| c[1].to_string())
}

/// Settings at a `<CODEX_HOME>/FILE:LINE[:COL]` the text names.
fn by_file_line(items: &[&Item], text: &str) -> Vec<usize> {
    let Ok(re) = Regex::new(r"<CODEX_HOME>/([^\s:]+):(\d+)") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for caps in re.captures_iter(text) {
        let (name, line) = (&caps[1], caps[2].parse::<usize>().unwrap_or(0));
        let hit = items.iter().find(|i| match &i.kind {
            ItemKind::Key {
                file,
                line: l,
                end_line,
                ..
            } => file == name && (*l..=*end_line).contains(&line),
            _ => false,
        });
        let whole = items
            .iter()
            .find(|i| matches!(&i.kind, ItemKind::File { file, .. } if file == name));
        out.extend(hit.or(whole).map(|i| i.id));
    }
    out
}

/// Settings a text names by key: `` `key` ``, `` `[features].x` ``, `` `key = value` ``,
/// `` in `key` ``, or a leading `key = value`; the item's key may be the named one, a table
/// above it, or under it.
fn by_key(items: &[&Item], text: &str) -> Vec<usize> {
    let mut names: Vec<String> = Vec::new();
    if let Ok(re) = Regex::new(r"`([^`]+)`") {
        for caps in re.captures_iter(text) {
            let tok = caps[1].trim();
            let tok = tok.split(" = ").next().unwrap_or(tok).trim();
            names.push(tok.replace("[features].", "features."));
        }
    }
    if let Some(k) = capture(r"(?:^|: )([a-z_][a-z0-9_]*(?:\.[a-z0-9_-]+)*) = ", text) {
        names.push(k);
    }
    let mut out = Vec::new();
    for item in items {
        let Some(key) = item.kind.config_key() else {
            continue;
        };
        let hit = names.iter().any(|n| {
            n == key
                || n.starts_with(&format!("{key}."))
                || (key.starts_with(&format!("{n}.")) && n.contains('.'))
        });
        if hit {
            out.push(item.id);
        }
    }
    out
}

/// The thread/start params of the settings a requirements warning names.
fn managed_params(items: &[&Item], text: &str) -> Vec<usize> {
    items
        .iter()
        .filter(|i| match &i.kind {
            ItemKind::ThreadParam { name, .. } => [
                ("approvalPolicy", "`approval_policy`"),
                ("sandbox", "`sandbox_mode`"),
            ]
            .iter()
            .any(|(p, k)| name == p && text.contains(k)),
            _ => false,
        })
        .map(|i| i.id)
        .collect()
}

/// Flags a text quotes (`` `--full-auto` is deprecated ``).
fn by_flag(items: &[&Item], text: &str) -> Vec<usize> {
    let Ok(re) = Regex::new(r"`(-[^`\s]+)`") else {
        return Vec::new();
    };
    let quoted: BTreeSet<String> = re.captures_iter(text).map(|c| c[1].to_string()).collect();
    items
        .iter()
        .filter(|i| match &i.kind {
            ItemKind::Flag { flag, long, .. } => {
                quoted.contains(flag) || long.as_ref().is_some_and(|l| quoted.contains(l))
            }
            _ => false,
        })
        .map(|i| i.id)
        .collect()
}

/// Items whose string value a text quotes (`` `on-failure` approval policy is deprecated ``).
fn by_value(items: &[&Item], text: &str) -> Vec<usize> {
    let Ok(re) = Regex::new(r"`([^`]+)`") else {
        return Vec::new();
    };
    let quoted: BTreeSet<String> = re.captures_iter(text).map(|c| c[1].to_string()).collect();
    items
        .iter()
        .filter(|i| {
            i.kind
                .value()
                .and_then(Value::as_str)
                .is_some_and(|v| quoted.contains(v))
        })
        .map(|i| i.id)
        .collect()
}

/// Of several items a message names, those of the source it speaks of: `-c` overrides
/// (`-c/--config override`, `session-flags`), a home file (`<CODEX_HOME>/NAME`).
fn prefer_source(items: &[&Item], ids: Vec<usize>, text: &str) -> Vec<usize> {
    if ids.len() < 2 {
        return ids;
    }
    let of = |id: &usize| items.iter().find(|i| i.id == *id).map(|i| &i.kind);
    let overrides = text.contains("-c/--config")
        || text.contains("session-flags")
        || text.contains("session flags");
    let narrowed: Vec<usize> = ids
        .iter()
        .copied()
        .filter(|id| match of(id) {
            Some(ItemKind::Override { .. }) => overrides,
            Some(ItemKind::Key { file, .. }) => text.contains(&format!("<CODEX_HOME>/{file}")),
            _ => false,
        })
        .collect();
    if narrowed.is_empty() { ids } else { narrowed }
}

/// What kind of warning a text is.
fn warning_kind(text: &str) -> Warning {
    let t = text.to_lowercase();
    if t.contains("disallowed by requirements") {
        Warning::Managed
    } else if t.contains("ignor") || t.contains("unrecognized") || t.contains("unknown feature key")
    {
        Warning::Ignored
    } else if t.contains("deprecated") || t.contains("no longer") {
        Warning::Deprecated
    } else {
        Warning::Other
    }
}

/// The item that decides a thread setting, strongest first: the `thread/start` param, its
/// config map, a `-c` override, `config.toml`; with the value it asks for.
fn strongest(items: &[&Item], param: &str, config_key: &str) -> Option<(usize, String)> {
    let rank = |i: &Item| match &i.kind {
        ItemKind::ThreadParam { name, .. } if name == param => Some(4),
        ItemKind::ThreadConfig { key, .. } if key == config_key => Some(3),
        ItemKind::Override { key, .. } if key == config_key => Some(2),
        ItemKind::Key { key, file, .. } if key == config_key && file == "config.toml" => Some(1),
        _ => None,
    };
    items
        .iter()
        .filter_map(|i| Some((rank(i)?, i)))
        .max_by_key(|(r, _)| *r)
        .and_then(|(_, i)| Some((i.id, i.kind.value()?.as_str()?.to_string())))
}

/// What `thread/start` says it applied for `param`: a string, or a tagged object's `type`.
fn applied(thread: &Value, param: &str) -> Option<String> {
    match thread.get(param)? {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("type").and_then(Value::as_str).map(String::from),
        _ => None,
    }
}

/// `workspace-write`, `workspaceWrite` and `workspace_write` alike.
fn normalize(value: &str) -> String {
    value
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_lowercase()
}

/// The value at a dotted key of a JSON object.
fn lookup<'v>(config: &'v Value, key: &str) -> Option<&'v Value> {
    key.split('.').try_fold(config, |v, k| v.get(k))
}

/// `{"a": {"b": value}}` for `a.b`.
fn nest(key: &str, value: Value) -> Value {
    key.rsplit('.').fold(value, |inner, k| json!({ k: inner }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(id: usize, kind: ItemKind) -> Item {
        Item {
            id,
            kind,
            at: String::new(),
        }
    }

    fn key(id: usize, file: &str, key: &str, value: Value, line: usize) -> Item {
        item(
            id,
            ItemKind::Key {
                file: file.into(),
                key: key.into(),
                value,
                raw: String::new(),
                line,
                end_line: line,
                span: 0..0,
            },
        )
    }

    #[test]
    fn messages_lead_to_the_items_they_name() {
        let items = [
            key(0, "config.toml", "sandbox_mode", json!("bogus"), 3),
            key(1, "config.toml", "features.bogus_feat", json!(true), 5),
            item(
                2,
                ItemKind::Override {
                    key: "model_context_window".into(),
                    value: json!("big"),
                    raw: "big".into(),
                    args: 0..2,
                },
            ),
            key(3, "config.toml", "approval_policy", json!("on-failure"), 2),
            item(
                4,
                ItemKind::Flag {
                    command: "app-server".into(),
                    flag: "--stdio".into(),
                    long: Some("--stdio".into()),
                    value: None,
                    args: 2..3,
                },
            ),
            key(5, "config.toml", "model_providers.p.bogus_sub", json!(1), 9),
            key(6, "config.toml", "profile", json!("x"), 1),
        ];
        let refs: Vec<&Item> = items.iter().collect();
        assert_eq!(
            by_file_line(
                &refs,
                "<CODEX_HOME>/config.toml:3:16: unknown variant `bogus`"
            ),
            [0]
        );
        assert_eq!(
            by_key(
                &refs,
                "user (<CODEX_HOME>/config.toml): `features.bogus_feat` is ignored."
            ),
            [1]
        );
        assert_eq!(
            by_key(
                &refs,
                "Error: invalid type: string \"big\", expected i64 in `model_context_window`"
            ),
            [2]
        );
        assert_eq!(
            by_key(
                &refs,
                "Error: <CODEX_HOME>/config.toml:1:1: unknown configuration field `model_providers.p.bogus_sub`"
            ),
            [5]
        );
        assert_eq!(
            by_key(
                &refs,
                "failed to load configuration: legacy `profile = \"x\"` config is no longer supported"
            ),
            [6]
        );
        assert_eq!(
            by_key(
                &refs,
                "failed to load configuration: approval_policy = \"untrusted\" is no longer supported"
            ),
            [3]
        );
        assert_eq!(
            by_value(&refs, "`on-failure` approval policy is deprecated"),
            [3]
        );
        assert_eq!(
            clap_item(&refs, "error: unexpected argument '--stdio' found"),
            Some(4)
        );
        assert_eq!(warning_kind("`features.x` is ignored."), Warning::Ignored);
        assert_eq!(
            warning_kind("`[features].codex_hooks` is deprecated."),
            Warning::Deprecated
        );
        assert!(clap_error(
            "error: invalid value 'on-failure' for '--ask-for-approval <P>'"
        ));
    }

    #[test]
    fn the_strongest_setting_and_what_was_applied() {
        let items = [
            key(0, "config.toml", "approval_policy", json!("on-failure"), 1),
            item(
                1,
                ItemKind::ThreadParam {
                    name: "approvalPolicy".into(),
                    value: json!("never"),
                },
            ),
        ];
        let refs: Vec<&Item> = items.iter().collect();
        assert_eq!(
            strongest(&refs, "approvalPolicy", "approval_policy"),
            Some((1, "never".into()))
        );
        assert_eq!(
            strongest(&refs[..1], "approvalPolicy", "approval_policy"),
            Some((0, "on-failure".into()))
        );
        let thread = json!({"approvalPolicy": "on-request", "sandbox": {"type": "workspaceWrite"}});
        assert_eq!(
            applied(&thread, "sandbox").as_deref(),
            Some("workspaceWrite")
        );
        assert_eq!(normalize("workspace-write"), normalize("workspaceWrite"));
        assert_eq!(
            nest("features.hooks", json!(true)),
            json!({"features": {"hooks": true}})
        );
        assert_eq!(lookup(&json!({"a": {"b": 1}}), "a.b"), Some(&json!(1)));
    }
}
