//! What changed in the client stream of a scenario from one codex version to another: the
//! [`Shape`] of each normalised transcript (which messages, how many, in which order, which
//! fields of which JSON types, which values of enum-like fields) and the lines that tell
//! two shapes apart ([`changes`]). `codex-parity run --transcript-diff` prints them per
//! scenario from each version to the next ([`report`]); golden transcripts are compared
//! with them too ([`crate::drift::golden_transcript`]).
//!
//! Lines start with `+` (added in the newer), `-` (gone) or `~` (changed):
//! - `+ notification item/reasoning/summaryTextDelta ×3`, `- request item/tool/call ×1`;
//! - `~ notification item/agentMessage/delta: ×3 -> ×5`;
//! - `~ order from #N: … -> …` when the notifications both have arrive in another order
//!   (answers are left out: their place among notifications is a race in codex);
//! - `+ notification item/completed params.item.phase: string`, `- …`, `~ …: string -> null`;
//! - `+ notification turn/completed params.turn.status value "interrupted"`, `- …`.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use crate::codex::binaries::CodexBinary;
use crate::drift::request_drift;
use crate::drift::transcript;
use crate::harness::outcome::Outcome;
use crate::harness::runner::Cell;

/// New change lines printed per scenario and pair of versions at most.
const LINES_PER_PAIR: usize = 40;

/// Keys whose string values are compared as enum values.
const ENUM_KEYS: [&str; 10] = [
    "type", "status", "kind", "role", "phase", "mode", "reason", "decision", "source", "effort",
];

/// The shape of one transcript.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Shape {
    /// Message kinds (`notification turn/started`) in the order they first arrive.
    pub order: Vec<String>,
    /// How often each kind arrived.
    pub counts: BTreeMap<String, usize>,
    /// Per kind, every field path (`params.turn.id`, arrays as `[]`) with its JSON types.
    pub fields: BTreeMap<String, BTreeMap<String, BTreeSet<&'static str>>>,
    /// Per kind, the string values seen at enum-like paths.
    pub values: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

/// The shape of normalised connections (as [`transcript::normalize`] returns them).
pub fn shape(connections: &[Value]) -> Shape {
    let mut s = Shape::default();
    let messages = connections
        .iter()
        .filter_map(|c| c.get("messages").and_then(Value::as_array))
        .flatten();
    for m in messages {
        let kind = format!(
            "{} {}",
            m.get("type").and_then(Value::as_str).unwrap_or("?"),
            m.get("method").and_then(Value::as_str).unwrap_or("?")
        );
        if !s.counts.contains_key(&kind) {
            s.order.push(kind.clone());
        }
        *s.counts.entry(kind.clone()).or_default() += 1;
        let Some(obj) = m.as_object() else { continue };
        for (key, value) in obj {
            if key != "type" && key != "method" {
                walk(value, key, &kind, &mut s);
            }
        }
    }
    s
}

fn walk(value: &Value, path: &str, kind: &str, s: &mut Shape) {
    let ty = match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    };
    let fields = s.fields.entry(kind.to_string()).or_default();
    fields.entry(path.to_string()).or_default().insert(ty);
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                walk(v, &format!("{path}.{k}"), kind, s);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, &format!("{path}[]"), kind, s);
            }
        }
        Value::String(text) if enum_like(path, text) => {
            let values = s.values.entry(kind.to_string()).or_default();
            values
                .entry(path.to_string())
                .or_default()
                .insert(text.clone());
        }
        _ => {}
    }
}

/// Whether the string at `path` reads as an enum value: under a key such as `status` or
/// `type` (or ending in `Status`, `Type`, `Kind`, `Mode`), short, without spaces and not a
/// placeholder.
fn enum_like(path: &str, text: &str) -> bool {
    let key = path
        .rsplit('.')
        .next()
        .unwrap_or(path)
        .trim_end_matches("[]");
    let named = ENUM_KEYS.contains(&key)
        || ["Status", "Type", "Kind", "Mode"]
            .iter()
            .any(|s| key.ends_with(s));
    named && text.len() <= 40 && !text.contains(' ') && !text.starts_with('<')
}

/// The lines that tell `old` from `new` (empty when their shapes are equal).
pub fn changes(old: &Shape, new: &Shape) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, n) in &old.counts {
        match new.counts.get(kind) {
            None => out.push(format!("- {kind} ×{n}")),
            Some(m) if m != n => out.push(format!("~ {kind}: ×{n} -> ×{m}")),
            Some(_) => {}
        }
    }
    for (kind, n) in new
        .counts
        .iter()
        .filter(|(k, _)| !old.counts.contains_key(*k))
    {
        out.push(format!("+ {kind} ×{n}"));
    }
    out.extend(order_change(old, new));
    let empty = BTreeMap::new();
    for kind in old.fields.keys().filter(|k| new.fields.contains_key(*k)) {
        let (a, b) = (&old.fields[kind], &new.fields[kind]);
        for (path, types) in a {
            match b.get(path) {
                None => out.push(format!("- {kind} {path}: {}", join(types))),
                Some(t) if t != types => {
                    out.push(format!("~ {kind} {path}: {} -> {}", join(types), join(t)))
                }
                Some(_) => {}
            }
        }
        for (path, types) in b.iter().filter(|(p, _)| !a.contains_key(*p)) {
            out.push(format!("+ {kind} {path}: {}", join(types)));
        }
        let (va, vb) = (
            old.values.get(kind).unwrap_or(&empty),
            new.values.get(kind).unwrap_or(&empty),
        );
        out.extend(value_changes(kind, va, vb));
    }
    out
}

/// `~ order: …` when the notifications both shapes have first arrive in another order.
/// Answers are left out: codex writes an answer and the notifications of the same moment
/// from different tasks, so their relative order is a race.
fn order_change(old: &Shape, new: &Shape) -> Option<String> {
    let common = |s: &Shape, other: &Shape| -> Vec<String> {
        s.order
            .iter()
            .filter(|k| k.starts_with("notification ") && other.counts.contains_key(*k))
            .cloned()
            .collect()
    };
    let (a, b) = (common(old, new), common(new, old));
    let first = a.iter().zip(&b).position(|(x, y)| x != y)?;
    let window = |list: &[String]| list[first..(first + 3).min(list.len())].join(", ");
    Some(format!(
        "~ order from #{first}: {} -> {}",
        window(&a),
        window(&b)
    ))
}

fn value_changes(
    kind: &str,
    old: &BTreeMap<String, BTreeSet<String>>,
    new: &BTreeMap<String, BTreeSet<String>>,
) -> Vec<String> {
    let mut out = Vec::new();
    let none = BTreeSet::new();
    let paths: BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for path in paths {
        let (a, b) = (
            old.get(path).unwrap_or(&none),
            new.get(path).unwrap_or(&none),
        );
        for gone in a.difference(b) {
            out.push(format!("- {kind} {path} value {gone:?}"));
        }
        for added in b.difference(a) {
            out.push(format!("+ {kind} {path} value {added:?}"));
        }
    }
    out
}

fn join(types: &BTreeSet<&'static str>) -> String {
    types.iter().copied().collect::<Vec<_>>().join("|")
}

/// The report: per scenario, one section per pair of consecutive versions, oldest first.
/// Within a pair, a line already shown for an earlier scenario is only counted.
pub fn report(records: &[Cell], binaries: &[CodexBinary]) -> String {
    let not_compared = |a: &Cell, b: &Cell| {
        (!comparable(a) || !comparable(b)).then(|| "n/a or no transcript".to_string())
    };
    request_drift::pairwise(
        "transcript drift (what codex sends the client)",
        records,
        binaries,
        not_compared,
        pair_text,
    )
}

fn comparable(r: &Cell) -> bool {
    !matches!(r.outcome, Outcome::NotApplicable(_)) && !r.transcripts.is_empty()
}

fn pair_text(a: &Cell, b: &Cell, seen: &mut HashSet<String>) -> String {
    let (old, new) = (
        shape(&transcript::normalize(&a.transcripts)),
        shape(&transcript::normalize(&b.transcripts)),
    );
    let all = changes(&old, &new);
    let count = |s: &Shape| s.counts.values().sum::<usize>();
    let mut text = format!("messages {} -> {}", count(&old), count(&new));
    if all.is_empty() {
        text.push_str(", no change\n");
        return text;
    }
    let fresh: Vec<&String> = all.iter().filter(|l| !seen.contains(*l)).collect();
    let shown = all.len() - fresh.len();
    text.push_str(&format!(", {} change(s)", all.len()));
    if shown > 0 {
        text.push_str(&format!(", {shown} as shown above"));
    }
    text.push('\n');
    for line in fresh.iter().take(LINES_PER_PAIR) {
        text.push_str(&format!("    {line}\n"));
    }
    if fresh.len() > LINES_PER_PAIR {
        text.push_str(&format!(
            "    … and {} more\n",
            fresh.len() - LINES_PER_PAIR
        ));
    }
    seen.extend(all);
    text
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn connections(messages: Value) -> Vec<Value> {
        vec![json!({"world": 1, "connection": 1, "messages": messages})]
    }

    fn old() -> Shape {
        shape(&connections(json!([
            {"type": "response", "method": "thread/start", "result": {"thread": {"id": "<thread-1>"}}},
            {"type": "notification", "method": "turn/started", "params": {"turn": {"id": "<turn-1>"}}},
            {"type": "notification", "method": "item/agentMessage/delta", "params": {"delta": "a"}},
            {"type": "notification", "method": "turn/completed",
             "params": {"turn": {"id": "<turn-1>", "status": "completed", "items": []}}}
        ])))
    }

    #[test]
    fn equal_transcripts_have_no_change() {
        assert!(changes(&old(), &old()).is_empty());
    }

    #[test]
    fn added_removed_counted_retyped_and_new_values_show() {
        let new = shape(&connections(json!([
            {"type": "response", "method": "thread/start", "result": {"thread": {"id": 7}}},
            {"type": "notification", "method": "item/agentMessage/delta", "params": {"delta": "a"}},
            {"type": "notification", "method": "item/agentMessage/delta", "params": {"delta": "b"}},
            {"type": "notification", "method": "turn/completed",
             "params": {"turn": {"id": "<turn-1>", "status": "interrupted", "items": [],
                                 "error": null}}},
            {"type": "notification", "method": "thread/tokenUsage/updated", "params": {}}
        ])));
        let lines = changes(&old(), &new);
        let has = |l: &str| lines.iter().any(|x| x == l);
        assert!(has("- notification turn/started ×1"), "{lines:#?}");
        assert!(
            has("~ notification item/agentMessage/delta: ×1 -> ×2"),
            "{lines:#?}"
        );
        assert!(
            has("+ notification thread/tokenUsage/updated ×1"),
            "{lines:#?}"
        );
        assert!(
            has("~ response thread/start result.thread.id: string -> number"),
            "{lines:#?}"
        );
        assert!(
            has("+ notification turn/completed params.turn.error: null"),
            "{lines:#?}"
        );
        assert!(
            has("- notification turn/completed params.turn.status value \"completed\""),
            "{lines:#?}"
        );
        assert!(
            has("+ notification turn/completed params.turn.status value \"interrupted\""),
            "{lines:#?}"
        );
        // Backwards, the same changes the other way round.
        let back = changes(&new, &old());
        assert!(back.iter().any(|l| l == "+ notification turn/started ×1"));
        assert!(
            back.iter()
                .any(|l| l.starts_with("- notification turn/completed params.turn.error"))
        );
    }

    #[test]
    fn a_reorder_names_where_it_starts() {
        let swapped = shape(&connections(json!([
            {"type": "response", "method": "thread/start", "result": {"thread": {"id": "<thread-1>"}}},
            {"type": "notification", "method": "item/agentMessage/delta", "params": {"delta": "a"}},
            {"type": "notification", "method": "turn/started", "params": {"turn": {"id": "<turn-1>"}}},
            {"type": "notification", "method": "turn/completed",
             "params": {"turn": {"id": "<turn-1>", "status": "completed", "items": []}}}
        ])));
        let lines = changes(&old(), &swapped);
        assert_eq!(lines.len(), 1, "{lines:#?}");
        assert!(
            lines[0].starts_with("~ order from #0: notification turn/started"),
            "{lines:?}"
        );
    }
}
