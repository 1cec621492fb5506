//! Homes at scale for the performance scenarios (group P): a `CODEX_HOME` holding many
//! threads, or one very long thread, made offline and deterministically, then prepared by the
//! release that will read it and kept in the cache so that a sweep does not make it again.
//!
//! **Made** ([`generate`]): every rollout is written by [`RolloutWriter`] in the legacy
//! layout every release reads (the `session_meta`, then per turn the model's lines and the
//! events a resumed thread's turns are rebuilt from). Thread `i` has a fixed id and starts at
//! a fixed second of 2026-01-02 (its file's modification time too): the same spec gives the
//! same bytes, and no two threads tie in the order `thread/list` pages by. A
//! [`HomeKind::Threads`] home has `count` threads of `turns` turns (8 turns: 57 records a
//! thread); a [`HomeKind::Large`] home has one thread of `turns` turns, each with a tool
//! output of `output_bytes` (9 records a turn: 2,223 turns are 20,008 records).
//!
//! **Laid out** ([`Layout`]): `legacy` is the files as written. `paginated` is the same
//! files after the release's own `codex migrate-rollouts --apply` (0.171.0 has it): the
//! paginated layout a release reads is the one it writes itself, never a copy of codex's
//! internal format made here. A release without the command has no paginated home
//! ([`paginated_reason`]).
//!
//! **Prepared** ([`lease`]): codex indexes the rollouts of a home into its state database
//! on its first start (12 s for 10,000 threads on 0.171.0); a prepared home is one the
//! release has started in once (`initialize`, the first page of `thread/list`, a clean
//! exit), so what a scenario measures is the home as an integrator's codex finds it every
//! day after the first. The first start itself is measured on an unprepared home
//! ([`unprepared`]). Prepared homes are kept in the cache next to the binary, under
//! `VERSION/derived/KEY/perf-homes/NAME/` (pruned with the release, like the home
//! template); a binary given by path prepares them in the world of each scenario that needs
//! them, removed with it. While a home is leased its release stays in the cache: no prune (a
//! sweep's cap, `install --prune`) removes it ([`install::hold`]). Codex's index holds the
//! rollouts' absolute paths, so a prepared home is used where
//! it was prepared, put back as prepared before each repetition ([`HomeLease::reset`]: codex
//! writes to its databases and rollouts in place), under a lock that one process holds at a
//! time; a home is `ready` only once complete, so a sweep stopped half way prepares it again.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, bail, ensure};
use serde_json::json;

use crate::app_server::{AppServer, AppServerCommand};
use crate::codex::binaries::CodexBinary;
use crate::codex::capabilities::Capabilities;
use crate::codex::fingerprint;
use crate::codex::install::{self, Cache};
use crate::harness::codex_env::{self, codex_env};
use crate::scenarios::support::rollout::{RolloutWriter, TurnLines, rollout_files};

/// Bumped when what [`generate`] writes changes: part of every home's name, so a cached
/// home of an older generator is never read as a new one.
pub const GENERATOR: u32 = 1;

/// Turns of each thread of a [`HomeKind::Threads`] home (57 records a thread).
pub const THREAD_TURNS: usize = 8;

/// The working directory every generated rollout records (it exists everywhere).
pub const RECORDED_CWD: &str = "/";

/// The model provider every generated thread records: the worlds' provider, so that
/// `thread/list` (which keeps the current provider's threads) lists them.
pub const PROVIDER: &str = "mock";

/// The longest a preparation start (a first start indexing the whole home) may take.
const PREPARE_TIMEOUT: Duration = Duration::from_secs(600);

/// What a home holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HomeKind {
    /// `count` threads of `turns` turns each.
    Threads {
        /// Threads.
        count: u64,
        /// Turns of each.
        turns: usize,
    },
    /// One thread of `turns` turns, each with a tool output of `output_bytes`.
    Large {
        /// Turns.
        turns: u64,
        /// Bytes of each turn's tool output.
        output_bytes: usize,
    },
}

/// How the history is laid out on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Layout {
    /// Rollout files as every release reads them.
    Legacy,
    /// The same after the release's own migration to paginated history.
    Paginated,
}

impl Layout {
    /// `legacy` or `paginated`.
    pub fn name(self) -> &'static str {
        match self {
            Layout::Legacy => "legacy",
            Layout::Paginated => "paginated",
        }
    }
}

/// A home: what it holds and its layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HomeSpec {
    /// What it holds.
    pub kind: HomeKind,
    /// Its layout.
    pub layout: Layout,
}

impl HomeSpec {
    /// Its directory's name: `g1-threads-1000x8-legacy`, `g1-large-2223x8192-paginated`.
    pub fn name(&self) -> String {
        let what = match self.kind {
            HomeKind::Threads { count, turns } => format!("threads-{count}x{turns}"),
            HomeKind::Large {
                turns,
                output_bytes,
            } => format!("large-{turns}x{output_bytes}"),
        };
        format!("g{GENERATOR}-{what}-{}", self.layout.name())
    }

    /// The threads and records [`generate`] writes for it.
    pub fn expected(&self) -> Generated {
        match self.kind {
            HomeKind::Threads { count, turns } => Generated {
                threads: count,
                records: count * (1 + 7 * turns as u64),
                turns: count * turns as u64,
            },
            HomeKind::Large { turns, .. } => Generated {
                threads: 1,
                records: 1 + 9 * turns,
                turns,
            },
        }
    }
}

/// The id of thread `i` of a generated home: a UUIDv7 of fixed digits.
pub fn thread_id(i: u64) -> String {
    format!("01a20000-0000-7000-8000-{i:012x}")
}

/// The id of turn `k` of thread `i`.
fn turn_id(i: u64, k: u64) -> String {
    format!("01a20000-{:04x}-7000-9000-{k:012x}", i & 0xffff)
}

/// When thread `i` started: second `i` of 2026-01-02 (UTC), as codex writes it, and as a
/// time for the file's modification time.
fn started(i: u64) -> (String, SystemTime) {
    let (h, m, s) = (i / 3600, i / 60 % 60, i % 60);
    let text = format!("2026-01-02T{h:02}:{m:02}:{s:02}.000Z");
    // 2026-01-02T00:00:00Z.
    let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_767_312_000 + i);
    (text, time)
}

/// What a home holds, counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Generated {
    /// Threads (rollout files).
    pub threads: u64,
    /// Records (rollout lines).
    pub records: u64,
    /// Turns.
    pub turns: u64,
}

/// The largest [`HomeKind::Threads`] count: threads start one second apart within one day.
pub const MAX_THREADS: u64 = 86_400;

/// Writes the rollouts of `kind` into `home` in the legacy layout, as written by codex
/// `cli_version`; returns what it wrote.
pub fn generate(home: &Path, kind: HomeKind, cli_version: &str) -> anyhow::Result<Generated> {
    let mut total = Generated::default();
    let mut write = |i: u64, turns: u64, output: Option<&str>| -> anyhow::Result<()> {
        let (at, time) = started(i);
        let id = thread_id(i);
        let mut w = RolloutWriter::create(home, &id, &at, RECORDED_CWD, cli_version, PROVIDER)?;
        for k in 0..turns {
            w.turn(TurnLines {
                turn_id: &turn_id(i, k),
                prompt: &format!("thread {i} prompt {k}: what does the notes file say?"),
                answer: &format!("thread {i} answer {k}: it lists what to do next."),
                tool_output: output,
            })?;
        }
        let written = w.finish(time)?;
        total.threads += 1;
        total.records += written.records as u64;
        total.turns += written.turns as u64;
        Ok(())
    };
    match kind {
        HomeKind::Threads { count, turns } => {
            ensure!(
                count <= MAX_THREADS,
                "{count} threads: at most {MAX_THREADS}"
            );
            for i in 0..count {
                write(i, turns as u64, None)?;
            }
        }
        HomeKind::Large {
            turns,
            output_bytes,
        } => {
            let line = "notes: a line of a long tool output kept in the model's context\n";
            let output: String = line.chars().cycle().take(output_bytes).collect();
            write(0, turns, Some(&output))?;
        }
    }
    Ok(total)
}

/// Counts the rollouts of `home` and their lines (whatever the layout).
pub fn read_back(home: &Path) -> anyhow::Result<Generated> {
    let mut counted = Generated::default();
    for path in rollout_files(&home.join("sessions")) {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        counted.threads += 1;
        for line in text.lines() {
            counted.records += 1;
            if line.contains("\"task_started\"") {
                counted.turns += 1;
            }
        }
    }
    Ok(counted)
}

/// Why `caps`'s binary has no paginated home, if it has none: the layout is made by the
/// release's own `codex migrate-rollouts`.
pub fn paginated_reason(caps: &Capabilities) -> Result<(), String> {
    caps.needs_history_mode()?;
    caps.needs_codex_command("migrate-rollouts").map_err(|e| {
        format!(
            "{e}: the paginated layout is made by the release's own migration of the legacy home"
        )
    })
}

/// Copies the directory `from` into `to` (created; files copied, symbolic links and other
/// entries skipped).
pub fn copy_home(from: &Path, to: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("listing {}", from.display()))? {
        let entry = entry.with_context(|| format!("listing {}", from.display()))?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let kind = entry
            .file_type()
            .with_context(|| format!("reading {}", src.display()))?;
        if kind.is_dir() {
            copy_home(&src, &dst)?;
        } else if kind.is_file() {
            std::fs::copy(&src, &dst)
                .with_context(|| format!("copying {} to {}", src.display(), dst.display()))?;
        }
    }
    Ok(())
}

/// The configuration of a home being prepared: a provider named like the worlds' whose
/// server is a closed local port, so nothing leaves the machine (no request is expected).
fn scratch_config() -> String {
    format!(
        "model = \"mock-model\"\nmodel_provider = \"{PROVIDER}\"\n\n[model_providers.{PROVIDER}]\n\
         name = \"Mock\"\nbase_url = \"{}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n",
        crate::harness::home_template::NOWHERE
    )
}

/// A home of `spec` for `binary`, generated but never started in (what a first start
/// meets), in a new directory `root/codex-home`, with the scratch configuration.
pub fn unprepared(binary: &CodexBinary, spec: &HomeSpec, root: &Path) -> anyhow::Result<PathBuf> {
    ensure!(
        spec.layout == Layout::Legacy,
        "an unprepared home is in the legacy layout (the paginated one is made by codex)"
    );
    let (home, _) = codex_env::make_dirs(root)?;
    generate(&home, spec.kind, &binary.version)?;
    std::fs::write(home.join("config.toml"), scratch_config())
        .with_context(|| format!("writing the configuration of {}", home.display()))?;
    Ok(home)
}

/// Where the prepared homes of `binary` are kept between runs: next to it in the cache;
/// `None` for a binary from elsewhere.
pub fn homes_dir(binary: &CodexBinary) -> Option<PathBuf> {
    fingerprint::cache_dir(binary).map(|d| d.join("perf-homes"))
}

/// The prepared home of one spec for one binary, held for measuring: its directory is
/// locked (`flock` on `DIR/.lock`, released when the lease drops or the process dies), so
/// two processes never measure in it at once.
///
/// Codex records the absolute paths of the rollouts it indexed in its state database, so a
/// prepared home only works where it was prepared: `DIR/codex-home`. The lease keeps the
/// home as it was right after its preparation in `DIR/pristine` and [`HomeLease::reset`]
/// copies it back over `DIR/codex-home` before each repetition (codex writes to its
/// databases and rollouts in place).
#[derive(Debug)]
pub struct HomeLease {
    dir: PathBuf,
    _lock: std::fs::File,
    /// Keeps the release in the cache while its home is in use (no prune removes it).
    _hold: Option<install::ReleaseHold>,
}

impl HomeLease {
    /// The `CODEX_HOME` to measure in.
    pub fn home(&self) -> PathBuf {
        self.dir.join("codex-home")
    }

    /// Puts the home back as it was prepared.
    pub fn reset(&self) -> anyhow::Result<()> {
        let home = self.home();
        if home.exists() {
            std::fs::remove_dir_all(&home)
                .with_context(|| format!("removing {}", home.display()))?;
        }
        copy_home(&self.dir.join("pristine"), &home)
    }
}

/// Leases the prepared home of `spec` for `binary` (see [`HomeLease`]): taken from the
/// cache, or prepared now (see the module documentation), waiting while another process
/// holds it. A binary outside the cache prepares it under `elsewhere` (a scenario's world,
/// removed with it: nothing is kept for a binary given by path).
pub async fn lease(
    binary: &CodexBinary,
    spec: &HomeSpec,
    elsewhere: &Path,
) -> anyhow::Result<HomeLease> {
    let cached = homes_dir(binary);
    let hold = match cached {
        Some(_) => Some(install::hold(&Cache::from_env()?, &binary.version).await?),
        None => None,
    };
    let dir = cached
        .unwrap_or_else(|| elsewhere.to_path_buf())
        .join(spec.name());
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let path = dir.join(".lock");
    let file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("opening the lock file {}", path.display()))?;
    let file = tokio::task::spawn_blocking(move || file.lock().map(|()| file))
        .await
        .context("waiting for the home's lock")?
        .with_context(|| format!("locking {}", path.display()))?;
    let lease = HomeLease {
        dir,
        _lock: file,
        _hold: hold,
    };
    if !lease.dir.join("ready").is_file() {
        let started = std::time::Instant::now();
        eprintln!(
            "codex-parity: {}: preparing the home {} (once per release, kept in {})",
            binary.label(),
            spec.name(),
            lease.dir.display()
        );
        prepare(binary, spec, &lease.dir).await.with_context(|| {
            format!("preparing the home {} for {}", spec.name(), binary.label())
        })?;
        eprintln!(
            "codex-parity: {}: prepared {} in {:.1} s",
            binary.label(),
            spec.name(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(lease)
}

/// Prepares the home of `spec` in `dir` (locked by the caller): generated into
/// `dir/codex-home`, migrated for the paginated layout, started in once, then copied to
/// `dir/pristine` and marked `ready`. Leftovers of an interrupted preparation are removed
/// first.
async fn prepare(binary: &CodexBinary, spec: &HomeSpec, dir: &Path) -> anyhow::Result<()> {
    for leftover in ["codex-home", "pristine", "scratch", ".pristine-staging"] {
        let p = dir.join(leftover);
        if p.exists() {
            std::fs::remove_dir_all(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    let root = dir.join("scratch");
    let legacy = HomeSpec {
        layout: Layout::Legacy,
        ..*spec
    };
    let made = unprepared(binary, &legacy, &root)?;
    let home = dir.join("codex-home");
    std::fs::rename(&made, &home).with_context(|| format!("moving {}", made.display()))?;
    let env = codex_env(&root, &home, crate::harness::home_template::NOWHERE);
    if spec.layout == Layout::Paginated {
        migrate(binary, &env, &root).await?;
    }
    let mut server = AppServer::spawn(&AppServerCommand {
        program: binary.path.clone(),
        args: vec!["--disable".into(), "plugins".into()],
        env,
        cwd: root.join("workspace"),
        label: binary.label(),
    })?;
    server.call_timeout = PREPARE_TIMEOUT;
    server
        .initialize(true)
        .await
        .map_err(|e| anyhow::anyhow!("initialize: {e}"))?;
    server
        .call("thread/list", json!({"limit": 1}))
        .await
        .map_err(|e| anyhow::anyhow!("thread/list: {e}"))?;
    let exit = server.shutdown_exit(Duration::from_secs(30)).await;
    ensure!(
        exit.as_ref().is_some_and(|e| e.success()),
        "codex did not exit cleanly after its first start ({})",
        exit.map_or_else(|| "still running".to_string(), |e| e.to_string())
    );
    let staging = dir.join(".pristine-staging");
    copy_home(&home, &staging)?;
    std::fs::rename(&staging, dir.join("pristine")).context("keeping the prepared home")?;
    std::fs::remove_dir_all(&root).with_context(|| format!("removing {}", root.display()))?;
    std::fs::write(dir.join("ready"), spec.name()).context("marking the home ready")?;
    Ok(())
}

/// Runs `codex migrate-rollouts --apply` in the home of `env`; fails with its output unless
/// it exits 0.
async fn migrate(
    binary: &CodexBinary,
    env: &[(std::ffi::OsString, std::ffi::OsString)],
    root: &Path,
) -> anyhow::Result<()> {
    let mut cmd = tokio::process::Command::new(&binary.path);
    cmd.arg("migrate-rollouts")
        .arg("--apply")
        .env_clear()
        .envs(env.iter().cloned())
        .current_dir(root.join("workspace"))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    let out = tokio::time::timeout(PREPARE_TIMEOUT, cmd.output())
        .await
        .context("codex migrate-rollouts --apply did not end in time")?
        .context("running codex migrate-rollouts --apply")?;
    if !out.status.success() {
        bail!(
            "codex migrate-rollouts --apply exited with {}: {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_home_holds_what_its_spec_says_with_distinct_ordered_starts() {
        let home = tempfile::tempdir().unwrap();
        let kind = HomeKind::Threads {
            count: 25,
            turns: 3,
        };
        let made = generate(home.path(), kind, "0.171.0").unwrap();
        let spec = HomeSpec {
            kind,
            layout: Layout::Legacy,
        };
        assert_eq!(made, spec.expected());
        assert_eq!((made.threads, made.records, made.turns), (25, 25 * 22, 75));
        assert_eq!(read_back(home.path()).unwrap(), made);
        let files = rollout_files(&home.path().join("sessions"));
        let times: Vec<SystemTime> = files
            .iter()
            .map(|f| std::fs::metadata(f).unwrap().modified().unwrap())
            .collect();
        let mut distinct = times.clone();
        distinct.dedup();
        assert_eq!(distinct.len(), 25);
        assert!(files[0].ends_with(format!(
            "sessions/2026/01/02/rollout-2026-01-02T00-00-00-{}.jsonl",
            thread_id(0)
        )));
        assert_eq!(spec.name(), format!("g{GENERATOR}-threads-25x3-legacy"));
    }

    #[test]
    fn the_same_spec_gives_the_same_bytes_and_a_large_home_is_one_long_thread() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let kind = HomeKind::Large {
            turns: 40,
            output_bytes: 4096,
        };
        let made = generate(a.path(), kind, "0.131.0").unwrap();
        generate(b.path(), kind, "0.131.0").unwrap();
        let (fa, fb) = (
            rollout_files(&a.path().join("sessions")),
            rollout_files(&b.path().join("sessions")),
        );
        assert_eq!(fa.len(), 1);
        let bytes = std::fs::read(&fa[0]).unwrap();
        assert_eq!(bytes, std::fs::read(&fb[0]).unwrap());
        assert!(bytes.len() > 40 * 4096, "{} bytes", bytes.len());
        let spec = HomeSpec {
            kind,
            layout: Layout::Paginated,
        };
        assert_eq!(made, spec.expected());
        assert_eq!(made.records, 1 + 40 * 9);
        assert_eq!(spec.name(), format!("g{GENERATOR}-large-40x4096-paginated"));
        // A copy is the same home.
        let c = tempfile::tempdir().unwrap();
        copy_home(a.path(), &c.path().join("copy")).unwrap();
        assert_eq!(read_back(&c.path().join("copy")).unwrap(), made);
    }

    #[test]
    fn too_many_threads_are_refused() {
        let home = tempfile::tempdir().unwrap();
        let kind = HomeKind::Threads {
            count: MAX_THREADS + 1,
            turns: 1,
        };
        let err = generate(home.path(), kind, "0.171.0").unwrap_err();
        assert!(err.to_string().contains("at most 86400"), "{err}");
    }
}
