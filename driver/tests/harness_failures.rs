//! The harness's own failures, with fake codex binaries (small shell scripts) and no real
//! codex: a codex that exits at once, one that never answers `initialize`, one that is not
//! executable, a run stopped with Ctrl-C, and a sidecar killed in the middle of a
//! scenario. Each must end in a clear error naming what failed, within its timeout, and
//! leave no process and no file behind.

mod support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codex_parity::baseline::Baseline;
use codex_parity::binaries::CodexBinary;
use codex_parity::capabilities::Capabilities;
use codex_parity::runner::Target;
use codex_parity::scenario::{Ctx, Outcome, Scenario, run_scenario};
use codex_parity::sidecar::SidecarLauncher;
use codex_parity::world::{Settings, WorldOptions};
use codex_parity_sidecar::{Scripted, bodies};
use rustix::process::Signal;
use support::{Sandbox, fake_codex, text};

/// The time `initialize` may take before the harness gives up (`DEFAULT_CALL_TIMEOUT`).
const INITIALIZE_TIMEOUT: Duration = codex_parity::app_server::DEFAULT_CALL_TIMEOUT;

fn bin_dir(sandbox: &Sandbox) -> PathBuf {
    let dir = sandbox.root.path().join("bin");
    std::fs::create_dir_all(&dir).expect("bin directory");
    dir
}

#[test]
fn a_codex_that_exits_at_once_fails_the_scenario_naming_it_and_its_stderr() {
    let sandbox = Sandbox::new();
    let fake = fake_codex(
        &bin_dir(&sandbox),
        "echo 'fake codex: refusing to start' >&2; exit 3",
    );
    let fake_arg = fake.to_str().expect("utf-8 path");
    let (output, took) = sandbox.run(&[
        "run",
        "--codex-bin",
        fake_arg,
        "--filter",
        "smoke_uses_mock_responses",
    ]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    // The report shows a reason's first line: it names the binary, how it ended and the
    // last thing it said.
    for want in [
        "smoke_uses_mock_responses[codex-0.171.0]: starting ",
        fake_arg,
        "[last stderr line: fake codex: refusing to start]",
        "codex exited (exit status: 3) while waiting for initialize",
    ] {
        assert!(all.contains(want), "missing {want:?} in\n{all}");
    }
    // An exit is reported when it happens, not when the initialize timeout runs out.
    assert!(took < INITIALIZE_TIMEOUT / 2, "took {took:?}\n{all}");
    sandbox.assert_clean("after a codex that exits at once");
}

#[test]
fn a_codex_that_never_answers_initialize_fails_after_the_timeout_and_is_killed() {
    let sandbox = Sandbox::new();
    // A background child in codex's process group must die with it.
    let fake = fake_codex(
        &bin_dir(&sandbox),
        "sleep 601 &\necho 'fake codex: thinking' >&2\nexec sleep 600",
    );
    let fake_arg = fake.to_str().expect("utf-8 path");
    let (output, took) = sandbox.run(&[
        "run",
        "--codex-bin",
        fake_arg,
        "--filter",
        "smoke_uses_mock_responses",
    ]);
    let all = text(&output);
    assert_eq!(output.status.code(), Some(1), "{all}");
    for want in [
        fake_arg,
        "[last stderr line: fake codex: thinking]",
        "initialize got no answer within 20s",
    ] {
        assert!(all.contains(want), "missing {want:?} in\n{all}");
    }
    assert!(
        took < INITIALIZE_TIMEOUT + Duration::from_secs(15),
        "took {took:?}\n{all}"
    );
    sandbox.assert_clean("after a codex that never answers");
}

#[test]
fn a_codex_that_is_not_executable_is_refused_naming_it() {
    let sandbox = Sandbox::new();
    let fake = fake_codex(&bin_dir(&sandbox), "exit 0");
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
    let fake = fake_codex(
        &bin_dir(&sandbox),
        "sleep 601 &\necho 'fake codex: thinking' >&2\nexec sleep 600",
    );
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
    let pid = child.id();
    // Both jobs have a world with a (hanging) codex in it.
    let started = support::wait_until(Duration::from_secs(15), || {
        sandbox
            .processes()
            .iter()
            .filter(|p| p.contains("sleep 600"))
            .count()
            == 2
    });
    assert!(
        started,
        "the run did not start two codex processes: {:?}",
        sandbox.processes()
    );
    support::signal(pid, Signal::INT);
    let output = support::wait_with_timeout(child, Duration::from_secs(10), "after SIGINT");
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
    let settings = Arc::new(Settings {
        sidecar: SidecarLauncher {
            program: support::CODEX_PARITY.into(),
            args: vec!["sidecar".into()],
        },
        keep: false,
        bless: false,
    });
    let scenario = Scenario::new("sidecar_killed", "T1", "the sidecar dies", |c| {
        Box::pin(killed_sidecar(c))
    });
    let started = Instant::now();
    let outcome = run_scenario(&scenario, &target, settings).await.outcome;
    let Outcome::Failed(reason) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    let first = reason.lines().next().unwrap_or("");
    assert!(
        first.starts_with("the sidecar (pid ")
            && first.contains("died during the scenario: signal: 9 (SIGKILL)"),
        "{reason}"
    );
    assert!(
        reason.contains("died (signal: 9 (SIGKILL)) before answering requests"),
        "{reason}"
    );
    assert!(started.elapsed() < Duration::from_secs(10), "{reason}");
}
