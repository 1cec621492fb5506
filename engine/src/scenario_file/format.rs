//! The scenario file as one typed model, read and written from the same types
//! (`docs/scenario-files.md` is the user's reference): [`ScenarioFile`] is a whole file, its
//! sections ([`Requires`], [`CodexSection`], [`WorkspaceSection`]) and its steps and checks
//! (`super::steps`, `super::checks`, one module per kind). `super::load` reads text into
//! this model (with each part's place, for errors), `super::write` writes the model as text,
//! and `codex-parity record` builds the model and writes it through the same code, so a file
//! it writes is what the reader reads.
//!
//! Unknown keys are refused (`deny_unknown_fields`), so a typo is an error naming the valid
//! keys, never a silently ignored line. Defaults are left out when written, so a file says
//! only what differs.
//!
//! Values are held as written: in the head, steps and checks a string `"$name"` is a
//! variable, `"$$…"` a literal `$…` and `"$null"` JSON null (TOML has none), given their
//! meaning when the step runs; scripted responses are literal JSON (no variables), with
//! `"$null"` and `"$$…"` of the TOML form read as null and `$…` once ([`to_json`] and
//! `super::matching::literals`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use toml::Spanned;

use super::checks::Check;
use super::fields::is_false;
use super::steps::Step;

/// One scenario file: the model both `load` and `write` use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ScenarioFile {
    /// The scenario's name, snake case; unique among built-ins and files.
    pub name: String,
    /// Its id in reports and for `--filter` (e.g. `X-A2`).
    pub id: String,
    /// One line saying what it proves.
    pub summary: String,
    /// The longest it may take, in seconds (60 when absent).
    pub timeout_secs: Option<u64>,
    /// Whether a thread is started before the steps (true by default when a step talks to
    /// the app-server).
    pub start_thread: Option<bool>,
    /// What the binary must have.
    pub requires: Requires,
    /// How the world's codex is configured.
    pub codex: CodexSection,
    /// The workspace before codex starts.
    pub workspace: WorkspaceSection,
    /// `thread/start` params of the thread started before the steps (variables allowed).
    pub thread: Option<Map<String, Value>>,
    /// Scripted responses queued before codex starts: the sidecar's JSON form, literal.
    pub responses: Vec<Value>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// The checks made after the last step.
    pub checks: Vec<Check>,
}

/// One scenario file as read, each part with its place: what [`super::load`] turns into
/// a [`ScenarioFile`]. Steps and checks stay TOML tables here, so that an error in one
/// points at it and the others are still read.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// See [`ScenarioFile::name`].
    pub name: Spanned<String>,
    /// See [`ScenarioFile::id`].
    pub id: Spanned<String>,
    /// See [`ScenarioFile::summary`].
    pub summary: String,
    /// See [`ScenarioFile::timeout_secs`].
    pub timeout_secs: Option<u64>,
    /// See [`ScenarioFile::requires`].
    #[serde(default)]
    pub requires: Requires,
    /// See [`ScenarioFile::codex`].
    #[serde(default)]
    pub codex: CodexSection,
    /// See [`ScenarioFile::workspace`].
    #[serde(default)]
    pub workspace: WorkspaceSection,
    /// See [`ScenarioFile::start_thread`].
    pub start_thread: Option<bool>,
    /// See [`ScenarioFile::thread`].
    pub thread: Option<toml::Table>,
    /// See [`ScenarioFile::responses`]: as TOML, or as a `json = '''…'''` string.
    #[serde(default)]
    pub response: Vec<Spanned<toml::Value>>,
    /// See [`ScenarioFile::steps`].
    #[serde(default)]
    pub step: Vec<Spanned<toml::Table>>,
    /// See [`ScenarioFile::checks`].
    #[serde(default)]
    pub check: Vec<Spanned<toml::Table>>,
}

/// `[requires]`: what the binary's protocol schema must have.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requires {
    /// Client request methods (e.g. `thread/goal/set`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// Server-to-client request methods (e.g. `item/tool/call`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_requests: Vec<String>,
    /// Server notifications (e.g. `item/plan/delta`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notifications: Vec<String>,
    /// Fields of named schema types, as `Type.field` (e.g. `ThreadStartParams.dynamicTools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Values of enum types, as `Type.value` (e.g. `ThreadGoalStatus.blocked`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub enum_values: Vec<String>,
}

/// `[codex]`: the world's `config.toml`, arguments and `initialize` (defaults: the
/// harness's own, `approval_policy = "never"`, `danger-full-access`, no retries).
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodexSection {
    /// `approval_policy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<String>,
    /// `sandbox_mode`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_mode: Option<String>,
    /// The provider's `request_max_retries`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub request_max_retries: Option<u32>,
    /// The provider's `stream_max_retries`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_max_retries: Option<u32>,
    /// The provider's `stream_idle_timeout_ms`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stream_idle_timeout_ms: Option<u64>,
    /// Extra top-level `config.toml` lines.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config: Vec<String>,
    /// Extra `app-server` arguments.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// `initialize.capabilities.experimentalApi` (true by default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub experimental_api: Option<bool>,
    /// Turns codex may start by itself (goal continuations) are not a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allow_autonomous_turns: Option<bool>,
    /// Offer the Responses WebSocket (`supports_websockets = true`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub websocket: Option<bool>,
    /// How the app-server talks to the file's client: `stdio` (the default), or a
    /// connection to its `--listen` `ws` or `unix` listener.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<crate::harness::world::Listen>,
    /// `--enable FEATURE` for each feature whose method the binary's schema marks
    /// experimental: `{ goals = "thread/goal/set" }`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub enable_when_experimental: BTreeMap<String, String>,
}

/// `[workspace]`: files written and a git repository made before codex starts.
#[derive(Debug, Default, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSection {
    /// Make the workspace a git repository with one commit.
    #[serde(default, skip_serializing_if = "is_false")]
    pub git: bool,
    /// Files to write, path relative to the workspace → content.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub files: BTreeMap<String, String>,
}

impl Requires {
    /// Whether it requires nothing.
    pub fn is_empty(&self) -> bool {
        *self == Requires::default()
    }
}

impl CodexSection {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == CodexSection::default()
    }
}

impl WorkspaceSection {
    /// Whether it makes nothing.
    pub fn is_empty(&self) -> bool {
        *self == WorkspaceSection::default()
    }
}

/// A TOML value as the model's JSON, as written (`"$null"` and `"$$…"` stay strings: the
/// step or check that reads them gives them their meaning).
pub fn to_json(value: toml::Value) -> Result<Value, String> {
    serde_json::to_value(value).map_err(|e| format!("not JSON: {e}"))
}

impl ScenarioFile {
    /// The whole file as one JSON value, keys as the file names them (`response`, `step`,
    /// `check` lists): for a writer that passes every string of it through one function
    /// (`record`'s redactor), then reads it back with [`ScenarioFile::from_json`].
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "name": self.name,
            "id": self.id,
            "summary": self.summary,
            "timeout_secs": self.timeout_secs,
            "start_thread": self.start_thread,
            "requires": self.requires,
            "codex": self.codex,
            "workspace": self.workspace,
            "thread": self.thread,
            "response": self.responses,
            "step": self.steps.iter().map(Step::to_json).collect::<Vec<_>>(),
            "check": self.checks.iter().map(Check::to_json).collect::<Vec<_>>(),
        })
    }

    /// The file from its JSON form ([`ScenarioFile::to_json`]).
    pub fn from_json(v: &Value) -> Result<ScenarioFile, String> {
        fn field<T: serde::de::DeserializeOwned + Default>(
            v: &Value,
            k: &str,
        ) -> Result<T, String> {
            match v.get(k) {
                None | Some(Value::Null) => Ok(T::default()),
                Some(x) => serde_json::from_value(x.clone()).map_err(|e| format!("{k}: {e}")),
            }
        }
        let list = |k: &str| -> Vec<Value> {
            v.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Ok(ScenarioFile {
            name: field(v, "name")?,
            id: field(v, "id")?,
            summary: field(v, "summary")?,
            timeout_secs: field(v, "timeout_secs")?,
            start_thread: field(v, "start_thread")?,
            requires: field(v, "requires")?,
            codex: field(v, "codex")?,
            workspace: field(v, "workspace")?,
            thread: field(v, "thread")?,
            responses: list("response"),
            steps: list("step")
                .iter()
                .map(Step::from_json)
                .collect::<Result<_, _>>()?,
            checks: list("check")
                .iter()
                .map(Check::from_json)
                .collect::<Result<_, _>>()?,
        })
    }
}
