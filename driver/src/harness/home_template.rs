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
//! The template is made once per binary by an `initialize` in a scratch home whose
//! provider and proxies point at a closed port (nothing leaves the machine), and kept in
//! the cache under the binary's key ([`crate::codex::fingerprint`]); the next runs and the
//! other processes of a nextest run find it there. It appears complete or not at all (made
//! aside, then renamed). `CODEX_PARITY_FRESH_HOMES=1` turns templates off: every world then
//! starts from an empty home, as before (for comparisons).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail, ensure};
use tokio::sync::OnceCell;

use crate::app_server::{AppServer, AppServerCommand};
use crate::codex::binaries::CodexBinary;
use crate::codex::fingerprint;
use crate::harness::codex_env::codex_env;
use crate::lock;

/// Set to `1` to start every world from an empty `CODEX_HOME` (no template).
pub const FRESH_HOMES_ENV: &str = "CODEX_PARITY_FRESH_HOMES";

/// A closed local port: the scratch home's provider and proxies point here, so a request
/// codex might make while the template is made fails at once instead of leaving.
const NOWHERE: &str = "http://127.0.0.1:9";

/// The directory of one binary's template (the files [`kept`] of a first-started home).
#[derive(Debug, Clone)]
pub struct HomeTemplate {
    dir: PathBuf,
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
    /// Copies the template's files into `home` (created if missing). The files are copied,
    /// never linked: codex writes to its databases in place.
    pub fn seed(&self, home: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
        let entries = std::fs::read_dir(&self.dir)
            .with_context(|| format!("listing the home template {}", self.dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", self.dir.display()))?;
            let to = home.join(entry.file_name());
            std::fs::copy(entry.path(), &to).with_context(|| {
                format!("copying {} to {}", entry.path().display(), to.display())
            })?;
        }
        Ok(())
    }

    /// The template's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// One cell per binary path: the first world of a binary makes (or finds) its template,
/// the others wait for it.
type Cells = BTreeMap<PathBuf, Arc<OnceCell<Option<HomeTemplate>>>>;

static TEMPLATES: Mutex<Cells> = Mutex::new(BTreeMap::new());

/// The template of `binary`, found in the cache or made now (once per process and binary);
/// `None` when templates are off ([`FRESH_HOMES_ENV`]) or it could not be made (said once on
/// stderr): worlds then start from an empty home, which is slower but as hermetic.
pub async fn for_binary(binary: &CodexBinary) -> Option<HomeTemplate> {
    if std::env::var_os(FRESH_HOMES_ENV).is_some_and(|v| v == "1") {
        return None;
    }
    let cell = lock(&TEMPLATES)
        .entry(binary.path.clone())
        .or_default()
        .clone();
    cell.get_or_init(|| async {
        match find_or_make(binary).await {
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

/// The cached template of `binary`, made first when missing.
async fn find_or_make(binary: &CodexBinary) -> anyhow::Result<HomeTemplate> {
    let dir = fingerprint::binary_dir(binary)?.join("home-template");
    if !dir.is_dir() {
        make(binary, &dir).await?;
    }
    Ok(HomeTemplate { dir })
}

/// Makes the template of `binary` at `dest`: `initialize` in a scratch home next to it, the
/// [`kept`] files moved into place by one rename (another process may have won the race:
/// its template is as good).
pub async fn make(binary: &CodexBinary, dest: &Path) -> anyhow::Result<()> {
    let parent = dest
        .parent()
        .with_context(|| format!("{} has no parent directory", dest.display()))?;
    std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix(".making-home-template-")
        .tempdir_in(parent)
        .with_context(|| format!("creating a scratch directory in {}", parent.display()))?;
    let root = scratch.path();
    let (home, workspace) = (root.join("codex-home"), root.join("workspace"));
    for d in [
        &home,
        &workspace,
        &root.join("user-home"),
        &root.join("tmp"),
    ] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
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
    let staged = root.join("template");
    std::fs::create_dir(&staged).with_context(|| format!("creating {}", staged.display()))?;
    let mut databases = 0;
    for entry in std::fs::read_dir(&home).with_context(|| format!("listing {}", home.display()))? {
        let entry = entry.with_context(|| format!("listing {}", home.display()))?;
        let name = entry.file_name();
        if entry.file_type().is_ok_and(|t| t.is_file()) && kept(&name.to_string_lossy()) {
            std::fs::copy(entry.path(), staged.join(&name))
                .with_context(|| format!("copying {}", entry.path().display()))?;
            databases += usize::from(name.to_string_lossy().ends_with(".sqlite"));
        }
    }
    if databases == 0 {
        bail!("codex wrote no database on its first start: nothing to gain from a template");
    }
    if let Err(e) = std::fs::rename(&staged, dest)
        && !dest.is_dir()
    {
        return Err(e).with_context(|| format!("moving the template to {}", dest.display()));
    }
    Ok(())
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
    fn seeding_copies_so_the_template_stays_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let template = HomeTemplate {
            dir: dir.path().join("template"),
        };
        std::fs::create_dir(template.dir()).unwrap();
        std::fs::write(template.dir().join("state_5.sqlite"), "schema").unwrap();
        let home = dir.path().join("home");
        template.seed(&home).unwrap();
        std::fs::write(home.join("state_5.sqlite"), "schema and a thread").unwrap();
        assert_eq!(
            std::fs::read_to_string(template.dir().join("state_5.sqlite")).unwrap(),
            "schema"
        );
    }
}
