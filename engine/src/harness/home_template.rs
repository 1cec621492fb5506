//! A per-binary template of the parts of a `CODEX_HOME` that carry no state between
//! scenarios, copied into each world's home before codex first starts in it.
//!
//! What codex does on its first start in an empty `CODEX_HOME` (read from homes after one
//! `initialize`, and with `strace -f`, on 0.131.0, 0.161.0 and 0.171.0): it creates its
//! SQLite databases and runs their migrations (`state_5.sqlite`: 64 migrations, plus
//! `goals_1`, `memories_1`, `queue_1` and `logs_2` where the version has them), writes the
//! bundled skills under `skills/.system`, a random `installation_id`, marker files of
//! one-time migrations (`.personality_migration`, `.sandbox_migration`), a lock directory
//! `thread-writer-locks/` and its `arg0` links under `tmp/`. A start in such an empty home
//! cost about 0.22 s of CPU against 0.155 s in a home with the databases (0.171.0 on two
//! cores, `initialize` and `thread/start`): the migrations are the difference; writing the
//! skills (1.3 MB) was within noise.
//!
//! The template keeps only the migrated databases ([`kept`]): the database files and their
//! write-ahead logs (SQLite replays a `-wal` without its `-shm` index when it opens the
//! database; the `-shm` is rebuilt). After an `initialize` and nothing else they hold the
//! schema and the rows every first start writes alike (`backfill_state` `complete`, the
//! `Pinned` thread section of a fixed id, an empty consolidation progress): no thread,
//! goal, rollout, setting or log. Left out, for codex to write in each world as on a first
//! start: `config.toml` (each world's own), `installation_id` (each world is a new
//! installation), `logs_*.sqlite` (rows of the run that made the template would be
//! there), the skills, the migration markers, locks and `tmp/`.
//!
//! Only a home codex has not started in and that holds nothing but `config.toml` is
//! seeded ([`unstarted`]): a home into which a scenario planted rollouts before codex's
//! first start is left to codex, whose first start imports them (a template's
//! `backfill_state` would say that was done).
//!
//! The template is made once per binary and process, after a world's codex has answered
//! `initialize` (a binary that does not work gets no extra run; the worlds started before
//! it is ready start from an empty home), by an `initialize` in a scratch home
//! (a temporary directory, removed once read) whose provider and proxies point at a closed
//! port (nothing leaves the machine), and held in memory (about 600 KB). For a binary
//! installed in the cache it is also kept next to the binary, under its key
//! ([`crate::codex::fingerprint::cache_dir`]), so that the next runs and the other
//! processes of a nextest run read it instead; it appears there complete or not at all
//! (written aside, then renamed). `CODEX_PARITY_FRESH_HOMES=1` turns templates off: every
//! world then starts from an empty home, as before (for comparisons).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use tokio::sync::OnceCell;

use crate::app_server::{AppServer, AppServerCommand};
use crate::codex::binaries::CodexBinary;
use crate::codex::fingerprint;
use crate::harness::codex_env::{self, codex_env};
use crate::lock;

/// Set to `1` to start every world from an empty `CODEX_HOME` (no template).
pub const FRESH_HOMES_ENV: &str = "CODEX_PARITY_FRESH_HOMES";

/// A closed local port: the scratch home's provider and proxies point here, so a request
/// codex might make while the template is made fails at once instead of leaving.
pub const NOWHERE: &str = "http://127.0.0.1:9";

/// One binary's template: the files [`kept`] of a first-started home, by name.
#[derive(Debug, Clone, Default)]
pub struct HomeTemplate {
    files: BTreeMap<OsString, Vec<u8>>,
}

/// Whether a file of a first-started home goes into the template: the databases and their
/// write-ahead logs, but not the log database (see the module documentation).
pub fn kept(name: &str) -> bool {
    (name.ends_with(".sqlite") || name.ends_with(".sqlite-wal")) && !name.starts_with("logs_")
}

/// Whether `home` is one codex has not started in: missing, empty, or only `config.toml`.
pub fn unstarted(home: &Path) -> bool {
    match std::fs::read_dir(home) {
        Ok(entries) => entries.flatten().all(|e| e.file_name() == "config.toml"),
        Err(_) => true,
    }
}

impl HomeTemplate {
    /// Writes the template's files into `home` (created if missing): copies, each world
    /// its own (codex writes to its databases in place).
    pub fn seed(&self, home: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
        for (name, bytes) in &self.files {
            let to = home.join(name);
            std::fs::write(&to, bytes).with_context(|| format!("writing {}", to.display()))?;
        }
        Ok(())
    }

    /// The template's files, by name.
    pub fn files(&self) -> &BTreeMap<OsString, Vec<u8>> {
        &self.files
    }

    /// Reads the [`kept`] regular files of `dir`.
    fn read(dir: &Path) -> anyhow::Result<HomeTemplate> {
        let mut files = BTreeMap::new();
        for entry in std::fs::read_dir(dir).with_context(|| format!("listing {}", dir.display()))? {
            let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
            let name = entry.file_name();
            if entry.file_type().is_ok_and(|t| t.is_file()) && kept(&name.to_string_lossy()) {
                let bytes = std::fs::read(entry.path())
                    .with_context(|| format!("reading {}", entry.path().display()))?;
                files.insert(name, bytes);
            }
        }
        Ok(HomeTemplate { files })
    }

    /// Writes the files into a new directory `dir`, made aside and renamed into place (when
    /// another process got there first, its template is as good).
    fn store(&self, dir: &Path) -> anyhow::Result<()> {
        let parent = dir
            .parent()
            .with_context(|| format!("{} has no parent directory", dir.display()))?;
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
        let staged = tempfile::Builder::new()
            .prefix(".making-home-template-")
            .tempdir_in(parent)
            .with_context(|| format!("creating a directory in {}", parent.display()))?;
        self.seed(staged.path())?;
        if let Err(e) = std::fs::rename(staged.path(), dir)
            && !dir.is_dir()
        {
            return Err(e).with_context(|| format!("moving the template to {}", dir.display()));
        }
        Ok(())
    }
}

/// One cell per binary path: the first world of a binary makes (or finds) its template,
/// the others wait for it.
type Cells = BTreeMap<PathBuf, Arc<OnceCell<Option<HomeTemplate>>>>;

static TEMPLATES: Mutex<Cells> = Mutex::new(BTreeMap::new());

/// Whether templates are off ([`FRESH_HOMES_ENV`]).
fn off() -> bool {
    std::env::var_os(FRESH_HOMES_ENV).is_some_and(|v| v == "1")
}

/// The cell of `binary`.
fn cell(binary: &CodexBinary) -> Arc<OnceCell<Option<HomeTemplate>>> {
    lock(&TEMPLATES)
        .entry(binary.path.clone())
        .or_default()
        .clone()
}

/// The template of `binary` if there is one already, without waiting: made earlier in this
/// process, or kept in the cache. `None` when templates are off, not made yet, or could not
/// be made: the world then starts from an empty home, which is slower but as hermetic.
pub fn ready(binary: &CodexBinary) -> Option<HomeTemplate> {
    if off() {
        return None;
    }
    let cell = cell(binary);
    if let Some(known) = cell.get() {
        return known.clone();
    }
    let dir = fingerprint::cache_dir(binary)?.join("home-template");
    let template = HomeTemplate::read(&dir).ok()?;
    // Another world may have set it meanwhile: the same files.
    let _ = cell.set(Some(template.clone()));
    Some(template)
}

/// The template of `binary`, made now if this process has none yet (once per process and
/// binary; concurrent callers wait for the one making it). Called once a world's codex has
/// answered `initialize`: a codex that never does (a broken binary, a test's fake) gets no
/// template run. `None` when templates are off or it could not be made (said once on stderr).
pub async fn ensure(binary: &CodexBinary) -> Option<HomeTemplate> {
    if off() {
        return None;
    }
    if let Some(template) = ready(binary) {
        return Some(template);
    }
    cell(binary)
        .get_or_init(|| async {
            match make_and_keep(binary).await {
                Ok(template) => Some(template),
                Err(e) => {
                    eprintln!(
                        "codex-parity: {}: worlds start from an empty CODEX_HOME (no home template: {e:#})",
                        binary.label()
                    );
                    None
                }
            }
        })
        .await
        .clone()
}

/// Makes the template of `binary`, and keeps it in the cache when the binary is installed
/// there.
async fn make_and_keep(binary: &CodexBinary) -> anyhow::Result<HomeTemplate> {
    let template = make(binary).await?;
    if let Some(dir) = fingerprint::cache_dir(binary).map(|d| d.join("home-template"))
        && let Err(e) = template.store(&dir)
    {
        eprintln!(
            "codex-parity: {}: the home template is not cached: {e:#}",
            binary.label()
        );
    }
    Ok(template)
}

/// Makes the template of `binary`: `initialize` in a scratch home, then the [`kept`] files
/// read from it; the scratch directory is removed.
pub async fn make(binary: &CodexBinary) -> anyhow::Result<HomeTemplate> {
    let scratch = tempfile::Builder::new()
        .prefix("codex-parity-home-template-")
        .tempdir()
        .context("creating a scratch directory for the home template")?;
    let root = scratch.path();
    let (home, workspace) = codex_env::make_dirs(root)?;
    std::fs::write(
        home.join("config.toml"),
        format!(
            "model_provider = \"nowhere\"\n\n[model_providers.nowhere]\nname = \"Nowhere\"\n\
             base_url = \"{NOWHERE}/v1\"\nwire_api = \"responses\"\nenv_key = \"MOCK_API_KEY\"\n"
        ),
    )
    .context("writing the scratch home's config.toml")?;
    let server = AppServer::spawn(&AppServerCommand {
        program: binary.path.clone(),
        args: vec!["--disable".into(), "plugins".into()],
        env: codex_env(root, &home, NOWHERE),
        cwd: workspace,
        label: binary.label(),
    })?;
    server
        .initialize(true)
        .await
        .map_err(|e| anyhow::anyhow!("initialize: {e}"))?;
    let exit = server.shutdown_exit(Duration::from_secs(10)).await;
    ensure!(
        exit.as_ref().is_some_and(|e| e.success()),
        "codex did not exit cleanly after initialize ({})",
        exit.map_or_else(|| "still running".to_string(), |e| e.to_string())
    );
    let template = HomeTemplate::read(&home)?;
    if !template
        .files
        .keys()
        .any(|n| n.to_string_lossy().ends_with(".sqlite"))
    {
        bail!("codex wrote no database on its first start: nothing to gain from a template");
    }
    Ok(template)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_databases_and_their_logs_are_kept_not_the_log_database() {
        for name in ["state_5.sqlite", "state_5.sqlite-wal", "goals_1.sqlite"] {
            assert!(kept(name), "{name}");
        }
        for name in [
            "state_5.sqlite-shm",
            "logs_2.sqlite",
            "logs_2.sqlite-wal",
            "installation_id",
            "config.toml",
            ".sandbox_migration",
        ] {
            assert!(!kept(name), "{name}");
        }
    }

    #[test]
    fn a_home_is_unstarted_until_something_but_its_config_is_in_it() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        assert!(unstarted(&home), "missing");
        std::fs::create_dir(&home).unwrap();
        assert!(unstarted(&home), "empty");
        std::fs::write(home.join("config.toml"), "").unwrap();
        assert!(unstarted(&home), "config only");
        std::fs::create_dir(home.join("sessions")).unwrap();
        assert!(!unstarted(&home), "planted rollouts");
    }

    #[test]
    fn a_stored_template_reads_back_with_only_the_kept_files() {
        let dir = tempfile::tempdir().unwrap();
        let made = dir.path().join("made");
        std::fs::create_dir(&made).unwrap();
        for (name, text) in [
            ("state_5.sqlite", "schema"),
            ("state_5.sqlite-wal", "migrations"),
            ("installation_id", "id"),
            ("logs_2.sqlite", "logs"),
        ] {
            std::fs::write(made.join(name), text).unwrap();
        }
        let template = HomeTemplate::read(&made).unwrap();
        let names: Vec<_> = template.files().keys().cloned().collect();
        assert_eq!(names, ["state_5.sqlite", "state_5.sqlite-wal"]);
        let stored = dir.path().join("cache").join("home-template");
        template.store(&stored).unwrap();
        assert_eq!(
            HomeTemplate::read(&stored).unwrap().files(),
            template.files()
        );
        // A second store (another process won the race) keeps the first.
        template.store(&stored).unwrap();
        let home = dir.path().join("home");
        template.seed(&home).unwrap();
        std::fs::write(home.join("state_5.sqlite"), "schema and a thread").unwrap();
        assert_eq!(
            std::fs::read_to_string(stored.join("state_5.sqlite")).unwrap(),
            "schema"
        );
    }
}
