//! What a codex binary supports, read from the binary itself: the protocol schema that
//! `codex app-server generate-json-schema` prints, with and without `--experimental`.
//!
//! Scenarios decide "not applicable" from this, never from a table of version numbers.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use crate::binaries::CodexBinary;

/// The protocol surface of one codex binary.
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    /// Client-to-server request methods with `--experimental`.
    pub client_methods: BTreeSet<String>,
    /// Client-to-server request methods of the stable schema (no `--experimental`).
    pub stable_client_methods: BTreeSet<String>,
    /// Server-to-client request methods.
    pub server_requests: BTreeSet<String>,
    /// Server notification methods.
    pub notifications: BTreeSet<String>,
    /// Enum values of every string-enum definition, by type name (e.g. `ThreadGoalStatus`).
    pub enums: BTreeMap<String, Vec<String>>,
    /// Property names of every object definition, by type name (e.g. `ThreadStartParams`).
    pub fields: BTreeMap<String, BTreeSet<String>>,
}

impl Capabilities {
    /// Reads the schema of `binary` (two runs of `generate-json-schema`, well under a second).
    pub async fn detect(binary: &CodexBinary) -> anyhow::Result<Capabilities> {
        let dir = tempfile::tempdir().context("creating a directory for the schema")?;
        let exp = dir.path().join("experimental");
        let stable = dir.path().join("stable");
        generate(binary, &exp, true).await?;
        generate(binary, &stable, false).await?;
        let client = read_json(&exp.join("ClientRequest.json"))?;
        let server = read_json(&exp.join("ServerNotification.json"))?;
        let mut caps = Capabilities {
            client_methods: methods_of(&client),
            stable_client_methods: methods(&stable.join("ClientRequest.json"))?,
            server_requests: methods(&exp.join("ServerRequest.json"))?,
            notifications: methods_of(&server),
            ..Default::default()
        };
        for doc in [&client, &server] {
            if let Some(defs) = doc.get("definitions").and_then(Value::as_object) {
                for (name, def) in defs {
                    caps.add_definition(name, def);
                }
            }
        }
        Ok(caps)
    }

    fn add_definition(&mut self, name: &str, def: &Value) {
        if let Some(values) = enum_values(def) {
            self.enums.entry(name.to_string()).or_insert(values);
        }
        if let Some(props) = def.get("properties").and_then(Value::as_object) {
            self.fields
                .entry(name.to_string())
                .or_default()
                .extend(props.keys().cloned());
        }
        // The variants of a tagged union are recorded under their titles (e.g.
        // `NamespaceDynamicToolSpec`), so a scenario can ask whether a variant exists.
        for variant in def
            .get("oneOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(title) = variant.get("title").and_then(Value::as_str) {
                self.add_definition(title, variant);
            }
        }
    }

    /// Whether the binary accepts the client request `method` (experimental included).
    pub fn has_method(&self, method: &str) -> bool {
        self.client_methods.contains(method)
    }

    /// Whether `method` exists only behind `experimentalApi`.
    pub fn is_experimental(&self, method: &str) -> bool {
        self.has_method(method) && !self.stable_client_methods.contains(method)
    }

    /// Whether the enum type `ty` has the value `value`.
    pub fn enum_has(&self, ty: &str, value: &str) -> bool {
        self.enums
            .get(ty)
            .is_some_and(|v| v.iter().any(|x| x == value))
    }

    /// Whether the object type `ty` has the field `field`.
    pub fn has_field(&self, ty: &str, field: &str) -> bool {
        self.fields.get(ty).is_some_and(|f| f.contains(field))
    }

    /// `Ok` when every method is present, else the reason naming the missing ones.
    pub fn require_methods(&self, methods: &[&str]) -> Result<(), String> {
        let missing: Vec<&str> = methods
            .iter()
            .copied()
            .filter(|m| !self.has_method(m))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("this codex has no {}", missing.join(", ")))
        }
    }
}

/// The values of a string enum definition: `{"enum":[...]}` or a `oneOf` of such.
fn enum_values(def: &Value) -> Option<Vec<String>> {
    if let Some(values) = def.get("enum").and_then(Value::as_array) {
        return Some(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        );
    }
    let variants = def.get("oneOf").and_then(Value::as_array)?;
    let mut out = Vec::new();
    for v in variants {
        out.extend(
            v.get("enum")?
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .map(String::from),
        );
    }
    Some(out)
}

async fn generate(binary: &CodexBinary, out: &Path, experimental: bool) -> anyhow::Result<()> {
    let mut cmd = tokio::process::Command::new(&binary.path);
    cmd.args(["app-server", "generate-json-schema", "--out"])
        .arg(out)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("CODEX_HOME", out.parent().unwrap_or(out))
        .env("HOME", out.parent().unwrap_or(out))
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

/// The method names of a `ClientRequest.json`-style schema (`oneOf` of `{method:{enum:[..]}}`).
pub fn methods(path: &Path) -> anyhow::Result<BTreeSet<String>> {
    Ok(methods_of(&read_json(path)?))
}

/// The method names of a parsed request or notification schema.
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
    fn reads_methods_and_enums() {
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
        let mut caps = Capabilities::default();
        caps.add_definition("ThreadGoalStatus", &json!({"enum": ["active", "paused"]}));
        caps.add_definition(
            "ThreadStartParams",
            &json!({"properties": {"cwd": {}, "dynamicTools": {}}}),
        );
        assert!(caps.enum_has("ThreadGoalStatus", "paused"));
        assert!(!caps.enum_has("ThreadGoalStatus", "blocked"));
        assert!(caps.has_field("ThreadStartParams", "dynamicTools"));
        assert!(!caps.has_field("ThreadStartParams", "ephemeral"));
        caps.add_definition(
            "DynamicToolSpec",
            &json!({"oneOf": [
                {"title": "NamespaceDynamicToolSpec", "properties": {"tools": {}, "type": {}}},
                {"properties": {"name": {}}}
            ]}),
        );
        assert!(caps.has_field("NamespaceDynamicToolSpec", "tools"));
        assert!(!caps.has_field("DynamicToolSpec", "name"));
    }

    #[test]
    fn experimental_is_the_difference_of_the_two_schemas() {
        let caps = Capabilities {
            client_methods: ["a", "b"].map(String::from).into(),
            stable_client_methods: ["a"].map(String::from).into(),
            ..Default::default()
        };
        assert!(!caps.is_experimental("a"));
        assert!(caps.is_experimental("b"));
        assert!(!caps.is_experimental("c"));
        assert_eq!(
            caps.require_methods(&["a", "c"]),
            Err("this codex has no c".to_string())
        );
    }
}
