//! What changed in the app-server protocol between two codex binaries: methods added and
//! removed, and for every type both know, fields, enum values and union variants.
//!
//! [`diff`] compares two [`Schema`]s; [`SchemaDiff::to_text`] renders the report that
//! `codex-parity schema-diff` prints, and the value serializes to its `--json` form.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::codex::schema::{Field, Schema, TypeDef};

/// The envelope types whose variants are the methods; their changes are the method lists.
const ENVELOPES: [&str; 4] = [
    "ClientRequest",
    "ServerRequest",
    "ServerNotification",
    "ClientNotification",
];

/// Everything that differs between two schemas, in a stable (sorted) order.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SchemaDiff {
    /// The older side, e.g. `codex-0.131.0`.
    pub from: String,
    /// The newer side, e.g. `codex-0.171.0`.
    pub to: String,
    /// Client-to-server request methods.
    pub client_requests: Delta,
    /// Server-to-client request methods.
    pub server_requests: Delta,
    /// Server notification methods.
    pub notifications: Delta,
    /// Client notification methods.
    pub client_notifications: Delta,
    /// Named types (the method envelopes left out).
    pub types: Delta,
    /// Types present on both sides whose shape changed, by name.
    pub changed_types: Vec<TypeChange>,
}

/// Names present on only one side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Delta {
    /// Only in the newer schema.
    pub added: Vec<String>,
    /// Only in the older schema.
    pub removed: Vec<String>,
}

/// How one shared type changed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct TypeChange {
    /// The type's name, e.g. `ThreadGoalStatus`.
    pub name: String,
    /// Set when the kind changed, e.g. `object` to ``union tagged by `type` ``.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<KindChange>,
    /// Enum values (or plain-string variants) added and removed.
    pub values: Delta,
    /// Top-level field changes (left out when an object became a union or back: the
    /// variants then carry the comparison).
    pub fields: Vec<FieldChange>,
    /// Union variants added, removed or changed.
    pub variants: Vec<VariantChange>,
}

/// A type's kind before and after.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KindChange {
    /// The older kind.
    pub from: String,
    /// The newer kind.
    pub to: String,
}

/// One field that was added (`from` is `None`), removed (`to` is `None`), or changed in type
/// or in being required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// The field's name (`outer.inner` inside an inline object).
    pub name: String,
    /// The field in the older schema.
    pub from: Option<Field>,
    /// The field in the newer schema.
    pub to: Option<Field>,
}

/// One union variant that was added, removed or changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VariantChange {
    /// The variant's name (its tag value, e.g. `function`).
    pub name: String,
    /// `added`, `removed` or `changed`.
    pub change: &'static str,
    /// For a changed variant, its field changes. For a variant added to a type that used to
    /// be a plain object, its fields compared with that object (and the other way round for
    /// a variant removed from a union that became an object).
    pub fields: Vec<FieldChange>,
}

/// Compares `old` (labelled `from`) with `new` (labelled `to`).
pub fn diff(from: &str, old: &Schema, to: &str, new: &Schema) -> SchemaDiff {
    let named = |s: &Schema| -> BTreeSet<String> {
        s.types
            .keys()
            .filter(|k| !ENVELOPES.contains(&k.as_str()))
            .cloned()
            .collect()
    };
    let changed_types = old
        .types
        .iter()
        .filter(|(name, _)| !ENVELOPES.contains(&name.as_str()))
        .filter_map(|(name, a)| diff_type(name, a, new.types.get(name)?))
        .collect();
    SchemaDiff {
        from: from.to_string(),
        to: to.to_string(),
        client_requests: delta(&old.client_requests, &new.client_requests),
        server_requests: delta(&old.server_requests, &new.server_requests),
        notifications: delta(&old.notifications, &new.notifications),
        client_notifications: delta(&old.client_notifications, &new.client_notifications),
        types: delta(&named(old), &named(new)),
        changed_types,
    }
}

fn delta<'a>(
    old: impl IntoIterator<Item = &'a String>,
    new: impl IntoIterator<Item = &'a String>,
) -> Delta {
    let old: BTreeSet<&String> = old.into_iter().collect();
    let new: BTreeSet<&String> = new.into_iter().collect();
    Delta {
        added: new.difference(&old).map(|s| s.to_string()).collect(),
        removed: old.difference(&new).map(|s| s.to_string()).collect(),
    }
}

fn diff_type(name: &str, old: &TypeDef, new: &TypeDef) -> Option<TypeChange> {
    let was_object = old.variants.is_empty() && !old.fields.is_empty();
    let is_object = new.variants.is_empty() && !new.fields.is_empty();
    let became_union = was_object && !new.variants.is_empty();
    let became_object = is_object && !old.variants.is_empty();
    let mut variants = Vec::new();
    let names: BTreeSet<&String> = old.variants.keys().chain(new.variants.keys()).collect();
    for v in names {
        let change = match (old.variants.get(v), new.variants.get(v)) {
            (Some(a), Some(b)) => Some(("changed", diff_fields(a, b))).filter(|c| !c.1.is_empty()),
            (None, Some(_)) if became_union => {
                Some(("added", diff_fields(&old.fields, &new.variant_fields(v))))
            }
            (None, Some(_)) => Some(("added", Vec::new())),
            (Some(_), None) if became_object => {
                Some(("removed", diff_fields(&old.variant_fields(v), &new.fields)))
            }
            (Some(_), None) => Some(("removed", Vec::new())),
            (None, None) => None,
        };
        if let Some((change, fields)) = change {
            variants.push(VariantChange {
                name: v.clone(),
                change,
                fields,
            });
        }
    }
    let change = TypeChange {
        name: name.to_string(),
        kind: (old.kind != new.kind).then(|| KindChange {
            from: old.kind.clone(),
            to: new.kind.clone(),
        }),
        values: delta(&old.values, &new.values),
        fields: if became_union || became_object {
            Vec::new()
        } else {
            diff_fields(&old.fields, &new.fields)
        },
        variants,
    };
    let unchanged = TypeChange {
        name: name.to_string(),
        ..Default::default()
    };
    (change != unchanged).then_some(change)
}

fn diff_fields(old: &BTreeMap<String, Field>, new: &BTreeMap<String, Field>) -> Vec<FieldChange> {
    let names: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    names
        .into_iter()
        .filter(|n| old.get(*n) != new.get(*n))
        .map(|n| FieldChange {
            name: n.clone(),
            from: old.get(n).cloned(),
            to: new.get(n).cloned(),
        })
        .collect()
}

impl Delta {
    /// Whether nothing was added or removed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty()
    }
}

impl SchemaDiff {
    /// Whether the two schemas describe the same protocol.
    pub fn is_empty(&self) -> bool {
        self.client_requests.is_empty()
            && self.server_requests.is_empty()
            && self.notifications.is_empty()
            && self.client_notifications.is_empty()
            && self.types.is_empty()
            && self.changed_types.is_empty()
    }

    /// The one-line count of what changed, e.g.
    /// `client requests +87 -2, server requests +0 -1, ...`.
    pub fn summary(&self) -> String {
        let count =
            |label: &str, d: &Delta| format!("{label} +{} -{}", d.added.len(), d.removed.len());
        format!(
            "{}, {}, {}, {}, {}, {} changed",
            count("client requests", &self.client_requests),
            count("server requests", &self.server_requests),
            count("notifications", &self.notifications),
            count("client notifications", &self.client_notifications),
            count("types", &self.types),
            self.changed_types.len()
        )
    }

    /// The human-readable report: methods, then types added and removed, then each changed
    /// type; `-` removed, `+` added, `~` changed.
    pub fn to_text(&self) -> String {
        let mut out = format!("schema diff {} -> {}\n", self.from, self.to);
        for (label, d) in [
            ("client requests", &self.client_requests),
            ("server requests", &self.server_requests),
            ("notifications", &self.notifications),
            ("client notifications", &self.client_notifications),
        ] {
            section(&mut out, label, d, |out, sign, name| {
                let _ = writeln!(out, "  {sign} {name}");
            });
        }
        section(&mut out, "types", &self.types, |out, sign, name| {
            let _ = writeln!(out, "  {sign} {name}");
        });
        let _ = writeln!(out, "\nchanged types: {}", self.changed_types.len());
        for t in &self.changed_types {
            write_type(&mut out, t);
        }
        let _ = writeln!(out, "\nsummary: {}", self.summary());
        out
    }
}

/// Writes `label: +N -M` and the removed, then the added names.
fn section(out: &mut String, label: &str, d: &Delta, line: impl Fn(&mut String, char, &str)) {
    let _ = writeln!(out, "\n{label}: +{} -{}", d.added.len(), d.removed.len());
    for name in &d.removed {
        line(out, '-', name);
    }
    for name in &d.added {
        line(out, '+', name);
    }
}

fn write_type(out: &mut String, t: &TypeChange) {
    match &t.kind {
        Some(k) => {
            let _ = writeln!(out, "  {}: {} -> {}", t.name, k.from, k.to);
        }
        None => {
            let _ = writeln!(out, "  {}", t.name);
        }
    }
    for v in &t.values.removed {
        let _ = writeln!(out, "    - value {v}");
    }
    for v in &t.values.added {
        let _ = writeln!(out, "    + value {v}");
    }
    for f in &t.fields {
        write_field(out, "    ", f);
    }
    for v in &t.variants {
        let (sign, note) = match (v.change, v.fields.is_empty()) {
            ("added", false) => ('+', " (fields compared with the former object)"),
            ("removed", false) => ('-', " (fields compared with the new object)"),
            ("added", true) => ('+', ""),
            ("removed", true) => ('-', ""),
            _ => ('~', ""),
        };
        let _ = writeln!(out, "    {sign} variant {}{note}", v.name);
        for f in &v.fields {
            write_field(out, "        ", f);
        }
    }
}

fn write_field(out: &mut String, indent: &str, f: &FieldChange) {
    let shown = |f: &Field| {
        if f.required {
            format!("{} (required)", f.ty)
        } else {
            f.ty.clone()
        }
    };
    let _ = match (&f.from, &f.to) {
        (None, Some(to)) => writeln!(out, "{indent}+ field {}: {}", f.name, shown(to)),
        (Some(from), None) => writeln!(out, "{indent}- field {}: {}", f.name, shown(from)),
        (Some(a), Some(b)) if a.ty == b.ty => {
            let word = |r: bool| if r { "required" } else { "optional" };
            writeln!(
                out,
                "{indent}~ field {}: {} -> {} ({})",
                f.name,
                word(a.required),
                word(b.required),
                a.ty
            )
        }
        (Some(a), Some(b)) if a.required == b.required => {
            writeln!(
                out,
                "{indent}~ field {}: {} -> {}",
                f.name,
                shown(a),
                shown(b)
            )
        }
        (Some(a), Some(b)) => {
            let full = |f: &Field| {
                format!(
                    "{} ({})",
                    f.ty,
                    if f.required { "required" } else { "optional" }
                )
            };
            writeln!(
                out,
                "{indent}~ field {}: {} -> {}",
                f.name,
                full(a),
                full(b)
            )
        }
        (None, None) => Ok(()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn schema(client: &[&str], types: &[(&str, Value)]) -> Schema {
        Schema {
            client_requests: client.iter().map(|m| m.to_string()).collect(),
            types: types
                .iter()
                .map(|(name, def)| (name.to_string(), TypeDef::parse(def)))
                .collect(),
            ..Default::default()
        }
    }

    fn only_type(d: &SchemaDiff) -> &TypeChange {
        assert_eq!(d.changed_types.len(), 1, "{d:#?}");
        &d.changed_types[0]
    }

    fn field(ty: &str, required: bool) -> Option<Field> {
        Some(Field {
            ty: ty.to_string(),
            required,
        })
    }

    #[test]
    fn identical_schemas_have_no_diff() {
        let s = schema(
            &["a"],
            &[("T", json!({"properties": {"x": {"type": "string"}}}))],
        );
        let d = diff("a", &s, "b", &s);
        assert!(d.is_empty(), "{d:#?}");
        assert!(d.to_text().contains("changed types: 0"));
    }

    #[test]
    fn reports_methods_added_and_removed() {
        let mut old = schema(&["thread/start", "thread/rollback"], &[]);
        let mut new = schema(&["thread/start", "thread/delete"], &[]);
        old.notifications.insert("turn/started".into());
        new.server_requests.insert("currentTime/read".into());
        let d = diff("old", &old, "new", &new);
        assert_eq!(d.client_requests.added, ["thread/delete"]);
        assert_eq!(d.client_requests.removed, ["thread/rollback"]);
        assert_eq!(d.server_requests.added, ["currentTime/read"]);
        assert_eq!(d.notifications.removed, ["turn/started"]);
        let text = d.to_text();
        assert!(text.contains("client requests: +1 -1\n  - thread/rollback\n  + thread/delete\n"));
        assert!(!d.is_empty());
    }

    #[test]
    fn reports_types_added_and_removed_but_not_the_envelopes() {
        let old = schema(&[], &[("Gone", json!({"type": "string"}))]);
        let new = schema(
            &[],
            &[
                ("New", json!({"type": "string"})),
                ("ClientRequest", json!({"oneOf": []})),
            ],
        );
        let d = diff("a", &old, "b", &new);
        assert_eq!(d.types.added, ["New"]);
        assert_eq!(d.types.removed, ["Gone"]);
    }

    #[test]
    fn reports_field_added_removed_retyped_and_required_changed() {
        let old = schema(
            &[],
            &[(
                "P",
                json!({"type": "object", "required": ["id", "cwd"], "properties": {
                    "id": {"type": "string"},
                    "cwd": {"type": "string"},
                    "limit": {"type": "integer"},
                    "old": {"type": "boolean"}
                }}),
            )],
        );
        let new = schema(
            &[],
            &[(
                "P",
                json!({"type": "object", "required": ["id", "origin"], "properties": {
                    "id": {"type": "string"},
                    "cwd": {"type": "string"},
                    "limit": {"type": ["integer", "null"]},
                    "origin": {"$ref": "#/definitions/v2/Origin"}
                }}),
            )],
        );
        let t = only_type(&diff("a", &old, "b", &new)).clone();
        assert_eq!(t.kind, None);
        let by_name: BTreeMap<&str, &FieldChange> =
            t.fields.iter().map(|f| (f.name.as_str(), f)).collect();
        assert_eq!(
            by_name.keys().copied().collect::<Vec<_>>(),
            ["cwd", "limit", "old", "origin"]
        );
        assert_eq!(by_name["cwd"].from, field("string", true));
        assert_eq!(by_name["cwd"].to, field("string", false));
        assert_eq!(by_name["limit"].to, field("integer|null", false));
        assert_eq!(by_name["old"].to, None);
        assert_eq!(by_name["origin"].from, None);
        assert_eq!(by_name["origin"].to, field("Origin", true));
        let d = diff("a", &old, "b", &new);
        let text = d.to_text();
        for line in [
            "    ~ field cwd: required -> optional (string)\n",
            "    ~ field limit: integer -> integer|null\n",
            "    - field old: boolean\n",
            "    + field origin: Origin (required)\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
    }

    #[test]
    fn reports_enum_values_added_and_removed() {
        let old = schema(
            &[],
            &[(
                "S",
                json!({"type": "string", "enum": ["active", "paused", "gone"]}),
            )],
        );
        let new = schema(
            &[],
            &[(
                "S",
                json!({"type": "string", "enum": ["active", "paused", "blocked", "usageLimited"]}),
            )],
        );
        let d = diff("a", &old, "b", &new);
        let t = only_type(&d);
        assert_eq!(t.values.added, ["blocked", "usageLimited"]);
        assert_eq!(t.values.removed, ["gone"]);
        assert!(t.fields.is_empty() && t.variants.is_empty() && t.kind.is_none());
        assert!(
            d.to_text()
                .contains("  S\n    - value gone\n    + value blocked\n")
        );
    }

    fn flat_tool() -> Value {
        json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "namespace": {"type": ["string", "null"]}
        }})
    }

    fn tagged_tool(with_namespace_variant: bool) -> Value {
        let mut variants = vec![
            json!({"type": "object", "required": ["name", "type"], "properties": {
                "name": {"type": "string"},
                "type": {"type": "string", "enum": ["function"]}
            }}),
        ];
        if with_namespace_variant {
            variants.push(
                json!({"type": "object", "required": ["type", "tools"], "properties": {
                    "type": {"type": "string", "enum": ["namespace"]},
                    "tools": {"type": "array", "items": {"$ref": "#/definitions/Tool"}}
                }}),
            );
        }
        json!({ "oneOf": variants })
    }

    #[test]
    fn an_object_that_became_a_tagged_union_is_compared_variant_by_variant() {
        let old = schema(&[], &[("Spec", flat_tool())]);
        let new = schema(&[], &[("Spec", tagged_tool(true))]);
        let d = diff("a", &old, "b", &new);
        let t = only_type(&d);
        assert_eq!(
            t.kind,
            Some(KindChange {
                from: "object".into(),
                to: "union tagged by `type`".into()
            })
        );
        assert!(t.fields.is_empty(), "{t:#?}");
        let function = &t.variants[0];
        assert_eq!(
            (function.name.as_str(), function.change),
            ("function", "added")
        );
        let names: Vec<&str> = function.fields.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["namespace", "type"]);
        assert_eq!(function.fields[1].to, field("\"function\"", true));
        let text = d.to_text();
        assert!(
            text.contains(
                "  Spec: object -> union tagged by `type`\n\
                 \x20   + variant function (fields compared with the former object)\n\
                 \x20       - field namespace: string|null\n\
                 \x20       + field type: \"function\" (required)\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn reports_union_variants_added_removed_and_changed() {
        let old = schema(&[], &[("Spec", tagged_tool(false))]);
        let mut with_ns = tagged_tool(true);
        with_ns["oneOf"][0]["properties"]["deferLoading"] = json!({"type": "boolean"});
        let new = schema(&[], &[("Spec", with_ns)]);
        let d = diff("a", &old, "b", &new);
        let t = only_type(&d);
        assert_eq!(t.kind, None);
        let changes: Vec<(&str, &str, usize)> = t
            .variants
            .iter()
            .map(|v| (v.name.as_str(), v.change, v.fields.len()))
            .collect();
        assert_eq!(
            changes,
            [("function", "changed", 1), ("namespace", "added", 0)]
        );
        assert_eq!(t.variants[0].fields[0].name, "deferLoading");

        let back = diff("b", &new, "a", &old);
        let t = only_type(&back);
        assert_eq!(t.variants[1].change, "removed");
    }

    #[test]
    fn json_form_names_everything() {
        let old = schema(&["x"], &[("S", json!({"enum": ["a"]}))]);
        let new = schema(&[], &[("S", json!({"enum": ["a", "b"]}))]);
        let v = serde_json::to_value(diff("codex-1", &old, "codex-2", &new)).unwrap();
        assert_eq!(v["from"], "codex-1");
        assert_eq!(v["client_requests"]["removed"], json!(["x"]));
        assert_eq!(v["changed_types"][0]["name"], "S");
        assert_eq!(v["changed_types"][0]["values"]["added"], json!(["b"]));
        assert!(v["changed_types"][0].get("kind").is_none());
    }
}
