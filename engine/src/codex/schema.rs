//! The protocol schema a codex binary prints with `codex app-server generate-json-schema`,
//! read into method lists and one [`TypeDef`] per named type.
//!
//! This is the only place that knows the JSON Schema layout: [`crate::codex::capabilities`] and
//! [`crate::codex::schema_diff`] both work on a [`Schema`].
//!
//! Layout (0.131.0 to 0.171.0): `ClientRequest.json`, `ServerRequest.json`,
//! `ServerNotification.json` and `ClientNotification.json` are each a `oneOf` of
//! `{method: {enum: [NAME]}, params: ...}`; every named type sits in the bundle
//! `codex_app_server_protocol.schemas.json` under `definitions`, the v2 types one level
//! deeper (`definitions.v2`), referenced as `#/definitions/v2/NAME`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde::Serialize;
use serde_json::{Map, Value};

use crate::codex::binaries::CodexBinary;

/// The file that holds every type definition, when the binary writes it.
pub const BUNDLE: &str = "codex_app_server_protocol.schemas.json";

/// The four message files; their `definitions` stand in for the bundle when it is missing.
const MESSAGE_FILES: [&str; 4] = [
    "ClientRequest.json",
    "ServerRequest.json",
    "ServerNotification.json",
    "ClientNotification.json",
];

/// The protocol described by one run of `generate-json-schema`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema {
    /// Client-to-server request methods (`ClientRequest.json`).
    pub client_requests: BTreeSet<String>,
    /// Server-to-client request methods (`ServerRequest.json`).
    pub server_requests: BTreeSet<String>,
    /// Server notification methods (`ServerNotification.json`).
    pub notifications: BTreeSet<String>,
    /// Client notification methods (`ClientNotification.json`).
    pub client_notifications: BTreeSet<String>,
    /// Every named type, by name (`ThreadStartParams`, `ThreadGoalStatus`, ...).
    pub types: BTreeMap<String, TypeDef>,
}

/// One named type, reduced to what a client depends on.
///
/// A type can be several things at once: a union may have fields every variant shares, and
/// an externally tagged enum mixes plain string values with object variants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeDef {
    /// `object`, `enum`, `union`, ``union tagged by `type` `` or, for anything else, its type
    /// expression (e.g. `string`).
    pub kind: String,
    /// Properties at the top level; inline objects add their own as `outer.inner`.
    pub fields: BTreeMap<String, Field>,
    /// String values: those of an enum, or the plain-string variants of a union.
    pub values: Vec<String>,
    /// The property whose constant value names each object variant (`type`, `mode`), if any.
    pub tag: Option<String>,
    /// The other variants of a `oneOf`/`anyOf`, by name, with their fields. The name is the
    /// tag value, the single key of an externally tagged variant (`{"granular": {...}}`), the
    /// variant's title, or the type expression of a variant that is not an object.
    pub variants: BTreeMap<String, BTreeMap<String, Field>>,
}

/// One property of an object type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Field {
    /// A compact type expression: `string`, `integer(int64)|null`, `ThreadId`, `UserInput[]`,
    /// `map<string>`, `"function"` (a constant), `any`.
    #[serde(rename = "type")]
    pub ty: String,
    /// Whether the property is listed in `required`.
    pub required: bool,
}

impl Schema {
    /// Runs `codex app-server generate-json-schema` (with `--experimental` if asked) in a
    /// temporary directory and reads the result. Takes well under a second.
    pub async fn generate(binary: &CodexBinary, experimental: bool) -> anyhow::Result<Schema> {
        let dir = tempfile::tempdir().context("creating a directory for the schema")?;
        let out = dir.path().join("schema");
        generate(binary, &out, experimental).await?;
        Schema::read(&out).with_context(|| format!("{}: reading its schema", binary.label()))
    }

    /// Reads a directory written by `generate-json-schema --out DIR`.
    pub fn read(dir: &Path) -> anyhow::Result<Schema> {
        let mut messages = Vec::new();
        for name in MESSAGE_FILES {
            messages.push(read_json(&dir.join(name))?);
        }
        let mut schema = Schema {
            client_requests: methods_of(&messages[0]),
            server_requests: methods_of(&messages[1]),
            notifications: methods_of(&messages[2]),
            client_notifications: methods_of(&messages[3]),
            types: BTreeMap::new(),
        };
        let bundle = dir.join(BUNDLE);
        let sources = if bundle.exists() {
            vec![read_json(&bundle)?]
        } else {
            messages
        };
        for doc in &sources {
            if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
                schema.add_definitions(defs);
            }
        }
        Ok(schema)
    }

    /// Adds every definition of `defs`, descending into namespaces such as `v2`. The first
    /// definition of a name wins.
    fn add_definitions(&mut self, defs: &Map<String, Value>) {
        for (name, def) in defs {
            match def.as_object() {
                Some(inner) if is_namespace(inner) => self.add_definitions(inner),
                _ => {
                    if !self.types.contains_key(name) {
                        self.types.insert(name.clone(), TypeDef::parse(def));
                    }
                }
            }
        }
    }
}

/// Whether a `definitions` entry is a group of definitions (`definitions.v2`) rather than a
/// schema: an object of objects without a single JSON Schema keyword.
fn is_namespace(def: &Map<String, Value>) -> bool {
    const KEYWORDS: [&str; 12] = [
        "type",
        "properties",
        "oneOf",
        "anyOf",
        "allOf",
        "enum",
        "const",
        "$ref",
        "items",
        "title",
        "description",
        "additionalProperties",
    ];
    !def.is_empty()
        && def.values().all(Value::is_object)
        && !KEYWORDS.iter().any(|k| def.contains_key(*k))
}

impl TypeDef {
    /// Reads one definition (a JSON Schema object, or `true` for "anything").
    pub fn parse(def: &Value) -> TypeDef {
        let mut ty = TypeDef::default();
        collect_fields(def, "", &mut ty.fields);
        let alternatives = def
            .get("oneOf")
            .or_else(|| def.get("anyOf"))
            .and_then(Value::as_array);
        let mut objects = Vec::new();
        for alt in alternatives.into_iter().flatten() {
            match (string_values(alt), alt.get("properties")) {
                (Some(values), None) => ty.values.extend(values),
                (_, Some(_)) => objects.push(alt),
                (None, None) => {
                    ty.variants.insert(type_expr(alt), BTreeMap::new());
                }
            }
        }
        ty.tag = common_tag(&objects);
        for (i, alt) in objects.iter().enumerate() {
            let mut name = variant_name(alt, ty.tag.as_deref(), i);
            if ty.variants.contains_key(&name) {
                name = format!("{name} #{}", i + 1);
            }
            let mut fields = BTreeMap::new();
            collect_fields(alt, "", &mut fields);
            ty.variants.insert(name, fields);
        }
        if let Some(values) = string_values(def) {
            ty.values.extend(values);
        }
        ty.kind = match (&ty.tag, ty.variants.is_empty(), ty.values.is_empty()) {
            (Some(tag), false, _) => format!("union tagged by `{tag}`"),
            (None, false, _) => "union".to_string(),
            (_, true, false) => "enum".to_string(),
            _ if !ty.fields.is_empty() || def.get("type") == Some(&Value::from("object")) => {
                "object".to_string()
            }
            _ => type_expr(def),
        };
        ty
    }

    /// The fields a value of variant `name` carries: the shared fields plus the variant's own.
    pub fn variant_fields(&self, name: &str) -> BTreeMap<String, Field> {
        let mut fields = self.fields.clone();
        if let Some(own) = self.variants.get(name) {
            fields.extend(own.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        fields
    }
}

/// The string values of `{"enum": [...]}` when every value is a string.
fn string_values(schema: &Value) -> Option<Vec<String>> {
    schema
        .get("enum")?
        .as_array()?
        .iter()
        .map(|v| v.as_str().map(String::from))
        .collect()
}

/// The constant a property schema allows, if it allows exactly one string.
fn constant(schema: &Value) -> Option<String> {
    match string_values(schema)?.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// The property every object variant fixes to a constant (`type` preferred), if there is one.
fn common_tag(objects: &[&Value]) -> Option<String> {
    let first = objects.first()?.get("properties")?.as_object()?;
    let mut candidates: Vec<&String> = first
        .iter()
        .filter(|(_, s)| constant(s).is_some())
        .map(|(k, _)| k)
        .filter(|k| {
            objects.iter().all(|o| {
                o.pointer(&format!("/properties/{k}"))
                    .and_then(constant)
                    .is_some()
            })
        })
        .collect();
    candidates.sort_by_key(|k| (k.as_str() != "type", k.as_str()));
    candidates.first().map(|k| k.to_string())
}

fn variant_name(alt: &Value, tag: Option<&str>, index: usize) -> String {
    if let Some(value) = tag
        .and_then(|t| alt.get("properties")?.get(t))
        .and_then(constant)
    {
        return value;
    }
    let props = alt.get("properties").and_then(Value::as_object);
    if let Some((key, _)) = props.filter(|p| p.len() == 1).and_then(|p| p.iter().next()) {
        return key.clone();
    }
    match alt.get("title").and_then(Value::as_str) {
        Some(title) => title.to_string(),
        None => format!("variant {}", index + 1),
    }
}

/// Adds the properties of `schema` to `out`, prefixed with `prefix`, inline objects flattened.
fn collect_fields(schema: &Value, prefix: &str, out: &mut BTreeMap<String, Field>) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    let required: BTreeSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    for (name, prop) in props {
        let path = format!("{prefix}{name}");
        out.insert(
            path.clone(),
            Field {
                ty: type_expr(prop),
                required: required.contains(name.as_str()),
            },
        );
        collect_fields(prop, &format!("{path}."), out);
    }
}

/// A compact, stable rendering of a property's type (see [`Field::ty`]).
pub fn type_expr(schema: &Value) -> String {
    let Some(o) = schema.as_object() else {
        return if schema == &Value::Bool(false) {
            "never".to_string()
        } else {
            "any".to_string()
        };
    };
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        return r.rsplit('/').next().unwrap_or(r).to_string();
    }
    if let Some(values) = o.get("enum").and_then(Value::as_array) {
        return join(values.iter().map(Value::to_string), "|");
    }
    for (key, sep) in [("anyOf", "|"), ("oneOf", "|"), ("allOf", "&")] {
        if let Some(items) = o.get(key).and_then(Value::as_array) {
            return join(items.iter().map(type_expr), sep);
        }
    }
    match o.get("type") {
        Some(Value::String(t)) => scalar(t, o),
        Some(Value::Array(ts)) => join(
            ts.iter().filter_map(Value::as_str).map(|t| scalar(t, o)),
            "|",
        ),
        _ if o.contains_key("properties") => "object".to_string(),
        _ => "any".to_string(),
    }
}

fn scalar(t: &str, o: &Map<String, Value>) -> String {
    match t {
        "array" => {
            let item = o.get("items").map_or("any".to_string(), type_expr);
            if item.contains('|') {
                format!("({item})[]")
            } else {
                format!("{item}[]")
            }
        }
        "object" => match o.get("additionalProperties") {
            Some(ap) if ap.is_object() => format!("map<{}>", type_expr(ap)),
            _ => "object".to_string(),
        },
        "integer" | "number" => match o.get("format").and_then(Value::as_str) {
            Some(f) => format!("{t}({f})"),
            None => t.to_string(),
        },
        _ => t.to_string(),
    }
}

fn join(parts: impl Iterator<Item = String>, sep: &str) -> String {
    parts.collect::<Vec<_>>().join(sep)
}

/// Runs `generate-json-schema --out <out>` in a cleaned environment (30 s timeout).
/// Runs `generate-json-schema` (with `--experimental` if asked) into `out`.
pub(crate) async fn generate(
    binary: &CodexBinary,
    out: &Path,
    experimental: bool,
) -> anyhow::Result<()> {
    let home = out.parent().unwrap_or(out);
    let mut cmd = tokio::process::Command::new(&binary.path);
    cmd.args(["app-server", "generate-json-schema", "--out"])
        .arg(out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODEX_HOME", home)
        .env("HOME", home)
        .kill_on_drop(true);
    if experimental {
        cmd.arg("--experimental");
    }
    let output = tokio::time::timeout(Duration::from_secs(30), cmd.output())
        .await
        .with_context(|| format!("{}: generate-json-schema took over 30 s", binary.label()))?
        .with_context(|| format!("{}: cannot run generate-json-schema", binary.label()))?;
    if !output.status.success() {
        anyhow::bail!(
            "{}: generate-json-schema failed ({}): {}",
            binary.label(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(())
}

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// The method names of a request or notification schema (`oneOf` of `{method:{enum:[..]}}`).
pub fn methods_of(schema: &Value) -> BTreeSet<String> {
    schema
        .get("oneOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| {
            v.pointer("/properties/method/enum/0")
                .and_then(Value::as_str)
        })
        .map(String::from)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_method_names() {
        let schema = json!({"oneOf": [
            {"properties": {"method": {"enum": ["initialize"]}}},
            {"properties": {"method": {"enum": ["thread/start"]}}},
            {"properties": {}}
        ]});
        let m = methods_of(&schema);
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            vec!["initialize", "thread/start"]
        );
    }

    #[test]
    fn reads_an_object_with_required_and_nested_fields() {
        let ty = TypeDef::parse(&json!({
            "type": "object",
            "required": ["cwd"],
            "properties": {
                "cwd": {"type": "string"},
                "limit": {"type": ["integer", "null"], "format": "uint32"},
                "items": {"type": "array", "items": {"$ref": "#/definitions/v2/UserInput"}},
                "env": {"type": "object", "additionalProperties": {"type": "string"}},
                "caps": {"anyOf": [{"$ref": "#/definitions/Caps"}, {"type": "null"}]},
                "schema": true,
                "granular": {"type": "object", "required": ["rules"],
                             "properties": {"rules": {"type": "boolean"}}}
            }
        }));
        assert_eq!(ty.kind, "object");
        let f = |name: &str| {
            let field = &ty.fields[name];
            (field.ty.as_str(), field.required)
        };
        assert_eq!(f("cwd"), ("string", true));
        assert_eq!(f("limit"), ("integer(uint32)|null", false));
        assert_eq!(f("items"), ("UserInput[]", false));
        assert_eq!(f("env"), ("map<string>", false));
        assert_eq!(f("caps"), ("Caps|null", false));
        assert_eq!(f("schema"), ("any", false));
        assert_eq!(f("granular"), ("object", false));
        assert_eq!(f("granular.rules"), ("boolean", true));
    }

    #[test]
    fn reads_enums_in_both_spellings() {
        let plain = TypeDef::parse(&json!({"type": "string", "enum": ["active", "paused"]}));
        let described = TypeDef::parse(&json!({"oneOf": [
            {"type": "string", "enum": ["active"], "description": "running"},
            {"type": "string", "enum": ["paused"]}
        ]}));
        assert_eq!(plain.kind, "enum");
        assert_eq!(plain.values, ["active", "paused"]);
        assert_eq!(described, plain);
    }

    #[test]
    fn names_the_variants_of_tagged_and_externally_tagged_unions() {
        let tagged = TypeDef::parse(&json!({"oneOf": [
            {"type": "object", "required": ["type", "name"], "properties": {
                "type": {"type": "string", "enum": ["function"]}, "name": {"type": "string"}}},
            {"type": "object", "required": ["type"], "properties": {
                "type": {"type": "string", "enum": ["namespace"]},
                "tools": {"type": "array", "items": {"$ref": "#/definitions/Tool"}}}}
        ]}));
        assert_eq!(tagged.kind, "union tagged by `type`");
        assert_eq!(
            tagged.variants.keys().collect::<Vec<_>>(),
            ["function", "namespace"]
        );
        assert_eq!(tagged.variants["function"]["type"].ty, "\"function\"");
        assert_eq!(tagged.variants["namespace"]["tools"].ty, "Tool[]");

        let external = TypeDef::parse(&json!({"oneOf": [
            {"type": "string", "enum": ["never", "on-request"]},
            {"type": "object", "required": ["granular"], "title": "Granular",
             "properties": {"granular": {"type": "object", "properties": {}}}}
        ]}));
        assert_eq!(external.kind, "union");
        assert_eq!(external.tag, None);
        assert_eq!(external.values, ["never", "on-request"]);
        assert_eq!(external.variants.keys().collect::<Vec<_>>(), ["granular"]);
    }

    #[test]
    fn an_alias_is_its_type_expression() {
        let id = TypeDef::parse(
            &json!({"anyOf": [{"type": "string"}, {"type": "integer", "format": "int64"}]}),
        );
        assert_eq!(id.kind, "union");
        assert_eq!(
            id.variants.keys().collect::<Vec<_>>(),
            ["integer(int64)", "string"]
        );
        assert_eq!(TypeDef::parse(&json!({"type": "string"})).kind, "string");
    }

    #[test]
    fn reads_a_generated_directory_with_a_v2_namespace() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, v: Value| {
            std::fs::write(dir.path().join(name), v.to_string()).unwrap();
        };
        let one = |m: &str| json!({"oneOf": [{"properties": {"method": {"enum": [m]}}}]});
        write("ClientRequest.json", one("thread/start"));
        write("ServerRequest.json", one("item/tool/call"));
        write("ServerNotification.json", one("turn/completed"));
        write("ClientNotification.json", one("initialized"));
        write(
            BUNDLE,
            json!({"definitions": {
                "RequestId": {"type": "string"},
                "v2": {
                    "ThreadGoalStatus": {"type": "string", "enum": ["active"]},
                    "RequestId": {"type": "integer"}
                }
            }}),
        );
        let schema = Schema::read(dir.path()).unwrap();
        assert!(schema.client_requests.contains("thread/start"));
        assert!(schema.server_requests.contains("item/tool/call"));
        assert!(schema.notifications.contains("turn/completed"));
        assert!(schema.client_notifications.contains("initialized"));
        assert_eq!(
            schema.types.keys().collect::<Vec<_>>(),
            ["RequestId", "ThreadGoalStatus"]
        );
        assert_eq!(schema.types["RequestId"].kind, "string");
        assert!(!schema.types.contains_key("v2"));
    }

    #[test]
    fn a_missing_file_names_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let err = Schema::read(dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("ClientRequest.json"), "{err:#}");
    }
}
