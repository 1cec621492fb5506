//! A report's transcripts are normalised (`crate::drift::normalize`): ids are `<thread-1>`,
//! times `<timestamp>`, paths `<world>/…`. To serve one to a client, each placeholder gets a
//! concrete value of the shape codex sends: UUIDs (one per placeholder, so equalities hold),
//! numbers for times and durations, a real directory for `<world>`. Item ids, all `<id>` in
//! a transcript, are told apart by the stream: an `item/started` opens a new id, the deltas
//! of that item type and its `item/completed` reuse it.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::LazyLock;

use regex::{Captures, Regex};
use serde_json::Value;

use crate::app_server::transcript::{Sent, SentKind};

/// A time of the served session, in seconds since the epoch (2026-01-01T00:00:00Z).
pub const SERVED_TIME: i64 = 1_767_225_600;

static NUMBERED: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<(thread|turn|installation|session|window)-(\d+)>").ok());

/// Gives concrete values to the placeholders of one scenario's transcript.
#[derive(Debug)]
pub struct Placeholders {
    version: String,
    world: String,
    fresh: u64,
    open: HashMap<String, VecDeque<String>>,
    last: Option<String>,
}

impl Placeholders {
    /// Values for a transcript of codex `version`, with `<world>` standing for `world`.
    pub fn new(version: &str, world: &Path) -> Placeholders {
        Placeholders {
            version: version.into(),
            world: world.to_string_lossy().into_owned(),
            fresh: 0,
            open: HashMap::new(),
            last: None,
        }
    }

    /// The messages with every placeholder replaced, in order (item ids depend on it).
    pub fn messages(&mut self, messages: &[Sent]) -> Vec<Sent> {
        messages.iter().map(|m| self.message(m)).collect()
    }

    fn message(&mut self, m: &Sent) -> Sent {
        let mut out = m.clone();
        if m.kind == SentKind::Notification {
            self.item_ids(&mut out);
        }
        out.payload = self.value(&out.payload, None);
        out.extra = match self.value(&Value::Object(out.extra.clone()), None) {
            Value::Object(extra) => extra,
            _ => out.extra,
        };
        out
    }

    /// Item ids of item notifications: opened by `item/started`, reused by the deltas of
    /// the same item type and closed by `item/completed`.
    fn item_ids(&mut self, m: &mut Sent) {
        let params = &mut m.payload;
        let kind = params
            .pointer("/item/type")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| m.method.split('/').nth(1).map(str::to_string))
            .unwrap_or_default();
        let id = match m.method.as_str() {
            "item/started" if params.pointer("/item/id") == Some(&placeholder()) => {
                let id = self.uuid(9);
                self.open.entry(kind).or_default().push_back(id.clone());
                self.last = Some(id.clone());
                id
            }
            "item/completed" if params.pointer("/item/id") == Some(&placeholder()) => self
                .open
                .get_mut(&kind)
                .and_then(VecDeque::pop_front)
                .unwrap_or_else(|| self.uuid(9)),
            _ if params.get("itemId") == Some(&placeholder()) => self
                .open
                .get(&kind)
                .and_then(|ids| ids.back().cloned())
                .or_else(|| self.last.clone())
                .unwrap_or_else(|| self.uuid(9)),
            _ => return,
        };
        if let Some(slot) = params.pointer_mut("/item/id") {
            *slot = Value::String(id.clone());
        } else if let Some(slot) = params.get_mut("itemId") {
            *slot = Value::String(id);
        }
    }

    /// A UUID of kind `role`, never given before.
    fn uuid(&mut self, role: u32) -> String {
        self.fresh += 1;
        format!("{role:08x}-0000-4000-8000-{:012x}", self.fresh)
    }

    fn value(&mut self, value: &Value, key: Option<&str>) -> Value {
        match value {
            Value::Object(obj) => Value::Object(
                obj.iter()
                    .map(|(k, v)| (k.clone(), self.value(v, Some(k))))
                    .collect(),
            ),
            Value::Array(items) => Value::Array(items.iter().map(|v| self.value(v, key)).collect()),
            Value::String(s) => self.string(s, key),
            other => other.clone(),
        }
    }

    fn string(&mut self, s: &str, key: Option<&str>) -> Value {
        match s {
            "<timestamp>" if key.is_some_and(|k| k.ends_with("Ms")) => {
                return Value::from(SERVED_TIME * 1000);
            }
            "<timestamp>" => return Value::from(SERVED_TIME),
            "<duration>" => return Value::from(1),
            "<id>" => return Value::String(self.uuid(8)),
            "<host>" => return Value::String("localhost".into()),
            _ => {}
        }
        if !s.contains('<') {
            return Value::String(s.to_string());
        }
        let mut text = s
            .replace("<world>", &self.world)
            .replace("<datetime>", "2026-01-01T00:00:00Z")
            .replace("<date>", "2026-01-01")
            .replace("<port>", "1")
            .replace("<codex-version>", &self.version)
            .replace("<os>", "Linux")
            .replace("<terminal>", "unknown")
            .replace("<client-version>", "1.0.0")
            .replace("<id>", "00000008-0000-4000-8000-000000000000");
        if let Some(re) = NUMBERED.as_ref() {
            text = re
                .replace_all(&text, |c: &Captures| {
                    let role = match &c[1] {
                        "thread" => 1,
                        "turn" => 2,
                        "installation" => 3,
                        "session" => 4,
                        _ => 5,
                    };
                    let n: u64 = c[2].parse().unwrap_or(0);
                    format!("{role:08x}-0000-4000-8000-{n:012x}")
                })
                .into_owned();
        }
        Value::String(text)
    }
}

fn placeholder() -> Value {
    Value::String("<id>".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn note(method: &str, params: Value) -> Sent {
        Sent::new(SentKind::Notification, method, params)
    }

    #[test]
    fn numbered_ids_stay_equal_and_item_ids_follow_their_item() {
        let mut p = Placeholders::new("0.171.0", Path::new("/tmp/w"));
        let out = p.messages(&[
            Sent::new(
                SentKind::Response,
                "thread/start",
                json!({"thread": {"id": "<thread-1>", "cwd": "<world>/workspace",
                                  "createdAt": "<timestamp>"}}),
            ),
            note(
                "item/started",
                json!({"item": {"type": "agentMessage", "id": "<id>"}}),
            ),
            note(
                "item/agentMessage/delta",
                json!({"itemId": "<id>", "threadId": "<thread-1>"}),
            ),
            note(
                "item/completed",
                json!({"item": {"type": "agentMessage", "id": "<id>"}}),
            ),
            note(
                "turn/completed",
                json!({"turn": {"durationMs": "<duration>"}}),
            ),
        ]);
        let thread = out[0].payload["thread"]["id"].as_str().unwrap();
        assert_eq!(thread.len(), 36);
        assert_eq!(out[2].payload["threadId"], thread);
        assert_eq!(out[0].payload["thread"]["cwd"], "/tmp/w/workspace");
        assert_eq!(out[0].payload["thread"]["createdAt"], SERVED_TIME);
        let item = &out[1].payload["item"]["id"];
        assert_eq!(&out[2].payload["itemId"], item);
        assert_eq!(&out[3].payload["item"]["id"], item);
        assert_eq!(out[4].payload["turn"]["durationMs"], 1);
        // A second item gets an id of its own.
        let next = p.messages(&[note(
            "item/started",
            json!({"item": {"type": "agentMessage", "id": "<id>"}}),
        )]);
        assert_ne!(&next[0].payload["item"]["id"], item);
    }
}
