//! Normalisation of captured model requests: what codex sent to the mock, with everything
//! that changes from run to run or from machine to machine replaced by stable placeholders,
//! so that two runs of a scenario give equal values and a real change (a tool added, a
//! header gone, `instructions` absent) still shows.
//!
//! A normalised request is `{"method", "path", "query"?, "headers", "body"}` (`body_text`
//! instead of `body` when the body was not JSON), with object keys sorted. The rules, in the
//! order they apply to each string:
//!
//! - **JSON inside strings** (the `x-codex-turn-metadata` header and its copy in
//!   `body.client_metadata`, tool call arguments and outputs) is parsed and normalised as
//!   JSON, so its fields diff one by one.
//! - **Temporary paths**: an absolute path through the world's temporary directory
//!   (`…/codex-parity-XXXXXX`) starts with `<world>` instead: `<world>/workspace` is the cwd,
//!   `<world>/codex-home` is `CODEX_HOME`.
//! - **UUIDs** become placeholders named by what they are where codex says so, numbered
//!   in order of appearance: `<thread-1>` (`thread-id`, `thread_id`, `threadId`),
//!   `<turn-1>` (`turn_id`, `root_turn_id`, `turnId`), `<installation-1>`, `<session-1>`,
//!   `<window-1>` (`context_window_id`); any other UUID is just `<id>` (item ids: a number
//!   would shift whenever an item is added before them). One UUID gets one placeholder in
//!   all the requests one [`Normalizer`] sees (one scenario on one codex), so equalities
//!   stay visible: `x-codex-window-id` is `<thread-1>:0`, `prompt_cache_key` `<thread-1>`.
//! - **Times**: dates and date-times in text become `<date>` / `<datetime>`; numbers under
//!   keys that name a time (`*_at`, `*_at_*`, `createdAt`, `*timestamp*`) become
//!   `"<timestamp>"`, under keys that name a duration (`durationMs`, `timeUsedSeconds`)
//!   `"<duration>"`.
//! - **Machine facts**: `127.0.0.1:PORT` becomes `127.0.0.1:<port>`; the `content-length`
//!   header `<length>`; `user-agent` keeps its shape with `<codex-version>`, `<os>`,
//!   `<terminal>` and `<client-version>` (so does a `userAgent` field, as `initialize`
//!   answers it); a `serverName` field (the host's name) becomes `<host>`; the `<shell>`
//!   and `<timezone>` of codex's environment context become `…`.
//! - **Long texts** (over [`LONG_TEXT`] characters once the rules above applied: the base
//!   prompt, skills) become `<text N chars #HASH: first words…>`, where HASH is a 32-bit
//!   FNV-1a hash of the normalised text: any change to the content changes the placeholder,
//!   while golden files stay readable.

use std::collections::HashMap;
use std::sync::LazyLock;

use codex_parity_sidecar::captured::CapturedRequest;
use regex::{Captures, Regex};
use serde_json::{Map, Value};

/// Texts longer than this (in characters, after normalisation) are replaced by a
/// placeholder with their length and hash.
pub const LONG_TEXT: usize = 512;

/// How many characters of a long text its placeholder shows.
const PREVIEW: usize = 40;

/// What a UUID is, by the key codex put it under. Earlier variants win when one UUID is
/// found under several keys (the session id is the thread id in codex today).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Role {
    Thread,
    Turn,
    Installation,
    Session,
    Window,
    Other,
}

impl Role {
    fn of_key(key: &str) -> Option<Role> {
        Some(match key {
            "thread-id" | "thread_id" | "threadId" => Role::Thread,
            "turn_id" | "root_turn_id" | "turnId" | "rootTurnId" => Role::Turn,
            "installation_id" | "x-codex-installation-id" | "installationId" => Role::Installation,
            "session-id" | "session_id" | "sessionId" => Role::Session,
            "context_window_id" => Role::Window,
            _ => return None,
        })
    }

    fn word(self) -> &'static str {
        match self {
            Role::Thread => "thread",
            Role::Turn => "turn",
            Role::Installation => "installation",
            Role::Session => "session",
            Role::Window => "window",
            Role::Other => "id",
        }
    }
}

/// The patterns of the rules, compiled once.
struct Patterns {
    uuid: Regex,
    world_path: Regex,
    datetime: Regex,
    slash_date: Regex,
    local_port: Regex,
    env_tag: Regex,
    user_agent: Regex,
}

/// `None` only if a pattern does not compile, which the tests rule out; the text rules are
/// then skipped rather than the run aborted.
static PATTERNS: LazyLock<Option<Patterns>> = LazyLock::new(|| {
    let re = |pattern: &str| Regex::new(pattern).ok();
    Some(Patterns {
        uuid: re(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")?,
        world_path: re(r#"(?:/[^\s"'<>`()\[\],;:/]+)*/codex-parity-[A-Za-z0-9]{6}\b"#)?,
        datetime: re(
            r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}[:-]\d{2}[:-]\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?\b",
        )?,
        slash_date: re(r"\b\d{4}/\d{2}/\d{2}\b")?,
        local_port: re(r"\b(127\.0\.0\.1|localhost|\[::1\]):\d+\b")?,
        env_tag: re(r"<(shell|timezone)>[^<]*</(shell|timezone)>")?,
        user_agent: re(r"^([^/\s]+)/\S+ \([^)]*\) \S+ \(([^;)]*); [^)]*\)$")?,
    })
});

/// Normalises the requests of one scenario run on one codex. Keep one per scenario and
/// version: it remembers which UUID got which placeholder.
#[derive(Debug, Default)]
pub struct Normalizer {
    roles: HashMap<String, Role>,
    placeholders: HashMap<String, String>,
    counts: HashMap<Role, usize>,
}

/// The normalised model requests (`POST …/responses`) of `requests`, in order, with one
/// [`Normalizer`] for all of them.
pub fn model_requests(requests: &[CapturedRequest]) -> Vec<Value> {
    let mut normalizer = Normalizer::default();
    requests
        .iter()
        .filter(|r| r.is_model_request())
        .map(|r| normalizer.request(r))
        .collect()
}

impl Normalizer {
    /// One request, normalised.
    pub fn request(&mut self, r: &CapturedRequest) -> Value {
        let headers = if r.all_headers.is_empty() {
            &r.headers
        } else {
            &r.all_headers
        };
        let headers: Map<String, Value> = headers
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        let headers = Value::Object(headers);
        self.learn_roles(&headers, None);
        self.learn_roles(&r.body, None);
        let mut out = Map::new();
        out.insert("method".into(), Value::String(r.method.clone()));
        out.insert("path".into(), Value::String(r.path.clone()));
        if let Some(query) = &r.query {
            out.insert("query".into(), self.text(query));
        }
        out.insert("headers".into(), self.headers(&headers));
        match (&r.body, &r.body_text) {
            (Value::Null, Some(text)) => {
                out.insert("body_text".into(), self.text(text));
            }
            (body, _) => {
                out.insert("body".into(), self.value(body, None));
            }
        }
        sorted(out)
    }

    /// Learns which UUIDs name threads, turns and the like from `value` (the keys they sit
    /// under), before [`Normalizer::json`] numbers them: learn every value of a scenario
    /// first, so a UUID met before the key that names it still gets its role.
    pub fn learn(&mut self, value: &Value) {
        self.learn_roles(value, None);
    }

    /// Any JSON value with the rules applied (object keys sorted), e.g. a message codex
    /// sent to its client.
    pub fn json(&mut self, value: &Value) -> Value {
        self.value(value, None)
    }

    fn headers(&mut self, headers: &Value) -> Value {
        let Value::Object(map) = headers else {
            return self.value(headers, None);
        };
        let mut out = Map::new();
        for (name, value) in map {
            let normalised = match (name.as_str(), value.as_str()) {
                ("content-length", _) => Value::String("<length>".into()),
                ("user-agent", Some(agent)) => self.user_agent(agent),
                _ => self.value(value, Some(name)),
            };
            out.insert(name.clone(), normalised);
        }
        sorted(out)
    }

    /// `NAME/VERSION (OS) TERMINAL (CLIENT; CLIENT_VERSION)` keeps NAME and CLIENT.
    fn user_agent(&mut self, agent: &str) -> Value {
        let captures = PATTERNS.as_ref().and_then(|p| p.user_agent.captures(agent));
        match captures {
            Some(c) => Value::String(format!(
                "{}/<codex-version> (<os>) <terminal> ({}; <client-version>)",
                &c[1], &c[2]
            )),
            None => self.text(agent),
        }
    }

    /// Records the role of every UUID found under a key that names one.
    fn learn_roles(&mut self, value: &Value, key: Option<&str>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    self.learn_roles(v, Some(k));
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.learn_roles(item, key);
                }
            }
            Value::String(text) => {
                if let Some(inner) = embedded_json(text) {
                    self.learn_roles(&inner, key);
                    return;
                }
                let Some(role) = key.and_then(Role::of_key) else {
                    return;
                };
                let Some(p) = PATTERNS.as_ref() else {
                    return;
                };
                for found in p.uuid.find_iter(text) {
                    let uuid = found.as_str().to_ascii_lowercase();
                    let known = self.roles.entry(uuid).or_insert(role);
                    *known = (*known).min(role);
                }
            }
            _ => {}
        }
    }

    fn value(&mut self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::Object(map) => {
                // Sorted first: placeholders are numbered in the order UUIDs are met.
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut out = Map::new();
                for (k, v) in entries {
                    out.insert(k.clone(), self.value(v, Some(k)));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v, key)).collect()),
            Value::Number(_) if key.is_some_and(names_a_time) => {
                Value::String("<timestamp>".into())
            }
            Value::Number(_) if key.is_some_and(names_a_duration) => {
                Value::String("<duration>".into())
            }
            Value::String(agent) if key == Some("userAgent") => self.user_agent(agent),
            Value::String(_) if key == Some("serverName") => Value::String("<host>".into()),
            Value::String(text) => match embedded_json(text) {
                Some(inner) => self.value(&inner, key),
                None => self.text(text),
            },
            other => other.clone(),
        }
    }

    /// A string with every rule applied.
    fn text(&mut self, text: &str) -> Value {
        let Some(p) = PATTERNS.as_ref() else {
            return Value::String(shorten(text));
        };
        let text = p.world_path.replace_all(text, "<world>");
        let text = p
            .uuid
            .replace_all(&text, |c: &Captures| self.placeholder(&c[0]))
            .into_owned();
        let text = p.datetime.replace_all(&text, |c: &Captures| {
            if c[0].len() > 10 {
                "<datetime>"
            } else {
                "<date>"
            }
        });
        let text = p.slash_date.replace_all(&text, "<date>");
        let text = p.local_port.replace_all(&text, "$1:<port>");
        let text = p.env_tag.replace_all(&text, "<$1>…</$2>");
        Value::String(shorten(&text))
    }

    fn placeholder(&mut self, uuid: &str) -> String {
        let uuid = uuid.to_ascii_lowercase();
        if let Some(known) = self.placeholders.get(&uuid) {
            return known.clone();
        }
        let role = self.roles.get(&uuid).copied().unwrap_or(Role::Other);
        // Other ids (item ids, `msg_…`) are not numbered: a number would shift with every
        // item added before them and turn one change into many.
        let name = if role == Role::Other {
            "<id>".to_string()
        } else {
            let n = self.counts.entry(role).or_default();
            *n += 1;
            format!("<{}-{n}>", role.word())
        };
        self.placeholders.insert(uuid, name.clone());
        name
    }
}

/// Whether a key holds a point in time: `turn_started_at_unix_ms`, `created_at`,
/// `createdAt`, `startedAtMs`, `timestamp`.
fn names_a_time(key: &str) -> bool {
    let camel_at = key.match_indices("At").any(|(i, _)| {
        let before = key[..i].chars().next_back();
        let after = key[i + 2..].chars().next();
        before.is_some_and(|c| c.is_ascii_lowercase())
            && after.is_none_or(|c| c.is_ascii_uppercase())
    });
    camel_at
        || key.ends_with("_at")
        || key.contains("_at_")
        || key.to_ascii_lowercase().contains("timestamp")
}

/// Whether a key holds a measured duration (`durationMs`, `timeUsedSeconds`,
/// `wall_time_seconds`): it depends on how fast the machine was.
fn names_a_duration(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    key.contains("duration") || key.ends_with("seconds") || key.contains("elapsed")
}

/// The JSON object or array a string holds, if it is one.
fn embedded_json(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|v| v.is_object() || v.is_array())
}

/// The text itself, or its placeholder when it is long.
fn shorten(text: &str) -> String {
    let chars = text.chars().count();
    if chars <= LONG_TEXT {
        return text.to_string();
    }
    let preview: String = text
        .chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .take(PREVIEW)
        .collect();
    format!(
        "<text {chars} chars #{:08x}: {}…>",
        fnv1a(text),
        preview.trim_end()
    )
}

/// 32-bit FNV-1a: a hash that is the same on every machine and every Rust release.
fn fnv1a(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}

/// The object with its keys in sorted order (codex's key order is not stable).
fn sorted(map: Map<String, Value>) -> Value {
    let mut entries: Vec<(String, Value)> = map.into_iter().collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    Value::Object(entries.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A request shaped like 0.171.0's, with the given ids, temp dir and time.
    fn request(thread: &str, turn: &str, install: &str, tmp: &str, at: u64) -> CapturedRequest {
        let meta = json!({
            "installation_id": install, "session_id": thread, "thread_id": thread,
            "turn_id": turn, "window_id": format!("{thread}:0"), "turn_started_at_unix_ms": at,
            "sandbox": "none"
        })
        .to_string();
        let long = format!("You are a coding agent. {}", "Be careful. ".repeat(60));
        let skills = format!(
            "<skills_instructions>\n- `r0` = `{tmp}/codex-home/skills/.system`\n{}",
            "skill text ".repeat(60)
        );
        serde_json::from_value(json!({
            "index": 0, "method": "POST", "path": "/v1/responses",
            "headers": {},
            "all_headers": {
                "host": format!("127.0.0.1:{}", at % 50000 + 1024),
                "content-length": (at % 997).to_string(),
                "thread-id": thread, "session-id": thread, "x-client-request-id": thread,
                "x-codex-window-id": format!("{thread}:0"),
                "x-codex-turn-metadata": meta,
                "user-agent": "codex-parity/0.171.0 (Debian 12.0.0; x86_64) unknown (codex-parity; 0.1.0)",
                "originator": "codex-parity"
            },
            "body": {
                "model": "mock-model", "stream": true, "parallel_tool_calls": true,
                "tools": [{"type": "function", "name": "exec_command"}, {"type": "web_search"}],
                "input": [
                    {"type": "message", "id": format!("msg_{turn}"), "role": "developer",
                     "content": [{"type": "input_text", "text": long}, {"type": "input_text", "text": skills}]},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text":
                        format!("<environment_context>\n  <cwd>{tmp}/workspace</cwd>\n  <shell>zsh</shell>\n  <current_date>2026-11-{}</current_date>\n  <timezone>Europe/Berlin</timezone>\n</environment_context>", 10 + at % 20)}]},
                    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hello?"}]}
                ],
                "prompt_cache_key": thread,
                "client_metadata": {"x-codex-turn-metadata": meta, "x-codex-installation-id": install}
            }
        }))
        .unwrap()
    }

    fn run_a() -> CapturedRequest {
        request(
            "01a22a00-d984-78c0-836b-c95f90401a77",
            "01a22a00-d9a7-7fe1-933f-0667277a2006",
            "15b8e230-b954-43a6-bb50-8b7884c17371",
            "/tmp/codex-parity-70hguQ",
            1_796_001_028_524,
        )
    }

    fn run_b() -> CapturedRequest {
        request(
            "01A22A01-3908-78B1-B7ED-453C622667DA",
            "01a22a01-393f-79c3-9b9a-e292f91ed979",
            "fe7631df-f074-451f-87d0-8073395f2bc4",
            "/private/var/folders/xy/T/codex-parity-IuDyyp",
            1_796_001_053_176,
        )
    }

    #[test]
    fn runs_differing_in_ids_times_and_machine_normalise_identically() {
        let a = model_requests(&[run_a()]);
        let b = model_requests(&[run_b()]);
        assert_eq!(a, b);
        let r = &a[0];
        assert_eq!(r["headers"]["thread-id"], "<thread-1>");
        assert_eq!(r["headers"]["x-codex-window-id"], "<thread-1>:0");
        assert_eq!(r["headers"]["host"], "127.0.0.1:<port>");
        assert_eq!(r["headers"]["content-length"], "<length>");
        assert_eq!(
            r["headers"]["user-agent"],
            "codex-parity/<codex-version> (<os>) <terminal> (codex-parity; <client-version>)"
        );
        let meta = &r["headers"]["x-codex-turn-metadata"];
        assert_eq!(meta["turn_id"], "<turn-1>");
        assert_eq!(meta["installation_id"], "<installation-1>");
        assert_eq!(meta["turn_started_at_unix_ms"], "<timestamp>");
        assert_eq!(r["body"]["prompt_cache_key"], "<thread-1>");
        assert_eq!(r["body"]["client_metadata"]["x-codex-turn-metadata"], *meta);
        assert_eq!(r["body"]["input"][0]["id"], "msg_<turn-1>");
        let env = r["body"]["input"][1]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(env.contains("<cwd><world>/workspace</cwd>"), "{env}");
        assert!(env.contains("<current_date><date></current_date>"), "{env}");
        assert!(env.contains("<shell>…</shell>") && env.contains("<timezone>…</timezone>"));
        let base = r["body"]["input"][0]["content"][0]["text"]
            .as_str()
            .unwrap();
        assert!(
            base.starts_with("<text 744 chars #")
                && base.ends_with(": You are a coding agent. Be careful. Be c…>"),
            "{base}"
        );
        // The temporary path is replaced before the long text is hashed.
        let skills = r["body"]["input"][0]["content"][1]["text"]
            .as_str()
            .unwrap();
        assert!(skills.starts_with("<text "), "{skills}");
    }

    #[test]
    fn keys_are_sorted_whatever_order_codex_used() {
        let mut r = run_a();
        r.body = json!({"stream": true, "model": "m", "client_metadata": {"b": 1, "a": 2}});
        let n = Normalizer::default().request(&r);
        let keys: Vec<&String> = n["body"].as_object().unwrap().keys().collect();
        assert_eq!(keys, ["client_metadata", "model", "stream"]);
        let keys: Vec<&String> = n.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["body", "headers", "method", "path"]);
    }

    #[test]
    fn same_ids_share_a_placeholder_and_new_ones_get_the_next_number() {
        let first = run_a();
        let mut second = run_a();
        second.all_headers.insert(
            "x-codex-turn-metadata".into(),
            json!({"thread_id": "01a22a00-d984-78c0-836b-c95f90401a77",
                   "turn_id": "01a22a00-ffff-7fe1-933f-0667277a2006"})
            .to_string(),
        );
        second.all_headers.insert(
            "x-client-request-id".into(),
            "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee".into(),
        );
        let n = model_requests(&[first, second]);
        assert_eq!(n[1]["headers"]["thread-id"], "<thread-1>");
        assert_eq!(
            n[1]["headers"]["x-codex-turn-metadata"]["turn_id"],
            "<turn-2>"
        );
        // A UUID under a key that names no role is just an id: the change shows.
        assert_eq!(n[1]["headers"]["x-client-request-id"], "<id>");
    }

    #[test]
    fn real_changes_stay_visible() {
        let base = model_requests(&[run_a()]);
        let mut r = run_a();
        r.body["tools"]
            .as_array_mut()
            .unwrap()
            .push(json!({"type": "function", "name": "update_plan"}));
        assert_ne!(model_requests(&[r]), base, "a tool added");
        let mut r = run_a();
        r.all_headers.remove("originator");
        assert_ne!(model_requests(&[r]), base, "a header removed");
        let mut with = run_a();
        with.body["instructions"] = json!("You are a mock agent.");
        let with = model_requests(&[with]);
        assert_ne!(with, base, "instructions present");
        assert_eq!(with[0]["body"]["instructions"], "You are a mock agent.");
        let mut r = run_a();
        r.body["input"][0]["content"][0]["text"] = json!(format!(
            "You are a coding agent. {}",
            "Be careless ".repeat(60)
        ));
        assert_ne!(
            model_requests(&[r]),
            base,
            "the base prompt's content changed"
        );
        let mut r = run_a();
        r.body["parallel_tool_calls"] = json!(false);
        assert_ne!(model_requests(&[r]), base, "a flag changed");
    }

    #[test]
    fn only_model_requests_count_and_odd_bodies_survive() {
        let mut models = run_a();
        models.method = "GET".into();
        models.path = "/v1/models".into();
        assert!(model_requests(&[models]).is_empty());
        let mut text = run_a();
        text.body = Value::Null;
        text.body_text = Some("not json at 2026-11-30T01:02:03Z".into());
        let n = Normalizer::default().request(&text);
        assert_eq!(n["body_text"], "not json at <datetime>");
        assert!(n.get("body").is_none());
    }

    #[test]
    fn patterns_compile() {
        assert!(PATTERNS.is_some());
    }

    #[test]
    fn text_rules() {
        let mut n = Normalizer::default();
        let mut t = |s: &str| n.text(s).as_str().unwrap().to_string();
        assert_eq!(
            t("see /tmp/codex-parity-AbC123/codex-home/sessions/2026/11/29/x.jsonl"),
            "see <world>/codex-home/sessions/<date>/x.jsonl"
        );
        assert_eq!(
            t("sk-codex-parity-mock stays"),
            "sk-codex-parity-mock stays"
        );
        assert_eq!(t("http://localhost:4312/v1"), "http://localhost:<port>/v1");
        assert_eq!(t("at 2026-11-30 10:11:12"), "at <datetime>");
        assert_eq!(t("short text"), "short text");
        assert_eq!(fnv1a(""), 0x811c_9dc5);
        for key in [
            "createdAt",
            "startedAtMs",
            "turn_started_at_unix_ms",
            "updated_at",
            "timestamp",
        ] {
            assert!(names_a_time(key), "{key}");
        }
        for key in ["attempt", "formatAttempts", "window_number", "status"] {
            assert!(!names_a_time(key), "{key}");
        }
        assert!(names_a_duration("timeUsedSeconds") && names_a_duration("durationMs"));
        assert!(!names_a_duration("tokensUsed"));
        assert_eq!(fnv1a("a"), 0xe40c_292c);
    }
}
