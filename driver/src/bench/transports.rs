//! What the client's transport costs: the same work over stdio, a ws:// listener and a
//! unix:// listener, one world each: start (spawn, listen and connect, to `initialize`
//! answered), a JSON-RPC round trip without the model (`thread/read`), and a whole turn
//! (`turn/start` to `turn/completed`, the sidecar answering at once).

use std::time::{Duration, Instant};

use anyhow::ensure;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

use super::{median, percentile};
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::codex::binaries::CodexBinary;
use crate::harness::world::{Listen, Settings, World, WorldOptions};

/// What one transport measured.
#[derive(Debug, Clone)]
pub struct TransportTimes {
    /// Which transport.
    pub listen: Listen,
    /// Spawn (and listen, and connect) until `initialize` answered: one sample.
    pub start: Duration,
    /// `thread/read` round trips.
    pub round_trips: Vec<Duration>,
    /// Whole turns.
    pub turns: Vec<Duration>,
}

impl TransportTimes {
    /// One line for people: medians and 90th percentiles in ms.
    pub fn summary(&self) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        format!(
            "{:<6} start {:6.1} ms | thread/read median {:5.2} ms, p90 {:5.2} ms | turn median {:6.1} ms, p90 {:6.1} ms ({} turns)",
            self.listen.scheme(),
            ms(self.start),
            ms(median(&self.round_trips)),
            ms(percentile(&self.round_trips, 90)),
            ms(median(&self.turns)),
            ms(percentile(&self.turns, 90)),
            self.turns.len()
        )
    }
}

/// Measures `runs` round trips and `runs` turns over each transport, one after the other.
pub async fn transports(
    binary: &CodexBinary,
    settings: &Settings,
    runs: usize,
) -> anyhow::Result<Vec<TransportTimes>> {
    let mut out = Vec::new();
    for listen in [Listen::Stdio, Listen::WebSocket, Listen::Unix] {
        out.push(one(binary, settings, listen, runs).await?);
    }
    Ok(out)
}

async fn one(
    binary: &CodexBinary,
    settings: &Settings,
    listen: Listen,
    runs: usize,
) -> anyhow::Result<TransportTimes> {
    let options = WorldOptions {
        listen,
        ..WorldOptions::default()
    };
    let mut world = World::new(binary, settings, options, Default::default()).await?;
    let script: Vec<Scripted> = (0..runs)
        .map(|i| Scripted::sse(bodies::assistant_reply(&format!("resp-{i}"), "ok")))
        .collect();
    world.script(script).await?;
    let started = Instant::now();
    let app = world.start().await?;
    let start = started.elapsed();
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let mut times = TransportTimes {
        listen,
        start,
        round_trips: Vec::new(),
        turns: Vec::new(),
    };
    for i in 0..runs {
        let t = Instant::now();
        let turn = run_turn(
            &app,
            &thread,
            vec![text(&format!("turn {i}"))],
            &TurnOptions::default(),
        )
        .await?;
        times.turns.push(t.elapsed());
        ensure!(
            turn.status == TurnStatus::Completed,
            "turn {i} ended {:?}",
            turn.status
        );
        let t = Instant::now();
        app.thread_read(&thread, json!({})).await?;
        times.round_trips.push(t.elapsed());
    }
    world.finish().await?;
    Ok(times)
}
