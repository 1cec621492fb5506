//! The harness under stress with the real codex (feature `codex-parity`): after the whole
//! parity suite and after a run stopped with Ctrl-C, no `codex` or sidecar process of the
//! run is left, its temporary `CODEX_HOME`s and workspaces are gone and nothing was
//! written to `$HOME` or the repository; a run killed with SIGKILL is cleaned up by the
//! next; `--keep` keeps the world; a sidecar killed in the middle of a turn is reported as
//! the cause. The whole suite is a long test, run with `--ignored`.
//!
//! The codex binary: the last of `CODEX_TEST_BINS`, else the pinned version (installed on
//! demand).

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use codex_parity::app_server::turn::{TurnOptions, TurnStatus, start_turn, text, wait_turn};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::{binaries, versions};
use codex_parity::harness::runner::Target;
use codex_parity::harness::scenario::{Ctx, Scenario};
use codex_parity::scenarios::setup;
use codex_parity_sidecar::{Scripted, bodies};
use rustix::process::Signal;
use support::Sandbox;

/// The codex under test and its target (capabilities, baseline).
async fn target() -> Target {
    let source = binaries::choose_sources(&[], std::env::var_os(binaries::CODEX_TEST_BINS))
        .expect("choosing the codex binary");
    let mut found = binaries::resolve(
        source,
        &Cache::from_env().expect("cache"),
        &StderrProgress::new(),
    )
    .await
    .expect("resolving the codex binary");
    let binary = found.pop().expect("at least one codex binary");
    support::target_of(binary).await
}

/// Starts a run of E14 (E14n and E14p retry for seconds: a signal lands inside running
/// turns), two scenarios at once.
fn spawn_e14(sandbox: &Sandbox, codex: &str) -> std::process::Child {
    sandbox.spawn(&[
        "run",
        "--codex-bin",
        codex,
        "--filter",
        "E14",
        "--jobs",
        "2",
    ])
}

/// Kills the run `child` with SIGKILL and fails naming any process of the sandbox still
/// alive 10 s later.
fn kill_and_expect_no_process(sandbox: &Sandbox, mut child: std::process::Child) {
    support::signal(child.id(), Signal::KILL);
    child.wait().expect("the killed run");
    let left = sandbox.wait_for_no_processes(Duration::from_secs(10));
    assert!(
        left.is_empty(),
        "processes left by the killed run: {left:?}"
    );
}

fn codex_path() -> PathBuf {
    tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(target())
        .binary
        .path
}

/// Runs `check` and fails if the repository's `git status` changed meanwhile.
fn without_touching_the_repository(what: &str, check: impl FnOnce()) {
    let before = support::repository_status();
    check();
    let after = support::repository_status();
    assert_eq!(before, after, "{what}: the repository changed");
}

/// Long: the whole catalogue, as `codex-parity run` runs it. CI runs it in a step of its own
/// (`cargo test --features codex-parity --test harness_processes -- --ignored`, see README).
#[test]
#[ignore = "long (about a minute): CI runs it with --ignored"]
fn the_whole_suite_leaves_no_process_and_no_file() {
    let codex = codex_path();
    let codex = codex.to_str().expect("utf-8 path");
    let sandbox = Sandbox::with_real_baselines();
    without_touching_the_repository("the whole suite", || {
        let child = sandbox.spawn(&["run", "--codex-bin", codex]);
        let output =
            support::wait_with_timeout(child, Duration::from_secs(1200), "the whole suite");
        let all = support::text(&output);
        // Passing is the parity suite's business; this test is about what is left.
        assert!(
            matches!(output.status.code(), Some(0 | 1)) && all.contains(" passed, "),
            "the suite did not run to its end:\n{all}"
        );
        sandbox.assert_clean("after the whole suite");
    });
}

#[test]
fn ctrl_c_in_the_middle_of_real_scenarios_leaves_nothing() {
    let codex = codex_path();
    let codex = codex.to_str().expect("utf-8 path");
    let sandbox = Sandbox::with_real_baselines();
    without_touching_the_repository("a run stopped with Ctrl-C", || {
        // E14n and E14p retry for seconds: the signal lands inside running turns.
        let child = spawn_e14(&sandbox, codex);
        sandbox.wait_for_running("app-server", 2, Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(500));
        let output = support::interrupt(child, Duration::from_secs(15));
        let all = support::text(&output);
        assert_eq!(output.status.code(), Some(130), "{all}");
        assert!(all.contains("codex-parity: interrupted; stopped "), "{all}");
        sandbox.assert_clean("after Ctrl-C");
    });
}

/// A run killed with SIGKILL (a CI job's timeout) cannot clean up: no process of it is
/// left, but its run directory stays in `TMPDIR`, with the worlds in it. The next run
/// removes it (its lock died with the run) and leaves `TMPDIR` empty at its end.
#[test]
fn a_run_killed_with_sigkill_is_cleaned_up_by_the_next_run() {
    let codex = codex_path();
    let codex = codex.to_str().expect("utf-8 path");
    let sandbox = Sandbox::with_real_baselines();
    without_touching_the_repository("a run killed with SIGKILL", || {
        let child = spawn_e14(&sandbox, codex);
        sandbox.wait_for_running("app-server", 2, Duration::from_secs(30));
        kill_and_expect_no_process(&sandbox, child);
        let run_dirs: Vec<String> = std::fs::read_dir(&sandbox.tmp)
            .expect("TMPDIR")
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(
            run_dirs.len() == 1 && run_dirs[0].starts_with("codex-parity-run-"),
            "the killed run left {run_dirs:?}, not one run directory"
        );
        assert!(
            Sandbox::leftovers(&sandbox.tmp)
                .iter()
                .any(|p| p.ends_with("codex-home")),
            "the killed run's directory holds no world"
        );
        let (output, _) = sandbox.run(&["run", "--codex-bin", codex, "--filter", "A1"]);
        let all = support::text(&output);
        assert_eq!(output.status.code(), Some(0), "{all}");
        assert!(
            all.contains("codex-parity: removed 1 directory(ies) of killed runs from "),
            "{all}"
        );
        sandbox.assert_clean("after the run that followed the killed one");
    });
}

/// Listeners do not stop when their stdin closes (a stdio app-server does): a run killed
/// with SIGKILL in the middle of unix:// listener scenarios leaves no listener, and the next
/// run removes the sockets the killed run's links lead to in `/tmp/codex-daemon-UID/`
/// (codex 0.161.0 and later make those links; with an older codex only the processes are
/// checked).
#[test]
fn a_killed_run_leaves_no_listener_and_the_next_removes_its_sockets() {
    let binary = tokio::runtime::Runtime::new()
        .expect("a runtime")
        .block_on(target())
        .binary;
    let links_sockets = versions::sort_key(&binary.version) >= versions::sort_key("0.161.0");
    let codex = binary.path.to_str().expect("utf-8 path");
    let sandbox = Sandbox::with_real_baselines();
    without_touching_the_repository("a run with listeners killed with SIGKILL", || {
        let child = sandbox.spawn(&[
            "run",
            "--codex-bin",
            codex,
            "--filter",
            "over_unix_listener",
            "--jobs",
            "5",
        ]);
        // The links a world's unix listener makes (codex 0.161.0 and later) lead to sockets
        // in /tmp/codex-daemon-UID/: the next run must remove those the killed run left.
        let links = || -> Vec<PathBuf> {
            Sandbox::leftovers(&sandbox.tmp)
                .iter()
                .map(|p| sandbox.tmp.join(p))
                .filter(|p| p.is_symlink())
                .filter_map(|p| std::fs::read_link(p).ok())
                .filter(|t| {
                    t.parent()
                        .and_then(|d| d.file_name())
                        .is_some_and(|n| n.to_string_lossy().starts_with("codex-daemon-"))
                })
                .collect()
        };
        if links_sockets {
            assert!(
                support::wait_until(Duration::from_secs(30), || !links().is_empty()),
                "no listener's socket link appeared: {:?}",
                sandbox.processes()
            );
        } else {
            sandbox.wait_for_running("--listen unix://", 5, Duration::from_secs(30));
        }
        kill_and_expect_no_process(&sandbox, child);
        let sockets: Vec<PathBuf> = links().into_iter().filter(|s| s.exists()).collect();
        assert!(
            !links_sockets || !sockets.is_empty(),
            "the killed run left no socket to remove"
        );
        let (output, _) = sandbox.run(&["run", "--codex-bin", codex, "--filter", "A1"]);
        let all = support::text(&output);
        assert_eq!(output.status.code(), Some(0), "{all}");
        for socket in &sockets {
            assert!(!socket.exists(), "{} is still there", socket.display());
            let lock = PathBuf::from(format!("{}.lock", socket.display()));
            assert!(!lock.exists(), "{} is still there", lock.display());
        }
        sandbox.assert_clean("after the run that followed the killed one");
    });
}

#[test]
fn keep_leaves_the_world_for_inspection_and_no_process() {
    let codex = codex_path();
    let codex = codex.to_str().expect("utf-8 path");
    let sandbox = Sandbox::with_real_baselines();
    let (output, _) = sandbox.run(&[
        "run",
        "--codex-bin",
        codex,
        // A1 alone: the name also matches its WebSocket twin (F2), a second world.
        "--filter",
        "A1",
        "--keep",
    ]);
    let all = support::text(&output);
    assert_eq!(output.status.code(), Some(0), "{all}");
    assert!(all.contains("codex-parity: keeping "), "{all}");
    let kept: Vec<String> = Sandbox::leftovers(&sandbox.tmp)
        .into_iter()
        .filter(|p| p.ends_with("codex-home/config.toml") || p.ends_with("/workspace"))
        .collect();
    assert_eq!(kept.len(), 2, "kept world: {kept:?}\n{all}");
    // The kept world is the user's alone.
    let root = all
        .lines()
        .find_map(|l| l.strip_prefix("codex-parity: keeping "))
        .expect("the kept world's path");
    let mode = std::fs::metadata(root)
        .expect("the kept world")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700, "{root}: mode {mode:o}");
    let left = sandbox.wait_for_no_processes(Duration::from_secs(5));
    assert!(left.is_empty(), "processes left: {left:?}");
    assert!(Sandbox::leftovers(&sandbox.home).is_empty());
}

async fn sidecar_killed_mid_turn(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![Scripted::sse(bodies::assistant_reply("resp-1", "never")).delay_ms(10_000)];
    let (world, app, thread) = setup(ctx, script).await?;
    let turn = start_turn(
        &app,
        &thread,
        vec![text("hold on")],
        &TurnOptions::default(),
    )
    .await?;
    world.sidecar.requests(1, Duration::from_secs(10)).await?;
    support::signal(world.sidecar.pid().expect("pid"), Signal::KILL);
    let turn = wait_turn(&app, turn, Duration::from_secs(30)).await?;
    anyhow::ensure!(
        turn.status == TurnStatus::Completed,
        "turn status {}",
        turn.status
    );
    world.finish().await
}

#[tokio::test]
async fn a_sidecar_killed_mid_turn_is_reported_as_the_cause() {
    let scenario = Scenario::new("sidecar_killed_mid_turn", "T2", "the sidecar dies", |c| {
        Box::pin(sidecar_killed_mid_turn(c))
    });
    support::sidecar_killed_reason(&scenario, &target().await).await;
}

/// A run killed with SIGKILL while its sidecar waits (a scenario file's `wait_requests`
/// for requests that never come, bounded only by a timeout of 10^12 ms): the sidecar sees
/// its stdin close during the wait and exits with the run, not when the wait would end.
#[test]
fn a_run_killed_during_a_long_sidecar_wait_leaves_no_sidecar() {
    let sandbox = Sandbox::new();
    let codex = sandbox.fake_codex("exit 1");
    let files = sandbox.root.path().join("scenarios");
    std::fs::create_dir_all(&files).expect("scenario directory");
    std::fs::write(
        files.join("long_wait.toml"),
        "name = \"long_wait\"\nid = \"LW1\"\nsummary = \"waits for requests that never come\"\n\n\
         [[step]]\ndo = \"wait_requests\"\ncount = 99\ntimeout_ms = 1000000000000\n",
    )
    .expect("writing the scenario file");
    let child = sandbox.spawn(&[
        "run",
        "--codex-bin",
        codex.to_str().expect("utf-8 path"),
        "--scenarios",
        files.to_str().expect("utf-8 path"),
        "--only-files",
    ]);
    sandbox.wait_for_running("sidecar", 1, Duration::from_secs(30));
    // The wait is in flight once the sidecar has read the command.
    std::thread::sleep(Duration::from_millis(500));
    kill_and_expect_no_process(&sandbox, child);
}
