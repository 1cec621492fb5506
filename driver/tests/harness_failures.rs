//! The harness's own failures, with fake codex binaries (small shell scripts) and no real
//! codex: a codex that exits at once, one that never answers `initialize`, one that is not
//! executable, a run stopped with Ctrl-C, and a sidecar killed in the middle of a
//! scenario. Each must end in a clear error naming what failed, within its timeout, and
//! leave no process and no file behind. A sidecar dropped on an error path is a stop, not
//! a death.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codex_parity::codex::binaries::CodexBinary;
use codex_parity::codex::capabilities::Capabilities;
use codex_parity::harness::baseline::Baseline;
use codex_parity::harness::runner::Target;
use codex_parity::harness::scenario::{Ctx, Scenario};
use codex_parity::harness::world::WorldOptions;
use codex_parity_sidecar::{Scripted, bodies};
use rustix::process::Signal;
use support::{Sandbox, text};

/// The time `initialize` may take before the harness gives up in the test of a codex that
/// never answers (`run --call-timeout-secs 3`; 20 s, `DEFAULT_CALL_TIMEOUT`, unless told).
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(3);

/// An app-server that never answers: a background child in codex's process group (which
/// must die with it), a line on stderr, then sleep.
const HANGING: &str = "sleep 601 &\necho 'fake codex: thinking' >&2\nexec sleep 600";

/// Runs the smoke scenario on a fake codex whose `app-server` runs `app_server`; the
/// fake's path, the run's output and how long it took.
fn smoke_on_fake(sandbox: &Sandbox, app_server: &str) -> (String, Output, Duration) {
    let fake = sandbox.fake_codex(app_server);
    smoke_on(sandbox, fake)
}

/// Runs the smoke scenario on the codex at `fake`; its path, the run's output and how
/// long it took.
fn smoke_on(sandbox: &Sandbox, fake: PathBuf) -> (String, Output, Duration) {
    let fake = fake.to_str().expect("utf-8 path").to_string();
    let (output, took) = sandbox.run(&[
        "run",
        "--codex-bin",
        &fake,
        "--filter",
        "A1", // the smoke scenario alone: its name also matches its WebSocket twin (F2)
    ]);
    (fake, output, took)
}

#[test]
fn a_codex_that_exits_at_once_fails_the_scenario_naming_it_and_its_stderr() {
    let sandbox = Sandbox::new();
    let (fake, output, took) =
        smoke_on_fake(&sandbox, "echo 'fake codex: refusing to start' >&2; exit 3");
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    // The report shows a reason's first line: it names the binary, how it ended and the
    // last thing it said.
    for want in [
        "smoke_uses_mock_responses[codex-0.171.0]: starting ",
        &fake,
        "[last stderr line: fake codex: refusing to start]",
        "codex exited (exit status: 3) while waiting for initialize",
    ] {
        assert!(all.contains(want), "missing {want:?} in\n{all}");
    }
    // An exit is reported when it happens, not when the initialize timeout runs out.
    assert!(
        took < codex_parity::app_server::DEFAULT_CALL_TIMEOUT / 2,
        "took {took:?}\n{all}"
    );
    sandbox.assert_clean("after a codex that exits at once");
}

#[test]
fn a_codex_that_never_answers_initialize_fails_after_the_timeout_and_is_killed() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_codex(HANGING);
    let fake = fake.to_str().expect("utf-8 path").to_string();
    let (output, took) = sandbox.run(&[
        "run",
        "--codex-bin",
        &fake,
        "--filter",
        "A1",
        "--call-timeout-secs",
        "3",
    ]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    for want in [
        &fake,
        "[last stderr line: fake codex: thinking]",
        "initialize got no answer within 3s",
    ] {
        assert!(all.contains(want), "missing {want:?} in\n{all}");
    }
    assert!(
        took < INITIALIZE_TIMEOUT + Duration::from_secs(15),
        "took {took:?}\n{all}"
    );
    sandbox.assert_clean("after a codex that never answers");
}

/// What `codex --help`, `codex exec --help` and `codex app-server --help` may take (10 s).
const HELP_TIMEOUT: Duration = Duration::from_secs(10);

#[test]
fn a_codex_that_hangs_on_help_costs_one_help_timeout_not_three() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_codex("echo 'fake codex: refusing to start' >&2; exit 3");
    let script = std::fs::read_to_string(&fake).expect("reading the fake codex");
    // Every `--help` but exec's runs the script's end: a background child, then sleep.
    let hanging = script.replace(support::HELP_ANSWER, "").replace(
        "echo 'fake codex: refusing",
        "case \" $* \" in *\" --help \"*) sleep 601 & exec sleep 600;; esac\necho 'fake codex: refusing",
    );
    std::fs::write(&fake, hanging).expect("writing the fake codex");
    let (_, output, took) = smoke_on(&sandbox, fake);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    for want in ["app-server --help took over", "its subcommands are unknown"] {
        assert!(all.contains(want), "missing {want:?} in\n{all}");
    }
    // The help texts are read at once: one timeout, where one after the other took two.
    assert!(took >= HELP_TIMEOUT, "took {took:?}\n{all}");
    assert!(took < HELP_TIMEOUT * 2, "took {took:?}\n{all}");
    sandbox.assert_clean("after a codex that hangs on --help");
}

#[test]
fn a_codex_that_is_not_executable_is_refused_naming_it() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_codex("exit 0");
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let fake_arg = fake.to_str().expect("utf-8 path");
    let (output, took) = sandbox.run(&["run", "--codex-bin", fake_arg]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(2), "{all}");
    assert!(
        all.contains(fake_arg) && all.contains("not executable"),
        "{all}"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}\n{all}");
    sandbox.assert_clean("after a codex that is not executable");
}

#[test]
fn ctrl_c_stops_the_run_kills_its_processes_and_removes_its_directories() {
    let sandbox = Sandbox::new();
    let fake = sandbox.fake_codex(HANGING);
    let fake_arg = fake.to_str().expect("utf-8 path");
    let child = sandbox.spawn(&[
        "run",
        "--codex-bin",
        fake_arg,
        "--filter",
        "A",
        "--jobs",
        "2",
    ]);
    // Both jobs have a world with a (hanging) codex in it.
    sandbox.wait_for_running("sleep 600", 2, Duration::from_secs(15));
    let output = support::interrupt(child, Duration::from_secs(10));
    let all = text(&output);
    assert_eq!(output.status.code(), Some(130), "{all}");
    assert!(
        all.contains("interrupted; stopped 2 running scenario(s)"),
        "{all}"
    );
    sandbox.assert_clean("after Ctrl-C");
}

async fn killed_sidecar(ctx: &Ctx) -> anyhow::Result<()> {
    let world = ctx.world(WorldOptions::default()).await?;
    world
        .script(vec![
            Scripted::sse(bodies::assistant_reply("resp-1", "never")).delay_ms(5_000),
        ])
        .await?;
    let pid = world.sidecar.pid().expect("the sidecar's pid");
    support::signal(pid, Signal::KILL);
    world
        .sidecar
        .requests(1, Duration::from_secs(5))
        .await
        .map(|_| ())
}

#[tokio::test]
async fn a_sidecar_killed_mid_scenario_is_named_as_the_cause() {
    let target = Target {
        binary: CodexBinary {
            path: "/nonexistent/codex".into(),
            version: "0.0.0".into(),
        },
        caps: Arc::new(Capabilities::default()),
        baseline: Arc::new(Baseline::default()),
    };
    let scenario = Scenario::new("sidecar_killed", "T1", "the sidecar dies", |c| {
        Box::pin(killed_sidecar(c))
    });
    let started = Instant::now();
    let reason = support::sidecar_killed_reason(&scenario, &target).await;
    assert!(
        reason.contains("died (signal: 9 (SIGKILL)) before answering requests"),
        "{reason}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{reason}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sidecar_dropped_with_pending_script_is_a_stop_not_a_death() {
    let sidecar = codex_parity::harness::sidecar::Sidecar::start(
        &codex_parity::harness::sidecar::SidecarLauncher::codex_parity(support::CODEX_PARITY),
    )
    .await
    .expect("the sidecar starts");
    sidecar
        .enqueue(&[Scripted::sse(bodies::assistant_reply("resp-1", "never"))])
        .await
        .expect("enqueue");
    let health = sidecar.health();
    // A world torn down on an error path drops its sidecar: the sidecar sees its stdin
    // close and exits 3 (a script left), which once raced the kill and read as a death.
    drop(sidecar);
    let deadline = Instant::now() + Duration::from_secs(5);
    while health.exit_status().is_none() {
        assert!(Instant::now() < deadline, "the dropped sidecar did not end");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(health.death(), None);
}
