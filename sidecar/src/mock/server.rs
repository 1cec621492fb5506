//! The mock Responses server: wiremock on a loopback port with one catch-all responder that
//! captures every request and answers it from the script queue, the models body, or with the
//! "no scripted response was left" 500.
//!
//! ```no_run
//! # async fn demo() -> anyhow::Result<()> {
//! use codex_parity_sidecar::{bodies, server::Server, Scripted};
//! let server = Server::start("127.0.0.1", 0).await?;
//! server.enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "hi"))])?;
//! println!("point codex at {}", server.base_url());
//! # Ok(()) }
//! ```

use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;

use serde_json::{Value, json};
use tokio::sync::Notify;
use wiremock::matchers::any;
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::control::protocol::{Status, push_id};
use crate::mock::capture::{Capture, decoded_body, is_model_request, merge_headers};
use crate::mock::captured::{CapturedRequest, Outcome};
use crate::mock::queue::Queue;
use crate::mock::script::{ScriptError, Scripted};

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
}

struct State {
    queue: Queue,
    captured: Vec<Arc<Capture>>,
    models: ResponseTemplate,
}

struct Shared {
    state: Mutex<State>,
    arrived: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent data behind; keep serving.
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn models_template(body: &Value) -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_raw(body.to_string(), "application/json")
}

/// Mounts the catch-all responder.
async fn mount(mock: &MockServer, shared: &Arc<Shared>) {
    Mock::given(any())
        .respond_with(Responder {
            shared: Arc::clone(shared),
        })
        .mount(mock)
        .await;
}

/// A running mock; dropping it stops the server (and, after [`Server::verify_on_drop`],
/// panics if scripted responses were left over or requests were unscripted).
pub struct Server {
    shared: Arc<Shared>,
    mock: MockServer,
    verify_on_drop: AtomicBool,
}

impl Server {
    /// Binds `host:port` (port 0 picks a free one) and starts serving.
    pub async fn start(host: &str, port: u16) -> anyhow::Result<Server> {
        let listener = TcpListener::bind((host, port))
            .with_context(|| format!("cannot listen on {host}:{port}"))?;
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                queue: Queue::default(),
                captured: Vec::new(),
                models: models_template(&json!({"models": []})),
            }),
            arrived: Notify::new(),
        });
        let mock = MockServer::builder()
            .listener(listener)
            .disable_request_recording()
            .start()
            .await;
        mount(&mock, &shared).await;
        Ok(Server {
            shared,
            mock,
            verify_on_drop: AtomicBool::new(false),
        })
    }

    /// `http://HOST:PORT`.
    pub fn server_url(&self) -> String {
        self.mock.uri()
    }

    /// `http://HOST:PORT/v1`, the provider base URL for codex.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.mock.uri())
    }

    /// Queues responses after those already waiting; all or none (an error names the index).
    pub fn enqueue(&self, responses: &[Scripted]) -> Result<usize, ScriptError> {
        let mut state = self.shared.lock();
        state.queue.push_all(responses)?;
        Ok(state.queue.len())
    }

    /// Sets the body that `GET …/models` answers.
    pub fn set_models(&self, body: &Value) {
        self.shared.lock().models = models_template(body);
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
        }
        // wiremock keeps a copy of every request a mock matched; remounting drops them.
        self.mock.reset().await;
        mount(&self.mock, &self.shared).await;
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

    /// The `requests` reply line (without newline) for `filter`, carrying `id` if given.
    /// Renders one request at a time, so a long capture never exists twice as parsed JSON.
    pub fn requests_reply_line(&self, filter: RequestFilter, id: Option<&Value>) -> String {
        let mut line = String::from("{\"type\":\"requests\",\"requests\":[");
        for (n, capture) in self.snapshot(filter).iter().enumerate() {
            if n > 0 {
                line.push(',');
            }
            match serde_json::to_string(&capture.to_captured_request()) {
                Ok(text) => line.push_str(&text),
                // Plain data always serializes; never emit a broken line.
                Err(_) => line.push_str("null"),
            }
        }
        line.push_str("]}");
        push_id(&mut line, id);
        line
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
        Leftovers {
            pending: state.queue.describe_pending(),
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

    /// Every captured request (any method and path), in arrival order.
    pub fn received_requests(&self) -> Vec<CapturedRequest> {
        self.requests(RequestFilter {
            since: 0,
            all: true,
        })
    }

    /// From now on, dropping the server panics (unless the thread is already panicking)
    /// when [`Server::leftovers`] is not empty: scripted responses never served or requests
    /// that got no scripted response.
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

impl Drop for Server {
    fn drop(&mut self) {
        if !self.verify_on_drop.load(Ordering::SeqCst) || std::thread::panicking() {
            return;
        }
        if let Err(leftovers) = self.verify() {
            panic!("the mock server is dropped with leftovers:\n{leftovers}");
        }
    }
}

impl Leftovers {
    /// Whether nothing was left over.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.unscripted.is_empty()
    }
}

impl std::fmt::Display for Leftovers {
    /// One line per leftover: `never served: …` and `unscripted request: …`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for line in &self.pending {
            writeln!(f, "never served: {line}")?;
        }
        for line in &self.unscripted {
            writeln!(f, "unscripted request: {line}")?;
        }
        Ok(())
    }
}

struct Responder {
    shared: Arc<Shared>,
}

impl Respond for Responder {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let method = request.method.as_str().to_string();
        let path = request.url.path().to_string();
        let headers = merge_headers(
            request
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_bytes())),
        );
        let (body, decode_error) = decoded_body(&headers, &request.body);
        let mut capture = Capture {
            index: 0,
            method,
            path,
            query: request.url.query().map(str::to_string),
            headers,
            body,
            decode_error,
            received_at_ms: now_ms(),
            outcome: Outcome::Scripted,
        };
        let mut state = self.shared.lock();
        capture.index = state.captured.len() as u64;
        let answer = if capture.is_model_request() {
            state
                .queue
                .take(&capture.body, &capture.headers)
                .map(|(_, t)| t)
        } else if capture.method == "GET" && capture.path.ends_with("/models") {
            Some(state.models.clone())
        } else {
            None
        };
        let (template, log) = match answer {
            Some(template) => (template, None),
            None => {
                capture.outcome = Outcome::Unscripted;
                let message = unscripted_message(&capture, state.queue.len());
                (unscripted_response(&message), Some(message))
            }
        };
        state.captured.push(Arc::new(capture));
        drop(state);
        self.shared.arrived.notify_waiters();
        // Log only after the lock is released: a slow stderr must not stall other requests.
        if let Some(message) = log {
            eprintln!("{message}");
        }
        template
    }
}

/// The 500 an unscripted request gets: an OpenAI-style error carrying `message`.
fn unscripted_response(message: &str) -> ResponseTemplate {
    ResponseTemplate::new(500).set_body_raw(
        json!({"error": {
            "message": message,
            "type": "unscripted_request",
            "param": null,
            "code": "unscripted_request"
        }})
        .to_string(),
        "application/json",
    )
}

fn unscripted_message(capture: &Capture, pending: usize) -> String {
    let head = format!(
        "codex-parity-sidecar: no scripted response was left for {}",
        capture.describe()
    );
    if !is_model_request(&capture.method, &capture.path) {
        format!("{head}; only POST …/responses and GET …/models are answered")
    } else if pending > 0 {
        format!("{head}; {pending} queued response(s) wait for requests meeting their \"when\"")
    } else {
        head
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
