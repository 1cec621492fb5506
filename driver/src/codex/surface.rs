//! The integrator's surface: what one integration uses of the app-server protocol (client
//! requests, notifications, server requests, the fields it reads), written in a small text
//! file, and the changes between two codex binaries that touch it. `codex-parity surface
//! check --uses FILE A B` prints those and fails on the incompatible ones; see
//! `docs/surface.md` for the file format.
//!
//! ```text
//! # KIND METHOD [FIELD ...]     (KIND: request, notification, server-request)
//! request thread/start params.cwd result.thread.id
//! notification item/completed item.type
//! server-request item/tool/call callId
//! ```
//!
//! Incompatible (exit 1): a used method removed; a field it names gone, retyped, or no
//! longer required (it may be absent now); an enum value of a named field's type removed; a
//! new required params field of a request it makes. Compatible changes (a new enum value, a
//! new optional params field) are printed too.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::Path;

use anyhow::Context;
use serde_json::Value;

use crate::codex::binaries::CodexBinary;
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
}

impl UseKind {
    /// The word of the file format.
    pub fn word(self) -> &'static str {
        match self {
            UseKind::Request => "request",
            UseKind::Notification => "notification",
            UseKind::ServerRequest => "server-request",
        }
    }

    fn from_word(word: &str) -> Option<UseKind> {
        [
            UseKind::Request,
            UseKind::Notification,
            UseKind::ServerRequest,
        ]
        .into_iter()
        .find(|k| k.word() == word)
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
                "unknown kind {kind_word:?}: expected request, notification or server-request"
            ))
        })?;
        let method = words
            .next()
            .ok_or_else(|| err(format!("{kind_word} without a method")))?;
        let fields: Vec<String> = words.map(String::from).collect();
        for f in &fields {
            if f.split('.').any(str::is_empty) {
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
        })
    }

    fn knows(&self, kind: UseKind, method: &str) -> bool {
        match kind {
            UseKind::Request => self.requests.contains_key(method),
            UseKind::Notification => self.notifications.contains_key(method),
            UseKind::ServerRequest => self.server_requests.contains_key(method),
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

/// One change between two binaries that touches a use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The line of the uses file it concerns.
    pub line: usize,
    /// Whether an integration that uses this breaks.
    pub incompatible: bool,
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
                text,
            })
        };
        let what = format!("{} {}", u.kind.word(), u.method);
        match (old.knows(u.kind, &u.method), new.knows(u.kind, &u.method)) {
            (true, false) => {
                push(true, format!("{what}: removed"));
                continue;
            }
            (false, false) => {
                push(false, format!("{what}: in neither schema"));
                continue;
            }
            (false, true) => push(false, format!("{what}: new in {}", new.label)),
            (true, true) => {}
        }
        if u.kind == UseKind::Request {
            for text in new_required_params(&u.method, old, new) {
                push(true, format!("{what}: {text}"));
            }
        }
        for field in &u.fields {
            for (incompatible, text) in field_changes(u, field, old, new) {
                push(incompatible, format!("{what} {field}: {text}"));
            }
        }
    }
    out
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
        (None, None) => return vec![(false, "in neither schema".into())],
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
        let mark = if c.incompatible { "!" } else { "~" };
        let _ = writeln!(text, "  {mark} line {}: {}", c.line, c.text);
    }
    let broken = changes.iter().filter(|c| c.incompatible).count();
    let _ = writeln!(
        text,
        "{broken} incompatible change(s), {} compatible",
        changes.len() - broken
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
}
