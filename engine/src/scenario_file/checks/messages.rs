//! `on = "notification"` and `on = "server_request"`: the messages of one method codex sent
//! (every app-server of the scenario), counted, their params matched. One struct for both,
//! told apart by its kind ([`Notifications`], [`ServerRequests`]).

use std::marker::PhantomData;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::count_matching;
use crate::app_server::message::Message;
use crate::scenario_file::execute::Run;
use crate::scenario_file::steps::Uses;

/// Which messages a [`MessageCheck`] counts.
pub trait MessageKind {
    /// Whether `message` is of this kind and of `method`.
    fn is(message: &Message, method: &str) -> bool;
}

/// Notifications (`on = "notification"`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notifications;

/// Server-to-client requests (`on = "server_request"`).
#[derive(Debug, Clone, PartialEq)]
pub struct ServerRequests;

impl MessageKind for Notifications {
    fn is(message: &Message, method: &str) -> bool {
        matches!(message, Message::Notification { method: m, .. } if m == method)
    }
}

impl MessageKind for ServerRequests {
    fn is(message: &Message, method: &str) -> bool {
        matches!(message, Message::Request { method: m, .. } if m == method)
    }
}

/// The messages of one method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, bound = "")]
pub struct MessageCheck<K> {
    /// The method.
    pub method: String,
    /// A subset the params must match.
    #[serde(rename = "match", skip_serializing_if = "Option::is_none")]
    pub matches: Option<Value>,
    /// Exactly this many match (at least one when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<usize>,
    /// A mismatch is drift under this key instead of a failure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub drift: Option<String>,
    /// Which messages it counts.
    #[serde(skip)]
    pub kind: PhantomData<K>,
}

/// `on = "notification"`.
pub type NotificationCheck = MessageCheck<Notifications>;

/// `on = "server_request"`.
pub type ServerRequestCheck = MessageCheck<ServerRequests>;

impl<K: MessageKind> MessageCheck<K> {
    /// A check of `method`'s messages.
    pub fn new(method: &str, matches: Option<Value>, count: Option<usize>) -> MessageCheck<K> {
        MessageCheck {
            method: method.to_string(),
            matches,
            count,
            drift: None,
            kind: PhantomData,
        }
    }

    pub(super) fn needs_app_server(&self) -> bool {
        true
    }

    pub(super) fn uses<'a>(&'a self, u: &mut Uses<'a>) {
        u.expectations.extend(&self.matches);
    }

    pub(super) async fn run(&self, run: &mut Run<'_>) -> anyhow::Result<()> {
        let method = &self.method;
        let all = run.messages(|m| K::is(m, method));
        count_matching(
            run,
            &all,
            method,
            self.matches.as_ref(),
            self.count,
            self.drift.as_ref(),
        )
    }
}
