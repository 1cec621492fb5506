//! The integrator's surface: what one integration uses of the app-server protocol (client
//! requests, notifications, server requests, the fields it reads), written in a small text
//! file, and the changes between two codex binaries that touch it. `codex-parity surface
//! check --uses FILE A B` prints those and fails on the incompatible ones; see
//! `docs/surface.md` for the file format.
//!
//! ```text
//! # KIND METHOD [FIELD ...]     (KIND: request, notification, server-request, exec-event)
//! request thread/start params.cwd result.thread.id
//! notification item/completed item.type
//! server-request item/tool/call callId
//! exec-event item.completed item.type=agent_message item.text
//! ```
//!
//! `exec-event TYPE [FIELD[=VALUE] ...]` names an event of `codex exec --json` and the
//! fields it reads. The binary publishes no schema of those events, so their surface is what
//! the golden exec streams recorded on each release hold ([`ExecSurface`]): an event type or
//! field path gone from them is incompatible, a value of a `type` or `status` field too.
//!
//! Incompatible (exit 1): a used method removed; a field it names gone, retyped, or no
//! longer required (it may be absent now); an enum value of a named field's type removed; a
//! new required params field of a request it makes. Compatible changes (a new enum value, a
//! new optional params field) are printed too. A method or field in neither schema is no
//! change at all but a mistake of the file (a typo, `thread/strat`): it is *unknown*, with
//! the closest name either schema has.
//!
//! How the integration launches codex has lines of its own, judged on the two releases'
//! surface cards ([`crate::codex::card`]): `feature NAME` (a feature it enables or relies
//! on: gone from the list or retired is incompatible), `flag SUBCOMMAND [--FLAG [VALUE]]` (a
//! subcommand, `codex` for the top level and `exec/resume` for a nested one, and a flag and
//! value it passes: gone is incompatible), `package PATH` (a path its launcher expects in
//! the npm package: gone is incompatible). `config KEY [VALUE]` (a setting it writes) has no
//! static source: the `surface` command judges it on the binaries themselves with the
//! configuration check (`crate::config`), not here.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use crate::codex::binaries::CodexBinary;
use crate::codex::card::Card;
use crate::codex::schema::{self, Field, Schema};

/// What kind of message a use names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum UseKind {
    /// A client-to-server request the integration makes (`request`).
    Request,
    /// A notification it reads (`notification`).
    Notification,
    /// A server-to-client request it answers (`server-request`).
    ServerRequest,
    /// An event of `codex exec --json` it reads (`exec-event`).
    ExecEvent,
    /// A feature flag it enables or relies on (`feature NAME`).
    Feature,
    /// A subcommand and a flag (with a value) it launches codex with (`flag SUB --FLAG V`).
    Flag,
    /// A configuration key (and value) it sets (`config KEY [VALUE]`).
    Config,
    /// A path its launcher expects inside the npm package (`package PATH`).
    Package,
}

impl UseKind {
    /// The word of the file format.
    pub fn word(self) -> &'static str {
        match self {
            UseKind::Request => "request",
            UseKind::Notification => "notification",
            UseKind::ServerRequest => "server-request",
            UseKind::ExecEvent => "exec-event",
            UseKind::Feature => "feature",
            UseKind::Flag => "flag",
            UseKind::Config => "config",
            UseKind::Package => "package",
        }
    }

    fn from_word(word: &str) -> Option<UseKind> {
        [
            UseKind::Request,
            UseKind::Notification,
            UseKind::ServerRequest,
            UseKind::ExecEvent,
            UseKind::Feature,
            UseKind::Flag,
            UseKind::Config,
            UseKind::Package,
        ]
        .into_iter()
        .find(|k| k.word() == word)
    }

    /// Whether the kind is about how codex is launched (judged on the surface cards or
    /// live), not about the protocol.
    pub fn is_launch(self) -> bool {
        matches!(
            self,
            UseKind::Feature | UseKind::Flag | UseKind::Config | UseKind::Package
        )
    }
}

/// One line of a uses file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    /// What kind of message.
    pub kind: UseKind,
    /// Its method.
    pub method: String,
    /// Dotted field paths: `params.…`/`result.…` for a request, the params' own for the
    /// others (a leading `params.` is allowed there too).
    pub fields: Vec<String>,
    /// The line it was read from, from 1.
    pub line: usize,
}

/// A line of a uses file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {message}")]
pub struct UsesError {
    /// The line, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

/// Reads a uses file's text: one use per line, `#` starts a comment, blank lines skipped.
pub fn parse_uses(text: &str) -> Result<Vec<Use>, UsesError> {
    let mut uses = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.split('#').next().unwrap_or("").trim();
        if content.is_empty() {
            continue;
        }
        let err = |message: String| UsesError { line, message };
        let mut words = content.split_whitespace();
        let kind_word = words.next().unwrap_or_default();
        let kind = UseKind::from_word(kind_word).ok_or_else(|| {
            err(format!(
                "unknown kind {kind_word:?}: expected request, notification, server-request, \
                 exec-event, feature, flag, config or package"
            ))
        })?;
        let method = words
            .next()
            .ok_or_else(|| err(format!("{kind_word} without {}", what_follows(kind))))?;
        let fields: Vec<String> = words.map(String::from).collect();
        if kind.is_launch() {
            check_launch_use(kind, method, &fields).map_err(err)?;
            uses.push(Use {
                kind,
                method: method.to_string(),
                fields,
                line,
            });
            continue;
        }
        for f in &fields {
            let path = f.split_once('=').map_or(f.as_str(), |(p, _)| p);
            if f.contains('=') && kind != UseKind::ExecEvent {
                return Err(err(format!(
                    "only an exec-event's field takes =VALUE: {f:?}"
                )));
            }
            if path.split('.').any(str::is_empty) {
                return Err(err(format!("{f:?} is not a dotted field path")));
            }
            let scoped = f.starts_with("params.") || f.starts_with("result.");
            if kind == UseKind::Request && !scoped {
                return Err(err(format!(
                    "a request's field starts with params. or result.: {f:?}"
                )));
            }
        }
        uses.push(Use {
            kind,
            method: method.to_string(),
            fields,
            line,
        });
    }
    Ok(uses)
}

/// What a kind's first word is, for messages.
fn what_follows(kind: UseKind) -> &'static str {
    match kind {
        UseKind::Feature => "a feature name",
        UseKind::Flag => "a subcommand (codex for the top level)",
        UseKind::Config => "a key",
        UseKind::Package => "a path",
        _ => "a method",
    }
}

/// The shape of a launch line: `feature NAME`, `flag SUB [--FLAG [VALUE]]`, `config KEY
/// [VALUE]`, `package PATH`.
fn check_launch_use(kind: UseKind, first: &str, rest: &[String]) -> Result<(), String> {
    let most = match kind {
        UseKind::Flag => 2,
        UseKind::Config => 1,
        _ => 0,
    };
    if rest.len() > most {
        return Err(format!(
            "{} takes at most {most} word(s) after {first:?}, found {}: {}",
            kind.word(),
            rest.len(),
            rest.join(" ")
        ));
    }
    match kind {
        UseKind::Flag => {
            if first.starts_with('-') {
                return Err(format!(
                    "flag starts with the subcommand (codex for the top level), not {first:?}"
                ));
            }
            if let Some(flag) = rest.first()
                && !flag.starts_with('-')
            {
                return Err(format!("{flag:?} is not a flag (--name or -x)"));
            }
        }
        UseKind::Config if first.split('.').any(str::is_empty) => {
            return Err(format!("{first:?} is not a dotted configuration key"));
        }
        _ => {}
    }
    Ok(())
}

/// Reads a uses file.
pub fn read_uses(path: &Path) -> anyhow::Result<Vec<Use>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    parse_uses(&text).with_context(|| format!("{} is not a uses file", path.display()))
}

/// The methods of one binary with the types of what they carry.
#[derive(Debug, Clone, Default)]
pub struct Surface {
    /// The binary's label.
    pub label: String,
    /// Its experimental schema.
    pub schema: Schema,
    /// Client request method -> (params type, response type), when named.
    pub requests: BTreeMap<String, (Option<String>, Option<String>)>,
    /// Notification method -> params type.
    pub notifications: BTreeMap<String, Option<String>>,
    /// Server request method -> params type.
    pub server_requests: BTreeMap<String, Option<String>>,
    /// The `codex exec --json` events its golden exec streams hold (`None`: none recorded
    /// for its release).
    pub exec: Option<ExecSurface>,
    /// Its surface card, for the launch uses (`None`: not read).
    pub card: Option<Card>,
}

/// The `codex exec --json` events seen on one release: each event type with the field
/// paths its events carried (`item.text`; arrays are looked into, `a.b` for `a: [{b}]`)
/// and, for fields named `type` or `status`, each value as `path=value`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecSurface {
    /// Where it was read from (for messages): the golden files and their releases.
    pub from: String,
    /// Event type -> paths and `path=value`s.
    pub events: BTreeMap<String, BTreeSet<String>>,
}

impl ExecSurface {
    /// Adds one event (a JSON object with a `type`).
    pub fn add(&mut self, event: &Value) {
        let Some(kind) = event.get("type").and_then(Value::as_str) else {
            return;
        };
        let fields = self.events.entry(kind.to_string()).or_default();
        walk(event, "", fields);
    }
}

/// Every path under `value` (and `path=value` for `type` and `status` strings) into `out`.
fn walk(value: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    match value {
        Value::Object(obj) => {
            for (key, v) in obj {
                let path = if prefix.is_empty() {
                    key.clone()
                } else {
                    format!("{prefix}.{key}")
                };
                if let (Value::String(s), "type" | "status") = (v, key.as_str()) {
                    out.insert(format!("{path}={s}"));
                }
                out.insert(path.clone());
                walk(v, &path, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| walk(v, prefix, out)),
        _ => {}
    }
}

impl Surface {
    /// Runs `generate-json-schema --experimental` and reads the result.
    pub async fn generate(binary: &CodexBinary) -> anyhow::Result<Surface> {
        let dir = tempfile::tempdir().context("creating a directory for the schema")?;
        let out = dir.path().join("schema");
        schema::generate(binary, &out, true).await?;
        Surface::read(&binary.label(), &out)
            .with_context(|| format!("{}: reading its schema", binary.label()))
    }

    /// Reads a directory written by `generate-json-schema`.
    pub fn read(label: &str, dir: &Path) -> anyhow::Result<Surface> {
        let load = |name: &str| -> anyhow::Result<Value> {
            let path = dir.join(name);
            let text = std::fs::read_to_string(&path)
                .with_context(|| format!("reading {}", path.display()))?;
            serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
        };
        let schema = Schema::read(dir)?;
        let mut requests = BTreeMap::new();
        for (method, variant) in variants(&load("ClientRequest.json")?) {
            let params = params_type(variant);
            let response = response_type(variant, params.as_deref(), &schema);
            requests.insert(method, (params, response));
        }
        let params_of = |doc: &Value| -> BTreeMap<String, Option<String>> {
            variants(doc).map(|(m, v)| (m, params_type(v))).collect()
        };
        Ok(Surface {
            label: label.to_string(),
            notifications: params_of(&load("ServerNotification.json")?),
            server_requests: params_of(&load("ServerRequest.json")?),
            requests,
            schema,
            exec: None,
            card: None,
        })
    }

    fn knows(&self, kind: UseKind, method: &str) -> bool {
        match kind {
            UseKind::Request => self.requests.contains_key(method),
            UseKind::Notification => self.notifications.contains_key(method),
            UseKind::ServerRequest => self.server_requests.contains_key(method),
            UseKind::ExecEvent => self
                .exec
                .as_ref()
                .is_some_and(|e| e.events.contains_key(method)),
            _ => false,
        }
    }

    /// The type a field path of a use starts in, and the path inside it.
    fn root<'p>(&self, kind: UseKind, method: &str, path: &'p str) -> Option<(String, &'p str)> {
        let (ty, rest) = match kind {
            UseKind::Request => {
                let (params, result) = self.requests.get(method)?;
                match path.split_once('.') {
                    Some(("params", rest)) => (params.clone()?, rest),
                    Some(("result", rest)) => (result.clone()?, rest),
                    _ => return None,
                }
            }
            UseKind::ExecEvent
            | UseKind::Feature
            | UseKind::Flag
            | UseKind::Config
            | UseKind::Package => return None,
            UseKind::Notification | UseKind::ServerRequest => {
                let map = if kind == UseKind::Notification {
                    &self.notifications
                } else {
                    &self.server_requests
                };
                (
                    map.get(method)?.clone()?,
                    path.strip_prefix("params.").unwrap_or(path),
                )
            }
        };
        Some((ty, rest))
    }

    /// The methods of a kind of message this schema has.
    fn methods(&self, kind: UseKind) -> Box<dyn Iterator<Item = &str> + '_> {
        match kind {
            UseKind::Request => Box::new(self.requests.keys().map(String::as_str)),
            UseKind::Notification => Box::new(self.notifications.keys().map(String::as_str)),
            UseKind::ServerRequest => Box::new(self.server_requests.keys().map(String::as_str)),
            UseKind::ExecEvent => Box::new(
                self.exec
                    .iter()
                    .flat_map(|e| e.events.keys().map(String::as_str)),
            ),
            // How codex is launched is judged on the surface cards, not named here.
            UseKind::Feature | UseKind::Flag | UseKind::Config | UseKind::Package => {
                Box::new(std::iter::empty())
            }
        }
    }

    /// The field paths of a use's message as the use would write them, as deep as `like`
    /// (and one more), each with the same prefix (`params.`, `result.` or none): what a
    /// mistyped path is held against.
    fn field_paths(&self, kind: UseKind, method: &str, like: &str) -> Vec<String> {
        let depth = like.split('.').count() + 1;
        let roots: Vec<(&str, Option<String>)> = match kind {
            UseKind::Request => match self.requests.get(method) {
                Some((params, result)) => {
                    vec![("params.", params.clone()), ("result.", result.clone())]
                }
                None => Vec::new(),
            },
            UseKind::ExecEvent
            | UseKind::Feature
            | UseKind::Flag
            | UseKind::Config
            | UseKind::Package => Vec::new(),
            UseKind::Notification | UseKind::ServerRequest => {
                let map = if kind == UseKind::Notification {
                    &self.notifications
                } else {
                    &self.server_requests
                };
                let prefix = if like.starts_with("params.") {
                    "params."
                } else {
                    ""
                };
                vec![(prefix, map.get(method).cloned().flatten())]
            }
        };
        let mut out = Vec::new();
        for (prefix, ty) in roots {
            if let Some(ty) = ty {
                paths(&self.schema, &ty, prefix, depth, &mut out);
            }
        }
        out
    }

    /// The field a use's path names, if this schema has it.
    pub fn field(&self, kind: UseKind, method: &str, path: &str) -> Option<Field> {
        let (ty, rest) = self.root(kind, method, path)?;
        let segments: Vec<&str> = rest.split('.').collect();
        resolve(&self.schema, &ty, &segments)
    }
}

/// `(method, variant)` of every variant of a message union.
fn variants(doc: &Value) -> impl Iterator<Item = (String, &Value)> {
    doc.get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            let method = v.pointer("/properties/method/enum/0")?.as_str()?;
            Some((method.to_string(), v))
        })
}

/// The name of a variant's params type.
fn params_type(variant: &Value) -> Option<String> {
    let reference = variant.pointer("/properties/params/$ref")?.as_str()?;
    reference.rsplit('/').next().map(String::from)
}

/// The response type of a client request variant: `XResponse` for a title `XRequest`, or
/// for params `XParams`.
fn response_type(variant: &Value, params: Option<&str>, schema: &Schema) -> Option<String> {
    let by_title = variant
        .get("title")
        .and_then(Value::as_str)
        .and_then(|t| t.strip_suffix("Request"));
    let by_params = params.and_then(|p| p.strip_suffix("Params"));
    [by_title, by_params]
        .into_iter()
        .flatten()
        .map(|stem| format!("{stem}Response"))
        .find(|name| schema.types.contains_key(name))
}

/// The named types a type expression mentions (`Thread|null` -> `Thread`,
/// `ThreadItem[]` -> `ThreadItem`, `map<Foo>` -> `Foo`).
pub fn named_types<'a>(ty: &'a str, schema: &Schema) -> Vec<&'a str> {
    ty.split('|')
        .map(|t| {
            let t = t.trim().trim_end_matches("[]");
            t.strip_prefix("map<")
                .and_then(|t| t.strip_suffix('>'))
                .unwrap_or(t)
        })
        .filter(|t| schema.types.contains_key(*t))
        .collect()
}

/// Follows `path` from the type `ty`: through inline objects (dotted field names), named
/// types, arrays, nullables and the variants of unions.
fn resolve(schema: &Schema, ty: &str, path: &[&str]) -> Option<Field> {
    let def = schema.types.get(ty)?;
    let maps = std::iter::once(&def.fields).chain(def.variants.values());
    for fields in maps {
        for split in (1..=path.len()).rev() {
            let Some(field) = fields.get(&path[..split].join(".")) else {
                continue;
            };
            if split == path.len() {
                return Some(field.clone());
            }
            for inner in named_types(&field.ty, schema) {
                if let Some(found) = resolve(schema, inner, &path[split..]) {
                    return Some(found);
                }
            }
        }
    }
    None
}

/// The most field paths [`Surface::field_paths`] lists (a schema's types nest deep).
const MAX_PATHS: usize = 20_000;

/// Every field path below type `ty`, each after `prefix`, down to `depth` dotted parts:
/// through named types, arrays, nullables and the variants of unions, as [`resolve`] goes.
fn paths(schema: &Schema, ty: &str, prefix: &str, depth: usize, out: &mut Vec<String>) {
    let Some(def) = schema.types.get(ty) else {
        return;
    };
    let maps = std::iter::once(&def.fields).chain(def.variants.values());
    for fields in maps {
        for (name, field) in fields {
            if out.len() >= MAX_PATHS {
                return;
            }
            let path = format!("{prefix}{name}");
            let parts = path.split('.').count();
            out.push(path.clone());
            if parts < depth {
                for inner in named_types(&field.ty, schema) {
                    paths(schema, inner, &format!("{path}."), depth, out);
                }
            }
        }
    }
}

/// One change between two binaries that touches a use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The line of the uses file it concerns.
    pub line: usize,
    /// Whether an integration that uses this breaks.
    pub incompatible: bool,
    /// Whether the use names what neither schema has (a typo, most likely): not a change.
    pub unknown: bool,
    /// What changed, for people.
    pub text: String,
}

/// The changes from `old` to `new` that touch `uses`, in the order of the file.
pub fn check(uses: &[Use], old: &Surface, new: &Surface) -> Vec<Change> {
    let mut out = Vec::new();
    for u in uses {
        let mut push = |incompatible: bool, text: String| {
            out.push(Change {
                line: u.line,
                incompatible,
                unknown: false,
                text,
            })
        };
        let mut unknown = Vec::new();
        let what = format!("{} {}", u.kind.word(), u.method);
        if u.kind == UseKind::Config {
            continue;
        }
        if u.kind.is_launch() {
            for (incompatible, text) in launch_changes(u, old, new) {
                push(incompatible, format!("{what}{text}"));
            }
            continue;
        }
        if u.kind == UseKind::ExecEvent {
            for (incompatible, text) in exec_changes(u, old, new) {
                push(incompatible, format!("{what}{text}"));
            }
            continue;
        }
        match (old.knows(u.kind, &u.method), new.knows(u.kind, &u.method)) {
            (true, false) => {
                push(true, format!("{what}: removed"));
                continue;
            }
            (false, false) => {
                let known = old.methods(u.kind).chain(new.methods(u.kind));
                unknown.push(format!(
                    "{what}: in neither schema{}",
                    crate::suggest::hint(&u.method, known)
                ));
            }
            (false, true) => push(false, format!("{what}: new in {}", new.label)),
            (true, true) => {}
        }
        if u.kind == UseKind::Request {
            for text in new_required_params(&u.method, old, new) {
                push(true, format!("{what}: {text}"));
            }
        }
        for field in unknown
            .is_empty()
            .then_some(&u.fields)
            .into_iter()
            .flatten()
        {
            let changes = field_changes(u, field, old, new);
            if changes.is_empty() && old.field(u.kind, &u.method, field).is_none() {
                let paths: BTreeSet<String> = [old, new]
                    .iter()
                    .flat_map(|s| s.field_paths(u.kind, &u.method, field))
                    .collect();
                unknown.push(format!(
                    "{what} {field}: in neither schema{}",
                    crate::suggest::hint(field, paths.iter().map(String::as_str))
                ));
            }
            for (incompatible, text) in changes {
                push(incompatible, format!("{what} {field}: {text}"));
            }
        }
        out.extend(unknown.into_iter().map(|text| Change {
            line: u.line,
            incompatible: false,
            unknown: true,
            text,
        }));
    }
    out
}

/// How an exec event a use names changed between the golden exec streams of two releases:
/// `(incompatible, text after the use's name)` per change.
fn exec_changes(u: &Use, old: &Surface, new: &Surface) -> Vec<(bool, String)> {
    let (Some(before), Some(after)) = (&old.exec, &new.exec) else {
        let missing: Vec<&str> = [old, new]
            .iter()
            .filter(|s| s.exec.is_none())
            .map(|s| s.label.as_str())
            .collect();
        return vec![(
            false,
            format!(
                ": not checked, no golden exec stream covers {} (record one with \
                 `codex-parity run --bless --filter X`)",
                missing.join(" or ")
            ),
        )];
    };
    let (was, now) = (before.events.get(&u.method), after.events.get(&u.method));
    match (was, now) {
        (None, None) => {
            let seen = before.events.keys().chain(after.events.keys());
            return vec![(
                false,
                format!(
                    ": in neither release's exec streams{}",
                    crate::suggest::hint(&u.method, seen.map(String::as_str))
                ),
            )];
        }
        (Some(_), None) => return vec![(true, format!(": gone (seen in {})", before.from))],
        (None, Some(_)) => return vec![(false, format!(": new in {}", new.label))],
        (Some(_), Some(_)) => {}
    }
    let mut out = Vec::new();
    for field in &u.fields {
        let had = was.is_some_and(|f| f.contains(field));
        let has = now.is_some_and(|f| f.contains(field));
        match (had, has) {
            (true, false) => out.push((true, format!(" {field}: gone (seen in {})", before.from))),
            (false, true) => out.push((false, format!(" {field}: new in {}", new.label))),
            (false, false) => out.push((false, format!(" {field}: in neither release's streams"))),
            (true, true) => {}
        }
    }
    out
}

/// How a launch use (`feature`, `flag`, `package`) changed between the two releases' cards:
/// `(incompatible, text after the use's name)` per change.
fn launch_changes(u: &Use, old: &Surface, new: &Surface) -> Vec<(bool, String)> {
    let (Some(a), Some(b)) = (&old.card, &new.card) else {
        return vec![(false, ": not checked, no surface card was read".into())];
    };
    match u.kind {
        UseKind::Feature => feature_changes(&u.method, a, b),
        UseKind::Flag => flag_changes(u, a, b),
        UseKind::Package => package_changes(&u.method, a, b),
        _ => Vec::new(),
    }
}

fn feature_changes(name: &str, a: &Card, b: &Card) -> Vec<(bool, String)> {
    let shown = |f: &crate::codex::features::Feature| {
        format!("{}, {}", f.stage, if f.default { "on" } else { "off" })
    };
    match (a.feature(name), b.feature(name)) {
        (None, None) => vec![(false, ": listed by neither release".into())],
        (None, Some(f)) => vec![(false, format!(": new in {} ({})", b.version, shown(f)))],
        (Some(f), None) => vec![(
            true,
            format!(": no longer listed in {} (was {})", b.version, shown(f)),
        )],
        (Some(was), Some(now)) => {
            let mut out = Vec::new();
            if was.stage != now.stage {
                let retired = now.stage == "removed";
                out.push((retired, format!(": stage {} -> {}", was.stage, now.stage)));
            }
            if was.default != now.default {
                out.push((
                    false,
                    format!(
                        ": default {} -> {}",
                        if was.default { "on" } else { "off" },
                        if now.default { "on" } else { "off" }
                    ),
                ));
            }
            out
        }
    }
}

fn flag_changes(u: &Use, a: &Card, b: &Card) -> Vec<(bool, String)> {
    let path = command_path(&u.method);
    let (ca, cb) = (a.command(&path), b.command(&path));
    let (ca, cb) = match (ca, cb) {
        (None, None) => return vec![(false, ": a command of neither release".into())],
        (None, Some(_)) => return vec![(false, format!(": new in {}", b.version))],
        (Some(_), None) => return vec![(true, format!(": command gone in {}", b.version))],
        (Some(ca), Some(cb)) => (ca, cb),
    };
    let Some(flag) = u.fields.first() else {
        return Vec::new();
    };
    let (la, lb) = (ca.long_of(flag), cb.long_of(flag));
    let (fa, fb) = (
        la.as_ref().and_then(|l| ca.flags.get(l)),
        lb.as_ref().and_then(|l| cb.flags.get(l)),
    );
    let (fa, fb) = match (fa, fb) {
        (None, None) => return vec![(false, format!(" {flag}: a flag of neither release"))],
        (None, Some(_)) => return vec![(false, format!(" {flag}: new in {}", b.version))],
        (Some(_), None) => return vec![(true, format!(" {flag}: gone in {}", b.version))],
        (Some(fa), Some(fb)) => (fa, fb),
    };
    let mut out = Vec::new();
    if fa.takes_value != fb.takes_value {
        let now = if fb.takes_value {
            "takes a value"
        } else {
            "takes no value"
        };
        out.push((true, format!(" {flag}: now {now}")));
    }
    if let Some(value) = u.fields.get(1) {
        let listed = |f: &crate::codex::completion::FlagSpec| {
            f.values.is_empty() || f.values.contains(value)
        };
        match (listed(fa), listed(fb)) {
            (true, false) => out.push((
                true,
                format!(
                    " {flag} {value}: no longer accepted (possible values: {})",
                    fb.values.join(", ")
                ),
            )),
            (false, true) => out.push((false, format!(" {flag} {value}: new in {}", b.version))),
            (false, false) => out.push((false, format!(" {flag} {value}: accepted by neither"))),
            (true, true) => {}
        }
    }
    out
}

/// A `flag` use's subcommand as a card's command path: `codex` is the top level,
/// `exec/resume` is `exec resume`.
pub fn command_path(sub: &str) -> String {
    if sub == "codex" {
        String::new()
    } else {
        sub.replace('/', " ")
    }
}

fn package_changes(path: &str, a: &Card, b: &Card) -> Vec<(bool, String)> {
    let (Some(pa), Some(pb)) = (&a.package, &b.package) else {
        let note = [a, b]
            .iter()
            .find_map(|c| c.package_note.clone())
            .unwrap_or_default();
        return vec![(false, format!(": not checked ({note})"))];
    };
    let entry = pb.entrypoint().unwrap_or_else(|| "none".into());
    match (pa.contains(path), pb.contains(path)) {
        (true, false) => vec![(
            true,
            format!(": gone from {} (its entrypoint is {entry})", pb.spec),
        )],
        (false, true) => vec![(false, format!(": new in {}", pb.spec))],
        (false, false) => vec![(
            false,
            format!(
                ": in neither package (the entrypoint of {} is {entry})",
                pb.spec
            ),
        )],
        (true, true) => Vec::new(),
    }
}

/// Params fields a request must now send that it did not have to before.
fn new_required_params(method: &str, old: &Surface, new: &Surface) -> Vec<String> {
    let fields_of = |s: &Surface| -> BTreeMap<String, Field> {
        s.requests
            .get(method)
            .and_then(|(p, _)| p.as_ref())
            .and_then(|p| s.schema.types.get(p))
            .map(|d| d.fields.clone())
            .unwrap_or_default()
    };
    let (before, after) = (fields_of(old), fields_of(new));
    after
        .iter()
        .filter(|(name, f)| f.required && !before.get(*name).is_some_and(|b| b.required))
        .map(|(name, f)| format!("new required params field {name} ({})", f.ty))
        .collect()
}

/// How one named field changed: `(incompatible, what)` for each change.
fn field_changes(u: &Use, path: &str, old: &Surface, new: &Surface) -> Vec<(bool, String)> {
    let (before, after) = (
        old.field(u.kind, &u.method, path),
        new.field(u.kind, &u.method, path),
    );
    let (before, after) = match (before, after) {
        (None, None) => return Vec::new(),
        (None, Some(_)) => return vec![(false, format!("new in {}", new.label))],
        (Some(b), None) => return vec![(true, format!("gone ({} in {})", b.ty, old.label))],
        (Some(b), Some(a)) => (b, a),
    };
    let mut out = Vec::new();
    if before.ty != after.ty {
        out.push((true, format!("retyped {} -> {}", before.ty, after.ty)));
    }
    let reads = !(u.kind == UseKind::Request && path.starts_with("params."));
    if reads && before.required && !after.required {
        out.push((true, "no longer required: it may be absent".into()));
    }
    out.extend(enum_changes(&before.ty, old, new));
    out
}

/// Enum values removed from (incompatible) or added to the named types of a field.
fn enum_changes(before: &str, old: &Surface, new: &Surface) -> Vec<(bool, String)> {
    let mut out = Vec::new();
    let names: BTreeSet<&str> = named_types(before, &old.schema).into_iter().collect();
    for name in names {
        let (Some(a), Some(b)) = (old.schema.types.get(name), new.schema.types.get(name)) else {
            continue;
        };
        let (was, now): (BTreeSet<&String>, BTreeSet<&String>) =
            (a.values.iter().collect(), b.values.iter().collect());
        let was_variants: BTreeSet<&String> = a.variants.keys().collect();
        let now_variants: BTreeSet<&String> = b.variants.keys().collect();
        for gone in was.difference(&now) {
            out.push((true, format!("{name} value {gone:?} gone")));
        }
        for added in now.difference(&was) {
            out.push((false, format!("{name} value {added:?} new")));
        }
        for gone in was_variants.difference(&now_variants) {
            out.push((true, format!("{name} variant {gone:?} gone")));
        }
        for added in now_variants.difference(&was_variants) {
            out.push((false, format!("{name} variant {added:?} new")));
        }
    }
    out
}

/// The report `surface check` prints: a header, one line per change (`!` incompatible,
/// `~` compatible), and the count.
pub fn render(uses: &[Use], changes: &[Change], old: &Surface, new: &Surface) -> String {
    let mut text = format!(
        "surface check {} -> {}: {} use(s)\n",
        old.label,
        new.label,
        uses.len()
    );
    for c in changes {
        let mark = match (c.unknown, c.incompatible) {
            (true, _) => "?",
            (_, true) => "!",
            _ => "~",
        };
        let _ = writeln!(text, "  {mark} line {}: {}", c.line, c.text);
    }
    let broken = changes.iter().filter(|c| c.incompatible).count();
    let unknown = changes.iter().filter(|c| c.unknown).count();
    let _ = writeln!(
        text,
        "{broken} incompatible change(s), {} compatible{}",
        changes.len() - broken - unknown,
        if unknown > 0 {
            format!(", {unknown} use(s) naming what neither schema has (?)")
        } else {
            String::new()
        }
    );
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::codex::schema::TypeDef;

    fn surface(label: &str, types: Value, requests: &[(&str, &str, &str)]) -> Surface {
        let mut schema = Schema::default();
        for (name, def) in types.as_object().unwrap() {
            schema.types.insert(name.clone(), TypeDef::parse(def));
        }
        let requests = requests
            .iter()
            .map(|(m, p, r)| (m.to_string(), (Some(p.to_string()), Some(r.to_string()))))
            .collect();
        let mut notifications = BTreeMap::new();
        notifications.insert(
            "item/completed".to_string(),
            Some("ItemCompleted".to_string()),
        );
        Surface {
            label: label.into(),
            schema,
            requests,
            notifications,
            server_requests: BTreeMap::new(),
            exec: None,
            card: None,
        }
    }

    fn old() -> Surface {
        surface(
            "codex-a",
            json!({
                "StartParams": {"type": "object", "properties": {"cwd": {"type": "string"}}},
                "StartResponse": {"type": "object", "required": ["thread"], "properties": {
                    "thread": {"$ref": "#/definitions/Thread"}}},
                "Thread": {"type": "object", "required": ["id", "status"], "properties": {
                    "id": {"type": "string"}, "status": {"$ref": "#/definitions/Status"}}},
                "Status": {"type": "string", "enum": ["idle", "active", "archived"]},
                "ItemCompleted": {"type": "object", "required": ["item"], "properties": {
                    "item": {"type": "object", "properties": {"text": {"type": "string"}}}}},
                "RollbackParams": {"type": "object"},
                "RollbackResponse": {"type": "object"}
            }),
            &[
                ("thread/start", "StartParams", "StartResponse"),
                ("thread/rollback", "RollbackParams", "RollbackResponse"),
            ],
        )
    }

    fn new() -> Surface {
        surface(
            "codex-b",
            json!({
                "StartParams": {"type": "object", "required": ["model"], "properties": {
                    "cwd": {"type": "string"}, "model": {"type": "string"}}},
                "StartResponse": {"type": "object", "required": ["thread"], "properties": {
                    "thread": {"$ref": "#/definitions/Thread"}}},
                "Thread": {"type": "object", "required": ["id"], "properties": {
                    "id": {"type": "integer"},
                    "status": {"$ref": "#/definitions/Status"}}},
                "Status": {"type": "string", "enum": ["idle", "active", "paused"]},
                "ItemCompleted": {"type": "object", "required": ["item"], "properties": {
                    "item": {"type": "object", "properties": {"body": {"type": "string"}}}}}
            }),
            &[("thread/start", "StartParams", "StartResponse")],
        )
    }

    fn texts(uses: &str, a: &Surface, b: &Surface) -> Vec<(bool, String)> {
        let uses = parse_uses(uses).unwrap();
        check(&uses, a, b)
            .into_iter()
            .map(|c| (c.incompatible, c.text))
            .collect()
    }

    #[test]
    fn parses_the_file_and_names_bad_lines() {
        let uses = parse_uses(
            "# mine\n\nrequest thread/start result.thread.id  # reads the id\n\
             notification item/completed item.text\n",
        )
        .unwrap();
        assert_eq!(uses.len(), 2);
        assert_eq!((uses[0].line, uses[0].fields.len()), (3, 1));
        assert_eq!(uses[1].kind, UseKind::Notification);
        let err = parse_uses("request a\nnotifcation b\n").unwrap_err();
        assert_eq!(err.line, 2);
        assert!(err.to_string().starts_with("line 2: unknown kind"), "{err}");
        assert_eq!(parse_uses("request\n").unwrap_err().line, 1);
        assert_eq!(parse_uses("request m thread.id\n").unwrap_err().line, 1);
        assert_eq!(parse_uses("notification m a..b\n").unwrap_err().line, 1);
    }

    #[test]
    fn removals_and_incompatible_changes_fail_forward() {
        let found = texts(
            "request thread/rollback\n\
             request thread/start result.thread.id result.thread.status\n\
             notification item/completed item.text\n",
            &old(),
            &new(),
        );
        let broken: Vec<&str> = found
            .iter()
            .filter(|(i, _)| *i)
            .map(|(_, t)| t.as_str())
            .collect();
        assert!(
            broken.contains(&"request thread/rollback: removed"),
            "{found:?}"
        );
        assert!(
            broken
                .iter()
                .any(|t| t.contains("new required params field model"))
        );
        assert!(
            broken
                .iter()
                .any(|t| t.contains("result.thread.id: retyped string -> integer"))
        );
        assert!(broken.iter().any(|t| t.contains("no longer required")));
        assert!(
            broken
                .iter()
                .any(|t| t.contains("Status value \"archived\" gone"))
        );
        assert!(broken.iter().any(|t| t.contains("item.text: gone")));
        assert!(
            found
                .iter()
                .any(|(i, t)| !i && t.contains("\"paused\" new"))
        );
    }

    /// Issue 43: a typo'd method or field counted as a compatible change. It is now
    /// unknown, with the closest name either schema has.
    #[test]
    fn a_typo_is_unknown_with_the_closest_name() {
        let uses = parse_uses(
            "request thread/strat\nnotification item/completed item.txet\n\
             request thread/start result.thread.stauts params.cwd\n",
        )
        .unwrap();
        let changes = check(&uses, &old(), &new());
        let unknown: Vec<(usize, &str)> = changes
            .iter()
            .filter(|c| c.unknown)
            .map(|c| (c.line, c.text.as_str()))
            .collect();
        assert_eq!(
            unknown,
            [
                (
                    1,
                    "request thread/strat: in neither schema (did you mean thread/start?)"
                ),
                (
                    2,
                    "notification item/completed item.txet: in neither schema (did you mean \
                     item.text?)"
                ),
                (
                    3,
                    "request thread/start result.thread.stauts: in neither schema (did you \
                     mean result.thread.status?)"
                ),
            ]
        );
        assert!(changes.iter().all(|c| !(c.unknown && c.incompatible)));
        let text = render(&uses, &changes, &old(), &new());
        assert!(text.contains("  ? line 1: request thread/strat"), "{text}");
        assert!(
            text.contains("3 use(s) naming what neither schema has (?)"),
            "{text}"
        );
    }

    #[test]
    fn the_other_direction_is_mostly_compatible() {
        let found = texts(
            "request thread/rollback\nrequest thread/start params.cwd\n",
            &new(),
            &old(),
        );
        assert_eq!(
            found,
            vec![(false, "request thread/rollback: new in codex-a".to_string()),]
        );
        let unchanged = texts("request thread/start params.cwd\n", &old(), &old());
        assert!(unchanged.is_empty(), "{unchanged:?}");
    }

    #[test]
    fn exec_events_are_held_against_the_golden_streams_of_each_release() {
        let with = |label: &str, events: Vec<Value>| {
            let mut s = old();
            s.label = label.into();
            let mut exec = ExecSurface {
                from: format!("streams of {label}"),
                ..ExecSurface::default()
            };
            events.iter().for_each(|e| exec.add(e));
            s.exec = Some(exec);
            s
        };
        let before = with(
            "codex-a",
            vec![
                json!({"type": "item.completed", "item": {"type": "agent_message", "text": "t"}}),
                json!({"type": "turn.failed", "error": {"message": "m"}}),
            ],
        );
        let after = with(
            "codex-b",
            vec![json!({"type": "item.completed", "item": {"type": "agentMessage", "txt": "t"}})],
        );
        let uses = "exec-event item.completed item.type=agent_message item.text\n\
                    exec-event turn.failed\nexec-event thread.started\n";
        let found = texts(uses, &before, &after);
        assert_eq!(
            found,
            vec![
                (true, "exec-event item.completed item.type=agent_message: gone (seen in streams of codex-a)".into()),
                (true, "exec-event item.completed item.text: gone (seen in streams of codex-a)".into()),
                (true, "exec-event turn.failed: gone (seen in streams of codex-a)".into()),
                (false, "exec-event thread.started: in neither release's exec streams".into()),
            ]
        );
        // A release without golden exec streams is said, never passed as unchanged.
        let mut bare = after.clone();
        bare.exec = None;
        let unknown = texts("exec-event turn.failed\n", &before, &bare);
        assert_eq!(unknown.len(), 1);
        assert!(
            !unknown[0].0
                && unknown[0]
                    .1
                    .contains("no golden exec stream covers codex-b")
        );
        assert!(parse_uses("notification m a=b\n").is_err());
        assert_eq!(
            parse_uses("exec-event m a.b=c\n").unwrap()[0].fields,
            vec!["a.b=c"]
        );
    }
}
