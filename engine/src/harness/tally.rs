//! What the worlds of one scenario run report back to it: how many finished, the drift,
//! the captured requests, the observations, the sidecars to watch and what each app-server
//! and the client said to each other.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use codex_parity_sidecar::captured::CapturedRequest;

use crate::app_server::transcript::Sent;
use crate::harness::outcome::Drift;
use crate::harness::perf::Perf;
use crate::harness::sidecar::SidecarHealth;
use crate::lock;

/// What the worlds of one scenario run report back to it.
#[derive(Debug, Default)]
pub struct Tally {
    /// Worlds whose after-scenario checks ran.
    pub finished: AtomicUsize,
    /// Divergences of this codex version (see [`crate::harness::baseline`]).
    pub drift: Mutex<Vec<Drift>>,
    /// Every request the worlds' sidecars captured, world after world.
    pub requests: Mutex<Vec<CapturedRequest>>,
    /// Facts the scenario recorded about this codex (see
    /// [`crate::harness::scenario::Ctx::observe`]).
    pub observations: Mutex<Vec<String>>,
    /// The sidecars of the scenario's worlds, to say so when one died.
    pub sidecars: Mutex<Vec<Arc<SidecarHealth>>>,
    /// Worlds made so far (numbers them, from 1).
    pub worlds: AtomicUsize,
    /// What each app-server of each world sent to the client, world after world.
    pub transcripts: Mutex<Vec<Connection>>,
    /// What a performance scenario measured (see [`crate::harness::perf`]).
    pub perf: Mutex<Perf>,
}

/// What one `codex app-server` of a world sent to the client.
#[derive(Debug, Clone)]
pub struct Connection {
    /// The world's number in its scenario, from 1.
    pub world: usize,
    /// The app-server's number in its world, from 1 (in the order they were started).
    pub connection: usize,
    /// The world's root directory (where `--keep` leaves it).
    pub root: PathBuf,
    /// The messages, in arrival order.
    pub messages: Vec<Sent>,
    /// The method of every request the client wrote to this app-server, in the order
    /// written (empty for a `codex exec` stream).
    pub requested: Vec<String>,
}

impl Tally {
    /// Records a divergence.
    pub fn drift(&self, drift: Drift) {
        lock(&self.drift).push(drift);
    }

    /// Records a fact about this codex.
    pub fn observe(&self, what: String) {
        lock(&self.observations).push(what);
    }

    /// Keeps a world's sidecar in view.
    pub fn watch_sidecar(&self, health: Arc<SidecarHealth>) {
        lock(&self.sidecars).push(health);
    }

    /// What to say about every sidecar that died without being told to stop.
    pub fn sidecar_deaths(&self) -> Vec<String> {
        lock(&self.sidecars)
            .iter()
            .filter_map(|h| h.death())
            .collect()
    }

    /// The number of a new world, from 1.
    pub fn next_world(&self) -> usize {
        self.worlds.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Keeps what one app-server sent.
    pub fn transcript(&self, connection: Connection) {
        lock(&self.transcripts).push(connection);
    }

    /// Keeps a world's captured requests.
    pub fn captured(&self, requests: Vec<CapturedRequest>) {
        lock(&self.requests).extend(requests);
    }

    /// Takes everything in `list`, leaving it empty.
    pub fn take<T>(list: &Mutex<Vec<T>>) -> Vec<T> {
        std::mem::take(&mut *lock(list))
    }
}
