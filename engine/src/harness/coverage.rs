//! What a scenario's worlds exercised of the app-server protocol, read from its transcripts:
//! the client requests the client wrote (with how codex answered each), the notifications
//! and server requests codex sent, and the events `codex exec --json` printed; and the
//! methods a binary's schema lists, stable and experimental apart ([`Protocol`]), that the
//! report holds them against ([`crate::report::coverage`]).
//!
//! A client request counts from what the client wrote ([`Connection::requested`]), answered
//! or not; a transcript document of an older codex-parity, which kept only the answers, gives
//! the requests that were answered. A notification or server request counts when codex sent
//! it. Answers to raw lines (method [`UNKNOWN_METHOD`]) name no method and count for nothing.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::app_server::transcript::{Sent, SentKind, UNKNOWN_METHOD};
use crate::codex::capabilities::Capabilities;
use crate::codex::surface::UseKind;
use crate::harness::tally::Connection;

/// How codex answered a client request, the best of all the times it was asked (an answer
/// with a result beats an error, which beats none).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    /// Asked, never answered (the call timed out or codex ended first).
    #[default]
    Unanswered,
    /// Answered only with JSON-RPC errors.
    Error,
    /// Answered with a result at least once.
    Result,
}

impl Answer {
    /// The word of `results.json`: `unanswered`, `error`, `result`.
    pub fn word(self) -> &'static str {
        match self {
            Answer::Unanswered => "unanswered",
            Answer::Error => "error",
            Answer::Result => "result",
        }
    }
}

/// The methods one scenario (or several, joined) exercised.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Exercised {
    /// Client request method -> how it was answered.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub requests: BTreeMap<String, Answer>,
    /// Notification methods codex sent.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub notifications: BTreeSet<String>,
    /// Server request methods codex sent.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub server_requests: BTreeSet<String>,
    /// Event types `codex exec --json` printed.
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub exec_events: BTreeSet<String>,
}

impl Exercised {
    /// What the connections of one scenario run exercised.
    pub fn of(connections: &[Connection]) -> Exercised {
        let mut out = Exercised::default();
        for c in connections {
            out.add_connection(&c.requested, &c.messages);
        }
        out
    }

    /// Adds one connection: the methods the client wrote and the messages codex sent.
    pub fn add_connection(&mut self, requested: &[String], messages: &[Sent]) {
        for method in requested {
            self.add_request(method, Answer::Unanswered);
        }
        for sent in messages {
            if sent.method == UNKNOWN_METHOD {
                continue;
            }
            let method = sent.method.clone();
            match sent.kind {
                SentKind::Response => self.add_request(&method, Answer::Result),
                SentKind::Error => self.add_request(&method, Answer::Error),
                SentKind::Notification => {
                    self.notifications.insert(method);
                }
                SentKind::Request => {
                    self.server_requests.insert(method);
                }
                SentKind::Event => {
                    self.exec_events.insert(method);
                }
            }
        }
    }

    fn add_request(&mut self, method: &str, answer: Answer) {
        let best = self.requests.entry(method.to_string()).or_default();
        *best = (*best).max(answer);
    }

    /// Adds everything `other` exercised.
    pub fn join(&mut self, other: &Exercised) {
        for (method, answer) in &other.requests {
            self.add_request(method, *answer);
        }
        self.notifications
            .extend(other.notifications.iter().cloned());
        self.server_requests
            .extend(other.server_requests.iter().cloned());
        self.exec_events.extend(other.exec_events.iter().cloned());
    }

    /// Whether nothing was exercised.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
            && self.notifications.is_empty()
            && self.server_requests.is_empty()
            && self.exec_events.is_empty()
    }

    /// Whether the method of this kind was exercised (a client request however it was
    /// answered).
    pub fn has(&self, kind: UseKind, method: &str) -> bool {
        match kind {
            UseKind::Request => self.requests.contains_key(method),
            UseKind::Notification => self.notifications.contains(method),
            UseKind::ServerRequest => self.server_requests.contains(method),
            UseKind::ExecEvent => self.exec_events.contains(method),
            // How codex is launched is not a message a scenario exchanges.
            UseKind::Feature | UseKind::Flag | UseKind::Config | UseKind::Package => false,
        }
    }

    /// The methods of one kind, in order.
    pub fn methods(&self, kind: UseKind) -> BTreeSet<&str> {
        match kind {
            UseKind::Request => self.requests.keys().map(String::as_str).collect(),
            UseKind::Notification => self.notifications.iter().map(String::as_str).collect(),
            UseKind::ServerRequest => self.server_requests.iter().map(String::as_str).collect(),
            UseKind::ExecEvent => self.exec_events.iter().map(String::as_str).collect(),
            UseKind::Feature | UseKind::Flag | UseKind::Config | UseKind::Package => {
                BTreeSet::new()
            }
        }
    }
}

/// The methods of one kind a schema lists: those of the stable schema
/// (`generate-json-schema`) and those only `--experimental` adds.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Listed {
    /// In the stable schema.
    pub stable: BTreeSet<String>,
    /// Only in the experimental schema.
    pub experimental: BTreeSet<String>,
}

impl Listed {
    /// The experimental schema's methods split by the stable schema's.
    pub fn split(experimental: &BTreeSet<String>, stable: &BTreeSet<String>) -> Listed {
        Listed {
            stable: experimental.intersection(stable).cloned().collect(),
            experimental: experimental.difference(stable).cloned().collect(),
        }
    }

    /// Whether the schema lists `method` at all.
    pub fn contains(&self, method: &str) -> bool {
        self.stable.contains(method) || self.experimental.contains(method)
    }
}

/// What one binary's schema lists of the three kinds coverage counts.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Protocol {
    /// Client request methods.
    pub requests: Listed,
    /// Notification methods.
    pub notifications: Listed,
    /// Server request methods.
    pub server_requests: Listed,
}

impl Protocol {
    /// The lists of a binary's schemas, read when its capabilities were.
    pub fn of(caps: &Capabilities) -> Protocol {
        Protocol {
            requests: Listed::split(&caps.client_methods, &caps.stable_client_methods),
            notifications: Listed::split(&caps.notifications, &caps.stable_notifications),
            server_requests: Listed::split(&caps.server_requests, &caps.stable_server_requests),
        }
    }

    /// The list of one kind (`None` for exec events: no schema lists them).
    pub fn listed(&self, kind: UseKind) -> Option<&Listed> {
        match kind {
            UseKind::Request => Some(&self.requests),
            UseKind::Notification => Some(&self.notifications),
            UseKind::ServerRequest => Some(&self.server_requests),
            UseKind::ExecEvent
            | UseKind::Feature
            | UseKind::Flag
            | UseKind::Config
            | UseKind::Package => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;
    use crate::codex::schema::Schema;

    fn sent(kind: SentKind, method: &str) -> Sent {
        Sent::new(kind, method, json!({}))
    }

    #[test]
    fn requests_count_from_what_was_written_with_the_best_answer() {
        let connection = Connection {
            world: 1,
            connection: 1,
            root: PathBuf::from("/tmp"),
            requested: ["initialize", "bogus/method", "turn/start", "thread/start"]
                .map(String::from)
                .into(),
            messages: vec![
                sent(SentKind::Response, "initialize"),
                sent(SentKind::Error, "bogus/method"),
                sent(SentKind::Error, "thread/start"),
                sent(SentKind::Response, "thread/start"),
                sent(SentKind::Notification, "turn/started"),
                sent(SentKind::Notification, "turn/started"),
                sent(SentKind::Request, "item/tool/call"),
                sent(SentKind::Response, UNKNOWN_METHOD),
            ],
        };
        let exercised = Exercised::of(&[connection]);
        let answers: Vec<(&str, Answer)> = exercised
            .requests
            .iter()
            .map(|(m, a)| (m.as_str(), *a))
            .collect();
        assert_eq!(
            answers,
            [
                ("bogus/method", Answer::Error),
                ("initialize", Answer::Result),
                ("thread/start", Answer::Result),
                ("turn/start", Answer::Unanswered),
            ]
        );
        assert_eq!(
            exercised.methods(UseKind::Notification),
            ["turn/started"].into()
        );
        assert!(exercised.has(UseKind::ServerRequest, "item/tool/call"));
        assert!(!exercised.has(UseKind::Request, UNKNOWN_METHOD));
        assert!(!exercised.has(UseKind::ExecEvent, "turn.completed"));
    }

    #[test]
    fn joining_keeps_every_method_and_the_best_answer() {
        let mut a = Exercised::default();
        a.add_connection(&["x".into()], &[sent(SentKind::Event, "turn.completed")]);
        let mut b = Exercised::default();
        b.add_connection(
            &[],
            &[sent(SentKind::Error, "x"), sent(SentKind::Response, "y")],
        );
        a.join(&b);
        assert_eq!(a.requests["x"], Answer::Error);
        assert_eq!(
            a.requests["y"],
            Answer::Result,
            "an answer without a write counts"
        );
        assert!(a.has(UseKind::ExecEvent, "turn.completed"));
        assert!(!a.is_empty() && Exercised::default().is_empty());
        let text = serde_json::to_value(&a).unwrap();
        assert_eq!(text["requests"]["x"], "error");
        assert!(
            text.get("notifications").is_none(),
            "empty lists are left out"
        );
        assert_eq!(serde_json::from_value::<Exercised>(text).unwrap(), a);
    }

    #[test]
    fn the_protocol_splits_stable_from_experimental() {
        let set = |names: &[&str]| names.iter().map(|m| m.to_string()).collect();
        let experimental = Schema {
            client_requests: set(&["thread/start", "thread/goal/set"]),
            notifications: set(&["turn/started"]),
            server_requests: set(&["item/tool/call"]),
            ..Schema::default()
        };
        let stable = Schema {
            client_requests: set(&["thread/start"]),
            notifications: set(&["turn/started"]),
            server_requests: set(&["item/tool/call"]),
            ..Schema::default()
        };
        let protocol = Protocol::of(&Capabilities::from_schemas(experimental, &stable));
        assert_eq!(protocol.requests.stable, set(&["thread/start"]));
        assert_eq!(protocol.requests.experimental, set(&["thread/goal/set"]));
        assert!(protocol.notifications.experimental.is_empty());
        assert!(protocol.server_requests.contains("item/tool/call"));
        assert!(protocol.listed(UseKind::ExecEvent).is_none());
    }
}
