//! Codex against its own schema: every message of a scenario's transcripts is checked with
//! the binary's compiled schema ([`crate::codex::conformance`]); a message that does not
//! conform, or whose method the schema does not know, is drift of the scenario, judged by
//! the version's baseline like any other.
//!
//! Drift keys and observed values (stable from run to run: array indices in pointers are
//! `*`, the value that came is only in the message):
//! - `schema.nonconforming`: `{"type", "method", "pointer", "wanted"}`, `type` being
//!   `notification`, `request` (a server request), `response` or `error`;
//! - `schema.unknown_method`: `{"type", "method"}`.
//!
//! The same observation several times in one scenario is one drift, its message counting
//! them.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::app_server::transcript::{SentKind, UNKNOWN_METHOD};
use crate::codex::conformance::{Conformance, Conformity, Direction};
use crate::harness::outcome::Drift;
use crate::harness::tally::Connection;

/// The drift key of a message that does not conform.
pub const NONCONFORMING: &str = "schema.nonconforming";

/// The drift key of a notification or server request whose method the schema lacks.
pub const UNKNOWN: &str = "schema.unknown_method";

/// What checking one scenario's transcripts found (kept in `results.json`, without the time,
/// so merged shards report it too).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    /// Messages checked against a schema type.
    pub validated: usize,
    /// Messages that could not be checked (an answer to a method without a published
    /// response type, or to a raw line).
    pub unchecked: usize,
    /// Messages that did not conform (each counted once, however many places).
    pub nonconforming: usize,
    /// Messages whose method the schema does not know.
    pub unknown: usize,
    /// The drift, one per distinct observation.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drift: Vec<Drift>,
    /// How long the checks took (not kept: it differs between identical runs).
    #[serde(skip)]
    pub time: Duration,
}

/// Checks every message of `connections`.
pub fn check(conformance: &Conformance, connections: &[Connection]) -> Checked {
    let started = Instant::now();
    let mut checked = Checked::default();
    // Observation -> (how often, the first message about it).
    let mut found: BTreeMap<(String, String), (usize, Value, String)> = BTreeMap::new();
    let mut note = |key: &str, observed: Value, message: String| {
        let entry = found
            .entry((key.to_string(), observed.to_string()))
            .or_insert((0, observed, message));
        entry.0 += 1;
    };
    for sent in connections.iter().flat_map(|c| &c.messages) {
        let direction = match sent.kind {
            SentKind::Notification => Direction::Notification,
            SentKind::Request => Direction::ServerRequest,
            SentKind::Response if sent.method == UNKNOWN_METHOD => {
                checked.unchecked += 1;
                continue;
            }
            // `codex exec --json` events: the binary prints no schema of them; they are
            // kept as they are (and compared across versions by the transcript diff).
            SentKind::Event => {
                checked.unchecked += 1;
                continue;
            }
            SentKind::Response => Direction::Response,
            SentKind::Error => Direction::Error,
        };
        let kind = sent.kind.word();
        match conformance.check(direction, &sent.method, &sent.payload) {
            Conformity::Conforms => checked.validated += 1,
            Conformity::Unchecked => checked.unchecked += 1,
            Conformity::UnknownMethod => {
                checked.unknown += 1;
                let observed = json!({"type": kind, "method": sent.method});
                let message = format!("codex sent the {kind} {} its schema lacks", sent.method);
                note(UNKNOWN, observed, message);
            }
            Conformity::Violates(violations) => {
                checked.validated += 1;
                checked.nonconforming += 1;
                for v in violations {
                    let pointer = generic(&v.pointer);
                    let observed = json!({"type": kind, "method": sent.method,
                        "pointer": pointer, "wanted": v.wanted});
                    let message = format!(
                        "{kind} {} does not conform to codex's own schema at {:?}: {}; came {}",
                        sent.method, v.pointer, v.wanted, v.got
                    );
                    note(NONCONFORMING, observed, message);
                }
            }
        }
    }
    for ((key, _), (count, observed, message)) in found {
        let message = if count > 1 {
            format!("{message} ({count} times)")
        } else {
            message
        };
        checked.drift.push(Drift::new(key, observed, message));
    }
    checked.time = started.elapsed();
    checked
}

/// A JSON pointer with its array indices as `*`: the same place in every item.
fn generic(pointer: &str) -> String {
    pointer
        .split('/')
        .map(|t| {
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                "*"
            } else {
                t
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::app_server::transcript::Sent;

    fn schema() -> Conformance {
        Conformance::compile(json!({"definitions": {
            "ServerNotification": {"oneOf": [{"properties": {
                "method": {"enum": ["turn/started"]},
                "params": {"type": "object", "required": ["turn"], "properties": {
                    "turn": {"type": "object", "properties": {"items": {"type": "array",
                        "items": {"type": "object", "required": ["id"]}}}}}}}}]},
        }}))
        .unwrap()
    }

    #[test]
    fn counts_and_reports_each_observation_once() {
        let bad = json!({"turn": {"items": [{"id": "a"}, {"x": 1}]}});
        let connection = Connection {
            world: 1,
            connection: 1,
            root: PathBuf::from("/tmp"),
            messages: vec![
                Sent::new(SentKind::Notification, "turn/started", json!({"turn": {}})),
                Sent::new(SentKind::Notification, "turn/started", bad.clone()),
                Sent::new(SentKind::Notification, "turn/started", bad),
                Sent::new(SentKind::Notification, "brand/new", json!({})),
                Sent::new(SentKind::Response, "thread/start", json!({})),
                Sent::new(SentKind::Response, UNKNOWN_METHOD, json!({})),
            ],
            requested: Vec::new(),
        };
        let checked = check(&schema(), &[connection]);
        assert_eq!(
            (
                checked.validated,
                checked.nonconforming,
                checked.unknown,
                checked.unchecked
            ),
            (3, 2, 1, 2)
        );
        assert_eq!(checked.drift.len(), 2, "{:?}", checked.drift);
        let nonconforming = &checked.drift[0];
        assert_eq!(nonconforming.key, NONCONFORMING);
        assert_eq!(nonconforming.observed["pointer"], "/turn/items/*");
        assert_eq!(nonconforming.observed["type"], "notification");
        assert!(
            nonconforming.message.contains("(2 times)"),
            "{nonconforming:?}"
        );
        assert!(
            nonconforming.message.contains("/turn/items/1"),
            "{nonconforming:?}"
        );
        assert_eq!(
            checked.drift[1].observed,
            json!({"type": "notification", "method": "brand/new"})
        );
    }
}
