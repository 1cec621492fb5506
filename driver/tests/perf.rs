//! Group P against the real codex: each release reads the generated homes back (every
//! thread listed, every turn read, in the legacy and, where the release migrates to it, the
//! paginated layout), and the judgement of a measurement: a stand-in that sleeps in front of
//! the real codex fails its budget, the real codex against itself passes. No time is
//! asserted here: the stand-in's sleep makes its ratio, the scenario judges it.
//!
//! The binaries are those of `CODEX_TEST_BINS` (separated like `PATH`), else the pinned
//! version.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::time::Duration;

use serde_json::{Value, json};

use codex_parity::app_server::{AppServer, AppServerCommand};
use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::binary;
use codex_parity::codex::capabilities::Capabilities;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::codex_env::{self, codex_env};
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::plan::{Options, PerfOptions, Plan};
use codex_parity::scenarios::support::history_home::{
    self, HomeKind, HomeSpec, Layout, paginated_reason, thread_id,
};

use support::CODEX_PARITY;

/// The binaries under test: `CODEX_TEST_BINS`, else the pinned version.
async fn test_binaries() -> Vec<CodexBinary> {
    match std::env::var_os("CODEX_TEST_BINS") {
        Some(v) if !v.is_empty() => {
            let mut found = Vec::new();
            for path in binaries::split_bins(&v) {
                found.push(binary::probe(&path).await.unwrap());
            }
            found
        }
        _ => vec![pinned().await],
    }
}

async fn pinned() -> CodexBinary {
    let pinned = versions::load().unwrap().pinned;
    binaries::resolve_spec(&pinned, &Cache::from_env().unwrap(), &StderrProgress::new())
        .await
        .unwrap()
}

/// An app-server of `binary` in `home`, its provider and proxies a closed port (no request
/// is expected), initialized.
async fn start(binary: &CodexBinary, root: &Path, home: &Path) -> AppServer {
    codex_env::make_dirs(root).unwrap();
    let mut app = AppServer::spawn(&AppServerCommand {
        program: binary.path.clone(),
        args: vec!["--disable".into(), "plugins".into()],
        env: codex_env(root, home, "http://127.0.0.1:9"),
        cwd: root.join("workspace"),
        label: binary.label(),
    })
    .unwrap();
    app.call_timeout = Duration::from_secs(120);
    app.initialize(true).await.unwrap();
    app
}

/// The ids of every page of `method` (100 a page).
async fn all_ids(app: &AppServer, method: &str, params: Value) -> Vec<String> {
    let mut ids = Vec::new();
    let mut cursor = Value::Null;
    loop {
        let mut p = params.clone();
        p["limit"] = json!(100);
        if !cursor.is_null() {
            p["cursor"] = cursor.clone();
        }
        let page = app.call(method, p).await.unwrap();
        ids.extend(
            page["data"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_string()),
        );
        cursor = page["nextCursor"].clone();
        if cursor.is_null() {
            return ids;
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_release_reads_the_generated_homes_back() {
    const THREADS: u64 = 130;
    const TURNS: u64 = 120;
    for binary in test_binaries().await {
        let caps = Capabilities::detect(&binary).await.unwrap();
        let mut layouts = vec![Layout::Legacy];
        match paginated_reason(&caps) {
            Ok(()) => layouts.push(Layout::Paginated),
            Err(why) => eprintln!("{}: no paginated home: {why}", binary.label()),
        }
        for layout in layouts {
            let scratch = tempfile::tempdir().unwrap();
            let threads = HomeSpec {
                kind: HomeKind::Threads {
                    count: THREADS,
                    turns: 3,
                },
                layout,
            };
            let large = HomeSpec {
                kind: HomeKind::Large {
                    turns: TURNS,
                    output_bytes: 2048,
                },
                layout,
            };
            let what = format!("{} {}", binary.label(), layout.name());

            let lease = history_home::lease(&binary, &threads, scratch.path())
                .await
                .unwrap();
            lease.reset().unwrap();
            if layout == Layout::Legacy {
                let on_disk = history_home::read_back(&lease.home()).unwrap();
                assert_eq!(on_disk, threads.expected(), "{what}: the files");
            }
            let app = start(&binary, &scratch.path().join("a"), &lease.home()).await;
            let mut listed = all_ids(&app, "thread/list", json!({})).await;
            assert_eq!(listed.len() as u64, THREADS, "{what}: threads listed");
            listed.sort();
            listed.dedup();
            assert_eq!(listed.len() as u64, THREADS, "{what}: distinct threads");
            let read = app
                .call(
                    "thread/read",
                    json!({"threadId": thread_id(7), "includeTurns": true}),
                )
                .await
                .unwrap();
            let turns = read["thread"]["turns"].as_array().unwrap();
            assert_eq!(turns.len(), 3, "{what}: turns of thread 7");
            let texts: Vec<&str> = turns[2]["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| {
                    i["text"]
                        .as_str()
                        .or_else(|| i["content"][0]["text"].as_str())
                })
                .collect();
            assert_eq!(
                texts,
                [
                    "thread 7 prompt 2: what does the notes file say?",
                    "thread 7 answer 2: it lists what to do next."
                ],
                "{what}: the last turn's items"
            );
            app.shutdown(Duration::from_secs(10)).await;
            drop(lease);

            let lease = history_home::lease(&binary, &large, scratch.path())
                .await
                .unwrap();
            lease.reset().unwrap();
            let app = start(&binary, &scratch.path().join("b"), &lease.home()).await;
            let read = app
                .call(
                    "thread/read",
                    json!({"threadId": thread_id(0), "includeTurns": true}),
                )
                .await
                .unwrap();
            let turns = read["thread"]["turns"].as_array().unwrap().len() as u64;
            assert_eq!(turns, TURNS, "{what}: turns of the large rollout");
            if caps.require_methods(&["thread/turns/list"]).is_ok() {
                let ids =
                    all_ids(&app, "thread/turns/list", json!({"threadId": thread_id(0)})).await;
                assert_eq!(ids.len() as u64, TURNS, "{what}: turns paged");
            }
            app.shutdown(Duration::from_secs(10)).await;
            // Prepared once: a second lease finds the home ready.
            drop(lease);
            let again = history_home::lease(&binary, &large, scratch.path())
                .await
                .unwrap();
            again.reset().unwrap();
            assert!(again.home().join("config.toml").is_file(), "{what}");
        }
    }
}

/// The record of scenario P1 on `binary` held against `reference`, at a small scale.
async fn startup_on(binary: CodexBinary, reference: &Path) -> codex_parity::harness::runner::Ran {
    let options = Options {
        filter: Some("P1".into()),
        perf: PerfOptions {
            reference: Some(reference.display().to_string()),
            repetitions: Some(3),
            scale_permille: Some(5),
        },
        ..Options::default()
    };
    let plan = Plan::builder(options)
        .unwrap()
        .build(vec![binary], SidecarLauncher::codex_parity(CODEX_PARITY))
        .await
        .unwrap();
    assert_eq!(plan.scenarios.len(), 1);
    plan.run_one(&plan.scenarios[0], &plan.targets[0]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_slowed_stand_in_fails_its_budget_and_a_plain_run_passes() {
    let real = pinned().await;
    // The stand-in: the real codex behind a one-second sleep (then exec'd, so the measured
    // process is codex itself).
    let dir = tempfile::tempdir().unwrap();
    let wrapper = dir.path().join("codex");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nsleep 1\nexec '{}' \"$@\"\n",
            real.path.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let slowed = binary::probe_with_timeout(&wrapper, Duration::from_secs(30))
        .await
        .unwrap();
    assert_eq!(slowed.version, real.version);

    let ran = startup_on(slowed, &real.path).await;
    let Outcome::Failed(reason) = &ran.outcome else {
        panic!("the slowed stand-in passed: {:?}", ran.outcome);
    };
    assert!(reason.contains("over budget"), "{reason}");
    assert!(
        reason.contains("start-up to the initialize answer"),
        "{reason}"
    );
    assert!(reason.contains(": wall "), "{reason}");
    let m = &ran.perf.measurements[0];
    assert!(m.ratio.wall > m.budget, "{m:?}");
    assert!(m.candidate.wall_ms - m.baseline.wall_ms >= 900.0, "{m:?}");
    assert_eq!(m.reference, real.version);
    assert_eq!(m.repetitions, 3);

    let ran = startup_on(real.clone(), &real.path).await;
    assert_eq!(ran.outcome, Outcome::Passed, "{:?}", ran.perf);
    assert_eq!(ran.perf.measurements.len(), 1);
}
