//! The scenario file format, as serde types: what a TOML scenario file may say
//! (`docs/scenario-files.md` is the user's reference). Unknown keys are refused
//! (`deny_unknown_fields`), so a typo is an error naming the valid keys, never a silently
//! ignored line. Steps and checks are read twice: first as TOML tables with their place in
//! the file (so errors point at them), then as [`Step`] and [`Check`].

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;
use toml::Spanned;

/// One scenario file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    /// The scenario's name, snake case; unique among built-ins and files.
    pub name: Spanned<String>,
    /// Its id in reports and for `--filter` (e.g. `X-A2`).
    pub id: Spanned<String>,
    /// One line saying what it proves.
    pub summary: String,
    /// The longest it may take, in seconds (60 by default).
    pub timeout_secs: Option<u64>,
    /// What the binary's schema must have, else the scenario is not applicable.
    #[serde(default)]
    pub requires: Requires,
    /// How the world's codex is configured.
    #[serde(default)]
    pub codex: CodexSection,
    /// The workspace before codex starts.
    #[serde(default)]
    pub workspace: WorkspaceSection,
    /// Whether a thread is started before the steps (binding `$thread`); true by default
    /// when a step talks to the app-server (none is started otherwise).
    pub start_thread: Option<bool>,
    /// `thread/start` params of that thread (`cwd` is the workspace unless given).
    pub thread: Option<toml::Table>,
    /// Scripted responses queued before codex starts, in the sidecar's own JSON form
    /// (`docs/sidecar-protocol.md`), as TOML or as a `json = '''…'''` string.
    #[serde(default)]
    pub response: Vec<Spanned<toml::Value>>,
    /// The steps, in order.
    #[serde(default)]
    pub step: Vec<Spanned<toml::Table>>,
    /// The checks made after the last step, before the after-scenario checks.
    #[serde(default)]
    pub check: Vec<Spanned<toml::Table>>,
}

/// `[requires]`: what the binary's protocol schema must have.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Requires {
    /// Client request methods (e.g. `thread/goal/set`).
    #[serde(default)]
    pub methods: Vec<String>,
    /// Server-to-client request methods (e.g. `item/tool/call`).
    #[serde(default)]
    pub server_requests: Vec<String>,
    /// Server notifications (e.g. `item/plan/delta`).
    #[serde(default)]
    pub notifications: Vec<String>,
    /// Fields of named schema types, as `Type.field` (e.g. `ThreadStartParams.dynamicTools`).
    #[serde(default)]
    pub fields: Vec<String>,
    /// Values of enum types, as `Type.value` (e.g. `ThreadGoalStatus.blocked`).
    #[serde(default)]
    pub enum_values: Vec<String>,
}

/// `[codex]`: the world's `config.toml`, arguments and `initialize` (defaults: the
/// harness's own, `approval_policy = "never"`, `danger-full-access`, no retries).
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CodexSection {
    /// `approval_policy`.
    pub approval_policy: Option<String>,
    /// `sandbox_mode`.
    pub sandbox_mode: Option<String>,
    /// The provider's `request_max_retries`.
    pub request_max_retries: Option<u32>,
    /// The provider's `stream_max_retries`.
    pub stream_max_retries: Option<u32>,
    /// The provider's `stream_idle_timeout_ms`.
    pub stream_idle_timeout_ms: Option<u64>,
    /// Extra top-level `config.toml` lines.
    #[serde(default)]
    pub config: Vec<String>,
    /// Extra `app-server` arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// `initialize.capabilities.experimentalApi` (true by default).
    pub experimental_api: Option<bool>,
    /// Turns codex may start by itself (goal continuations) are not a failure.
    pub allow_autonomous_turns: Option<bool>,
    /// Offer the Responses WebSocket (`supports_websockets = true`).
    pub websocket: Option<bool>,
    /// How the app-server talks to the file's client: `stdio` (the default), or a
    /// connection to its `--listen` `ws` or `unix` listener.
    pub listen: Option<crate::harness::world::Listen>,
    /// `--enable FEATURE` for each feature whose method the binary's schema marks
    /// experimental: `{ goals = "thread/goal/set" }`.
    #[serde(default)]
    pub enable_when_experimental: BTreeMap<String, String>,
}

/// `[workspace]`: files written and a git repository made before codex starts.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceSection {
    /// Make the workspace a git repository with one commit.
    #[serde(default)]
    pub git: bool,
    /// Files to write, path relative to the workspace → content.
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// A turn's input: a text, or input items as `turn/start` takes them.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// One `text` item.
    Text(String),
    /// Input items as given.
    Items(Vec<Value>),
}

/// The variable that holds the scenario's thread.
fn thread_var() -> String {
    "$thread".into()
}

/// The variable that holds the last turn started.
fn turn_var() -> String {
    "$turn".into()
}

fn yes() -> bool {
    true
}

/// One step, chosen by its `do` key.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "do", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// A JSON-RPC request; its result (or error) is checked and captured.
    Request {
        /// The method.
        method: String,
        /// The params.
        #[serde(default)]
        params: Value,
        /// A subset the result must match.
        expect: Option<Value>,
        /// A subset the JSON-RPC error must match (the call must fail).
        expect_error: Option<Value>,
        /// Variables bound from the result: name → JSON pointer.
        #[serde(default)]
        capture: BTreeMap<String, String>,
        /// How long to wait for the answer.
        timeout_ms: Option<u64>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// `turn/start`, then (unless `wait = false`) its `turn/completed`; binds `$turn`.
    Turn {
        /// The thread (`$thread` by default).
        #[serde(default = "thread_var")]
        thread: String,
        /// The input.
        input: Input,
        /// Other `turn/start` params.
        #[serde(default)]
        params: Value,
        /// Wait for the turn to complete (true by default).
        #[serde(default = "yes")]
        wait: bool,
        /// A subset the completed turn (with `finalResponse` and `chunks`) must match.
        expect: Option<Value>,
        /// Variables bound from the completed turn (or the `turn/start` result).
        #[serde(default)]
        capture: BTreeMap<String, String>,
        /// How long to wait for `turn/completed`.
        timeout_ms: Option<u64>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// Waits for a turn started with `wait = false` to complete.
    WaitTurn {
        /// The turn (`$turn` by default).
        #[serde(default = "turn_var")]
        turn: String,
        /// A subset the completed turn must match.
        expect: Option<Value>,
        /// Variables bound from the completed turn.
        #[serde(default)]
        capture: BTreeMap<String, String>,
        /// How long to wait.
        timeout_ms: Option<u64>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// Waits for a notification (after the one the previous `wait` found) whose params
    /// match.
    Wait {
        /// The notification method.
        notification: String,
        /// A subset its params must match.
        #[serde(rename = "match")]
        matches: Option<Value>,
        /// Variables bound from its params.
        #[serde(default)]
        capture: BTreeMap<String, String>,
        /// How long to wait.
        timeout_ms: Option<u64>,
    },
    /// Answers every later server request `method` (approvals, dynamic tool calls) with
    /// `result`, or with `error`, or leaves it unanswered.
    Reply {
        /// The server request method.
        method: String,
        /// The result to answer with.
        result: Option<Value>,
        /// The JSON-RPC error to answer with (`{code, message}`).
        error: Option<Value>,
        /// Leave it unanswered, as a client that never answers.
        #[serde(default)]
        unanswered: bool,
    },
    /// `turn/steer` of a running turn.
    Steer {
        /// The thread (`$thread` by default).
        #[serde(default = "thread_var")]
        thread: String,
        /// The turn (`$turn` by default).
        #[serde(default = "turn_var")]
        turn: String,
        /// The input.
        input: Input,
        /// A subset the result must match.
        expect: Option<Value>,
        /// A subset the error must match (the steer must fail).
        expect_error: Option<Value>,
    },
    /// `turn/interrupt` of a turn.
    Interrupt {
        /// The thread (`$thread` by default).
        #[serde(default = "thread_var")]
        thread: String,
        /// The turn (`$turn` by default).
        #[serde(default = "turn_var")]
        turn: String,
        /// A subset the result must match.
        expect: Option<Value>,
        /// A subset the error must match (the interrupt must fail).
        expect_error: Option<Value>,
    },
    /// Waits until the sidecar has captured at least `count` model requests.
    WaitRequests {
        /// How many.
        count: usize,
        /// How long to wait.
        timeout_ms: Option<u64>,
    },
    /// Stops the app-server cleanly and starts a new one in the same home.
    Restart {},
    /// Queues more scripted responses.
    Script {
        /// The responses, in the sidecar's JSON form.
        response: Vec<Value>,
    },
    /// Opens a sidecar gate.
    Release {
        /// The gate's name.
        gate: String,
    },
    /// Writes a file in the workspace.
    WriteFile {
        /// The path, relative to the workspace.
        path: String,
        /// The content.
        content: String,
    },
    /// Waits.
    Sleep {
        /// How long, in milliseconds.
        ms: u64,
    },
    /// One `codex exec --json ARGS PROMPT` run to its end; its run (exit, events, final
    /// message) is checked and captured.
    Exec {
        /// The prompt, the last argument (`-`: read from `stdin`).
        prompt: String,
        /// The arguments before the prompt (`--json` is added by the harness); a first
        /// `resume` runs `codex exec resume`.
        #[serde(default)]
        args: Vec<String>,
        /// What codex reads on stdin (closed at once when absent).
        stdin: Option<String>,
        /// The working directory, relative to the workspace (the workspace by default).
        cwd: Option<String>,
        /// A subset the run (`exit`, `events`, `types`, `final_message`, `unparsed`,
        /// `stderr`) must match.
        expect: Option<Value>,
        /// Variables bound from the run.
        #[serde(default)]
        capture: BTreeMap<String, String>,
        /// How long the run may take.
        timeout_ms: Option<u64>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
}

impl Step {
    /// The step's kind as written (`do = "…"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Step::Request { .. } => "request",
            Step::Turn { .. } => "turn",
            Step::WaitTurn { .. } => "wait_turn",
            Step::Wait { .. } => "wait",
            Step::Reply { .. } => "reply",
            Step::Steer { .. } => "steer",
            Step::Interrupt { .. } => "interrupt",
            Step::WaitRequests { .. } => "wait_requests",
            Step::Restart {} => "restart",
            Step::Script { .. } => "script",
            Step::Release { .. } => "release",
            Step::WriteFile { .. } => "write_file",
            Step::Sleep { .. } => "sleep",
            Step::Exec { .. } => "exec",
        }
    }

    /// Whether the step talks to `codex app-server` (a file none of whose steps does
    /// starts none, and no thread).
    pub fn needs_app_server(&self) -> bool {
        match self {
            Step::Request { .. }
            | Step::Turn { .. }
            | Step::WaitTurn { .. }
            | Step::Wait { .. }
            | Step::Reply { .. }
            | Step::Steer { .. }
            | Step::Interrupt { .. }
            | Step::Restart {} => true,
            Step::WaitRequests { .. }
            | Step::Script { .. }
            | Step::Release { .. }
            | Step::WriteFile { .. }
            | Step::Sleep { .. }
            | Step::Exec { .. } => false,
        }
    }
}

/// One check after the steps, chosen by its `on` key.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "on", rename_all = "snake_case", deny_unknown_fields)]
pub enum Check {
    /// The number of model requests the sidecar captured.
    Requests {
        /// Exactly this many.
        count: usize,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// One model request, normalised (`docs/transcripts.md` placeholders).
    Request {
        /// Its place among the model requests; negative counts from the end (-1: the last).
        index: i64,
        /// A subset the normalised request (`method`, `path`, `headers`, `body`) must match.
        #[serde(rename = "match")]
        matches: Option<Value>,
        /// Texts the raw body must contain.
        #[serde(default)]
        contains: Vec<String>,
        /// Texts the raw body must not contain.
        #[serde(default)]
        lacks: Vec<String>,
        /// The text of the last user message.
        last_user_text: Option<String>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// Notifications codex sent (all app-servers of the scenario).
    Notification {
        /// The method.
        method: String,
        /// A subset the params must match.
        #[serde(rename = "match")]
        matches: Option<Value>,
        /// Exactly this many match (at least one when absent).
        count: Option<usize>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// Server-to-client requests codex sent.
    ServerRequest {
        /// The method.
        method: String,
        /// A subset the params must match.
        #[serde(rename = "match")]
        matches: Option<Value>,
        /// Exactly this many match (at least one when absent).
        count: Option<usize>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// A value bound by an earlier step (`capture`), e.g. a whole completed turn
    /// (`capture = { done = "" }`), so each field can be its own check and drift key.
    Value {
        /// The variable, `"$name"`.
        value: String,
        /// A subset it must match.
        #[serde(rename = "match")]
        matches: Value,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
    /// A file in the workspace.
    File {
        /// The path, relative to the workspace.
        path: String,
        /// Its whole content (a trailing newline is ignored).
        content: Option<String>,
        /// A text it contains.
        contains: Option<String>,
        /// Whether it exists (true when `content` or `contains` is given).
        exists: Option<bool>,
        /// A mismatch is drift under this key instead of a failure.
        drift: Option<String>,
    },
}

impl Check {
    /// The check's kind as written (`on = "…"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Requests { .. } => "requests",
            Check::Request { .. } => "request",
            Check::Notification { .. } => "notification",
            Check::ServerRequest { .. } => "server_request",
            Check::Value { .. } => "value",
            Check::File { .. } => "file",
        }
    }
}
