//! The mutations `client-check` serves a session with, each in a run of its own: what a
//! next codex release, a loaded server or a crash could send the client instead of what was
//! recorded. Some change app-server connections, some `codex exec` runs (their changes are
//! in [`crate::client_check::exec_mutation`]), and `none`, `extra-field`, `slow` and
//! `as:VERSION` both. [`Mutation::apply`] turns the recorded [`Script`] into the served
//! one, or says why the mutation has nothing to change in this session (never counted as
//! passed).

use serde_json::{Map, Value, json};

use crate::client_check::exec_mutation as exec;
use crate::client_check::script::{Kinds, MockStep, Reply, Script};

/// A method no codex schema has, sent by `unknown-notification`.
pub const UNKNOWN_METHOD: &str = "codexParity/unknownNotification";
/// The field `extra-field` adds to every object.
pub const EXTRA_FIELD: &str = "codexParityExtraField";
/// The turn status `unknown-enum` puts in `turn/completed`.
pub const UNKNOWN_STATUS: &str = "codexParityUnknownStatus";
/// The pause between messages of `slow` without a number, in milliseconds.
pub const SLOW_MS: u64 = 250;

/// One way to serve the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mutation {
    /// As recorded.
    None,
    /// Every message of the method left out (an answer: the request is never answered).
    Drop(String),
    /// Every notification or server request of the method sent twice.
    Duplicate(String),
    /// A notification of a method no schema has, right after `turn/started`.
    UnknownNotification,
    /// A turn status no schema has in every `turn/completed`.
    UnknownEnum,
    /// A new optional field on every object codex sends.
    ExtraField,
    /// Neighbouring notifications of different items swapped.
    Reorder,
    /// -32001 "Server overloaded; retry later." to the first `turn/start`.
    Overloaded,
    /// The app-server exits right after the first `turn/started`.
    ExitMidTurn,
    /// A pause of this many milliseconds before every message.
    Slow(u64),
    /// The same session as this codex version sent it.
    As(String),
    /// exec: no `turn.completed` (or `turn.failed`) at the end of a run, exit 0.
    NoTerminalEvent,
    /// exec: `turn.failed` instead of `turn.completed`, exit 1.
    TurnFailed,
    /// exec: an event of a type no release prints, after each `turn.started`.
    UnknownEvent,
    /// exec: an item of a type no release prints, after each `turn.started`.
    UnknownItem,
    /// exec: `item.type` named `item_type` and `agent_message` named `assistant_message`,
    /// as older releases named them.
    RenamedField,
    /// exec: every item event printed twice.
    DuplicateItems,
    /// exec: `turn.completed`'s `usage` in the other convention (per turn or running
    /// totals).
    OtherUsage,
    /// exec: the first run exits 1 mid-stream.
    ExitMidStream,
}

/// What a client should do to pass a mutation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expect {
    /// Exit 0 with every server request answered.
    Survive,
    /// Exit on its own (any status, no signal) within the time limit: never hang.
    End,
    /// Exit non-zero on its own within the time limit: the run failed, and a client that
    /// exits 0 took it for success.
    Fail,
    /// Either survive, printing what it printed for `none`, or fail cleanly (exit non-zero
    /// on its own): anything but silently wrong output, a hang or a crash.
    Cope,
}

impl Expect {
    /// The word in tables: `survive`, `end`, `fail` or `cope`.
    pub fn word(self) -> &'static str {
        match self {
            Expect::Survive => "survive",
            Expect::End => "end",
            Expect::Fail => "fail",
            Expect::Cope => "cope",
        }
    }
}

/// The word for every mutation in `--mutations` and `--must-survive`.
pub const ALL: &str = "all";

/// The mutations of an app-server session run when `--mutations` is not given (and what
/// `all` stands for then).
pub const DEFAULT_APP_SERVER: &str = "none,drop:turn/completed,\
duplicate:item/agentMessage/delta,unknown-notification,unknown-enum,extra-field,reorder,\
overloaded,exit-mid-turn,slow";

/// The mutations of a session of `codex exec` runs run when `--mutations` is not given
/// (and what `all` stands for then).
pub const DEFAULT_EXEC: &str = "none,no-terminal-event,turn-failed,unknown-event,\
unknown-item,renamed-field,duplicate-items,other-usage,exit-mid-stream,extra-field,slow";

/// The default list for a session of `kinds`: the app-server list, the exec list, or both
/// (each mutation once).
pub fn default_for(kinds: Kinds) -> String {
    match (kinds.app_server, kinds.exec) {
        (true, true) => format!("{DEFAULT_APP_SERVER},{DEFAULT_EXEC}"),
        (false, true) => DEFAULT_EXEC.into(),
        _ => DEFAULT_APP_SERVER.into(),
    }
}

impl Mutation {
    /// Reads one mutation as `--mutations` names it.
    pub fn parse(text: &str) -> Result<Mutation, String> {
        let (name, arg) = match text.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (text, None),
        };
        let needs = |what: &str| {
            arg.filter(|a| !a.is_empty())
                .map(str::to_string)
                .ok_or(format!("`{name}` needs {what}: `{name}:{what}`"))
        };
        Ok(match name {
            "none" => Mutation::None,
            "drop" => Mutation::Drop(needs("METHOD")?),
            "duplicate" => Mutation::Duplicate(needs("METHOD")?),
            "unknown-notification" => Mutation::UnknownNotification,
            "unknown-enum" => Mutation::UnknownEnum,
            "extra-field" => Mutation::ExtraField,
            "reorder" => Mutation::Reorder,
            "overloaded" => Mutation::Overloaded,
            "exit-mid-turn" => Mutation::ExitMidTurn,
            "slow" => Mutation::Slow(match arg {
                Some(ms) => ms
                    .parse()
                    .map_err(|_| format!("`slow:{ms}`: the pause is in whole milliseconds"))?,
                None => SLOW_MS,
            }),
            "as" => Mutation::As(needs("VERSION")?),
            "no-terminal-event" => Mutation::NoTerminalEvent,
            "turn-failed" => Mutation::TurnFailed,
            "unknown-event" => Mutation::UnknownEvent,
            "unknown-item" => Mutation::UnknownItem,
            "renamed-field" => Mutation::RenamedField,
            "duplicate-items" => Mutation::DuplicateItems,
            "other-usage" => Mutation::OtherUsage,
            "exit-mid-stream" => Mutation::ExitMidStream,
            _ => {
                return Err(format!(
                    "unknown mutation `{text}`: the mutations are none, extra-field, \
                     slow[:MS] and as:VERSION; for app-server clients drop:METHOD, \
                     duplicate:METHOD, unknown-notification, unknown-enum, reorder, \
                     overloaded and exit-mid-turn; for codex exec clients no-terminal-event, \
                     turn-failed, unknown-event, unknown-item, renamed-field, \
                     duplicate-items, other-usage and exit-mid-stream; or `all`"
                ));
            }
        })
    }

    /// A comma-separated list of mutations, in order, each once; `all` stands for the
    /// default list of a session of `kinds` ([`default_for`]: every mutation of those kinds
    /// with its default argument; `as:VERSION` is named on its own).
    pub fn parse_list(text: &str, kinds: Kinds) -> Result<Vec<Mutation>, String> {
        let mut out: Vec<Mutation> = Vec::new();
        for word in text.split(',').map(str::trim).filter(|t| !t.is_empty()) {
            let more = if word == ALL {
                Mutation::parse_list(&default_for(kinds), kinds)?
            } else {
                vec![Mutation::parse(word)?]
            };
            for m in more {
                if !out.contains(&m) {
                    out.push(m);
                }
            }
        }
        Ok(out)
    }

    /// Whether a client that copes prints what it printed for `none`: the session says the
    /// same, only delivered otherwise (a message twice, another order, an unknown field or
    /// notification, pauses). Its stdout is then held against `none`'s.
    pub fn keeps_output(&self) -> bool {
        matches!(
            self,
            Mutation::Duplicate(_)
                | Mutation::Reorder
                | Mutation::ExtraField
                | Mutation::UnknownNotification
                | Mutation::Slow(_)
                | Mutation::UnknownEvent
                | Mutation::UnknownItem
                | Mutation::DuplicateItems
        )
    }

    /// Whether a difference from `none`'s output is worth a note, not a failure: the
    /// session says something else (other numbers), which a client may well print.
    pub fn notes_output(&self) -> bool {
        *self == Mutation::OtherUsage
    }

    /// For a mutation that expects the client to fail: what a client that exits 0 took
    /// for success.
    pub fn failure(&self) -> &'static str {
        match self {
            Mutation::NoTerminalEvent => {
                "a run whose stream ended without turn.completed or turn.failed"
            }
            Mutation::TurnFailed => "a failed turn (turn.failed, exit 1)",
            Mutation::ExitMidStream => "a codex exec that exited 1 mid-stream",
            _ => "a session that could not end well",
        }
    }

    /// The mutation as `--mutations` names it.
    pub fn name(&self) -> String {
        match self {
            Mutation::None => "none".into(),
            Mutation::Drop(m) => format!("drop:{m}"),
            Mutation::Duplicate(m) => format!("duplicate:{m}"),
            Mutation::UnknownNotification => "unknown-notification".into(),
            Mutation::UnknownEnum => "unknown-enum".into(),
            Mutation::ExtraField => "extra-field".into(),
            Mutation::Reorder => "reorder".into(),
            Mutation::Overloaded => "overloaded".into(),
            Mutation::ExitMidTurn => "exit-mid-turn".into(),
            Mutation::Slow(ms) if *ms == SLOW_MS => "slow".into(),
            Mutation::Slow(ms) => format!("slow:{ms}"),
            Mutation::As(v) => format!("as:{v}"),
            Mutation::NoTerminalEvent => "no-terminal-event".into(),
            Mutation::TurnFailed => "turn-failed".into(),
            Mutation::UnknownEvent => "unknown-event".into(),
            Mutation::UnknownItem => "unknown-item".into(),
            Mutation::RenamedField => "renamed-field".into(),
            Mutation::DuplicateItems => "duplicate-items".into(),
            Mutation::OtherUsage => "other-usage".into(),
            Mutation::ExitMidStream => "exit-mid-stream".into(),
        }
    }

    /// Whether it changes only `codex exec` runs.
    pub fn exec_only(&self) -> bool {
        matches!(
            self,
            Mutation::NoTerminalEvent
                | Mutation::TurnFailed
                | Mutation::UnknownEvent
                | Mutation::UnknownItem
                | Mutation::RenamedField
                | Mutation::DuplicateItems
                | Mutation::OtherUsage
                | Mutation::ExitMidStream
        )
    }

    /// What the client must do to pass: end rather than hang where the session cannot end
    /// well (a message dropped, codex gone) or where no exit status is right for all clients
    /// (a turn status nobody knows: success or failure is the client's call, the table shows
    /// which it made); fail where an exec run failed or has no outcome (a turn that failed,
    /// that never ended, a codex that exited mid-stream); cope with a stream named as older
    /// releases named it (read it or fail cleanly); survive otherwise.
    pub fn expect(&self) -> Expect {
        match self {
            Mutation::Drop(_) | Mutation::ExitMidTurn | Mutation::UnknownEnum => Expect::End,
            Mutation::NoTerminalEvent | Mutation::TurnFailed | Mutation::ExitMidStream => {
                Expect::Fail
            }
            Mutation::RenamedField => Expect::Cope,
            _ => Expect::Survive,
        }
    }

    /// The script served for this mutation; `Err` with the reason when the session has
    /// nothing it changes. ([`Mutation::As`] is served from another version's session,
    /// which the caller loads; here it changes nothing.)
    pub fn apply(&self, script: &Script) -> Result<Script, String> {
        let mut out = script.clone();
        if self.exec_only() && out.execs.is_empty() {
            return Err("the session has no codex exec run".into());
        }
        let changed = match self {
            Mutation::None | Mutation::As(_) => true,
            Mutation::Slow(ms) => {
                out.gap_ms = *ms;
                true
            }
            Mutation::NoTerminalEvent => exec::no_terminal_event(&mut out.execs),
            Mutation::TurnFailed => exec::turn_failed(&mut out.execs),
            Mutation::UnknownEvent => {
                exec::after_turn_started(&mut out.execs, &exec::unknown_event())
            }
            Mutation::UnknownItem => {
                exec::after_turn_started(&mut out.execs, &exec::unknown_item())
            }
            Mutation::RenamedField => exec::renamed_field(&mut out.execs),
            Mutation::DuplicateItems => exec::duplicate_items(&mut out.execs),
            Mutation::ExitMidStream => exec::exit_mid_stream(&mut out.execs),
            Mutation::OtherUsage => {
                let said = exec::other_usage(&mut out.execs)?;
                out.notes.push(said);
                true
            }
            Mutation::Drop(method) => each(&mut out, |steps| drop(steps, method)),
            Mutation::Duplicate(method) => each(&mut out, |steps| duplicate(steps, method)),
            Mutation::UnknownNotification => each(&mut out, |steps| {
                after_turn_started(steps, unknown_notification(), true)
            }),
            Mutation::UnknownEnum => each(&mut out, |s| unknown_status(s)),
            Mutation::ExtraField => {
                let events = out.execs.iter_mut().flat_map(|e| e.events.iter_mut());
                let mut any = false;
                for event in events.filter(|e| e.is_object()) {
                    add_extra_field(event);
                    any = true;
                }
                each(&mut out, |s| extra_fields(s)) || any
            }
            Mutation::Reorder => each(&mut out, |s| reorder(s)),
            Mutation::Overloaded => each(&mut out, overload),
            Mutation::ExitMidTurn => each(&mut out, |steps| {
                after_turn_started(steps, MockStep::Exit { code: 1 }, false)
            }),
        };
        if changed {
            return Ok(out);
        }
        Err(match self {
            Mutation::Drop(m) | Mutation::Duplicate(m) if !has_method(script, m) => {
                format!("the session has no {m}")
            }
            Mutation::Duplicate(m) => format!(
                "{m} is an answer here: only notifications and server requests are duplicated"
            ),
            Mutation::UnknownEnum => "the session has no turn/completed with a turn status".into(),
            Mutation::Reorder => {
                "the session has no two neighbouring notifications of different items".into()
            }
            Mutation::Overloaded => "the session answers no request after initialize".into(),
            Mutation::ExtraField => "the session sends nothing".into(),
            Mutation::NoTerminalEvent => {
                "no run of the session ends with turn.completed or turn.failed".into()
            }
            Mutation::TurnFailed => "no run of the session has a turn.completed".into(),
            Mutation::UnknownEvent | Mutation::UnknownItem | Mutation::ExitMidStream => {
                "no run of the session has a turn.started".into()
            }
            Mutation::RenamedField => "no run of the session has an item".into(),
            Mutation::DuplicateItems => "no run of the session has an item event".into(),
            _ => "the session has no turn/started".into(),
        })
    }
}

/// Applies `change` to every connection; whether any changed.
fn each(script: &mut Script, mut change: impl FnMut(&mut Vec<MockStep>) -> bool) -> bool {
    let mut any = false;
    for steps in &mut script.connections {
        any |= change(steps);
    }
    any
}

fn has_method(script: &Script, method: &str) -> bool {
    script
        .connections
        .iter()
        .flatten()
        .any(|s| s.method() == Some(method))
}

fn drop(steps: &mut Vec<MockStep>, method: &str) -> bool {
    let before = steps.len();
    let mut silenced = false;
    steps.retain_mut(|step| match step {
        MockStep::Answer {
            method: m, reply, ..
        } if m == method => {
            *reply = Reply::Silence;
            silenced = true;
            true
        }
        other => other.method() != Some(method),
    });
    silenced || steps.len() != before
}

fn duplicate(steps: &mut Vec<MockStep>, method: &str) -> bool {
    let mut out = Vec::with_capacity(steps.len());
    let mut changed = false;
    for step in steps.drain(..) {
        if matches!(step, MockStep::Notify { .. } | MockStep::Ask { .. })
            && step.method() == Some(method)
        {
            out.push(step.clone());
            changed = true;
        }
        out.push(step);
    }
    *steps = out;
    changed
}

fn unknown_notification() -> MockStep {
    MockStep::Notify {
        method: UNKNOWN_METHOD.into(),
        params: json!({"note": "a notification no codex schema has (client-check)"}),
        extra: Map::new(),
    }
}

/// Puts `step` right after the first `turn/started` (each one when `every`).
fn after_turn_started(steps: &mut Vec<MockStep>, step: MockStep, every: bool) -> bool {
    let mut at: Vec<usize> = steps
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s, MockStep::Notify { method, .. } if method == "turn/started"))
        .map(|(i, _)| i + 1)
        .collect();
    if !every {
        at.truncate(1);
    }
    for i in at.iter().rev() {
        steps.insert(*i, step.clone());
    }
    !at.is_empty()
}

fn unknown_status(steps: &mut [MockStep]) -> bool {
    let mut changed = false;
    for step in steps.iter_mut() {
        if let MockStep::Notify { method, params, .. } = step
            && method == "turn/completed"
            && let Some(status) = params.pointer_mut("/turn/status")
        {
            *status = Value::String(UNKNOWN_STATUS.into());
            changed = true;
        }
    }
    changed
}

/// Keys whose values are free-form data (the model's tool arguments, environment and
/// header maps), not protocol objects: `extra-field` leaves them as they are.
pub const FREE_FORM: [&str; 5] = ["arguments", "env", "headers", "metadata", "_meta"];

/// [`EXTRA_FIELD`] added to every object of `value`, except free-form data.
fn add_extra_field(value: &mut Value) {
    match value {
        Value::Object(obj) => {
            for (key, v) in obj.iter_mut() {
                if !FREE_FORM.contains(&key.as_str()) {
                    add_extra_field(v);
                }
            }
            obj.insert(
                EXTRA_FIELD.into(),
                json!("added by client-check extra-field"),
            );
        }
        Value::Array(items) => items.iter_mut().for_each(add_extra_field),
        _ => {}
    }
}

fn extra_fields(steps: &mut [MockStep]) -> bool {
    for step in steps.iter_mut() {
        match step {
            MockStep::Notify { params, .. } | MockStep::Ask { params, .. } => {
                add_extra_field(params)
            }
            MockStep::Answer {
                reply: Reply::Result(result),
                ..
            } => add_extra_field(result),
            _ => {}
        }
    }
    !steps.is_empty()
}

/// The item a notification is about, when it says.
fn item_of(params: &Value) -> Option<&Value> {
    params.get("itemId").or_else(|| params.pointer("/item/id"))
}

/// Notifications whose order the protocol does not fix among themselves: not a turn's
/// or thread's start or end, which frame the rest. (Two of one method, successive states of
/// one thing, are never swapped either.)
fn movable(step: &MockStep) -> Option<&Value> {
    match step {
        MockStep::Notify { method, params, .. }
            if !matches!(
                method.as_str(),
                "turn/started" | "turn/completed" | "thread/started" | "thread/closed"
            ) =>
        {
            Some(params)
        }
        _ => None,
    }
}

fn reorder(steps: &mut [MockStep]) -> bool {
    let mut changed = false;
    let mut i = 0;
    while i + 1 < steps.len() {
        let same_method = steps[i].method() == steps[i + 1].method();
        let swap = match (movable(&steps[i]), movable(&steps[i + 1])) {
            (Some(a), Some(b)) if !same_method => {
                let (a, b) = (item_of(a), item_of(b));
                a.is_none() || b.is_none() || a != b
            }
            _ => false,
        };
        if swap {
            steps.swap(i, i + 1);
            changed = true;
            i += 2;
        } else {
            i += 1;
        }
    }
    changed
}

fn overload(steps: &mut Vec<MockStep>) -> bool {
    let at = steps
        .iter()
        .position(|s| s.answers("turn/start"))
        .or_else(|| {
            steps.iter().position(
                |s| matches!(s, MockStep::Answer { method, .. } if method != "initialize"),
            )
        });
    match at {
        Some(i) => {
            steps.insert(i, MockStep::Overload);
            true
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(method: &str, params: Value) -> MockStep {
        MockStep::Notify {
            method: method.into(),
            params,
            extra: Map::new(),
        }
    }

    fn answer(method: &str) -> MockStep {
        MockStep::Answer {
            method: method.into(),
            reply: Reply::Result(json!({"turn": {"status": "inProgress"}})),
            thread: None,
        }
    }

    fn session() -> Script {
        Script {
            connections: vec![vec![
                answer("initialize"),
                answer("turn/start"),
                note("turn/started", json!({"turn": {"id": "u"}})),
                note("item/started", json!({"item": {"id": "a"}})),
                note("thread/tokenUsage/updated", json!({})),
                note("item/agentMessage/delta", json!({"itemId": "a"})),
                note("item/completed", json!({"item": {"id": "a"}})),
                note("turn/completed", json!({"turn": {"status": "completed"}})),
            ]],
            ..Script::default()
        }
    }

    fn methods(s: &Script) -> Vec<String> {
        s.connections[0]
            .iter()
            .map(|s| s.method().unwrap_or("*").to_string())
            .collect()
    }

    #[test]
    fn every_name_reads_back_as_itself() {
        let list = format!("{DEFAULT_APP_SERVER},{DEFAULT_EXEC},slow:10,as:0.161.0");
        for m in Mutation::parse_list(&list, Kinds::default()).unwrap() {
            assert_eq!(Mutation::parse(&m.name()).unwrap(), m);
        }
        assert!(Mutation::parse("drop").unwrap_err().contains("drop:METHOD"));
        assert!(
            Mutation::parse("nope")
                .unwrap_err()
                .contains("unknown mutation")
        );
        assert!(Mutation::parse("slow:x").is_err());
    }

    #[test]
    fn each_mutation_changes_what_it_says() {
        let s = session();
        let dropped = Mutation::Drop("turn/completed".into()).apply(&s).unwrap();
        assert!(!methods(&dropped).contains(&"turn/completed".into()));
        let silent = Mutation::Drop("turn/start".into()).apply(&s).unwrap();
        assert!(silent.connections[0].contains(&MockStep::Answer {
            method: "turn/start".into(),
            reply: Reply::Silence,
            thread: None,
        }));
        let twice = Mutation::Duplicate("item/agentMessage/delta".into())
            .apply(&s)
            .unwrap();
        assert_eq!(twice.connections[0].len(), 9);
        let unknown = Mutation::UnknownNotification.apply(&s).unwrap();
        assert_eq!(methods(&unknown)[3], UNKNOWN_METHOD);
        let status = Mutation::UnknownEnum.apply(&s).unwrap();
        assert_eq!(
            status.connections[0][7],
            note(
                "turn/completed",
                json!({"turn": {"status": UNKNOWN_STATUS}})
            )
        );
        let extra = Mutation::ExtraField.apply(&s).unwrap();
        assert_eq!(
            extra.connections[0][2],
            note(
                "turn/started",
                json!({"turn": {"id": "u", EXTRA_FIELD: "added by client-check extra-field"},
                       EXTRA_FIELD: "added by client-check extra-field"})
            )
        );
        let moved = Mutation::Reorder.apply(&s).unwrap();
        assert_eq!(
            &methods(&moved)[3..7],
            [
                "thread/tokenUsage/updated",
                "item/started",
                "item/agentMessage/delta",
                "item/completed"
            ]
        );
        let busy = Mutation::Overloaded.apply(&s).unwrap();
        assert_eq!(busy.connections[0][1], MockStep::Overload);
        let crash = Mutation::ExitMidTurn.apply(&s).unwrap();
        assert_eq!(crash.connections[0][3], MockStep::Exit { code: 1 });
        assert_eq!(Mutation::Slow(5).apply(&s).unwrap().gap_ms, 5);
    }

    #[test]
    fn reorder_keeps_one_methods_states_and_extra_field_spares_free_form_data() {
        let s = Script {
            connections: vec![vec![
                note("thread/status/changed", json!({"status": "active"})),
                note("thread/status/changed", json!({"status": "idle"})),
                MockStep::Ask {
                    id: None,
                    method: "item/tool/call".into(),
                    params: json!({"arguments": {"value": 41}, "callId": "c"}),
                    expected: None,
                },
            ]],
            ..Script::default()
        };
        assert!(Mutation::Reorder.apply(&s).is_err());
        let extra = Mutation::ExtraField.apply(&s).unwrap();
        let MockStep::Ask { params, .. } = &extra.connections[0][2] else {
            panic!("not an ask")
        };
        assert_eq!(params["arguments"], json!({"value": 41}));
        assert!(params.get(EXTRA_FIELD).is_some());
    }

    #[test]
    fn all_stands_for_the_default_list_and_each_mutation_runs_once() {
        let app = Kinds::default();
        let all = Mutation::parse_list("all", app).unwrap();
        assert_eq!(all, Mutation::parse_list(DEFAULT_APP_SERVER, app).unwrap());
        let exec = Kinds {
            app_server: false,
            exec: true,
        };
        let execs = Mutation::parse_list("all", exec).unwrap();
        assert_eq!(execs, Mutation::parse_list(DEFAULT_EXEC, exec).unwrap());
        assert!(execs.iter().all(|m| !matches!(m, Mutation::Reorder)));
        let both = Kinds {
            app_server: true,
            exec: true,
        };
        // Both lists, `none`, `extra-field` and `slow` once.
        assert_eq!(
            Mutation::parse_list("all", both).unwrap().len(),
            all.len() + execs.len() - 3
        );
        let more = Mutation::parse_list("none,all,as:0.161.0,none", app).unwrap();
        assert_eq!(more.len(), all.len() + 1);
        assert_eq!(more[0], Mutation::None);
        assert_eq!(more.last(), Some(&Mutation::As("0.161.0".into())));
        assert!(Mutation::Duplicate("x".into()).keeps_output());
        assert!(Mutation::Reorder.keeps_output());
        assert!(!Mutation::None.keeps_output());
        assert!(!Mutation::Drop("x".into()).keeps_output());
        assert!(!Mutation::As("0.161.0".into()).keeps_output());
    }

    #[test]
    fn a_mutation_with_nothing_to_change_says_why() {
        let s = Script {
            connections: vec![vec![answer("initialize")]],
            ..Script::default()
        };
        let why = |m: Mutation| m.apply(&s).unwrap_err();
        assert_eq!(
            why(Mutation::Drop("turn/completed".into())),
            "the session has no turn/completed"
        );
        assert_eq!(
            why(Mutation::Duplicate("initialize".into())),
            "initialize is an answer here: only notifications and server requests are duplicated"
        );
        assert!(why(Mutation::ExitMidTurn).contains("no turn/started"));
        assert!(why(Mutation::Overloaded).contains("after initialize"));
        assert!(why(Mutation::UnknownEnum).contains("turn status"));
        assert!(why(Mutation::Reorder).contains("neighbouring"));
        assert_eq!(Mutation::ExitMidTurn.expect(), Expect::End);
        assert_eq!(Mutation::UnknownEnum.expect(), Expect::End);
        assert_eq!(Mutation::Reorder.expect(), Expect::Survive);
        assert_eq!(
            why(Mutation::TurnFailed),
            "the session has no codex exec run"
        );
        assert_eq!(Mutation::TurnFailed.expect(), Expect::Fail);
        assert_eq!(Mutation::RenamedField.expect(), Expect::Cope);
    }

    #[test]
    fn extra_field_reaches_exec_events_too() {
        let s = Script {
            execs: vec![crate::client_check::script::ExecScript::from_events(vec![
                json!({"type": "turn.completed", "usage": {"input_tokens": 1}}),
            ])],
            ..Script::default()
        };
        let extra = Mutation::ExtraField.apply(&s).unwrap();
        assert!(extra.execs[0].events[0]["usage"].get(EXTRA_FIELD).is_some());
        assert!(Mutation::Reorder.apply(&s).is_err());
    }
}
