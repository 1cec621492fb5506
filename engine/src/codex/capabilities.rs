//! What a codex binary supports, read from the binary itself: the protocol schema that
//! `codex app-server generate-json-schema` prints, with and without `--experimental`, and
//! the flags `codex exec --help` and `codex app-server --help` list
//! ([`crate::codex::exec_flags`], [`crate::codex::app_server_flags`]).
//!
//! Scenarios decide "not applicable" from this, never from a table of version numbers.

use std::collections::{BTreeMap, BTreeSet};

use std::sync::Arc;

use anyhow::Context;

use crate::codex::app_server_flags::AppServerFlags;
use crate::codex::binaries::CodexBinary;
use crate::codex::conformance::Conformance;
use crate::codex::exec_flags::ExecFlags;
use crate::codex::help::Help;
use crate::codex::schema::{Schema, TypeDef};
use crate::codex::schema_cache;

/// The protocol surface of one codex binary.
#[derive(Debug, Clone, Default)]
pub struct Capabilities {
    /// Client-to-server request methods with `--experimental`.
    pub client_methods: BTreeSet<String>,
    /// Client-to-server request methods of the stable schema (no `--experimental`).
    pub stable_client_methods: BTreeSet<String>,
    /// Server-to-client request methods with `--experimental`.
    pub server_requests: BTreeSet<String>,
    /// Server-to-client request methods of the stable schema.
    pub stable_server_requests: BTreeSet<String>,
    /// Server notification methods with `--experimental`.
    pub notifications: BTreeSet<String>,
    /// Server notification methods of the stable schema.
    pub stable_notifications: BTreeSet<String>,
    /// Client notification methods.
    pub client_notifications: BTreeSet<String>,
    /// Every named type of the experimental schema (e.g. `ThreadGoalStatus`, `ThreadStartParams`).
    pub types: BTreeMap<String, TypeDef>,
    /// The experimental schema compiled for checking what the binary sends its client;
    /// `None` when it could not be compiled (said on stderr) or was not read.
    pub conformance: Option<Arc<Conformance>>,
    /// What `codex exec` accepts; `None` when its help could not be read (said on stderr).
    pub exec: Option<ExecFlags>,
    /// What `codex app-server` offers besides stdio; `None` when its help could not be read
    /// (said on stderr).
    pub app_server: Option<AppServerFlags>,
    /// What `codex --help` lists (its subcommands: `migrate-rollouts`, …); `None` when it
    /// could not be read (said on stderr).
    pub codex: Option<Help>,
}

impl Capabilities {
    /// Reads the schema of `binary` (two runs of `generate-json-schema`, well under a second,
    /// the first time; then from the cache, see [`crate::codex::schema_cache`]).
    pub async fn detect(binary: &CodexBinary) -> anyhow::Result<Capabilities> {
        let dirs = schema_cache::schema_dirs(binary).await?;
        let read = |dir: &std::path::Path| {
            Schema::read(dir).with_context(|| format!("{}: reading its schema", binary.label()))
        };
        let experimental = read(&dirs.experimental)?;
        let stable = read(&dirs.stable)?;
        let mut caps = Capabilities::from_schemas(experimental, &stable);
        match Conformance::read(&dirs.experimental) {
            Ok(c) => caps.conformance = Some(Arc::new(c)),
            Err(e) => eprintln!(
                "codex-parity: {}: what it sends is not checked against its schema: {e:#}",
                binary.label()
            ),
        }
        // The three help texts are read at once: a binary that hangs on `--help` costs
        // one timeout, not three.
        let (exec, codex, app_server) = tokio::join!(
            ExecFlags::detect(binary),
            Help::read(binary, &[]),
            AppServerFlags::detect(binary)
        );
        let label = binary.label();
        caps.exec = known(exec, || format!("{label}: its exec flags are unknown"));
        caps.codex = known(codex, || format!("{label}: its subcommands are unknown"));
        caps.app_server = known(app_server, || {
            format!("{label}: its app-server listeners are unknown")
        });
        Ok(caps)
    }

    /// The capabilities described by the experimental and the stable schema of one binary.
    pub fn from_schemas(experimental: Schema, stable: &Schema) -> Capabilities {
        Capabilities {
            client_methods: experimental.client_requests,
            stable_client_methods: stable.client_requests.clone(),
            server_requests: experimental.server_requests,
            stable_server_requests: stable.server_requests.clone(),
            notifications: experimental.notifications,
            stable_notifications: stable.notifications.clone(),
            client_notifications: experimental.client_notifications,
            types: experimental.types,
            conformance: None,
            exec: None,
            app_server: None,
            codex: None,
        }
    }

    /// The experimental schema these capabilities were read from (for
    /// [`crate::codex::schema_diff`]: a binary's schema is generated once, by
    /// [`Capabilities::detect`]).
    pub fn schema(&self) -> Schema {
        Schema {
            client_requests: self.client_methods.clone(),
            server_requests: self.server_requests.clone(),
            notifications: self.notifications.clone(),
            client_notifications: self.client_notifications.clone(),
            types: self.types.clone(),
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
        self.types
            .get(ty)
            .is_some_and(|t| t.values.iter().any(|x| x == value))
    }

    /// Whether the object type `ty` has the field `field`.
    pub fn has_field(&self, ty: &str, field: &str) -> bool {
        self.types
            .get(ty)
            .is_some_and(|t| t.fields.contains_key(field))
    }

    /// Whether the union type `ty` has the variant `variant` (its tag value or title) with
    /// the field `field`.
    pub fn variant_has_field(&self, ty: &str, variant: &str, field: &str) -> bool {
        self.types
            .get(ty)
            .and_then(|t| t.variants.get(variant))
            .is_some_and(|fields| fields.contains_key(field))
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

/// The goal methods (group B).
pub const GOAL_METHODS: [&str; 3] = ["thread/goal/set", "thread/goal/get", "thread/goal/clear"];

/// What scenarios need of a binary: each `Ok` when it has it, else the reason it is not
/// applicable.
impl Capabilities {
    /// The type `ty` has the field `field`.
    fn require_field(&self, ty: &str, field: &str) -> Result<(), String> {
        if self.has_field(ty, field) {
            Ok(())
        } else {
            Err(format!("{ty} has no {field}"))
        }
    }

    /// `thread/start` takes `field`.
    pub fn needs_thread_field(&self, field: &str) -> Result<(), String> {
        self.require_field("ThreadStartParams", field)
    }

    /// `thread/start` takes `dynamicTools`.
    pub fn needs_dynamic_tools(&self) -> Result<(), String> {
        self.needs_thread_field("dynamicTools")
    }

    /// Dynamic tools, and a `TurnError` with a `data` field (E8f's claim is
    /// `error.data.reason`: a version without the field cannot make it, so the scenario is
    /// not applicable there rather than drift).
    pub fn needs_turn_error_data(&self) -> Result<(), String> {
        self.needs_dynamic_tools()?;
        if self.has_field("TurnError", "data") {
            Ok(())
        } else {
            Err("the schema's TurnError has no data field, so no error.data.reason".into())
        }
    }

    /// `thread/start` takes `ephemeral`.
    pub fn needs_ephemeral(&self) -> Result<(), String> {
        self.needs_thread_field("ephemeral")
    }

    /// The binary has the goal methods.
    pub fn needs_goals(&self) -> Result<(), String> {
        self.require_methods(&GOAL_METHODS)
    }

    /// The goal methods, and `ThreadGoalStatus` has `blocked` and `usageLimited`.
    pub fn needs_stopped_statuses(&self) -> Result<(), String> {
        self.needs_goals()?;
        let missing: Vec<&str> = ["blocked", "usageLimited"]
            .into_iter()
            .filter(|s| !self.enum_has("ThreadGoalStatus", s))
            .collect();
        if missing.is_empty() {
            Ok(())
        } else {
            Err(format!("ThreadGoalStatus has no {}", missing.join(", ")))
        }
    }

    /// `thread/resume`.
    pub fn needs_resume(&self) -> Result<(), String> {
        self.require_methods(&["thread/resume"])
    }

    /// `thread/resume` with `excludeTurns`.
    pub fn needs_exclude_turns(&self) -> Result<(), String> {
        self.needs_resume()?;
        self.require_field("ThreadResumeParams", "excludeTurns")
    }

    /// `thread/fork` and `thread/list`.
    pub fn needs_fork(&self) -> Result<(), String> {
        self.require_methods(&["thread/fork", "thread/list"])
    }

    /// `thread/resume` and `thread/fork`.
    pub fn needs_resume_and_fork(&self) -> Result<(), String> {
        self.require_methods(&["thread/resume", "thread/fork"])
    }

    /// `thread/start` takes `historyMode` (paginated history, group H).
    pub fn needs_history_mode(&self) -> Result<(), String> {
        self.needs_thread_field("historyMode")
    }

    /// Paginated history and `thread/fork` with `beforeTurnId` (H5).
    pub fn needs_fork_before_turn(&self) -> Result<(), String> {
        self.needs_history_mode()?;
        self.require_field("ThreadForkParams", "beforeTurnId")
    }

    /// `turn/start` takes `outputSchema` (G1).
    pub fn needs_output_schema(&self) -> Result<(), String> {
        self.require_field("TurnStartParams", "outputSchema")
    }

    /// The binary asks the client `item/tool/requestUserInput`, and `turn/start` takes the
    /// `collaborationMode` that offers it (plan mode) (G3–G6).
    pub fn needs_user_input(&self) -> Result<(), String> {
        self.needs_server_request("item/tool/requestUserInput")?;
        self.require_field("TurnStartParams", "collaborationMode")
    }

    /// `turn/start` takes `collaborationMode` (plan mode) and the binary sends
    /// `item/plan/delta` (G15).
    pub fn needs_plan_items(&self) -> Result<(), String> {
        self.require_field("TurnStartParams", "collaborationMode")?;
        if self.notifications.contains("item/plan/delta") {
            Ok(())
        } else {
            Err("this codex sends no item/plan/delta".into())
        }
    }

    /// MCP servers are reported to the client: `mcpServerStatus/list`,
    /// `mcpServer/startupStatus/updated` and `mcpToolCall` items (G16–G23).
    pub fn needs_mcp(&self) -> Result<(), String> {
        self.require_methods(&["mcpServerStatus/list"])?;
        if !self
            .notifications
            .contains("mcpServer/startupStatus/updated")
        {
            return Err("this codex sends no mcpServer/startupStatus/updated".into());
        }
        if self.types.contains_key("McpToolCallStatus") {
            Ok(())
        } else {
            Err("this codex has no mcpToolCall items (McpToolCallStatus)".into())
        }
    }

    /// `codex exec --help` lists every flag of `flags` (group X).
    pub fn needs_exec_flags(&self, flags: &[&str]) -> Result<(), String> {
        self.exec_flags()?.require(flags)
    }

    /// `codex exec resume` exists and its help lists every flag of `flags` (X10).
    pub fn needs_exec_resume(&self, flags: &[&str]) -> Result<(), String> {
        self.exec_flags()?.require_resume(flags)
    }

    fn exec_flags(&self) -> Result<&ExecFlags, String> {
        self.exec
            .as_ref()
            .ok_or_else(|| "the help of codex exec could not be read".to_string())
    }

    /// `codex --help` lists the subcommand `command` (`migrate-rollouts`; group P).
    pub fn needs_codex_command(&self, command: &str) -> Result<(), String> {
        let help = self
            .codex
            .as_ref()
            .ok_or_else(|| "the help of codex could not be read".to_string())?;
        if help.commands.contains(command) {
            Ok(())
        } else {
            Err(format!("`codex --help` lists no {command} subcommand"))
        }
    }

    /// `codex app-server --listen` supports `scheme` (`ws`, `unix`; group I).
    pub fn needs_listen(&self, scheme: &str) -> Result<(), String> {
        self.app_server_flags()?.require_listen(scheme)
    }

    /// `codex app-server --ws-auth` takes `mode` and `--listen` supports `ws` (group I).
    pub fn needs_ws_auth(&self, mode: &str) -> Result<(), String> {
        self.needs_listen("ws")?;
        self.app_server_flags()?.require_ws_auth(mode)
    }

    /// `codex app-server --help` lists every flag of `flags` (`--ws-token-sha256`; group I).
    pub fn needs_app_server_flags(&self, flags: &[&str]) -> Result<(), String> {
        self.app_server_flags()?
            .help
            .require("codex app-server --help", flags)
    }

    /// `codex app-server` has the subcommand `command` (`daemon`, `proxy`; group I).
    pub fn needs_app_server_command(&self, command: &str) -> Result<(), String> {
        self.app_server_flags()?.require_command(command)
    }

    fn app_server_flags(&self) -> Result<&AppServerFlags, String> {
        self.app_server
            .as_ref()
            .ok_or_else(|| "the help of codex app-server could not be read".to_string())
    }

    /// The binary's schema lists the server notification `method` (e.g. `model/rerouted`).
    pub fn needs_notification(&self, method: &str) -> Result<(), String> {
        if self.notifications.contains(method) {
            Ok(())
        } else {
            Err(format!("this codex has no {method} notification"))
        }
    }

    /// The binary sends the server request `method` (e.g. an approval request).
    pub fn needs_server_request(&self, method: &str) -> Result<(), String> {
        if self.server_requests.contains(method) {
            Ok(())
        } else {
            Err(format!("this codex sends no {method}"))
        }
    }
}

/// `result`'s value, or `None` with what `what` says and why on stderr.
fn known<T>(result: anyhow::Result<T>, what: impl FnOnce() -> String) -> Option<T> {
    match result {
        Ok(value) => Some(value),
        Err(e) => {
            eprintln!("codex-parity: {}: {e:#}", what());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn answers_from_the_schema_types() {
        let types = [
            ("ThreadGoalStatus", json!({"enum": ["active", "paused"]})),
            (
                "ThreadStartParams",
                json!({"properties": {"cwd": {}, "dynamicTools": {}}}),
            ),
            (
                "DynamicToolSpec",
                json!({"oneOf": [
                    {"title": "NamespaceDynamicToolSpec", "type": "object",
                     "properties": {"tools": {"type": "array"}, "type": {"type": "string", "enum": ["namespace"]}}},
                    {"title": "FunctionDynamicToolSpec", "type": "object",
                     "properties": {"name": {"type": "string"}, "type": {"type": "string", "enum": ["function"]}}}
                ]}),
            ),
        ];
        let caps = Capabilities {
            types: types
                .iter()
                .map(|(name, def)| (name.to_string(), TypeDef::parse(def)))
                .collect(),
            ..Default::default()
        };
        assert!(caps.enum_has("ThreadGoalStatus", "paused"));
        assert!(!caps.enum_has("ThreadGoalStatus", "blocked"));
        assert!(caps.has_field("ThreadStartParams", "dynamicTools"));
        assert!(!caps.has_field("ThreadStartParams", "ephemeral"));
        assert!(caps.variant_has_field("DynamicToolSpec", "namespace", "tools"));
        assert!(!caps.variant_has_field("DynamicToolSpec", "function", "tools"));
        assert!(!caps.variant_has_field("ThreadStartParams", "namespace", "tools"));
    }

    #[test]
    fn stable_methods_come_from_the_stable_schema() {
        let schema = |methods: &[&str]| Schema {
            client_requests: methods.iter().map(|m| m.to_string()).collect(),
            ..Default::default()
        };
        let caps = Capabilities::from_schemas(schema(&["a", "b"]), &schema(&["a"]));
        assert!(caps.is_experimental("b"));
        assert!(!caps.is_experimental("a"));
    }

    #[test]
    fn the_experimental_schema_comes_back_whole() {
        let set = |names: &[&str]| names.iter().map(|m| m.to_string()).collect();
        let experimental = Schema {
            client_requests: set(&["thread/start", "thread/goal/set"]),
            server_requests: set(&["item/tool/call"]),
            notifications: set(&["turn/started"]),
            client_notifications: set(&["initialized"]),
            types: [(
                "ThreadGoalStatus".to_string(),
                TypeDef::parse(&json!({"enum": ["active"]})),
            )]
            .into(),
        };
        let stable = Schema {
            client_requests: set(&["thread/start"]),
            ..Default::default()
        };
        let caps = Capabilities::from_schemas(experimental.clone(), &stable);
        assert_eq!(caps.schema(), experimental);
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
