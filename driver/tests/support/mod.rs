//! What the harness-failure tests share: a sandbox for one `codex-parity run` (its own
//! `TMPDIR` and `HOME`, so every process and file of the run can be found), fake codex
//! binaries, a scan of `/proc` for processes the run left behind, and a scenario run
//! whose sidecar is killed; the pinned codex prepared as a target.

#![allow(dead_code)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::harness::outcome::Outcome;
use codex_parity::harness::runner::Target;
use codex_parity::harness::runner::run_scenario;
use codex_parity::harness::scenario::Scenario;
use codex_parity::harness::sidecar::SidecarLauncher;
use codex_parity::harness::world::Settings;
use codex_parity::plan::{Options, Plan};
use rustix::process::Signal;

/// The pinned codex version (installed on first use), prepared as a target with the
/// built-in baselines.
pub(crate) async fn pinned_target() -> Target {
    let pinned = versions::load().unwrap().pinned;
    let binary =
        binaries::resolve_spec(&pinned, &Cache::from_env().unwrap(), &StderrProgress::new())
            .await
            .unwrap();
    target_of(binary).await
}

/// `binary` as the one target of a plan with the default options (its schema read, the
/// built-in baselines of its version).
pub(crate) async fn target_of(binary: CodexBinary) -> Target {
    let sidecar = SidecarLauncher::codex_parity(CODEX_PARITY);
    let plan = Plan::builder(Options::default())
        .unwrap()
        .build(vec![binary], sidecar)
        .await
        .expect("reading the codex schema");
    plan.targets.into_iter().next().unwrap()
}

/// The `codex-parity` binary under test.
pub(crate) const CODEX_PARITY: &str = env!("CARGO_BIN_EXE_codex-parity");

/// One run's sandbox: `tmp` becomes its `TMPDIR` (worlds, schema and probe directories
/// are made there, and every process of the run carries that path in its environment or
/// working directory), `home` its `HOME`, `expected` an empty baselines directory.
pub(crate) struct Sandbox {
    /// Keeps the whole sandbox alive.
    pub root: tempfile::TempDir,
    /// The run's `TMPDIR`.
    pub tmp: PathBuf,
    /// The run's `HOME`.
    pub home: PathBuf,
    /// The run's working directory.
    pub cwd: PathBuf,
    /// An empty baselines directory (`CODEX_PARITY_EXPECTED`), used unless the sandbox
    /// keeps the repository's baselines.
    pub expected: PathBuf,
    real_baselines: bool,
}

impl Sandbox {
    /// A fresh sandbox whose runs use the repository's baselines (real codex runs).
    pub(crate) fn with_real_baselines() -> Sandbox {
        Sandbox {
            real_baselines: true,
            ..Sandbox::new()
        }
    }

    /// A fresh sandbox with empty directories, baselines included (fake codex runs).
    pub(crate) fn new() -> Sandbox {
        // Where a run without TMPDIR puts its run directory (in memory when it can).
        let root = tempfile::Builder::new()
            .prefix("codex-parity-sandbox-")
            .tempdir_in(codex_parity::harness::run_dir::scratch_parent())
            .expect("a temporary directory");
        let path = root.path().canonicalize().expect("canonical sandbox path");
        let (tmp, home, cwd, expected) = (
            path.join("tmp"),
            path.join("home"),
            path.join("cwd"),
            path.join("expected"),
        );
        for d in [&tmp, &home, &cwd, &expected] {
            std::fs::create_dir_all(d).expect("sandbox directory");
        }
        std::fs::write(expected.join("baselines.json"), "{\"expected\": []}\n")
            .expect("an empty baselines file");
        Sandbox {
            root,
            tmp,
            home,
            cwd,
            expected,
            real_baselines: false,
        }
    }

    /// `codex-parity ARGS` in the sandbox, output captured.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(CODEX_PARITY);
        cmd.args(args)
            .env("TMPDIR", &self.tmp)
            .env("HOME", &self.home)
            .env_remove("XDG_CACHE_HOME")
            .env_remove("CODEX_TEST_BINS")
            .env_remove("CODEX_PARITY_EXPECTED")
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if !self.real_baselines {
            cmd.env("CODEX_PARITY_EXPECTED", &self.expected);
        }
        cmd
    }

    /// Runs `codex-parity ARGS` to the end; returns its output and how long it took.
    pub(crate) fn run(&self, args: &[&str]) -> (Output, Duration) {
        let started = Instant::now();
        let output = self.command(args).output().expect("running codex-parity");
        (output, started.elapsed())
    }

    /// Starts `codex-parity ARGS` in the background.
    pub(crate) fn spawn(&self, args: &[&str]) -> Child {
        self.command(args).spawn().expect("starting codex-parity")
    }

    /// Live processes of this sandbox's runs.
    pub(crate) fn processes(&self) -> Vec<String> {
        processes_mentioning(&self.tmp)
    }

    /// Writes a fake `codex` (see [`fake_codex`]) into the sandbox, outside the run's
    /// directories.
    pub(crate) fn fake_codex(&self, app_server: &str) -> PathBuf {
        let dir = self.root.path().join("bin");
        std::fs::create_dir_all(&dir).expect("bin directory");
        fake_codex(&dir, app_server)
    }

    /// Waits up to `timeout` until `count` of the sandbox's processes have `marker` in
    /// their command line; fails naming the processes there are otherwise.
    pub(crate) fn wait_for_running(&self, marker: &str, count: usize, timeout: Duration) {
        let running = wait_until(timeout, || {
            self.processes()
                .iter()
                .filter(|p| p.contains(marker))
                .count()
                == count
        });
        assert!(
            running,
            "the run did not start {count} processes running {marker:?}: {:?}",
            self.processes()
        );
    }

    /// Waits up to `timeout` for the sandbox's processes to be gone; returns those left.
    pub(crate) fn wait_for_no_processes(&self, timeout: Duration) -> Vec<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = self.processes();
            if left.is_empty() || Instant::now() > deadline {
                return left;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every file and directory left under `dir`, relative, sorted.
    pub(crate) fn leftovers(dir: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in entries.flatten() {
                let path = e.path();
                out.push(
                    path.strip_prefix(dir)
                        .unwrap_or(&path)
                        .display()
                        .to_string(),
                );
                if path.is_dir() && !path.is_symlink() {
                    stack.push(path);
                }
            }
        }
        out.sort();
        out
    }

    /// Fails naming what a run left in the sandbox: processes, files in `TMPDIR` or
    /// `HOME`.
    pub(crate) fn assert_clean(&self, what: &str) {
        let processes = self.wait_for_no_processes(Duration::from_secs(5));
        assert!(
            processes.is_empty(),
            "{what}: processes left behind:\n{}",
            processes.join("\n")
        );
        let tmp = Self::leftovers(&self.tmp);
        assert!(tmp.is_empty(), "{what}: left in TMPDIR: {tmp:?}");
        let home = Self::leftovers(&self.home);
        assert!(home.is_empty(), "{what}: written to HOME: {home:?}");
        let cwd = Self::leftovers(&self.cwd);
        assert!(
            cwd.is_empty(),
            "{what}: written to the working directory: {cwd:?}"
        );
    }
}

/// `pid cmdline` of every live (not zombie) process, other than this one, whose
/// environment or working directory mentions `marker`.
pub(crate) fn processes_mentioning(marker: &Path) -> Vec<String> {
    let needle = marker.as_os_str().as_encoded_bytes();
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        if pid == me {
            continue;
        }
        let dir = entry.path();
        let stat = std::fs::read_to_string(dir.join("stat")).unwrap_or_default();
        if stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        {
            continue;
        }
        let environ = std::fs::read(dir.join("environ")).unwrap_or_default();
        let in_env = environ.windows(needle.len()).any(|w| w == needle);
        let in_cwd = std::fs::read_link(dir.join("cwd")).is_ok_and(|cwd| cwd.starts_with(marker));
        if in_env || in_cwd {
            let cmdline = std::fs::read(dir.join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            found.push(format!("{pid} {}", cmdline.trim()));
        }
    }
    found
}

/// The fake codex's answer to any other `--help`: a usage line and no flags.
pub(crate) const HELP_ANSWER: &str =
    r#"case " $* " in *" --help "*) printf 'Usage: codex [OPTIONS]\n'; exit 0;; esac"#;

/// Writes an executable fake `codex` into `dir`: `--version` says 0.171.0,
/// `app-server generate-json-schema --out DIR` writes empty schemas, `exec --help` lists
/// `--json`, any other `--help` answers [`HELP_ANSWER`], and `app-server` itself runs
/// `app_server` (sh).
pub(crate) fn fake_codex(dir: &Path, app_server: &str) -> PathBuf {
    let path = dir.join("codex");
    let script = format!(
        r#"#!/bin/sh
if [ "$1" = "--version" ]; then echo "codex-cli 0.171.0"; exit 0; fi
if [ "$1" = "exec" ]; then printf 'Usage: codex exec\n\nOptions:\n      --json\n'; exit 0; fi
{HELP_ANSWER}
if [ "$1" = "app-server" ] && [ "$2" = "generate-json-schema" ]; then
  mkdir -p "$4"
  for f in ClientRequest ServerRequest ServerNotification ClientNotification; do echo '{{"oneOf":[]}}' > "$4/$f.json"; done
  exit 0
fi
{app_server}
"#
    );
    std::fs::write(&path, script).expect("writing the fake codex");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))
        .expect("making the fake codex executable");
    path
}

/// Sends `signal` to `pid`.
pub(crate) fn signal(pid: u32, signal: Signal) {
    let pid = rustix::process::Pid::from_raw(pid as i32).expect("a valid pid");
    rustix::process::kill_process(pid, signal).expect("sending a signal");
}

/// Sends SIGINT (Ctrl-C) to the run `child` and waits up to `timeout` for it to exit.
pub(crate) fn interrupt(child: Child, timeout: Duration) -> Output {
    signal(child.id(), Signal::INT);
    wait_with_timeout(child, timeout, "after SIGINT")
}

/// Runs `scenario` on `target`, its sidecar started as `codex-parity sidecar`; the reason
/// it failed, after checking that the reason's first line names the sidecar killed by
/// SIGKILL as the cause (the scenario is to kill it).
pub(crate) async fn sidecar_killed_reason(scenario: &Scenario, target: &Target) -> String {
    let settings = Arc::new(Settings::new(
        SidecarLauncher::codex_parity(CODEX_PARITY),
        false,
    ));
    let outcome = run_scenario(scenario, target, settings).await.outcome;
    let Outcome::Failed(reason) = outcome else {
        panic!("expected a failure, got {outcome:?}");
    };
    let first = reason.lines().next().unwrap_or("");
    assert!(
        first.starts_with("the sidecar (pid ")
            && first.contains("died during the scenario: signal: 9 (SIGKILL)"),
        "{reason}"
    );
    reason
}

/// Waits for `child` up to `timeout` (its pipes drained meanwhile); its output, or a
/// panic naming what hung.
pub(crate) fn wait_with_timeout(mut child: Child, timeout: Duration, what: &str) -> Output {
    fn drain(
        pipe: Option<impl std::io::Read + Send + 'static>,
    ) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut buf);
            }
            buf
        })
    }
    let (stdout, stderr) = (drain(child.stdout.take()), drain(child.stderr.take()));
    let deadline = Instant::now() + timeout;
    let status = loop {
        match child.try_wait().expect("waiting for codex-parity") {
            Some(status) => break status,
            None if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what}: codex-parity did not exit within {timeout:?}; stderr:\n{}",
                    String::from_utf8_lossy(&stderr.join().unwrap_or_default())
                );
            }
            None => std::thread::sleep(Duration::from_millis(50)),
        }
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

/// Waits up to `timeout` until `ready` holds.
pub(crate) fn wait_until(timeout: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    ready()
}

/// stdout and stderr as one text, for assertions and failure messages.
pub(crate) fn text(output: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// Asserts that `output` is an exit with status 2 whose text names `needle`.
pub(crate) fn assert_exit_2_naming(output: &Output, needle: &str) {
    let all = text(output);
    assert_eq!(output.status.code(), Some(2), "{all}");
    assert!(all.contains(needle), "no {needle:?} in:\n{all}");
}

/// `git status` of the repository (untracked files included), or `None` without git.
pub(crate) fn repository_status() -> Option<String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let output = Command::new("git")
        .arg("-C")
        .arg(&repo)
        .args(["status", "--porcelain", "--untracked-files=all"])
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The arguments of `codex-parity record --codex-bin CODEX --upstream URL --out OUT EXTRA…
/// -- CLIENT…`.
pub(crate) fn record_args(
    codex: &Path,
    upstream: &str,
    out: &Path,
    extra: &[&str],
    client: &[String],
) -> Vec<String> {
    let mut args: Vec<String> = vec![
        "record".into(),
        "--codex-bin".into(),
        codex.display().to_string(),
        "--upstream".into(),
        upstream.into(),
        "--out".into(),
        out.display().to_string(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.extend(client.iter().cloned());
    args
}

/// The Rust example `record_client` (built beside the test binaries by `cargo test`) in
/// `mode`; it connects to `$CODEX_PARITY_LISTEN` when that is set, else runs codex.
pub(crate) fn record_client(mode: &str) -> Vec<String> {
    let exe = std::env::current_exe().expect("the test binary's path");
    let example = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/debug")
        .join("examples/record_client");
    assert!(
        example.exists(),
        "{} is missing: `cargo test` builds the examples",
        example.display()
    );
    vec![example.display().to_string(), mode.into()]
}

/// The rows of a `client-check.json` as (mutation, result, exit status).
pub(crate) fn rows(json: &serde_json::Value) -> Vec<(String, String, serde_json::Value)> {
    json["rows"]
        .as_array()
        .expect("client-check.json has rows")
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or_default().to_string();
            (s("mutation"), s("result"), r["exit"].clone())
        })
        .collect()
}
