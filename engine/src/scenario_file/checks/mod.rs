//! The checks of a scenario file, made after the last step, one module per kind
//! (`on = "…"`). Like a step kind (`super::steps`), each is a struct read and written by
//! serde with `needs_app_server`, `uses` (what the loader checks) and `run`; `check_kinds!`
//! makes the [`Check`] enum, its `on` names and the dispatch.

pub mod file;
pub mod messages;
pub mod request;
pub mod requests;
pub mod value;

use serde_json::{Value, json};

use super::execute::Run;
use super::matching;
use super::steps::{Uses, tagged};

/// Makes [`Check`] from the kinds' structs: `Variant(module::Struct) = "on name"`.
macro_rules! check_kinds {
    ($($variant:ident($module:ident::$ty:ident) = $name:literal,)*) => {
        /// One check after the steps, chosen by its `on` key.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Check {
            $(
                #[doc = concat!("`on = \"", $name, "\"`.")]
                $variant($module::$ty),
            )*
        }

        /// The kinds of check, as `on = "…"` names them.
        pub const CHECK_KINDS: &[&str] = &[$($name,)*];

        impl Check {
            /// The check's kind as written (`on = "…"`).
            pub fn kind(&self) -> &'static str {
                match self {
                    $(Check::$variant(_) => $name,)*
                }
            }

            /// Reads a check of kind `kind` from its other keys; the serde message when
            /// they do not fit, `None` when no kind has that name.
            pub fn read(kind: &str, rest: toml::Table) -> Option<Result<Check, String>> {
                let rest = toml::Value::Table(rest);
                match kind {
                    $($name => Some(
                        rest.try_into::<$module::$ty>()
                            .map(Check::$variant)
                            .map_err(|e| e.message().to_string()),
                    ),)*
                    _ => None,
                }
            }

            /// The check from its JSON (what [`Check::to_json`] gives).
            pub fn from_json(value: &Value) -> Result<Check, String> {
                let mut map = value.as_object().cloned().unwrap_or_default();
                let kind = map
                    .remove("on")
                    .and_then(|k| k.as_str().map(String::from))
                    .unwrap_or_default();
                let rest = Value::Object(map);
                match kind.as_str() {
                    $($name => serde_json::from_value(rest)
                        .map(Check::$variant)
                        .map_err(|e| e.to_string()),)*
                    other => Err(format!("unknown check kind `{other}`")),
                }
            }

            /// The check as JSON: `on` first, then its keys (defaults left out).
            pub fn to_json(&self) -> Value {
                let (kind, inner) = match self {
                    $(Check::$variant(c) => ($name, serde_json::to_value(c)),)*
                };
                tagged("on", kind, inner)
            }

            /// Whether the check reads what the app-server sent.
            pub fn needs_app_server(&self) -> bool {
                match self {
                    $(Check::$variant(c) => c.needs_app_server(),)*
                }
            }

            /// What the loader checks of the check.
            pub fn uses<'a>(&'a self, u: &mut Uses<'a>) {
                match self {
                    $(Check::$variant(c) => c.uses(u),)*
                }
            }

            /// Makes the check.
            pub(crate) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
                match self {
                    $(Check::$variant(c) => c.run(run).await,)*
                }
            }
        }
    };
}

check_kinds! {
    Requests(requests::RequestsCheck) = "requests",
    Request(request::RequestCheck) = "request",
    Notification(messages::NotificationCheck) = "notification",
    ServerRequest(messages::ServerRequestCheck) = "server_request",
    Value(value::ValueCheck) = "value",
    File(file::FileCheck) = "file",
}

/// Counts the messages of `all` whose params match `matches` against `count` (at least one
/// when absent): the shared judgement of the notification and server-request checks.
pub(super) fn count_matching(
    run: &Run<'_>,
    all: &[Value],
    method: &str,
    matches: Option<&Value>,
    count: Option<usize>,
    drift: Option<&String>,
) -> anyhow::Result<()> {
    let expected = matches.map(|m| run.value(m)).transpose()?;
    let mut first_mismatch = None;
    let n = all
        .iter()
        .filter(|p| match &expected {
            None => true,
            Some(e) => match matching::check(e, Some(p), "") {
                Ok(()) => true,
                Err(m) => {
                    first_mismatch.get_or_insert(m);
                    false
                }
            },
        })
        .count();
    let ok = match count {
        Some(c) => n == c,
        None => n > 0,
    };
    let result = if ok {
        Ok(())
    } else {
        let want = count.map_or("at least one".to_string(), |c| c.to_string());
        Err(format!(
            "at /: expected {want} {method} matching, found {n} of {}{}",
            all.len(),
            first_mismatch
                .map(|m| format!(" (first mismatch {m})"))
                .unwrap_or_default()
        ))
    };
    run.judge(drift, result, &json!(n), method)
}
