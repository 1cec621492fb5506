//! Group P: how a release performs on a big home, as a ratio to a reference binary measured
//! in the same run (see [`crate::harness::perf`]). Each scenario prepares the homes it needs
//! for both binaries ([`history_home`]: many threads, or one rollout of tens of thousands of
//! records, in the legacy or the paginated layout, kept in the cache per release), then runs
//! one operation on a fresh copy of the home in a fresh `codex app-server`, repetitions of
//! the reference and of the binary under test interleaved, and judges the medians of wall
//! time, codex's CPU time and its peak resident memory against the scenario's budget.
//!
//! The app-servers measured are not the world's: their transcripts (tens of megabytes of
//! turns) are neither kept nor checked against the schema, and nothing else runs beside
//! them (the scenarios are [`Scenario::exclusive`]). Their world still gives them its
//! configuration, sidecar, proxy and after-scenario checks. Whether each answer is complete
//! (every thread listed, every turn read) is checked too: a faster answer that lists less
//! is drift, not a win.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use codex_parity_sidecar::{Scripted, bodies};
use serde_json::{Value, json};

use crate::app_server::turn::{TurnOptions, TurnStatus, run_turn, text};
use crate::app_server::usage::{CpuTimes, peak_rss_kib};
use crate::app_server::{AppServer, AppServerCommand};
use crate::codex::binaries::CodexBinary;
use crate::codex::capabilities::Capabilities;
use crate::harness::perf::{
    self, DEFAULT_BUDGET, Growth, Measurement, Side, Subject, Usage, interleaved,
};
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::World;
use crate::scenario;
use crate::scenarios::support::history_home::{
    self, HomeKind, HomeLease, HomeSpec, Layout, THREAD_TURNS, thread_id,
};

/// The longest one call on a big home may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(600);

/// Threads of the smaller and the larger home at scale 1.
const THREADS: [u64; 2] = [1_000, 10_000];

/// Turns of the large rollout at scale 1 (9 records each: 20,008 records).
const LARGE_TURNS: u64 = 2_223;

/// Bytes of each turn's tool output in the large rollout (about 20 MB in all at scale 1).
const LARGE_OUTPUT: usize = 8_192;

/// Page size of the paging scenarios.
const PAGE: u64 = 100;

/// The longest a scenario of the group may take (homes prepared on the first run included).
const TIMEOUT: Duration = Duration::from_secs(1800);

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    let p = |s: Scenario| s.exclusive().timeout(TIMEOUT);
    let paginated = |caps: &Capabilities| history_home::paginated_reason(caps);
    vec![
        p(scenario!(
            "perf_startup_on_big_home",
            "P1",
            "codex app-server starts on a home of 10,000 threads it has indexed and answers \
             initialize within budget of the reference",
            startup
        )),
        p(scenario!(
            "perf_first_start_indexes_home",
            "P2",
            "the first start on a home of 1,000 legacy threads codex has not indexed answers \
             initialize and the first thread/list page within budget",
            first_start
        )),
        p(scenario!(
            "perf_thread_list_first_page",
            "P3",
            "thread/list's first page (50 threads) on homes of 1,000 and 10,000 threads, \
             within budget; the growth from one to the other reported",
            list_first_page
        )),
        p(scenario!(
            "perf_thread_list_all_pages",
            "P4",
            "thread/list paged to its end (100 a page) lists every thread of homes of 1,000 \
             and 10,000, within budget; the growth reported",
            list_all_pages(Layout::Legacy)
        )),
        p(scenario!(
            "perf_thread_read_with_turns",
            "P5",
            "thread/read with includeTurns of a rollout of 20,000 records returns every turn, \
             within budget",
            read(Layout::Legacy, true)
        )),
        p(scenario!(
            "perf_thread_read_without_turns",
            "P6",
            "thread/read without turns of a rollout of 20,000 records, within budget",
            read(Layout::Legacy, false)
        )),
        p(scenario!(
            "perf_thread_resume_large",
            "P7",
            "thread/resume of a rollout of 20,000 records returns its turns, within budget",
            resume(Layout::Legacy, false)
        ))
        .applies(Capabilities::needs_resume),
        p(scenario!(
            "perf_thread_resume_large_exclude_turns",
            "P7b",
            "thread/resume with excludeTurns of a rollout of 20,000 records, within budget",
            resume(Layout::Legacy, true)
        ))
        .applies(Capabilities::needs_exclude_turns),
        p(scenario!(
            "perf_turns_list_all_pages",
            "P8",
            "thread/turns/list paged to its end (100 a page) through a rollout of 20,000 \
             records returns every turn, within budget",
            turns_list(Layout::Legacy)
        ))
        .applies(|c| c.require_methods(&["thread/turns/list"])),
        p(scenario!(
            "perf_first_turn_after_resume",
            "P9",
            "the first turn after resuming a rollout of 20,000 records completes (from \
             turn/start to turn/completed) within budget",
            first_turn
        ))
        .applies(Capabilities::needs_resume),
        p(scenario!(
            "perf_thread_list_all_pages_paginated",
            "P10",
            "P4 on homes the release migrated to paginated history (codex migrate-rollouts)",
            list_all_pages(Layout::Paginated)
        ))
        .applies(paginated),
        p(scenario!(
            "perf_thread_read_with_turns_paginated",
            "P11",
            "P5 on the large rollout migrated to paginated history",
            read(Layout::Paginated, true)
        ))
        .applies(paginated),
        p(scenario!(
            "perf_thread_resume_large_paginated",
            "P12",
            "P7 on the large rollout migrated to paginated history",
            resume(Layout::Paginated, false)
        ))
        .applies(move |c| {
            c.needs_resume()?;
            paginated(c)
        }),
        p(scenario!(
            "perf_turns_list_all_pages_paginated",
            "P13",
            "P8 on the large rollout migrated to paginated history",
            turns_list(Layout::Paginated)
        ))
        .applies(move |c| {
            c.require_methods(&["thread/turns/list"])?;
            paginated(c)
        }),
    ]
}

/// The reference binary of the run, or why there is none.
fn reference(ctx: &Ctx) -> anyhow::Result<CodexBinary> {
    ctx.settings.perf.reference.clone().context(
        "no reference binary to hold the measurements against: run the group with \
         `codex-parity run --filter P` (the pinned version is the reference) or name one \
         with --perf-reference",
    )
}

/// The homes of threads at the run's scale: the smaller and the larger.
fn thread_homes(ctx: &Ctx, layout: Layout) -> [HomeSpec; 2] {
    let s = &ctx.settings.perf;
    let (small, large) = (s.scaled(THREADS[0], 10), s.scaled(THREADS[1], 20));
    [small, large.max(small * 2)].map(|count| HomeSpec {
        kind: HomeKind::Threads {
            count,
            turns: THREAD_TURNS,
        },
        layout,
    })
}

/// The home of the large rollout at the run's scale.
fn large_home(ctx: &Ctx, layout: Layout) -> HomeSpec {
    HomeSpec {
        kind: HomeKind::Large {
            turns: ctx.settings.perf.scaled(LARGE_TURNS, 20),
            output_bytes: LARGE_OUTPUT,
        },
        layout,
    }
}

/// The size and unit a home's measurements carry.
fn size_of(spec: &HomeSpec) -> (u64, &'static str) {
    match spec.kind {
        HomeKind::Threads { count, .. } => (count, "threads"),
        HomeKind::Large { .. } => (spec.expected().records, "records"),
    }
}

/// One repetition: the binary, a fresh copy of its prepared home and the command that
/// starts its app-server there in the world.
struct Rep {
    side: Side,
    binary: CodexBinary,
    cmd: AppServerCommand,
}

impl Rep {
    /// Starts the app-server and runs `initialize` (not measured).
    async fn start(&self) -> anyhow::Result<AppServer> {
        let app = spawn(&self.cmd)?;
        app.initialize(true)
            .await
            .with_context(|| format!("{}: initialize", self.binary.label()))?;
        Ok(app)
    }
}

/// Spawns an app-server with the long call timeout of the group.
fn spawn(cmd: &AppServerCommand) -> anyhow::Result<AppServer> {
    let mut app = AppServer::spawn(cmd)?;
    app.call_timeout = CALL_TIMEOUT;
    Ok(app)
}

/// Ends a measured app-server: closes its stdin, waits for it (killed after 10 s).
async fn stop(app: AppServer) {
    app.shutdown(Duration::from_secs(10)).await;
}

/// One side's home: a prepared home leased for the measurement, or a generated home copied
/// for each repetition.
#[derive(Clone)]
enum Home {
    Leased(Arc<HomeLease>),
    Seed(std::path::PathBuf),
}

/// Where each side's home of one measurement comes from: prepared (indexed by the release)
/// or generated only (a first start's home).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Prepared,
    Unprepared,
}

/// Measures `op` on `spec`'s home: the home of each side made ready, then the repetitions
/// interleaved, each on a fresh copy in a fresh app-server ([`Rep`]), the copy removed after
/// it. Records the measurement and returns it.
async fn measure<F, Fut>(
    ctx: &Ctx,
    world: &World,
    spec: HomeSpec,
    source: Source,
    what: &str,
    budget: f64,
    op: F,
) -> anyhow::Result<Measurement>
where
    F: Fn(Rep) -> Fut,
    Fut: Future<Output = anyhow::Result<Usage>>,
{
    let reference = reference(ctx)?;
    let candidate = ctx.binary.clone();
    let mut homes: Vec<(Side, CodexBinary, Home)> = Vec::new();
    for (side, binary) in [(Side::Reference, &reference), (Side::Candidate, &candidate)] {
        let home = match source {
            // One lease when both sides are the same binary (its home is locked once).
            Source::Prepared => match homes.iter().find(|(_, b, _)| b.path == binary.path) {
                Some((_, _, shared)) => shared.clone(),
                None => {
                    let elsewhere = world.root().join("homes");
                    Home::Leased(Arc::new(
                        history_home::lease(binary, &spec, &elsewhere).await?,
                    ))
                }
            },
            Source::Unprepared => {
                let root = world.root().join(format!("unprepared-{}", side_name(side)));
                Home::Seed(history_home::unprepared(binary, &spec, &root)?)
            }
        };
        homes.push((side, binary.clone(), home));
    }
    let (size, unit) = size_of(&spec);
    let subject = Subject {
        what: what.to_string(),
        size,
        unit,
        layout: spec.layout.name(),
        reference: reference.version.clone(),
        budget,
    };
    let (on_reference, on_candidate) = interleaved(ctx.settings.perf.repetitions, |side, n| {
        let (_, binary, source) = homes
            .iter()
            .find(|(s, ..)| *s == side)
            .cloned()
            .expect("both sides have a home");
        let scratch = world.root().join(format!("rep-{}-{n}", side_name(side)));
        let op = &op;
        async move {
            let home = match &source {
                Home::Leased(lease) => {
                    lease.reset()?;
                    lease.home()
                }
                Home::Seed(seed) => {
                    let home = scratch.join("codex-home");
                    history_home::copy_home(seed, &home)?;
                    home
                }
            };
            world.write_config(&home)?;
            let mut cmd = world.command(&home, &world.workspace);
            cmd.program = binary.path.clone();
            cmd.label = binary.label();
            let usage = op(Rep {
                side,
                binary: binary.clone(),
                cmd,
            })
            .await
            .with_context(|| format!("{what} on {}", binary.label()));
            let _ = std::fs::remove_dir_all(&scratch);
            usage
        }
    })
    .await?;
    let m = Measurement::new(&subject, &on_reference, &on_candidate);
    ctx.observe(m.summary());
    ctx.measured(m.clone());
    Ok(m)
}

fn side_name(side: Side) -> &'static str {
    match side {
        Side::Reference => "reference",
        Side::Candidate => "candidate",
    }
}

/// Fails naming every measurement over its budget.
fn judge(measurements: &[Measurement]) -> anyhow::Result<()> {
    let over: Vec<String> = measurements.iter().flat_map(|m| m.over_budget()).collect();
    if !over.is_empty() {
        bail!("over budget: {}", over.join("; "));
    }
    Ok(())
}

/// Records the growth from the smaller home to the larger.
fn grew(ctx: &Ctx, small: &Measurement, large: &Measurement) {
    let g = Growth::between(small, large);
    ctx.observe(g.summary());
    ctx.grew(g);
}

/// Measures `call` on a started app-server: its wall time, codex's CPU and peak memory.
async fn timed<T>(
    app: &AppServer,
    call: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<(Usage, T)> {
    perf::measure(app.pid(), call).await
}

/// `method` with `params`, as an error with the method's name.
async fn call(app: &AppServer, method: &str, params: Value) -> anyhow::Result<Value> {
    app.call(method, params)
        .await
        .map_err(|e| anyhow::anyhow!("{method}: {e}"))
}

/// What a process started at `started` used so far: the wall time since, all its CPU time,
/// its peak memory.
fn since_start(started: Instant, pid: Option<u32>) -> Usage {
    Usage {
        wall: started.elapsed(),
        cpu: pid.and_then(CpuTimes::of).unwrap_or_default().total(),
        peak_rss_kib: pid.and_then(peak_rss_kib).unwrap_or(0),
    }
}

async fn startup(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let [_, big] = thread_homes(ctx, Layout::Legacy);
    let m = measure(
        ctx,
        &world,
        big,
        Source::Prepared,
        "start-up to the initialize answer",
        DEFAULT_BUDGET,
        |rep| async move {
            let started = Instant::now();
            let app = spawn(&rep.cmd)?;
            let pid = app.pid();
            app.initialize(true)
                .await
                .with_context(|| format!("{}: initialize", rep.binary.label()))?;
            let usage = since_start(started, pid);
            stop(app).await;
            Ok(usage)
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}

async fn first_start(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let [small, _] = thread_homes(ctx, Layout::Legacy);
    let m = measure(
        ctx,
        &world,
        small,
        Source::Unprepared,
        "first start to the first thread/list page",
        DEFAULT_BUDGET,
        |rep| async move {
            let started = Instant::now();
            let app = spawn(&rep.cmd)?;
            let pid = app.pid();
            app.initialize(true)
                .await
                .with_context(|| format!("{}: initialize", rep.binary.label()))?;
            call(&app, "thread/list", json!({"limit": 50})).await?;
            let usage = since_start(started, pid);
            stop(app).await;
            Ok(usage)
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}

/// The ids of a page's `data`.
fn ids(page: &Value) -> Vec<String> {
    page["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["id"].as_str().map(String::from))
        .collect()
}

async fn list_first_page(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let mut all = Vec::new();
    for spec in thread_homes(ctx, Layout::Legacy) {
        let m = measure(
            ctx,
            &world,
            spec,
            Source::Prepared,
            "thread/list first page",
            DEFAULT_BUDGET,
            |rep| async move {
                let app = rep.start().await?;
                let (usage, page) =
                    timed(&app, call(&app, "thread/list", json!({"limit": 50}))).await?;
                stop(app).await;
                ensure!(
                    ids(&page).len() == 50,
                    "{}: the first page holds {} threads, not 50",
                    rep.binary.label(),
                    ids(&page).len()
                );
                Ok(usage)
            },
        )
        .await?;
        all.push(m);
    }
    grew(ctx, &all[0], &all[1]);
    world.finish().await?;
    judge(&all)
}

/// Pages `method` with `params` to its end by `nextCursor`; returns the ids of every page.
async fn all_pages(app: &AppServer, method: &str, params: Value) -> anyhow::Result<Vec<String>> {
    let mut seen = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..1_000_000 {
        let mut p = params.clone();
        if !cursor.is_null() {
            p["cursor"] = cursor.clone();
        }
        let page = call(app, method, p).await?;
        seen.extend(ids(&page));
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            return Ok(seen);
        }
    }
    bail!("{method} still pages after a million pages")
}

/// Drift when `listed` does not hold exactly `expected` distinct ids: the count seen and
/// the distinct count, under `key`.
fn complete(ctx: &Ctx, key: &str, rep: &Rep, listed: &[String], expected: u64) {
    let mut distinct = listed.to_vec();
    distinct.sort();
    distinct.dedup();
    if listed.len() as u64 != expected || distinct.len() as u64 != expected {
        let who = match rep.side {
            Side::Reference => "reference",
            Side::Candidate => "candidate",
        };
        ctx.drift(
            key,
            json!({"side": who, "listed": listed.len(), "distinct": distinct.len(), "expected": expected}),
            format!(
                "{} ({who}) listed {} ({} distinct) of {expected}",
                rep.binary.label(),
                listed.len(),
                distinct.len()
            ),
        );
    }
}

async fn list_all_pages(ctx: &Ctx, layout: Layout) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let mut all = Vec::new();
    for spec in thread_homes(ctx, layout) {
        let expected = spec.expected().threads;
        let m = measure(
            ctx,
            &world,
            spec,
            Source::Prepared,
            "thread/list all pages",
            DEFAULT_BUDGET,
            |rep| async move {
                let app = rep.start().await?;
                let (usage, listed) =
                    timed(&app, all_pages(&app, "thread/list", json!({"limit": PAGE}))).await?;
                stop(app).await;
                complete(ctx, "perf.thread_list_incomplete", &rep, &listed, expected);
                Ok(usage)
            },
        )
        .await?;
        all.push(m);
    }
    grew(ctx, &all[0], &all[1]);
    world.finish().await?;
    judge(&all)
}

/// Checks that `thread` (of a read or resume) holds `expected` turns: drift under `key`
/// otherwise.
fn turns_complete(ctx: &Ctx, key: &str, rep: &Rep, thread: &Value, expected: u64) {
    let n = thread["turns"].as_array().map_or(0, Vec::len) as u64;
    if n != expected {
        ctx.drift(
            key,
            json!({"side": side_name(rep.side), "turns": n, "expected": expected}),
            format!(
                "{} ({}) returned {n} of the {expected} turns",
                rep.binary.label(),
                side_name(rep.side)
            ),
        );
    }
}

async fn read(ctx: &Ctx, layout: Layout, with_turns: bool) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let spec = large_home(ctx, layout);
    let expected = if with_turns { spec.expected().turns } else { 0 };
    let what = if with_turns {
        "thread/read with turns"
    } else {
        "thread/read without turns"
    };
    let m = measure(
        ctx,
        &world,
        spec,
        Source::Prepared,
        what,
        DEFAULT_BUDGET,
        |rep| async move {
            let app = rep.start().await?;
            let params = json!({"threadId": thread_id(0), "includeTurns": with_turns});
            let (usage, read) = timed(&app, call(&app, "thread/read", params)).await?;
            stop(app).await;
            turns_complete(
                ctx,
                "perf.thread_read_turns",
                &rep,
                &read["thread"],
                expected,
            );
            Ok(usage)
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}

async fn resume(ctx: &Ctx, layout: Layout, exclude_turns: bool) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let spec = large_home(ctx, layout);
    let cwd = world.workspace.display().to_string();
    let (what, params, expected) = if exclude_turns {
        let p = json!({"threadId": thread_id(0), "cwd": cwd, "excludeTurns": true});
        ("thread/resume excluding turns", p, 0)
    } else {
        let p = json!({"threadId": thread_id(0), "cwd": cwd});
        ("thread/resume", p, spec.expected().turns)
    };
    let m = measure(
        ctx,
        &world,
        spec,
        Source::Prepared,
        what,
        DEFAULT_BUDGET,
        |rep| {
            let params = params.clone();
            async move {
                let app = rep.start().await?;
                let (usage, resumed) = timed(&app, call(&app, "thread/resume", params)).await?;
                stop(app).await;
                turns_complete(
                    ctx,
                    "perf.thread_resume_turns",
                    &rep,
                    &resumed["thread"],
                    expected,
                );
                Ok(usage)
            }
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}

async fn turns_list(ctx: &Ctx, layout: Layout) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let spec = large_home(ctx, layout);
    let expected = spec.expected().turns;
    let m = measure(
        ctx,
        &world,
        spec,
        Source::Prepared,
        "thread/turns/list all pages",
        DEFAULT_BUDGET,
        |rep| async move {
            let app = rep.start().await?;
            let params = json!({"threadId": thread_id(0), "limit": PAGE});
            let (usage, listed) = timed(&app, all_pages(&app, "thread/turns/list", params)).await?;
            stop(app).await;
            complete(ctx, "perf.turns_list_incomplete", &rep, &listed, expected);
            Ok(usage)
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}

async fn first_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(Default::default()).await?;
    let spec = large_home(ctx, Layout::Legacy);
    let cwd = world.workspace.display().to_string();
    let world_ref = &world;
    // Without the turns where the release can: the turn is what is measured.
    let exclude = ctx.caps.needs_exclude_turns().is_ok();
    let m = measure(
        ctx,
        &world,
        spec,
        Source::Prepared,
        "first turn after resume",
        DEFAULT_BUDGET,
        |rep| {
            let cwd = cwd.clone();
            async move {
                let app = rep.start().await?;
                let thread = thread_id(0);
                let mut params = json!({"threadId": thread, "cwd": cwd});
                if exclude {
                    params["excludeTurns"] = json!(true);
                }
                call(&app, "thread/resume", params).await?;
                world_ref
                    .script(vec![Scripted::sse(bodies::assistant_reply(
                        "resp-after-resume",
                        "resumed",
                    ))])
                    .await?;
                let (usage, turn) = timed(&app, async {
                    run_turn(
                        &app,
                        &thread,
                        vec![text("one more thing")],
                        &TurnOptions::default(),
                    )
                    .await
                })
                .await?;
                stop(app).await;
                ensure!(
                    turn.status == TurnStatus::Completed && turn.final_response() == "resumed",
                    "{}: the turn after resume ended {:?} with {:?}",
                    rep.binary.label(),
                    turn.status,
                    turn.final_response()
                );
                Ok(usage)
            }
        },
    )
    .await?;
    world.finish().await?;
    judge(&[m])
}
