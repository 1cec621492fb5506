//! What the serving side (HTTP, WebSocket) and the server's commands share: the script
//! queue, the capture journal and the connection scripts behind one lock, the gates and the
//! notifications; and the answer an unscripted request gets.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::mock::capture::{Capture, is_model_request};
use crate::mock::connection::{ConnectionScript, Warmup};
use crate::mock::gates::Gates;
use crate::mock::queue::Queue;

/// Everything the serving side and the commands share, behind one lock.
pub(crate) struct State {
    pub queue: Queue,
    pub captured: Vec<Arc<Capture>>,
    pub models: Bytes,
    /// Connection scripts waiting for upgrades.
    pub connections: VecDeque<ConnectionScript>,
    /// How warm-ups are answered when a connection's script does not say.
    pub warmup: Warmup,
    /// The number the next WebSocket connection gets.
    pub next_connection: u64,
}

/// The state plus its notifications.
pub(crate) struct Shared {
    pub(crate) state: Mutex<State>,
    /// Signalled whenever a request is captured.
    pub arrived: Notify,
    pub gates: Gates,
    /// Signalled when the server stops, to end hung upgrades and held streams.
    pub stopping: Notify,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data behind; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Numbers `capture`, lets `answer` pick its reply under the same lock (so arrival order
    /// and queue order agree), stores the capture and wakes waiters.
    pub(crate) fn record<T>(
        &self,
        mut capture: Capture,
        answer: impl FnOnce(&mut State, &mut Capture) -> T,
    ) -> (Arc<Capture>, T) {
        let mut state = self.lock();
        capture.index = state.captured.len() as u64;
        let reply = answer(&mut state, &mut capture);
        let capture = Arc::new(capture);
        state.captured.push(Arc::clone(&capture));
        drop(state);
        self.arrived.notify_waiters();
        (capture, reply)
    }
}

/// The 500 body an unscripted request gets: an OpenAI-style error carrying `message`.
pub(crate) fn unscripted_body(message: &str) -> Value {
    json!({"error": {
        "message": message,
        "type": "unscripted_request",
        "param": null,
        "code": "unscripted_request"
    }})
}

/// The message naming an unscripted request (also logged on stderr).
pub(crate) fn unscripted_message(capture: &Capture, pending: usize) -> String {
    let head = format!(
        "codex-parity-sidecar: no scripted response was left for {}",
        capture.describe()
    );
    if capture.frame.is_none() && !is_model_request(&capture.method, &capture.path) {
        format!(
            "{head}; only POST …/responses, POST …/responses/compact, GET …/responses (WebSocket) and GET …/models are answered"
        )
    } else if pending > 0 {
        format!("{head}; {pending} queued response(s) wait for requests meeting their \"when\"")
    } else {
        head
    }
}
