//! The steps of a scenario file, one module per kind (`do = "…"`). Each kind is a struct
//! read and written by serde (its fields are the step's keys, defaults left out when
//! written) with three methods, the whole of what the kind means:
//!
//! - `needs_app_server(&self) -> bool`: whether it talks to `codex app-server` (a file none
//!   of whose steps does starts none, and no thread);
//! - `uses(&self, &mut Uses)`: what the loader checks of it (the variables it refers to,
//!   its expectations, captures, paths and problems of its own);
//! - `run(&self, &mut Run) -> anyhow::Result<()>`: what it does in a world.
//!
//! `step_kinds!` makes the [`Step`] enum of all of them, its `do` names and the dispatch,
//! so a new kind is a module and one line below.

pub mod exec;
pub mod interrupt;
pub mod release;
pub mod reply;
pub mod request;
pub mod restart;
pub mod script;
pub mod sleep;
pub mod steer;
pub mod turn;
pub mod wait;
pub mod wait_requests;
pub mod wait_turn;
pub mod write_file;

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::execute::Run;

/// What a step or check uses, for the loader's checks, and what it binds.
#[derive(Debug, Default)]
pub struct Uses<'a> {
    /// Values whose `$name` and `${name}` references must be bound.
    pub values: Vec<&'a Value>,
    /// Texts whose references must be bound.
    pub texts: Vec<&'a str>,
    /// Expectations: references bound and operators known.
    pub expectations: Vec<&'a Value>,
    /// Paths that must lead inside the workspace.
    pub paths: Vec<&'a str>,
    /// Variables bound from the step's result: name → JSON pointer.
    pub captures: Option<&'a BTreeMap<String, String>>,
    /// Variables the step binds by itself (`turn` for a turn step).
    pub binds: Vec<&'static str>,
    /// Problems of the step's own: the text to point at, and the message.
    pub problems: Vec<(String, String)>,
}

/// Makes [`Step`] from the kinds' structs: `Variant(module::Struct) = "do name"`.
macro_rules! step_kinds {
    ($($variant:ident($module:ident::$ty:ident) = $name:literal,)*) => {
        /// One step, chosen by its `do` key.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Step {
            $(
                #[doc = concat!("`do = \"", $name, "\"`.")]
                $variant($module::$ty),
            )*
        }

        /// The kinds of step, as `do = "…"` names them.
        pub const STEP_KINDS: &[&str] = &[$($name,)*];

        impl Step {
            /// The step's kind as written (`do = "…"`).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Step::$variant(_) => $name,)*
                }
            }

            /// Reads a step of kind `kind` from its other keys; the serde message when
            /// they do not fit, `None` when no kind has that name.
            pub fn read(kind: &str, rest: toml::Table) -> Option<Result<Step, String>> {
                let rest = toml::Value::Table(rest);
                match kind {
                    $($name => Some(
                        rest.try_into::<$module::$ty>()
                            .map(Step::$variant)
                            .map_err(|e| e.message().to_string()),
                    ),)*
                    _ => None,
                }
            }

            /// The step from its JSON (what [`Step::to_json`] gives).
            pub fn from_json(value: &Value) -> Result<Step, String> {
                let mut map = value.as_object().cloned().unwrap_or_default();
                let kind = map
                    .remove("do")
                    .and_then(|k| k.as_str().map(String::from))
                    .unwrap_or_default();
                let rest = Value::Object(map);
                match kind.as_str() {
                    $($name => serde_json::from_value(rest)
                        .map(Step::$variant)
                        .map_err(|e| e.to_string()),)*
                    other => Err(format!("unknown step kind `{other}`")),
                }
            }

            /// The step as JSON: `do` first, then its keys (defaults left out).
            pub fn to_json(&self) -> Value {
                let (kind, inner) = match self {
                    $(Step::$variant(s) => ($name, serde_json::to_value(s)),)*
                };
                tagged("do", kind, inner)
            }

            /// Whether the step talks to `codex app-server`.
            pub fn needs_app_server(&self) -> bool {
                match self {
                    $(Step::$variant(s) => s.needs_app_server(),)*
                }
            }

            /// What the loader checks of the step.
            pub fn uses<'a>(&'a self, u: &mut Uses<'a>) {
                match self {
                    $(Step::$variant(s) => s.uses(u),)*
                }
            }

            /// Runs the step.
            pub(crate) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
                match self {
                    $(Step::$variant(s) => s.run(run).await,)*
                }
            }

            /// The step's `capture`, for a writer that binds variables once a later step
            /// uses them (`None`: the kind captures nothing).
            pub fn capture_mut(&mut self) -> Option<&mut BTreeMap<String, String>> {
                match self {
                    $(Step::$variant(s) => s.capture_mut(),)*
                }
            }
        }
    };
}

step_kinds! {
    Request(request::RequestStep) = "request",
    Turn(turn::TurnStep) = "turn",
    WaitTurn(wait_turn::WaitTurnStep) = "wait_turn",
    Wait(wait::WaitStep) = "wait",
    Reply(reply::ReplyStep) = "reply",
    Steer(steer::SteerStep) = "steer",
    Interrupt(interrupt::InterruptStep) = "interrupt",
    WaitRequests(wait_requests::WaitRequestsStep) = "wait_requests",
    Restart(restart::RestartStep) = "restart",
    Script(script::ScriptStep) = "script",
    Release(release::ReleaseStep) = "release",
    WriteFile(write_file::WriteFileStep) = "write_file",
    Sleep(sleep::SleepStep) = "sleep",
    Exec(exec::ExecStep) = "exec",
}

/// `inner` (an object) with `tag = kind` put first.
pub(super) fn tagged(tag: &str, kind: &str, inner: Result<Value, serde_json::Error>) -> Value {
    let mut out = Map::new();
    out.insert(tag.into(), Value::String(kind.into()));
    if let Ok(Value::Object(fields)) = inner {
        out.extend(fields);
    }
    Value::Object(out)
}
