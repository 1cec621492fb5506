//! The changes the exec mutations make to a session's `codex exec` runs
//! ([`crate::client_check::mutation`] names them and says what each expects): what a next
//! release, an older one or a failing model could print instead of the recorded stream.
//! Each returns whether it changed anything, so that a mutation with nothing to change is
//! reported as not applicable.

use serde_json::{Map, Value, json};

use crate::app_server::exec::event_type;
use crate::client_check::script::ExecScript;

/// The event type `unknown-event` adds: no codex release prints it.
pub const UNKNOWN_EVENT: &str = "codex_parity.unknown_event";
/// The item type `unknown-item` adds.
pub const UNKNOWN_ITEM: &str = "codex_parity_unknown_item";
/// The message of the failure `turn-failed` serves.
pub const FAILED_MESSAGE: &str = "the turn failed (client-check turn-failed)";

/// Whether an event ends a turn.
fn terminal(event: &Value) -> bool {
    matches!(event_type(event), "turn.completed" | "turn.failed")
}

/// `no-terminal-event`: every `turn.completed` and `turn.failed` left out, exit 0.
pub fn no_terminal_event(runs: &mut [ExecScript]) -> bool {
    let mut changed = false;
    for run in runs.iter_mut() {
        let before = run.events.len();
        run.events.retain(|e| !terminal(e));
        if run.events.len() != before {
            run.exit = 0;
            changed = true;
        }
    }
    changed
}

/// `turn-failed`: every `turn.completed` replaced by an `error` event and a `turn.failed`
/// (as codex prints a failed turn), exit 1.
pub fn turn_failed(runs: &mut [ExecScript]) -> bool {
    let mut changed = false;
    for run in runs.iter_mut() {
        let mut out = Vec::with_capacity(run.events.len() + 1);
        for event in run.events.drain(..) {
            if event_type(&event) == "turn.completed" {
                out.push(json!({"type": "error", "message": FAILED_MESSAGE}));
                out.push(json!({"type": "turn.failed", "error": {"message": FAILED_MESSAGE}}));
                run.exit = 1;
                changed = true;
            } else {
                out.push(event);
            }
        }
        run.events = out;
    }
    changed
}

/// `events` inserted right after each `turn.started` (`unknown-event`, `unknown-item`).
pub fn after_turn_started(runs: &mut [ExecScript], events: &[Value]) -> bool {
    let mut changed = false;
    for run in runs.iter_mut() {
        let mut out = Vec::with_capacity(run.events.len() + events.len());
        for event in run.events.drain(..) {
            let started = event_type(&event) == "turn.started";
            out.push(event);
            if started {
                out.extend(events.iter().cloned());
                changed = true;
            }
        }
        run.events = out;
    }
    changed
}

/// The event `unknown-event` adds.
pub fn unknown_event() -> Vec<Value> {
    vec![json!({
        "type": UNKNOWN_EVENT,
        "note": "an event type no codex release prints (client-check unknown-event)"
    })]
}

/// The item `unknown-item` adds: started, then completed.
pub fn unknown_item() -> Vec<Value> {
    let item = json!({
        "id": "item_codex_parity",
        "type": UNKNOWN_ITEM,
        "note": "an item type no codex release prints (client-check unknown-item)"
    });
    vec![
        json!({"type": "item.started", "item": item}),
        json!({"type": "item.completed", "item": item}),
    ]
}

/// `renamed-field`: each item's `type` named `item_type`, and `agent_message` named
/// `assistant_message`, as codex's stream named them before.
pub fn renamed_field(runs: &mut [ExecScript]) -> bool {
    let mut changed = false;
    for event in runs.iter_mut().flat_map(|r| r.events.iter_mut()) {
        let Some(Value::Object(item)) = event.get_mut("item") else {
            continue;
        };
        if let Some(kind) = item.remove("type") {
            let kind = match kind.as_str() {
                Some("agent_message") => json!("assistant_message"),
                _ => kind,
            };
            // Keep the key's place among the others: rebuild the object in order.
            let mut renamed = Map::new();
            renamed.insert("item_type".into(), kind);
            renamed.extend(std::mem::take(item));
            *item = renamed;
            changed = true;
        }
    }
    changed
}

/// `duplicate-items`: every `item.started`, `item.updated` and `item.completed` printed
/// twice.
pub fn duplicate_items(runs: &mut [ExecScript]) -> bool {
    let mut changed = false;
    for run in runs.iter_mut() {
        let mut out = Vec::with_capacity(run.events.len() * 2);
        for event in run.events.drain(..) {
            if event_type(&event).starts_with("item.") {
                out.push(event.clone());
                changed = true;
            }
            out.push(event);
        }
        run.events = out;
    }
    changed
}

/// `exit-mid-stream`: the first run that starts a turn ends right after the turn's first
/// item event (else right after `turn.started`), with status 1.
pub fn exit_mid_stream(runs: &mut [ExecScript]) -> bool {
    for run in runs.iter_mut() {
        let Some(start) = run
            .events
            .iter()
            .position(|e| event_type(e) == "turn.started")
        else {
            continue;
        };
        let cut = run.events[start + 1..]
            .iter()
            .position(|e| event_type(e).starts_with("item.") && !terminal(e))
            .map_or(start + 1, |i| start + i + 2);
        run.events.truncate(cut);
        run.exit = 1;
        run.cut = true;
        return true;
    }
    false
}

/// `other-usage`: `turn.completed`'s `usage` in the other convention than the session's,
/// for each thread run more than once: per turn where later runs report running totals
/// (every number at least the earlier run's, as codex 0.131.0 to 0.171.0 report a resumed
/// thread), running totals where they do not. `Ok` with what was served, `Err` with why
/// nothing changes.
pub fn other_usage(runs: &mut [ExecScript]) -> Result<String, String> {
    let mut threads: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        let Some(thread) = run.thread_id().map(str::to_string) else {
            continue;
        };
        if usage(run).is_none() {
            continue;
        }
        match threads.iter_mut().find(|(t, _)| *t == thread) {
            Some((_, list)) => list.push(i),
            None => threads.push((thread, vec![i])),
        }
    }
    let mut said = Vec::new();
    for (_, list) in threads.iter().filter(|(_, l)| l.len() > 1) {
        let before: Vec<Map<String, Value>> = list
            .iter()
            .filter_map(|&i| usage(&runs[i]).cloned())
            .collect();
        let totals = before.windows(2).all(|w| at_least(&w[1], &w[0]));
        for (k, &i) in list.iter().enumerate().skip(1) {
            let served = if totals {
                combine(&before[k], &before[k - 1], |a, b| (a - b).max(0))
            } else {
                (0..k).fold(before[k].clone(), |sum, j| {
                    combine(&sum, &before[j], |a, b| a + b)
                })
            };
            if let Some(slot) = usage_mut(&mut runs[i]) {
                *slot = served;
            }
        }
        said.push(if totals {
            "per turn (the session's runs of a thread report running totals)"
        } else {
            "as running totals (the session's runs of a thread report each turn alone)"
        });
    }
    said.dedup();
    if said.is_empty() {
        return Err(
            "the session runs no thread twice with a usage: one run's usage is the same per \
             turn and in total"
                .into(),
        );
    }
    Ok(format!("turn.completed's usage served {}", said.join("; ")))
}

/// The `usage` of a run's `turn.completed`.
fn usage(run: &ExecScript) -> Option<&Map<String, Value>> {
    run.events
        .iter()
        .find(|e| event_type(e) == "turn.completed")
        .and_then(|e| e.get("usage"))
        .and_then(Value::as_object)
}

fn usage_mut(run: &mut ExecScript) -> Option<&mut Map<String, Value>> {
    run.events
        .iter_mut()
        .find(|e| event_type(e) == "turn.completed")
        .and_then(|e| e.get_mut("usage"))
        .and_then(Value::as_object_mut)
}

/// Whether every number of `later` is at least the same number of `earlier`.
fn at_least(later: &Map<String, Value>, earlier: &Map<String, Value>) -> bool {
    earlier.iter().all(
        |(k, v)| match (v.as_i64(), later.get(k).and_then(Value::as_i64)) {
            (Some(a), Some(b)) => b >= a,
            _ => true,
        },
    )
}

/// `a` with each number combined with `b`'s of the same key.
fn combine(
    a: &Map<String, Value>,
    b: &Map<String, Value>,
    f: impl Fn(i64, i64) -> i64,
) -> Map<String, Value> {
    a.iter()
        .map(|(k, v)| {
            let value = match (v.as_i64(), b.get(k).and_then(Value::as_i64)) {
                (Some(x), Some(y)) => json!(f(x, y)),
                _ => v.clone(),
            };
            (k.clone(), value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: Vec<Value>) -> ExecScript {
        ExecScript::from_events(events)
    }

    fn turn(thread: &str, text: &str, input: i64) -> ExecScript {
        run(vec![
            json!({"type": "thread.started", "thread_id": thread}),
            json!({"type": "turn.started"}),
            json!({"type": "item.completed", "item": {"id": "item_0", "type": "agent_message", "text": text}}),
            json!({"type": "turn.completed", "usage": {"input_tokens": input, "output_tokens": 3}}),
        ])
    }

    fn types(run: &ExecScript) -> Vec<&str> {
        run.events.iter().map(event_type).collect()
    }

    #[test]
    fn each_exec_mutation_changes_what_it_says() {
        let mut runs = vec![turn("t", "a", 10)];
        assert!(no_terminal_event(&mut runs));
        assert_eq!(
            types(&runs[0]),
            ["thread.started", "turn.started", "item.completed"]
        );
        assert_eq!(runs[0].exit, 0);

        let mut runs = vec![turn("t", "a", 10)];
        assert!(turn_failed(&mut runs));
        assert_eq!(&types(&runs[0])[3..], ["error", "turn.failed"]);
        assert_eq!(runs[0].exit, 1);

        let mut runs = vec![turn("t", "a", 10)];
        assert!(after_turn_started(&mut runs, &unknown_item()));
        assert_eq!(runs[0].events[2]["item"]["type"], UNKNOWN_ITEM);
        assert_eq!(types(&runs[0])[2..4], ["item.started", "item.completed"]);

        let mut runs = vec![turn("t", "a", 10)];
        assert!(renamed_field(&mut runs));
        let item = &runs[0].events[2]["item"];
        assert_eq!(item["item_type"], "assistant_message");
        assert!(item.get("type").is_none());
        assert_eq!(runs[0].final_message(), Some("a"));

        let mut runs = vec![turn("t", "a", 10)];
        assert!(duplicate_items(&mut runs));
        assert_eq!(
            types(&runs[0])
                .iter()
                .filter(|t| **t == "item.completed")
                .count(),
            2
        );

        let mut runs = vec![turn("t", "a", 10), turn("t", "b", 30)];
        assert!(exit_mid_stream(&mut runs));
        assert_eq!(
            types(&runs[0]),
            ["thread.started", "turn.started", "item.completed"]
        );
        assert_eq!((runs[0].exit, runs[0].cut), (1, true));
        assert_eq!(runs[1].events.len(), 4, "only the first run is cut");
    }

    #[test]
    fn other_usage_turns_running_totals_into_turns_and_back() {
        // As codex reports a resumed thread: the second run's usage is the thread's total.
        let mut runs = vec![turn("t", "a", 10), turn("t", "b", 30), turn("u", "c", 5)];
        let said = other_usage(&mut runs).unwrap();
        assert!(said.contains("per turn"), "{said}");
        assert_eq!(usage(&runs[1]).unwrap()["input_tokens"], 20);
        assert_eq!(usage(&runs[1]).unwrap()["output_tokens"], 0);
        assert_eq!(usage(&runs[0]).unwrap()["input_tokens"], 10);
        // Per turn (a later run reports less): served as running totals.
        let mut runs = vec![turn("t", "a", 10), turn("t", "b", 4)];
        assert!(other_usage(&mut runs).unwrap().contains("running totals"));
        assert_eq!(usage(&runs[1]).unwrap()["input_tokens"], 14);
        let mut alone = vec![turn("t", "a", 10)];
        assert!(
            other_usage(&mut alone)
                .unwrap_err()
                .contains("no thread twice")
        );
    }
}
