//! The mock Responses server: one loopback listener served by hyper on its own thread
//! ([`crate::mock::http`] for HTTP, [`crate::mock::websocket`] for the Responses WebSocket),
//! with one script queue, one capture journal and the gate registry shared by both.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use codex_parity_sidecar::{bodies, server::Server, Scripted};
//! let server = Server::start("127.0.0.1", 0).await?;
//! server.enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "hi"))])?;
//! println!("point codex at {}", server.base_url());
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::mock::capture::Capture;
use crate::mock::captured::{CapturedRequest, Outcome};
use crate::mock::connection::{ConnectionScript, Warmup};
use crate::mock::gates::Gates;
use crate::mock::queue::Queue;
use crate::mock::script::{ScriptError, Scripted};
use crate::mock::shared::{Shared, State};

/// Counters of the server (the sidecar's `status` reply).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Status {
    /// Scripted responses still queued.
    pub pending: usize,
    /// Scripted responses served.
    pub served: u64,
    /// Requests answered with the "no scripted response was left" 500.
    pub unscripted: u64,
    /// Requests captured (any method and path).
    pub captured: usize,
}

/// Which captured requests a query wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RequestFilter {
    /// Only requests with `index >= since`.
    pub since: u64,
    /// Every request, not only model requests.
    pub all: bool,
}

impl RequestFilter {
    fn wants(&self, capture: &Capture) -> bool {
        capture.index >= self.since && (self.all || capture.is_model_request())
    }
}

/// What was left over at the end: queued responses never served and unscripted requests.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Leftovers {
    /// One line per scripted response still queued.
    pub pending: Vec<String>,
    /// One line per request that got no scripted response.
    pub unscripted: Vec<String>,
    /// Gates that scripted responses declared and no `release` opened.
    pub unreleased_gates: Vec<String>,
}

/// A running mock; dropping it stops the server (and, after [`Server::verify_on_drop`],
/// panics if scripted responses were left over or requests were unscripted).
pub struct Server {
    shared: Arc<Shared>,
    url: String,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    verify_on_drop: AtomicBool,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.shared.stopping.notify_waiters();
        if !self.verify_on_drop.load(Ordering::SeqCst) || std::thread::panicking() {
            return;
        }
        if let Err(leftovers) = self.verify() {
            panic!("the mock server is dropped with leftovers:\n{leftovers}");
        }
    }
}

impl Server {
    /// Binds `host:port` (port 0 picks a free one) and starts serving on a thread of its own.
    pub async fn start(host: &str, port: u16) -> anyhow::Result<Server> {
        let listener = TcpListener::bind((host, port))
            .with_context(|| format!("cannot listen on {host}:{port}"))?;
        let address = listener
            .local_addr()
            .context("cannot read the listening address")?;
        listener
            .set_nonblocking(true)
            .context("cannot make the listener non-blocking")?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Queue::default(),
                captured: Vec::new(),
                models: Bytes::from(json!({"models": []}).to_string()),
                connections: VecDeque::new(),
                warmup: Warmup::Auto,
                next_connection: 0,
            }),
            arrived: Notify::new(),
            gates: Gates::default(),
            stopping: Notify::new(),
        });
        let (stop, stopped) = tokio::sync::oneshot::channel();
        let (started, ready) = tokio::sync::oneshot::channel();
        let serving = Arc::clone(&shared);
        std::thread::Builder::new()
            .name("sidecar-server".into())
            .spawn(move || crate::mock::http::run_thread(listener, serving, stopped, started))
            .context("cannot start the server thread")?;
        ready
            .await
            .context("the server thread ended before serving")?
            .context("cannot serve")?;
        Ok(Server {
            shared,
            url: format!("http://{address}"),
            stop: Some(stop),
            verify_on_drop: AtomicBool::new(false),
        })
    }

    /// `http://HOST:PORT`.
    pub fn server_url(&self) -> String {
        self.url.clone()
    }

    /// `http://HOST:PORT/v1`, the provider base URL for codex.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Queues responses after those already waiting; all or none (an error names the index).
    pub fn enqueue(&self, responses: &[Scripted]) -> Result<usize, ScriptError> {
        let mut state = self.shared.lock();
        state.queue.push_all(responses)?;
        self.shared.gates.declare(
            responses
                .iter()
                .flat_map(|r| r.timing.gates.iter().map(|(name, _)| name.as_str())),
        );
        Ok(state.queue.len())
    }

    /// Queues WebSocket connection scripts (taken by upgrades in order) and sets the default
    /// warm-up answer when given; returns how many connection scripts wait.
    pub fn websocket(&self, warmup: Option<Warmup>, connections: Vec<ConnectionScript>) -> usize {
        let mut state = self.shared.lock();
        if let Some(warmup) = warmup {
            state.warmup = warmup;
        }
        self.shared.gates.declare(connections.iter().flat_map(|c| {
            c.responses
                .iter()
                .flat_map(|r| r.timing.gates.iter().map(|(name, _)| name.as_str()))
        }));
        state.connections.extend(connections);
        state.connections.len()
    }

    /// Opens gate `name` (remembered until `reset`); returns how many responses waited at it.
    pub fn release(&self, name: &str) -> usize {
        self.shared.gates.release(name)
    }

    /// Waits until a response waits at gate `name` or `timeout` passes; returns how many wait.
    pub async fn wait_gate(&self, name: &str, timeout: Duration) -> usize {
        self.shared.gates.wait_held(name, timeout).await
    }

    /// Sets the body that `GET …/models` answers.
    pub fn set_models(&self, body: &Value) {
        self.shared.lock().models = Bytes::from(body.to_string());
    }

    /// The counters of the `status` reply.
    pub fn status(&self) -> Status {
        let state = self.shared.lock();
        let count =
            |f: &dyn Fn(&Capture) -> bool| state.captured.iter().filter(|c| f(c)).count() as u64;
        Status {
            pending: state.queue.len(),
            served: count(&|c| c.is_model_request() && c.outcome == Outcome::Scripted),
            unscripted: count(&|c| c.outcome == Outcome::Unscripted),
            captured: state.captured.len(),
        }
    }

    /// Empties the script and the captured requests and zeroes the counters.
    pub async fn reset(&self) {
        {
            let mut state = self.shared.lock();
            state.queue.clear();
            state.captured = Vec::new();
            state.connections.clear();
            state.next_connection = 0;
        }
        self.shared.gates.clear();
    }

    /// The records matching `filter` (shared, so the lock is held only to copy pointers).
    fn snapshot(&self, filter: RequestFilter) -> Vec<Arc<Capture>> {
        let state = self.shared.lock();
        state
            .captured
            .iter()
            .filter(|c| filter.wants(c))
            .cloned()
            .collect()
    }

    /// Calls `each` with every captured request matching `filter`, in arrival order, one at
    /// a time (the lock is held only to copy pointers), so a caller that renders them never
    /// holds a long capture twice as parsed JSON.
    pub fn each_request(&self, filter: RequestFilter, mut each: impl FnMut(CapturedRequest)) {
        for capture in self.snapshot(filter) {
            each(capture.to_captured_request());
        }
    }

    /// Waits until at least `min` requests match `filter` or `timeout` passes; whether
    /// `min` were reached.
    pub async fn wait_for(&self, filter: RequestFilter, min: usize, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            arrived.as_mut().enable();
            let count = {
                let state = self.shared.lock();
                state.captured.iter().filter(|c| filter.wants(c)).count()
            };
            if count >= min {
                return true;
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                return self.snapshot(filter).len() >= min;
            }
        }
    }

    /// Queued responses never served and requests that got no scripted response.
    pub fn leftovers(&self) -> Leftovers {
        let state = self.shared.lock();
        let mut pending = state.queue.describe_pending();
        pending.extend(state.connections.iter().map(ConnectionScript::describe));
        Leftovers {
            unreleased_gates: self.shared.gates.unreleased(),
            pending,
            unscripted: state
                .captured
                .iter()
                .filter(|c| c.outcome == Outcome::Unscripted)
                .map(|c| c.describe())
                .collect(),
        }
    }
}

impl Server {
    /// The captured requests that `filter` wants, in arrival order, as the protocol's `R`.
    pub fn requests(&self, filter: RequestFilter) -> Vec<CapturedRequest> {
        self.snapshot(filter)
            .iter()
            .map(|capture| capture.to_captured_request())
            .collect()
    }

    /// Every captured request (any method and path, any transport), in arrival order.
    pub fn received_requests(&self) -> Vec<CapturedRequest> {
        self.requests(RequestFilter {
            since: 0,
            all: true,
        })
    }

    /// From now on, dropping the server panics (unless the thread is already panicking)
    /// when [`Server::leftovers`] is not empty: scripted responses never served, requests
    /// that got no scripted response, or gates never released.
    pub fn verify_on_drop(&self) -> &Self {
        self.verify_on_drop.store(true, Ordering::SeqCst);
        self
    }

    /// `Ok` when nothing was left over, else the leftovers.
    pub fn verify(&self) -> Result<(), Leftovers> {
        let leftovers = self.leftovers();
        if leftovers.is_empty() {
            Ok(())
        } else {
            Err(leftovers)
        }
    }
}

impl Leftovers {
    /// Whether nothing was left over.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.unscripted.is_empty() && self.unreleased_gates.is_empty()
    }
}

impl std::fmt::Display for Leftovers {
    /// One line per leftover: `never served: …`, `unscripted request: …` and
    /// `gate never released: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.pending {
            writeln!(f, "never served: {line}")?;
        }
        for line in &self.unscripted {
            writeln!(f, "unscripted request: {line}")?;
        }
        for gate in &self.unreleased_gates {
            writeln!(f, "gate never released: {gate}")?;
        }
        Ok(())
    }
}
