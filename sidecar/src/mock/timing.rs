//! The timing part of a scripted SSE response (contract v2): gaps before events, a stall or a
//! disconnect after event N, a disconnect after T ms, named gates that hold events until a
//! `release` command, and the body's framing (chunked, or ended by the connection's close).
//! Parsed from and written to the scripted response's JSON object, and
//! checked against the number of events when the response is enqueued.
//!
//! ```
//! use codex_parity_sidecar::mock::timing::Timing;
//! use serde_json::json;
//! let mut object = json!({"gap_ms": 50, "gates": {"after-created": 1}, "stall_after": 3});
//! let timing = Timing::take_from(object.as_object_mut().unwrap()).unwrap();
//! assert_eq!(timing.gap_before(2), 50);
//! assert!(timing.check(3).is_ok());
//! assert!(timing.check(1).is_err()); // the gate names event 1 of a 1-event body
//! ```

use serde_json::{Map, Value};

/// The keys a timed SSE response may carry besides `events`.
pub const KEYS: [&str; 7] = [
    "close_delimited",
    "gap_ms",
    "stall_after",
    "stall_gate",
    "disconnect_after",
    "disconnect_after_ms",
    "gates",
];

/// Gaps before events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Gaps {
    /// No gap: the events go out at once.
    #[default]
    None,
    /// The same gap (ms) before every event.
    All(u64),
    /// One gap (ms) before each event, by position.
    Each(Vec<u64>),
}

/// How a scripted SSE response is released over time. The default sends everything at once.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Timing {
    /// Gaps before events (measured from the previous event, the start, or a gate release).
    pub gaps: Gaps,
    /// After this many events, send nothing more (the connection stays open) until the client
    /// closes it or `stall_gate` is released.
    pub stall_after: Option<usize>,
    /// The gate name that ends the stall; without it only the client ends it.
    pub stall_gate: Option<String>,
    /// After this many events, close the connection without finishing the response.
    pub disconnect_after: Option<usize>,
    /// This many ms after the response started, close the connection wherever it is.
    pub disconnect_after_ms: Option<u64>,
    /// Named gates: the event at the index and every later one wait until the name is released.
    pub gates: Vec<(String, usize)>,
    /// The body is not chunked: the response is HTTP/1.0 with `connection: close`, and its end
    /// is the connection's close (as a raw TCP server writes it). A disconnect then reads as
    /// a clean end of the body to the client, not as a broken chunk.
    pub close_delimited: bool,
}

fn error(message: impl Into<String>) -> String {
    message.into()
}

fn count(object: &Map<String, Value>, key: &str) -> Result<Option<u64>, String> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| error(format!("\"{key}\" must be a non-negative integer"))),
    }
}

fn index(object: &Map<String, Value>, key: &str) -> Result<Option<usize>, String> {
    count(object, key)?
        .map(|n| usize::try_from(n).map_err(|_| error(format!("\"{key}\" is too large"))))
        .transpose()
}

impl Timing {
    /// Whether nothing is timed (the body can go out whole).
    pub fn is_immediate(&self) -> bool {
        *self == Timing::default()
    }

    /// The gap in ms before event `index`.
    pub fn gap_before(&self, index: usize) -> u64 {
        match &self.gaps {
            Gaps::None => 0,
            Gaps::All(ms) => *ms,
            Gaps::Each(list) => list.get(index).copied().unwrap_or(0),
        }
    }

    /// Removes the timing keys from a scripted response object and parses them.
    pub fn take_from(object: &mut Map<String, Value>) -> Result<Timing, String> {
        let gaps = match object.get("gap_ms") {
            None | Some(Value::Null) => Gaps::None,
            Some(Value::Array(items)) => Gaps::Each(
                items
                    .iter()
                    .map(Value::as_u64)
                    .collect::<Option<_>>()
                    .ok_or_else(|| error("\"gap_ms\" must be an integer or integers"))?,
            ),
            Some(v) => Gaps::All(
                v.as_u64()
                    .ok_or_else(|| error("\"gap_ms\" must be an integer or integers"))?,
            ),
        };
        let stall_gate = match object.get("stall_gate") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(error("\"stall_gate\" must be a string")),
        };
        let gates = match object.get("gates") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(name, at)| {
                    at.as_u64()
                        .and_then(|n| usize::try_from(n).ok())
                        .map(|n| (name.clone(), n))
                        .ok_or_else(|| error(format!("\"gates.{name}\" must be an event index")))
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(error(
                    "\"gates\" must be an object {\"NAME\": EVENT_INDEX, ...}",
                ));
            }
        };
        let timing = Timing {
            gaps,
            stall_after: index(object, "stall_after")?,
            stall_gate,
            disconnect_after: index(object, "disconnect_after")?,
            disconnect_after_ms: count(object, "disconnect_after_ms")?,
            gates,
            close_delimited: match object.get("close_delimited") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err(error("\"close_delimited\" must be true or false")),
            },
        };
        for key in KEYS {
            object.remove(key);
        }
        Ok(timing)
    }

    /// Writes the timing keys into a scripted response object.
    pub fn write_into(&self, out: &mut Map<String, Value>) {
        match &self.gaps {
            Gaps::None => {}
            Gaps::All(ms) => {
                out.insert("gap_ms".into(), Value::from(*ms));
            }
            Gaps::Each(list) => {
                out.insert("gap_ms".into(), Value::from(list.clone()));
            }
        }
        if let Some(n) = self.stall_after {
            out.insert("stall_after".into(), Value::from(n));
        }
        if let Some(name) = &self.stall_gate {
            out.insert("stall_gate".into(), Value::from(name.as_str()));
        }
        if let Some(n) = self.disconnect_after {
            out.insert("disconnect_after".into(), Value::from(n));
        }
        if let Some(ms) = self.disconnect_after_ms {
            out.insert("disconnect_after_ms".into(), Value::from(ms));
        }
        if self.close_delimited {
            out.insert("close_delimited".into(), Value::Bool(true));
        }
        if !self.gates.is_empty() {
            let map = self
                .gates
                .iter()
                .map(|(name, at)| (name.clone(), Value::from(*at)))
                .collect();
            out.insert("gates".into(), Value::Object(map));
        }
    }

    /// Checks the timing against a body of `events` events: every index must exist, and the
    /// combination must be possible.
    pub fn check(&self, events: usize) -> Result<(), String> {
        if let Gaps::Each(list) = &self.gaps
            && list.len() != events
        {
            return Err(format!(
                "\"gap_ms\" lists {} gaps but the body has {events} events",
                list.len()
            ));
        }
        for (name, at) in &self.gates {
            if name.is_empty() {
                return Err("a gate needs a non-empty name".into());
            }
            if *at >= events {
                return Err(format!(
                    "gate {name:?} holds event {at}, but the body has only {events} events (0-based)"
                ));
            }
        }
        if let Some(n) = self.disconnect_after
            && n > events
        {
            return Err(format!(
                "\"disconnect_after\": {n} is more events than the body has ({events})"
            ));
        }
        if let Some(n) = self.stall_after
            && n > events
        {
            return Err(format!(
                "\"stall_after\": {n} is more events than the body has ({events})"
            ));
        }
        if self.stall_after.is_some() && self.disconnect_after.is_some() {
            return Err("\"stall_after\" and \"disconnect_after\" cannot both be set".into());
        }
        if self.stall_gate.is_some() && self.stall_after.is_none() {
            return Err("\"stall_gate\" needs \"stall_after\"".into());
        }
        if let Some(name) = &self.stall_gate
            && name.is_empty()
        {
            return Err("\"stall_gate\" must not be empty".into());
        }
        Ok(())
    }

    /// The gates to wait for before event `index` (`index == events` is the end of the body).
    pub fn gates_at(&self, index: usize) -> impl Iterator<Item = &str> {
        self.gates
            .iter()
            .filter(move |(_, at)| *at == index)
            .map(|(name, _)| name.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(value: Value) -> Result<Timing, String> {
        let mut value = value;
        Timing::take_from(value.as_object_mut().unwrap())
    }

    #[test]
    fn round_trips_and_leaves_other_keys() {
        let mut object = json!({"events": [], "gap_ms": [1, 2], "disconnect_after": 1,
            "disconnect_after_ms": 9, "gates": {"g": 1}});
        let map = object.as_object_mut().unwrap();
        let timing = Timing::take_from(map).unwrap();
        assert_eq!(map.keys().collect::<Vec<_>>(), vec!["events"]);
        let mut out = Map::new();
        timing.write_into(&mut out);
        assert_eq!(parse(Value::Object(out)).unwrap(), timing);
        assert_eq!(timing.gap_before(1), 2);
        assert_eq!(timing.gates_at(1).collect::<Vec<_>>(), vec!["g"]);
    }

    #[test]
    fn impossible_combinations_are_refused() {
        let cases = [
            (json!({"gates": {"g": 3}}), "only 3 events"),
            (json!({"disconnect_after": 4}), "more events"),
            (json!({"stall_after": 4}), "more events"),
            (json!({"gap_ms": [1]}), "lists 1 gaps"),
            (
                json!({"stall_after": 1, "disconnect_after": 1}),
                "cannot both",
            ),
            (json!({"stall_gate": "s"}), "needs \"stall_after\""),
        ];
        for (value, needle) in cases {
            let err = parse(value.clone()).unwrap().check(3).unwrap_err();
            assert!(err.contains(needle), "{value}: {err}");
        }
        assert!(parse(json!({"gap_ms": "x"})).is_err());
        assert!(parse(json!({"gates": [1]})).is_err());
        assert!(
            parse(json!({"stall_after": 3, "stall_gate": "s"}))
                .unwrap()
                .check(3)
                .is_ok()
        );
    }
}
