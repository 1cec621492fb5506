//! The model written as a scenario file: [`write()`] spells a [`ScenarioFile`] as TOML text,
//! with the [`Comments`] a writer puts beside its parts (what `codex-parity record` says of
//! where each part came from). The head first (`name`, `id`, `summary`, …), then the
//! sections that say anything, then `[[response]]` (each as the sidecar's JSON in a `json`
//! block, one event per line), `[[step]]` and `[[check]]` (`do` or `on` first, defaults
//! left out), and the notes last. What it writes, [`super::load`] reads back as the same
//! model.

use serde_json::Value;

use super::format::ScenarioFile;
use super::toml_text::{block, comment, key, string, value};

/// Comments beside the parts of a file; each is one line, escaped when written (no text
/// can end a comment and become a key).
#[derive(Debug, Clone, Default)]
pub struct Comments {
    /// Lines before the head.
    pub header: Vec<String>,
    /// Beside `start_thread`.
    pub start_thread: Option<String>,
    /// Beside `[requires]`.
    pub requires: Option<String>,
    /// Beside `[codex]`.
    pub codex: Option<String>,
    /// Beside `[thread]`.
    pub thread: Option<String>,
    /// Beside each `[[response]]`, in order.
    pub responses: Vec<String>,
    /// Beside each `[[step]]`, in order.
    pub steps: Vec<String>,
    /// Beside each `[[check]]`, in order.
    pub checks: Vec<String>,
    /// The `# Notes:` at the end.
    pub notes: Vec<String>,
}

/// The column a comment beside a table header starts at.
const COMMENT_COLUMN: usize = 33;

/// `file` as scenario-file text, with `comments`.
pub fn write(file: &ScenarioFile, comments: &Comments) -> String {
    let mut out = String::new();
    for line in &comments.header {
        out.push_str(&format!("# {}\n", comment(line)));
    }
    out.push_str(&format!(
        "name = {}\nid = {}\nsummary = {}\n",
        string(&file.name),
        string(&file.id),
        string(&file.summary)
    ));
    if let Some(secs) = file.timeout_secs {
        out.push_str(&format!("timeout_secs = {secs}\n"));
    }
    if let Some(start) = file.start_thread {
        out.push_str(&beside(
            &format!("start_thread = {start}"),
            comments.start_thread.as_deref(),
        ));
    }
    let sections = [
        (
            "requires",
            json(&file.requires),
            comments.requires.as_deref(),
        ),
        ("codex", json(&file.codex), comments.codex.as_deref()),
        ("workspace", json(&file.workspace), None),
        (
            "thread",
            file.thread
                .clone()
                .map(Value::Object)
                .unwrap_or(Value::Null),
            comments.thread.as_deref(),
        ),
    ];
    for (name, section, note) in sections {
        // `[thread]` is written even when empty: an empty table still says "this thread".
        let keep = match &section {
            Value::Object(map) => !map.is_empty() || name == "thread",
            _ => false,
        };
        if keep {
            out.push('\n');
            out.push_str(&beside(&format!("[{name}]"), note));
            out.push_str(&table(&section));
        }
    }
    for (i, r) in file.responses.iter().enumerate() {
        out.push('\n');
        out.push_str(&beside(
            "[[response]]",
            comments.responses.get(i).map(String::as_str),
        ));
        out.push_str(&format!("json = {}\n", block(&response_text(r))));
    }
    for (i, s) in file.steps.iter().enumerate() {
        out.push('\n');
        out.push_str(&beside(
            "[[step]]",
            comments.steps.get(i).map(String::as_str),
        ));
        out.push_str(&table(&s.to_json()));
    }
    for (i, c) in file.checks.iter().enumerate() {
        out.push('\n');
        out.push_str(&beside(
            "[[check]]",
            comments.checks.get(i).map(String::as_str),
        ));
        out.push_str(&table(&c.to_json()));
    }
    if !comments.notes.is_empty() {
        out.push_str("\n# Notes:\n");
        for n in &comments.notes {
            out.push_str(&format!("# - {}\n", comment(n)));
        }
    }
    out
}

/// `line` with `note` as a comment beside it, and a newline.
fn beside(line: &str, note: Option<&str>) -> String {
    match note {
        Some(n) => format!("{line:<COMMENT_COLUMN$}# {}\n", comment(n)),
        None => format!("{line}\n"),
    }
}

/// A section's model as JSON (an object; null when it cannot be one).
fn json(section: &impl serde::Serialize) -> Value {
    serde_json::to_value(section).unwrap_or(Value::Null)
}

/// An object's keys, one `key = value` line each.
fn table(object: &Value) -> String {
    let Value::Object(map) = object else {
        return String::new();
    };
    map.iter()
        .map(|(k, v)| format!("{} = {}\n", key(k), value(v)))
        .collect()
}

/// A scripted response as the text of its `json` block: its events one per line, the rest
/// of its keys after them.
fn response_text(r: &Value) -> String {
    let Some(Value::Array(events)) = r.get("events") else {
        return format!("{r}\n");
    };
    let lines: Vec<String> = events.iter().map(|e| format!("  {e}")).collect();
    let rest: String = r
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| *k != "events")
        .map(|(k, v)| format!(",\n {}: {v}", Value::String(k.clone())))
        .collect();
    if lines.is_empty() {
        format!("{{\"events\": []{rest}}}\n")
    } else {
        format!("{{\"events\": [\n{}\n]{rest}}}\n", lines.join(",\n"))
    }
}
