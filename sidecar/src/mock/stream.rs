//! Timed release of a scripted response's events over any transport: gaps, gates, a stall, a
//! scripted disconnect (after N events or T ms), each event's send time recorded in the
//! capture. The transport is a [`Sink`]: an HTTP SSE body ([`SseSink`]) or a WebSocket
//! connection (see `websocket.rs`).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::mock::capture::Delivery;
use crate::mock::gates::Gates;
use crate::mock::timing::Timing;
use crate::wire::sse;

/// Where a response's events go.
pub(crate) trait Sink {
    /// Sends one event; `false` when the client is gone.
    fn send(&mut self, event: &Value) -> impl Future<Output = bool> + Send;
    /// Resolves once the client has gone (never, while it stays).
    fn closed(&mut self) -> impl Future<Output = ()> + Send;
    /// Ends the transport abruptly (the scripted disconnect).
    fn cut(&mut self) -> impl Future<Output = ()> + Send;
}

/// How a delivery ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Every event was sent.
    Completed,
    /// The script cut the connection.
    Disconnected,
    /// The client went away first.
    ClientClosed,
}

impl End {
    fn name(self) -> &'static str {
        match self {
            End::Completed => "completed",
            End::Disconnected => "disconnected",
            End::ClientClosed => "client_closed",
        }
    }
}

fn set_end(delivery: &Mutex<Delivery>, end: &'static str) {
    if let Ok(mut d) = delivery.lock() {
        d.end = Some(end);
    }
}

/// Milliseconds from `start` to now, to 0.01 ms.
pub(crate) fn ms_since(start: Instant) -> f64 {
    (start.elapsed().as_secs_f64() * 100_000.0).round() / 100.0
}

/// Records that events `0..n` left now (a whole body sent at once).
pub(crate) fn record_all_sent(delivery: &Mutex<Delivery>, started: Instant, n: usize) {
    let at = ms_since(started);
    if let Ok(mut d) = delivery.lock() {
        d.events_sent_ms = vec![at; n];
        d.end = Some("completed");
    }
}

/// Sends `events` through `sink` as `timing` says, recording send times (relative to
/// `started`, when the request arrived) in `delivery`.
pub(crate) async fn deliver<S: Sink>(
    sink: &mut S,
    events: &[Value],
    timing: &Timing,
    gates: &Gates,
    delivery: &Mutex<Delivery>,
    started: Instant,
) -> End {
    set_end(delivery, "streaming");
    let end = match timing.disconnect_after_ms {
        None => release(sink, events, timing, gates, delivery, started).await,
        Some(ms) => {
            let deadline = tokio::time::Instant::now() + Duration::from_millis(ms);
            tokio::select! {
                end = release(sink, events, timing, gates, delivery, started) => end,
                () = tokio::time::sleep_until(deadline) => End::Disconnected,
            }
        }
    };
    if end == End::Disconnected {
        sink.cut().await;
    }
    set_end(delivery, end.name());
    end
}

async fn release<S: Sink>(
    sink: &mut S,
    events: &[Value],
    timing: &Timing,
    gates: &Gates,
    delivery: &Mutex<Delivery>,
    started: Instant,
) -> End {
    let mut mark = tokio::time::Instant::now();
    for index in 0..=events.len() {
        if timing.disconnect_after == Some(index) {
            return End::Disconnected;
        }
        if timing.stall_after == Some(index) {
            set_end(delivery, "stalled");
            match &timing.stall_gate {
                Some(name) => {
                    if !gates.wait(name, sink.closed()).await {
                        return End::ClientClosed;
                    }
                }
                None => {
                    sink.closed().await;
                    return End::ClientClosed;
                }
            }
            set_end(delivery, "streaming");
            mark = tokio::time::Instant::now();
        }
        let names: Vec<&str> = timing.gates_at(index).collect();
        for name in names {
            set_end(delivery, "gated");
            if !gates.wait(name, sink.closed()).await {
                return End::ClientClosed;
            }
            set_end(delivery, "streaming");
            mark = tokio::time::Instant::now();
        }
        let Some(event) = events.get(index) else {
            break;
        };
        let gap = timing.gap_before(index);
        if gap > 0 {
            mark += Duration::from_millis(gap);
            tokio::select! {
                () = tokio::time::sleep_until(mark) => {}
                () = sink.closed() => return End::ClientClosed,
            }
        }
        if !sink.send(event).await {
            return End::ClientClosed;
        }
        mark = tokio::time::Instant::now();
        let at = ms_since(started);
        if let Ok(mut d) = delivery.lock() {
            d.events_sent_ms.push(at);
        }
    }
    End::Completed
}

/// How long a cut waits after hyper took the last chunk, so that it reaches the socket.
const CUT_GRACE: Duration = Duration::from_millis(20);

/// One chunk of a streamed HTTP body, or the error that makes hyper drop the connection.
pub(crate) type Chunk = Result<Bytes, std::io::Error>;

/// An SSE body fed through a channel.
pub(crate) struct SseSink {
    pub sender: mpsc::Sender<Chunk>,
}

impl Sink for SseSink {
    async fn send(&mut self, event: &Value) -> bool {
        let Ok(text) = sse::frame(std::slice::from_ref(event)) else {
            return false;
        };
        self.sender.send(Ok(Bytes::from(text))).await.is_ok()
    }

    async fn closed(&mut self) {
        self.sender.closed().await;
    }

    async fn cut(&mut self) {
        // Let hyper take and write the events already sent, then fail the body: a body error
        // makes hyper close the connection without the chunked terminator.
        while self.sender.capacity() < self.sender.max_capacity() && !self.sender.is_closed() {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(CUT_GRACE).await;
        let _ = self
            .sender
            .send(Err(std::io::Error::other("scripted disconnect")))
            .await;
    }
}
