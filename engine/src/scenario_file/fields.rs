//! What the steps' and the file's fields share: a turn's [`Input`], the default variables
//! of a step (`$thread`, `$turn`), and the serde predicates that leave a default out when
//! a file is written.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A turn's input: a text, or input items as `turn/start` takes them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Input {
    /// One `text` item.
    Text(String),
    /// Input items as given.
    Items(Vec<Value>),
}

/// The variable that holds the scenario's thread (a step's default `thread`).
pub fn thread_var() -> String {
    "$thread".into()
}

/// Whether `thread` is the default.
pub fn is_thread_var(thread: &String) -> bool {
    *thread == thread_var()
}

/// The variable that holds the last turn started (a step's default `turn`).
pub fn turn_var() -> String {
    "$turn".into()
}

/// Whether `turn` is the default.
pub fn is_turn_var(turn: &String) -> bool {
    *turn == turn_var()
}

/// `true`, a serde default.
pub fn yes() -> bool {
    true
}

/// Whether `b` is `true` (the default left out when written).
pub fn is_true(b: &bool) -> bool {
    *b
}

/// Whether `b` is `false` (the default left out when written).
pub fn is_false(b: &bool) -> bool {
    !*b
}

/// Whether a value is null or an empty object (params left out when written).
pub fn is_nothing(v: &Value) -> bool {
    v.is_null() || v.as_object().is_some_and(Map::is_empty)
}
