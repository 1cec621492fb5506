//! A structural diff of two JSON values, made for normalised requests
//! ([`crate::drift::normalize`]): what was added, removed or changed, with readable paths.
//!
//! Paths join object keys with `.` (`body.reasoning.summary`,
//! `headers.x-codex-turn-metadata.window_id`). Array items are matched two ways:
//! - **by name**: when every item is an object with a unique `name` (or, lacking one, a
//!   unique `type`), as tools are: `body.tools[name=exec_command]`, `body.tools[type=web_search]`.
//!   Order does not matter; a changed order is reported once.
//! - **by alignment** otherwise, as input items and content parts are: the items are aligned in
//!   order, an item only with one of the same `type` and `role` (scalars only with equal ones),
//!   preferring the most similar, so one message inserted at the front shows as one addition and
//!   not as every message changed. Paths carry the index and what the item is:
//!   `body.input[1 role=developer]`, `body.input[0->1 role=user]` when it moved.
//!
//! Lines read `+ path: value` (added), `- path: value` (removed), `~ path: old -> new`
//! (changed); many items added to or removed from one array are summarised on one line.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// Values longer than this are cut in lines.
const SHOWN: usize = 100;

/// More items than this added to (or removed from) one array are listed on one line.
const GROUP: usize = 3;

/// Above this many candidate pairs, array alignment stops weighing similarity.
const SIMILARITY_BUDGET: usize = 10_000;

/// What happened at one path.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// Only in the newer value.
    Added(Value),
    /// Only in the older value.
    Removed(Value),
    /// In both, different (scalars, or different JSON types).
    Changed(Value, Value),
    /// The same named items in another order: older order, newer order.
    Reordered(Vec<String>, Vec<String>),
}

/// One difference.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// Where, e.g. `body.tools[name=update_plan]`.
    pub path: String,
    /// For an array item, the array's path (lines of one array are grouped).
    pub array: Option<String>,
    /// What happened there.
    pub what: What,
}

impl Change {
    /// The change as one line: `+ path: value`, `- path: value`, `~ path: old -> new`.
    pub fn to_line(&self) -> String {
        let path = if self.path.is_empty() {
            "(root)"
        } else {
            &self.path
        };
        match &self.what {
            What::Added(v) => format!("+ {path}: {}", show(v)),
            What::Removed(v) => format!("- {path}: {}", show(v)),
            What::Changed(Value::String(a), Value::String(b)) => {
                let (a, b) = from_difference(a, b);
                format!("~ {path}: {} -> {}", show(&a), show(&b))
            }
            What::Changed(a, b) => format!("~ {path}: {} -> {}", show(a), show(b)),
            What::Reordered(a, b) => {
                format!("~ {path}: order {} -> {}", a.join(", "), b.join(", "))
            }
        }
    }
}

/// Every difference between `old` and `new`, in document order.
pub fn diff(old: &Value, new: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    diff_at("", None, old, new, &mut out);
    out
}

/// The lines of `changes`, with runs of more than a few items added to (or removed from)
/// the same array summarised on one line.
pub fn lines(changes: &[Change]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < changes.len() {
        let c = &changes[i];
        let sign = match c.what {
            What::Added(_) => Some('+'),
            What::Removed(_) => Some('-'),
            _ => None,
        };
        let run = match (&c.array, sign) {
            (Some(array), Some(_)) => changes[i..]
                .iter()
                .take_while(|d| {
                    d.array.as_ref() == Some(array)
                        && std::mem::discriminant(&d.what) == std::mem::discriminant(&c.what)
                })
                .count(),
            _ => 1,
        };
        if let (true, Some(array), Some(sign)) = (run > GROUP, &c.array, sign) {
            let labels: Vec<&str> = changes[i..i + run]
                .iter()
                .map(|d| d.path.get(array.len()..).unwrap_or(&d.path))
                .collect();
            let verb = if sign == '+' { "added" } else { "removed" };
            out.push(format!(
                "{sign} {array}: {run} items {verb}: {}",
                labels.join(" ")
            ));
        } else {
            out.extend(changes[i..i + run].iter().map(Change::to_line));
        }
        i += run;
    }
    out
}

fn diff_at(path: &str, array: Option<&str>, old: &Value, new: &Value, out: &mut Vec<Change>) {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => diff_objects(path, a, b, out),
        (Value::Array(a), Value::Array(b)) => match (keys(a), keys(b)) {
            (Some((ka, na)), Some((kb, nb))) if na || nb => diff_keyed(path, a, &ka, b, &kb, out),
            _ => diff_aligned(path, a, b, out),
        },
        (a, b) if a == b => {}
        (a, b) => out.push(Change {
            path: path.to_string(),
            array: array.map(str::to_string),
            what: What::Changed(a.clone(), b.clone()),
        }),
    }
}

fn diff_objects(path: &str, a: &Map<String, Value>, b: &Map<String, Value>, out: &mut Vec<Change>) {
    let mut names: Vec<&String> = a
        .keys()
        .chain(b.keys().filter(|k| !a.contains_key(*k)))
        .collect();
    names.sort();
    for name in names {
        let child = join(path, name);
        match (a.get(name), b.get(name)) {
            (Some(x), Some(y)) => diff_at(&child, None, x, y, out),
            (Some(x), None) => out.push(Change {
                path: child,
                array: None,
                what: What::Removed(x.clone()),
            }),
            (None, Some(y)) => out.push(Change {
                path: child,
                array: None,
                what: What::Added(y.clone()),
            }),
            (None, None) => {}
        }
    }
}

/// `path.key`, or `path["odd key"]` when the key is not a plain word.
fn join(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{}]", Value::String(key.to_string())),
    }
}

/// The identity of each item (`name=…` or `type=…`) when every item is an object with a
/// unique identity, and whether any has a `name` (the array is then a set of named objects).
fn keys(items: &[Value]) -> Option<(Vec<String>, bool)> {
    let mut named = false;
    let mut ids = Vec::with_capacity(items.len());
    for item in items {
        let object = item.as_object()?;
        let id = match (object.get("name"), object.get("type")) {
            (Some(Value::String(name)), _) => {
                named = true;
                format!("name={name}")
            }
            (None, Some(Value::String(kind))) => format!("type={kind}"),
            _ => return None,
        };
        if ids.contains(&id) {
            return None;
        }
        ids.push(id);
    }
    Some((ids, named))
}

fn diff_keyed(
    path: &str,
    a: &[Value],
    ka: &[String],
    b: &[Value],
    kb: &[String],
    out: &mut Vec<Change>,
) {
    let label = |id: &str| format!("{path}[{id}]");
    for (item, id) in a.iter().zip(ka) {
        match kb.iter().position(|k| k == id) {
            Some(j) => diff_at(&label(id), Some(path), item, &b[j], out),
            None => out.push(Change {
                path: label(id),
                array: Some(path.to_string()),
                what: What::Removed(item.clone()),
            }),
        }
    }
    for (item, id) in b.iter().zip(kb) {
        if !ka.contains(id) {
            out.push(Change {
                path: label(id),
                array: Some(path.to_string()),
                what: What::Added(item.clone()),
            });
        }
    }
    let common_a: Vec<String> = ka.iter().filter(|k| kb.contains(k)).cloned().collect();
    let common_b: Vec<String> = kb.iter().filter(|k| ka.contains(k)).cloned().collect();
    if common_a != common_b {
        out.push(Change {
            path: path.to_string(),
            array: None,
            what: What::Reordered(common_a, common_b),
        });
    }
}

/// What an item is, for alignment: `type/role` of an object, the value of a scalar.
fn kind(item: &Value) -> String {
    match item {
        Value::Object(o) => {
            let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
            format!("{{{}/{}}}", field("type"), field("role"))
        }
        Value::Array(_) => "[]".to_string(),
        scalar => scalar.to_string(),
    }
}

/// ` role=developer` / ` type=function_call`: what an item is, for its path.
fn hint(item: &Value) -> String {
    let field = |k: &str| item.get(k).and_then(Value::as_str);
    match (field("role"), field("type")) {
        (Some(role), _) => format!(" role={role}"),
        (None, Some(kind)) => format!(" type={kind}"),
        _ => String::new(),
    }
}

/// Scalar leaves of a value as `path=value` strings.
fn leaves(value: &Value, path: &mut String, out: &mut Vec<String>) {
    match value {
        Value::Object(o) => {
            for (k, v) in o {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                leaves(v, path, out);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                leaves(v, path, out);
                path.truncate(len);
            }
        }
        scalar => out.push(format!("{path}={scalar}")),
    }
}

/// How alike two values are: the share of scalar leaves they have in common, 0 to 1.
fn similarity(a: &Value, b: &Value) -> f64 {
    if a == b {
        return 1.0;
    }
    let (mut la, mut lb) = (Vec::new(), Vec::new());
    leaves(a, &mut String::new(), &mut la);
    leaves(b, &mut String::new(), &mut lb);
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for l in &la {
        *counts.entry(l).or_default() += 1;
    }
    let mut common = 0usize;
    for l in &lb {
        if let Some(n) = counts.get_mut(l.as_str()).filter(|n| **n > 0) {
            *n -= 1;
            common += 1;
        }
    }
    let most = la.len().max(lb.len()).max(1);
    common as f64 / most as f64
}

/// Aligns two arrays in order (items match only items of the same kind, the most alike
/// pairs preferred) and diffs the pairs; the rest are additions and removals.
fn diff_aligned(path: &str, a: &[Value], b: &[Value], out: &mut Vec<Change>) {
    let (ka, kb): (Vec<String>, Vec<String>) =
        (a.iter().map(kind).collect(), b.iter().map(kind).collect());
    let weigh = a.len() * b.len() <= SIMILARITY_BUDGET;
    let score = |i: usize, j: usize| -> Option<f64> {
        // Squared, so one close pair outweighs two loose ones: two swapped parts read as
        // one part moved, not as both rewritten.
        (ka[i] == kb[j]).then(|| {
            if weigh {
                similarity(&a[i], &b[j]).powi(2)
            } else {
                1.0
            }
        })
    };
    // best[i][j]: the best total score aligning a[i..] with b[j..].
    let (n, m) = (a.len(), b.len());
    let mut best = vec![vec![0.0f64; m + 1]; n + 1];
    let mut scores = vec![vec![None; m]; n];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            scores[i][j] = score(i, j);
            let mut here = best[i + 1][j].max(best[i][j + 1]);
            if let Some(s) = scores[i][j] {
                here = here.max(best[i + 1][j + 1] + s);
            }
            best[i][j] = here;
        }
    }
    let (mut i, mut j) = (0, 0);
    let item = |index: String, v: &Value| format!("{path}[{index}{}]", hint(v));
    let push = |out: &mut Vec<Change>, p: String, what: What| {
        out.push(Change {
            path: p,
            array: Some(path.to_string()),
            what,
        })
    };
    while i < n || j < m {
        let matched = i < n
            && j < m
            && scores[i][j].is_some_and(|s| (best[i][j] - (best[i + 1][j + 1] + s)).abs() < 1e-9);
        if matched {
            let index = if i == j {
                i.to_string()
            } else {
                format!("{i}->{j}")
            };
            diff_at(&item(index, &b[j]), Some(path), &a[i], &b[j], out);
            i += 1;
            j += 1;
        } else if i < n && (j == m || (best[i][j] - best[i + 1][j]).abs() < 1e-9) {
            push(out, item(i.to_string(), &a[i]), What::Removed(a[i].clone()));
            i += 1;
        } else {
            push(out, item(j.to_string(), &b[j]), What::Added(b[j].clone()));
            j += 1;
        }
    }
}

/// Two strings that share a long start, both cut to begin a little before they differ
/// (`…` marks the cut), so a shown line reaches the difference.
fn from_difference(a: &str, b: &str) -> (Value, Value) {
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    let skip = common.saturating_sub(20);
    if skip < 20 {
        return (Value::String(a.into()), Value::String(b.into()));
    }
    let cut = |s: &str| Value::String(format!("…{}", s.chars().skip(skip).collect::<String>()));
    (cut(a), cut(b))
}

/// A value as compact JSON, cut to [`SHOWN`] characters.
pub fn show(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= SHOWN {
        return text;
    }
    let cut: String = text.chars().take(SHOWN).collect();
    format!("{cut}…")
}

/// The difference between the model requests of two runs of one scenario.
#[derive(Debug, Clone, PartialEq)]
pub struct RequestsDiff {
    /// Requests in the older run.
    pub old_count: usize,
    /// Requests in the newer run.
    pub new_count: usize,
    /// The changes of each request both runs made (same position), when there are any.
    pub changed: Vec<(usize, Vec<Change>)>,
    /// Requests only the older run made (their positions) and a summary of each.
    pub only_old: Vec<(usize, String)>,
    /// Requests only the newer run made.
    pub only_new: Vec<(usize, String)>,
}

/// Compares normalised requests position by position.
pub fn diff_requests(old: &[Value], new: &[Value]) -> RequestsDiff {
    let changed = old
        .iter()
        .zip(new)
        .enumerate()
        .map(|(i, (a, b))| (i, diff(a, b)))
        .filter(|(_, c)| !c.is_empty())
        .collect();
    let extra = |list: &[Value], from: usize| -> Vec<(usize, String)> {
        list.iter()
            .enumerate()
            .skip(from)
            .map(|(i, r)| (i, summary(r)))
            .collect()
    };
    RequestsDiff {
        old_count: old.len(),
        new_count: new.len(),
        changed,
        only_old: extra(old, new.len()),
        only_new: extra(new, old.len()),
    }
}

/// `POST /v1/responses, 4 input items, last user text "hello?"`.
fn summary(request: &Value) -> String {
    let field = |k: &str| request.get(k).and_then(Value::as_str).unwrap_or("?");
    let inputs = request
        .pointer("/body/input")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    format!(
        "{} {}, {inputs} input items",
        field("method"),
        field("path")
    )
}

impl RequestsDiff {
    /// Whether the two runs sent the same requests.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.only_old.is_empty() && self.only_new.is_empty()
    }

    /// How many changes: changed paths plus requests only one run made.
    pub fn count(&self) -> usize {
        self.changed.iter().map(|(_, c)| c.len()).sum::<usize>()
            + self.only_old.len()
            + self.only_new.len()
    }

    /// Readable text: one block per request that differs, at most `limit` lines each.
    pub fn to_text(&self, limit: usize) -> String {
        if self.is_empty() {
            return "no change\n".to_string();
        }
        let mut text = String::new();
        if self.old_count != self.new_count {
            text.push_str(&format!(
                "requests: {} -> {}\n",
                self.old_count, self.new_count
            ));
        }
        for (i, changes) in &self.changed {
            text.push_str(&format!("request #{i}:\n"));
            let lines = lines(changes);
            for line in lines.iter().take(limit) {
                text.push_str(&format!("  {line}\n"));
            }
            if lines.len() > limit {
                text.push_str(&format!("  … and {} more\n", lines.len() - limit));
            }
        }
        for (i, s) in &self.only_old {
            text.push_str(&format!("request #{i}: only in the older run ({s})\n"));
        }
        for (i, s) in &self.only_new {
            text.push_str(&format!("request #{i}: only in the newer run ({s})\n"));
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(old: Value, new: Value) -> Vec<String> {
        lines(&diff(&old, &new))
    }

    #[test]
    fn objects_show_added_removed_and_changed_fields() {
        let old = json!({"body": {"instructions": "long", "stream": true, "reasoning": null},
                         "headers": {"x-codex-turn-metadata": {"turn_id": "<turn-1>"}}});
        let new = json!({"body": {"stream": true, "reasoning": {"summary": "auto"}},
                         "headers": {"x-codex-turn-metadata": {"turn_id": "<turn-1>", "window_id": "<thread-1>:0"}}});
        assert_eq!(
            text(old, new),
            [
                "- body.instructions: \"long\"",
                "~ body.reasoning: null -> {\"summary\":\"auto\"}",
                "+ headers.x-codex-turn-metadata.window_id: \"<thread-1>:0\"",
            ]
        );
        assert!(diff(&json!({"a": [1, {"b": 2}]}), &json!({"a": [1, {"b": 2}]})).is_empty());
        assert_eq!(
            text(json!({"odd key": 1}), json!({"odd key": 2})),
            ["~ [\"odd key\"]: 1 -> 2"]
        );
    }

    #[test]
    fn tools_match_by_name_whatever_their_order() {
        let old = json!({"tools": [
            {"type": "function", "name": "exec_command", "strict": false},
            {"type": "function", "name": "update_plan"},
            {"type": "web_search"}
        ]});
        let new = json!({"tools": [
            {"type": "web_search"},
            {"type": "function", "name": "exec_command", "strict": true},
            {"type": "function", "name": "get_goal"}
        ]});
        assert_eq!(
            text(old, new),
            [
                "~ tools[name=exec_command].strict: false -> true",
                "- tools[name=update_plan]: {\"type\":\"function\",\"name\":\"update_plan\"}",
                "+ tools[name=get_goal]: {\"type\":\"function\",\"name\":\"get_goal\"}",
                "~ tools: order name=exec_command, type=web_search -> type=web_search, name=exec_command",
            ]
        );
    }

    #[test]
    fn an_inserted_message_is_one_addition_not_a_cascade() {
        let msg = |role: &str, texts: &[&str]| {
            json!({"type": "message", "role": role,
                   "content": texts.iter().map(|t| json!({"type": "input_text", "text": t})).collect::<Vec<_>>()})
        };
        let old = json!({"input": [
            msg("developer", &["skills v1", "permissions"]),
            msg("user", &["env"]),
            msg("user", &["hello?"])
        ]});
        let new = json!({"input": [
            msg("developer", &["base prompt"]),
            msg("developer", &["skills v2", "permissions"]),
            msg("user", &["env"]),
            msg("user", &["hello?"])
        ]});
        assert_eq!(
            text(old, new),
            [
                "+ input[0 role=developer]: {\"type\":\"message\",\"role\":\"developer\",\"content\":[{\"type\":\"input_text\",\"text\":\"base prompt\"}]}",
                "~ input[0->1 role=developer].content[0 type=input_text].text: \"skills v1\" -> \"skills v2\"",
            ]
        );
    }

    #[test]
    fn swapped_parts_read_as_a_move_and_a_rewrite_as_a_change() {
        let part = |t: &str| json!({"type": "input_text", "text": t});
        assert_eq!(
            text(
                json!([part("perm"), part("skills v1")]),
                json!([part("skills v2"), part("perm")])
            ),
            [
                "+ [0 type=input_text]: {\"type\":\"input_text\",\"text\":\"skills v2\"}",
                "- [1 type=input_text]: {\"type\":\"input_text\",\"text\":\"skills v1\"}",
            ]
        );
        assert_eq!(
            text(json!([part("hello")]), json!([part("bye")])),
            ["~ [0 type=input_text].text: \"hello\" -> \"bye\""]
        );
    }

    #[test]
    fn scalar_lists_show_members_added_and_removed() {
        assert_eq!(
            text(
                json!({"include": []}),
                json!({"include": ["reasoning.encrypted_content"]})
            ),
            ["+ include[0]: \"reasoning.encrypted_content\""]
        );
        assert_eq!(
            text(json!(["a", "b", "c"]), json!(["a", "c", "d"])),
            ["- [1]: \"b\"", "+ [2]: \"d\""]
        );
    }

    #[test]
    fn tools_appearing_in_an_empty_list_are_named() {
        assert_eq!(
            text(json!({"tools": []}), json!({"tools": [{"name": "a"}]})),
            ["+ tools[name=a]: {\"name\":\"a\"}"]
        );
    }

    #[test]
    fn many_items_of_one_array_are_summarised() {
        let old = json!({"tools": [{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}, {"name": "e"}]});
        let new = json!({"tools": [{"name": "a"}]});
        assert_eq!(
            text(old, new),
            ["- tools: 4 items removed: [name=b] [name=c] [name=d] [name=e]"]
        );
    }

    #[test]
    fn request_lists_report_counts_and_extra_requests() {
        let r = |stream: bool| json!({"method": "POST", "path": "/v1/responses", "body": {"stream": stream, "input": [1, 2]}});
        let d = diff_requests(&[r(true)], &[r(false), r(true)]);
        assert!(!d.is_empty());
        assert_eq!(d.count(), 2);
        assert_eq!(
            d.to_text(10),
            "requests: 1 -> 2\nrequest #0:\n  ~ body.stream: true -> false\nrequest #1: only in the newer run (POST /v1/responses, 2 input items)\n"
        );
        let same = diff_requests(&[r(true)], &[r(true)]);
        assert!(same.is_empty());
        assert_eq!(same.to_text(10), "no change\n");
        let many: Vec<Value> = (0..5).map(|i| json!({"k": i})).collect();
        let d = diff_requests(
            &[json!({})],
            &[Value::Object(
                many.iter()
                    .enumerate()
                    .map(|(i, v)| (format!("f{i}"), v.clone()))
                    .collect(),
            )],
        );
        assert!(
            d.to_text(2).ends_with("  … and 3 more\n"),
            "{}",
            d.to_text(2)
        );
    }

    #[test]
    fn changed_texts_are_shown_from_where_they_differ() {
        let (a, b) = (
            format!("{}END-A", "x".repeat(150)),
            format!("{}END-B", "x".repeat(150)),
        );
        let x16 = "x".repeat(16);
        assert_eq!(
            text(json!({"t": a}), json!({"t": b})),
            [format!("~ t: \"…{x16}END-A\" -> \"…{x16}END-B\"")]
        );
        assert_eq!(
            text(json!("ab"), json!("ac")),
            ["~ (root): \"ab\" -> \"ac\""]
        );
    }

    #[test]
    fn long_values_are_cut() {
        let long = "x".repeat(300);
        let line = &text(json!({"a": long}), json!({}))[0];
        assert!(line.ends_with("xxx…"), "{line}");
        assert!(line.chars().count() < 120, "{line}");
    }
}
