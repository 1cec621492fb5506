//! Named gates (contract v2): a timed response waits at a gate until a `release` command opens
//! it. A release is remembered (a response reaching an open gate passes at once) until
//! `reset`; gates declared by scripted responses but never released are leftovers at shutdown.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

#[derive(Default)]
struct GateState {
    declared: BTreeSet<String>,
    released: BTreeSet<String>,
    /// How many responses wait at each gate now.
    held: BTreeMap<String, usize>,
}

/// The gate registry shared by every connection.
#[derive(Default)]
pub(crate) struct Gates {
    state: Mutex<GateState>,
    changed: Notify,
}

impl Gates {
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Notes gate names that scripted responses use (for the leftover report).
    pub(crate) fn declare<'a>(&self, names: impl IntoIterator<Item = &'a str>) {
        let mut state = self.lock();
        for name in names {
            state.declared.insert(name.to_string());
        }
    }

    /// Opens a gate; returns how many responses were waiting at it.
    pub(crate) fn release(&self, name: &str) -> usize {
        let held = {
            let mut state = self.lock();
            state.released.insert(name.to_string());
            state.held.get(name).copied().unwrap_or(0)
        };
        self.changed.notify_waiters();
        held
    }

    /// How many responses wait at `name` now.
    pub(crate) fn held(&self, name: &str) -> usize {
        self.lock().held.get(name).copied().unwrap_or(0)
    }

    /// Waits until `name` is released (returns true) or `closed` resolves (returns false).
    pub(crate) async fn wait(&self, name: &str, closed: impl Future<Output = ()>) -> bool {
        tokio::pin!(closed);
        let mut counted = false;
        let mut announced = false;
        let released = loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let arrived = {
                let mut state = self.lock();
                if state.released.contains(name) {
                    break true;
                }
                if !counted {
                    *state.held.entry(name.to_string()).or_insert(0) += 1;
                    counted = true;
                }
                counted && !std::mem::replace(&mut announced, true)
            };
            if arrived {
                // Tell `wait_held` callers that a response arrived at the gate, then wait
                // on a fresh notification (this one would wake ourselves).
                self.changed.notify_waiters();
                continue;
            }
            tokio::select! {
                _ = &mut changed => {}
                _ = &mut closed => break false,
            }
        };
        if counted {
            let mut state = self.lock();
            if let Some(n) = state.held.get_mut(name) {
                *n = n.saturating_sub(1);
            }
        }
        released
    }

    /// Waits until at least one response waits at `name`, or `timeout`; returns how many wait.
    pub(crate) async fn wait_held(&self, name: &str, timeout: Duration) -> usize {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let held = self.held(name);
            if held > 0 || tokio::time::timeout_at(deadline, changed).await.is_err() {
                return held;
            }
        }
    }

    /// Gates declared but never released, for the shutdown report.
    pub(crate) fn unreleased(&self) -> Vec<String> {
        let state = self.lock();
        state
            .declared
            .difference(&state.released)
            .cloned()
            .collect()
    }

    /// Forgets every gate (the `reset` command).
    pub(crate) fn clear(&self) {
        *self.lock() = GateState::default();
        self.changed.notify_waiters();
    }
}
