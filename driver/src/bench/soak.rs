//! Soak: many turns through one app-server and one sidecar, checking that every turn's
//! request was captured exactly once (none lost, none duplicated) and that the sidecar's
//! memory stays flat.
//!
//! Two parts, each in its own world: `turns` consecutive turns on one thread, in batches
//! of [`BATCH`]; and `threads` threads in one app-server, each running a turn at the same
//! time, for [`ROUNDS`] rounds (scripted per thread with `when`). After each batch or
//! round the captured requests are checked one by one and the capture is emptied
//! (`reset`), so the sidecar's memory should come back to the same level every time: its
//! resident size is sampled there.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::captured::CapturedRequest;
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::json;

use super::{memory_kib, percentile};
use crate::app_server::AppServer;
use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, start_turn, text, wait_turn};
use crate::codex::binaries::CodexBinary;
use crate::harness::world::{Settings, World, WorldOptions};

/// Consecutive turns between two checks of the capture.
pub const BATCH: usize = 50;

/// Rounds of concurrent turns in the many-threads part.
pub const ROUNDS: usize = 3;

/// One memory sample: after how many turns, the sidecar's and codex's resident KiB.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    /// Turns done so far in this part.
    pub turns: usize,
    /// The sidecar's `VmRSS`.
    pub sidecar_kib: u64,
    /// Codex's `VmRSS`.
    pub codex_kib: u64,
}

/// What one part measured.
#[derive(Debug, Clone)]
pub struct Part {
    /// Turns run (each checked: completed, its own answer, its request captured once).
    pub turns: usize,
    /// Wall time.
    pub wall: Duration,
    /// Per-turn (or per-round) times.
    pub times: Vec<Duration>,
    /// Memory after each batch or round.
    pub samples: Vec<Sample>,
}

impl Part {
    /// A part with no turns yet, its memory sampled at the start.
    fn new(first: Sample) -> Part {
        Part {
            turns: 0,
            wall: Duration::ZERO,
            times: Vec::new(),
            samples: vec![first],
        }
    }

    /// How much the sidecar's resident size moved from after the first batch (warmed up)
    /// to the end.
    pub fn sidecar_growth_kib(&self) -> i64 {
        match (self.samples.get(1), self.samples.last()) {
            (Some(a), Some(b)) => b.sidecar_kib as i64 - a.sidecar_kib as i64,
            _ => 0,
        }
    }

    /// A few lines for people.
    pub fn describe(&self, name: &str, unit: &str) -> String {
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        let first = self.times.iter().take(BATCH).copied().collect::<Vec<_>>();
        let last = self
            .times
            .iter()
            .skip(self.times.len().saturating_sub(BATCH))
            .copied()
            .collect::<Vec<_>>();
        let series: Vec<String> = self
            .samples
            .iter()
            .map(|s| format!("{}:{}", s.turns, s.sidecar_kib))
            .collect();
        format!(
            "{name}: {} turns in {:.1} s; {unit} p50 {:.0} ms, p99 {:.0} ms (first {} p50 {:.0} ms, last {} p50 {:.0} ms)\n  \
             sidecar RSS KiB after turns [{}]: {:+} KiB from the first batch to the end; codex RSS {} → {} KiB",
            self.turns,
            self.wall.as_secs_f64(),
            ms(percentile(&self.times, 50)),
            ms(percentile(&self.times, 99)),
            first.len(),
            ms(percentile(&first, 50)),
            last.len(),
            ms(percentile(&last, 50)),
            series.join(" "),
            self.sidecar_growth_kib(),
            self.samples.first().map_or(0, |s| s.codex_kib),
            self.samples.last().map_or(0, |s| s.codex_kib),
        )
    }
}

/// The two parts' results.
#[derive(Debug, Clone)]
pub struct SoakReport {
    /// Consecutive turns on one thread.
    pub one_thread: Part,
    /// Concurrent turns on many threads of one app-server.
    pub many_threads: Part,
}

/// A world with codex started in it.
async fn started_world(
    binary: &CodexBinary,
    settings: &Settings,
) -> anyhow::Result<(World, Arc<AppServer>)> {
    let mut world = World::new(binary, settings, WorldOptions::default(), Arc::default()).await?;
    let app = world.start().await?;
    Ok((world, app))
}

fn sample(world: &World, codex_pid: Option<u32>, turns: usize) -> Sample {
    let rss = |pid: Option<u32>| pid.and_then(memory_kib).map_or(0, |m| m.0);
    Sample {
        turns,
        sidecar_kib: rss(world.sidecar.pid()),
        codex_kib: rss(codex_pid),
    }
}

/// Every captured model request is one of `expected` (user texts), each exactly once.
fn check_capture(requests: &[CapturedRequest], expected: &[String]) -> anyhow::Result<()> {
    let mut seen: Vec<String> = requests
        .iter()
        .map(|r| r.last_user_text().unwrap_or_default())
        .collect();
    seen.sort();
    let mut want = expected.to_vec();
    want.sort();
    if seen != want {
        let lost: Vec<&String> = want.iter().filter(|w| !seen.contains(w)).collect();
        let mut dup = seen.clone();
        dup.dedup();
        bail!(
            "captured {} request(s) for {} turn(s); lost: {lost:?}; duplicated: {}",
            seen.len(),
            want.len(),
            seen.len() - dup.len()
        );
    }
    Ok(())
}

/// Checks the capture against `expected`, then empties it.
async fn check_and_reset(world: &World, expected: &[String]) -> anyhow::Result<()> {
    let requests = world
        .sidecar
        .requests(expected.len(), Duration::from_secs(5))
        .await?;
    check_capture(&requests, expected)?;
    world.sidecar.reset().await?;
    Ok(())
}

/// `turns` consecutive turns on one thread.
pub async fn one_thread(
    binary: &CodexBinary,
    settings: &Settings,
    turns: usize,
) -> anyhow::Result<Part> {
    let (world, app) = started_world(binary, settings).await?;
    let (thread, _) = world.start_thread(&app, json!({})).await?;
    let started = Instant::now();
    let mut part = Part::new(sample(&world, app.pid(), 0));
    for batch in (0..turns).collect::<Vec<_>>().chunks(BATCH) {
        let script = batch
            .iter()
            .map(|i| {
                Scripted::sse(bodies::assistant_reply(
                    &format!("resp-{i}"),
                    &format!("soak reply {i}"),
                ))
            })
            .collect();
        world.script(script).await?;
        let mut asked = Vec::new();
        for i in batch {
            let prompt = format!("soak turn {i}");
            let t0 = Instant::now();
            let turn = run_turn(&app, &thread, vec![text(&prompt)], &TurnOptions::default())
                .await
                .with_context(|| format!("turn {i}"))?;
            part.times.push(t0.elapsed());
            ensure!(
                turn.status == TurnStatus::Completed
                    && turn.final_response() == format!("soak reply {i}"),
                "turn {i}: {} with {:?} ({:?})",
                turn.status,
                turn.final_response(),
                turn.error
            );
            asked.push(prompt);
        }
        check_and_reset(&world, &asked)
            .await
            .with_context(|| format!("after turn {}", part.turns + batch.len()))?;
        part.turns += batch.len();
        part.samples.push(sample(&world, app.pid(), part.turns));
    }
    part.wall = started.elapsed();
    world.finish().await?;
    Ok(part)
}

/// `threads` threads in one app-server, each running one turn at the same time, for
/// [`ROUNDS`] rounds.
pub async fn many_threads(
    binary: &CodexBinary,
    settings: &Settings,
    threads: usize,
) -> anyhow::Result<Part> {
    let (world, app) = started_world(binary, settings).await?;
    let mut ids = Vec::new();
    for _ in 0..threads {
        ids.push(world.start_thread(&app, json!({})).await?.0);
    }
    let started = Instant::now();
    let mut part = Part::new(sample(&world, app.pid(), 0));
    let marker = |t: usize, r: usize| format!("[soak t{t:03} r{r}]");
    for round in 0..ROUNDS {
        let script = (0..threads)
            .map(|t| {
                Scripted::sse(bodies::assistant_reply(
                    &format!("resp-{t}-{round}"),
                    &format!("reply {}", marker(t, round)),
                ))
                .when_body_contains(&marker(t, round))
            })
            .collect();
        world.script(script).await?;
        let t0 = Instant::now();
        let mut pending = Vec::new();
        for (t, id) in ids.iter().enumerate() {
            let input = vec![text(&marker(t, round))];
            pending.push(start_turn(&app, id, input, &TurnOptions::default()).await?);
        }
        for (t, started_turn) in pending.into_iter().enumerate() {
            let turn = wait_turn(&app, started_turn, Duration::from_secs(120))
                .await
                .with_context(|| format!("thread {t}, round {round}"))?;
            let want = format!("reply {}", marker(t, round));
            ensure!(
                turn.status == TurnStatus::Completed && turn.final_response() == want,
                "thread {t}, round {round}: {} with {:?} ({:?})",
                turn.status,
                turn.final_response(),
                turn.error
            );
        }
        part.times.push(t0.elapsed());
        let asked: Vec<String> = (0..threads).map(|t| marker(t, round)).collect();
        check_and_reset(&world, &asked)
            .await
            .with_context(|| format!("after round {round}"))?;
        part.turns += threads;
        part.samples.push(sample(&world, app.pid(), part.turns));
    }
    part.wall = started.elapsed();
    world.finish().await?;
    Ok(part)
}

/// Both parts, one after the other.
pub async fn soak(
    binary: &CodexBinary,
    settings: &Settings,
    turns: usize,
    threads: usize,
) -> anyhow::Result<SoakReport> {
    Ok(SoakReport {
        one_thread: one_thread(binary, settings, turns)
            .await
            .context("soak: consecutive turns on one thread")?,
        many_threads: many_threads(binary, settings, threads)
            .await
            .context("soak: concurrent turns on many threads")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(text: &str) -> CapturedRequest {
        serde_json::from_value(json!({
            "path": "/v1/responses", "headers": {},
            "body": {"input": [{"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": text}]}]}
        }))
        .unwrap()
    }

    #[test]
    fn the_capture_check_finds_lost_and_duplicated_requests() {
        let want = vec!["a".to_string(), "b".to_string()];
        assert!(check_capture(&[request("b"), request("a")], &want).is_ok());
        let lost = check_capture(&[request("a")], &want)
            .unwrap_err()
            .to_string();
        assert!(lost.contains("lost: [\"b\"]"), "{lost}");
        let dup = check_capture(&[request("a"), request("a"), request("b")], &want)
            .unwrap_err()
            .to_string();
        assert!(dup.contains("duplicated: 1"), "{dup}");
    }
}
