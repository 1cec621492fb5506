//! The expectations a run judges by: the baselines (`expected/baselines.json`), the golden
//! requests (`golden/VERSION/SCENARIO.json`) and the golden transcripts
//! (`golden-transcripts/VERSION/SCENARIO.json`), laid out as the repository's `fixtures/`.
//!
//! They are compiled into the binary (`engine/build.rs`), so a `codex-parity` installed with
//! `cargo install`, copied out of a CI cache or run after its checkout moved judges exactly
//! as one run inside the checkout. A directory given with `--fixtures DIR` (or
//! `CODEX_PARITY_FIXTURES=DIR`) replaces them all: for development, and for `--bless`,
//! which writes there. Without one, `--bless` writes into the checkout the binary was built
//! from, and refuses when that is gone or read-only ([`Expectations::bless_dir`]).
//!
//! A directory that is named but missing is an error naming it, never an empty set.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{Context, bail};

use crate::codex::versions::sort_key;

mod compiled {
    include!(concat!(env!("OUT_DIR"), "/expectations.rs"));
}

/// The environment variable naming an expectations directory (the layout of `fixtures/`).
pub const DIR_ENV: &str = "CODEX_PARITY_FIXTURES";

/// The directory given on the command line (`--fixtures`), if any: it wins over
/// [`DIR_ENV`].
static CHOSEN: OnceLock<PathBuf> = OnceLock::new();

/// Where the expectations come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expectations {
    /// Compiled into the binary from the checkout it was built in.
    Compiled,
    /// A directory in the layout of `fixtures/` (`--fixtures`, `CODEX_PARITY_FIXTURES`).
    Dir(PathBuf),
}

/// Makes `dir` the expectations of this process (the CLI's `--fixtures`); it must be a
/// directory. Set once: a second call is an error.
pub fn use_dir(dir: &Path) -> anyhow::Result<()> {
    check_dir(dir, "--fixtures")?;
    CHOSEN
        .set(dir.to_path_buf())
        .map_err(|_| anyhow::anyhow!("the expectations directory is already chosen"))
}

fn check_dir(dir: &Path, named_by: &str) -> anyhow::Result<()> {
    if !dir.is_dir() {
        bail!(
            "{named_by} {}: no such directory (it holds the expectations in the layout of the \
             repository's fixtures/: expected/baselines.json, golden/, golden-transcripts/)",
            dir.display()
        );
    }
    Ok(())
}

impl Expectations {
    /// This process's expectations: `--fixtures`, else `$CODEX_PARITY_FIXTURES` (which must
    /// be a directory), else those compiled in.
    pub fn current() -> anyhow::Result<Expectations> {
        if let Some(dir) = CHOSEN.get() {
            return Ok(Expectations::Dir(dir.clone()));
        }
        match std::env::var_os(DIR_ENV) {
            Some(dir) if !dir.is_empty() => {
                let dir = PathBuf::from(dir);
                check_dir(&dir, DIR_ENV)?;
                Ok(Expectations::Dir(dir))
            }
            _ => Ok(Expectations::Compiled),
        }
    }

    /// Where they come from, for messages.
    pub fn describe(&self) -> String {
        match self {
            Expectations::Compiled => {
                format!(
                    "the expectations compiled in (from {})",
                    compiled::BUILT_FROM
                )
            }
            Expectations::Dir(dir) => dir.display().to_string(),
        }
    }

    /// How a file of theirs is named in messages: its path in the directory, or
    /// `compiled-in fixtures/RELATIVE`.
    pub fn name_of(&self, relative: &str) -> String {
        match self {
            Expectations::Compiled => format!("compiled-in fixtures/{relative}"),
            Expectations::Dir(dir) => dir.join(relative).display().to_string(),
        }
    }

    /// The text of the file at `relative` (`golden/0.171.0/request_shape_plain.json`);
    /// `None` when they have no such file. An unreadable file is an error naming it.
    pub fn read(&self, relative: &str) -> anyhow::Result<Option<String>> {
        match self {
            Expectations::Compiled => Ok(compiled::FILES
                .iter()
                .find(|(path, _)| *path == relative)
                .map(|(_, text)| (*text).to_string())),
            Expectations::Dir(dir) => {
                let path = dir.join(relative);
                match std::fs::read_to_string(&path) {
                    Ok(text) => Ok(Some(text)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(e).with_context(|| format!("reading {}", path.display())),
                }
            }
        }
    }

    /// The names of the sub-directories of `relative` (e.g. the versions under `golden`),
    /// sorted; none when it does not exist.
    pub fn subdirs(&self, relative: &str) -> anyhow::Result<Vec<String>> {
        let mut names = match self {
            Expectations::Compiled => {
                let prefix = format!("{relative}/");
                let mut names: Vec<String> = compiled::FILES
                    .iter()
                    .filter_map(|(path, _)| path.strip_prefix(&prefix))
                    .filter_map(|rest| rest.split_once('/').map(|(dir, _)| dir.to_string()))
                    .collect();
                names.dedup();
                names
            }
            Expectations::Dir(dir) => {
                let path = dir.join(relative);
                let entries = match std::fs::read_dir(&path) {
                    Ok(entries) => entries,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                    Err(e) => {
                        return Err(e).with_context(|| format!("listing {}", path.display()));
                    }
                };
                entries
                    .flatten()
                    .filter(|e| e.path().is_dir())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            }
        };
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The names of the files directly in `relative` (e.g. the golden transcripts of one
    /// release), sorted; none when it does not exist.
    pub fn files(&self, relative: &str) -> anyhow::Result<Vec<String>> {
        let mut names: Vec<String> = match self {
            Expectations::Compiled => {
                let prefix = format!("{relative}/");
                compiled::FILES
                    .iter()
                    .filter_map(|(path, _)| path.strip_prefix(&prefix))
                    .filter(|rest| !rest.contains('/'))
                    .map(str::to_string)
                    .collect()
            }
            Expectations::Dir(dir) => {
                let path = dir.join(relative);
                match std::fs::read_dir(&path) {
                    Ok(entries) => entries
                        .flatten()
                        .filter(|e| e.path().is_file())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => {
                        return Err(e).with_context(|| format!("listing {}", path.display()));
                    }
                }
            }
        };
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// The golden file of `scenario` under `kind` (`golden`, `golden-transcripts`) that
    /// judges `version`: the one of the nearest version at or below it (a golden file holds
    /// from its release until the next one that has its own), as (that version, its
    /// relative path); `None` when no release at or below `version` has one.
    pub fn covering(
        &self,
        kind: &str,
        scenario: &str,
        version: &str,
    ) -> anyhow::Result<Option<(String, String)>> {
        let key = sort_key(version);
        let mut best: Option<String> = None;
        for candidate in self.subdirs(kind)? {
            let relative = format!("{kind}/{candidate}/{scenario}.json");
            let fits = sort_key(&candidate) <= key
                && best
                    .as_ref()
                    .is_none_or(|b| sort_key(b) < sort_key(&candidate));
            if fits && self.has(&relative) {
                best = Some(candidate);
            }
        }
        Ok(best.map(|v| {
            let relative = format!("{kind}/{v}/{scenario}.json");
            (v, relative)
        }))
    }

    /// The golden file [`Expectations::covering`] picks, read: (the release it was recorded
    /// on, its name for messages, its text); `None` when no release at or below `version`
    /// has one.
    pub fn read_covering(
        &self,
        kind: &str,
        scenario: &str,
        version: &str,
    ) -> anyhow::Result<Option<(String, String, String)>> {
        let Some((from, relative)) = self.covering(kind, scenario, version)? else {
            return Ok(None);
        };
        let name = self.name_of(&relative);
        let text = self
            .read(&relative)?
            .with_context(|| format!("{name} vanished while it was read"))?;
        Ok(Some((from, name, text)))
    }

    /// Whether they have the file at `relative` (without reading it).
    fn has(&self, relative: &str) -> bool {
        match self {
            Expectations::Compiled => compiled::FILES.iter().any(|(path, _)| *path == relative),
            Expectations::Dir(dir) => dir.join(relative).is_file(),
        }
    }

    /// The directory `--bless` writes into (in the layout of `fixtures/`): the chosen
    /// directory, else the `fixtures/` of the checkout this binary was built from, when it
    /// is still there and writable. Refused otherwise, saying what to do: a bless is never
    /// written to a temporary place.
    pub fn bless_dir(&self) -> anyhow::Result<PathBuf> {
        let dir = match self {
            Expectations::Dir(dir) => dir.clone(),
            Expectations::Compiled => PathBuf::from(compiled::BUILT_FROM),
        };
        let probe = dir.join(".codex-parity-bless-probe");
        let writable = dir.is_dir()
            && std::fs::write(&probe, b"")
                .and_then(|()| std::fs::remove_file(&probe))
                .is_ok();
        if !writable {
            bail!(
                "--bless rewrites golden files in a checkout, and {} is {}: run it from a clone \
                 of codex-parity (`cargo run -p codex-parity -- run --bless …`) or name the \
                 clone's fixtures with --fixtures DIR (or {DIR_ENV}=DIR)",
                dir.display(),
                if dir.is_dir() {
                    "not writable"
                } else {
                    "not there (this binary was built elsewhere)"
                }
            );
        }
        Ok(dir)
    }
}

/// The relative paths of every compiled-in expectation file, sorted (what the tests check:
/// every golden file belongs to a scenario of the catalogue).
pub fn compiled_files() -> impl Iterator<Item = &'static str> {
    compiled::FILES.iter().map(|(path, _)| *path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_in_files_are_the_fixtures_of_the_checkout() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let compiled: Vec<&str> = compiled_files().collect();
        assert!(
            compiled.contains(&"expected/baselines.json"),
            "{compiled:?}"
        );
        assert!(compiled.iter().any(|p| p.starts_with("golden/")));
        assert!(
            compiled
                .iter()
                .any(|p| p.starts_with("golden-transcripts/"))
        );
        for path in &compiled {
            let on_disk = std::fs::read_to_string(root.join(path)).unwrap();
            let text = Expectations::Compiled.read(path).unwrap().unwrap();
            assert_eq!(text, on_disk, "{path}");
        }
        assert_eq!(
            Expectations::Compiled.read("golden/none.json").unwrap(),
            None
        );
    }

    #[test]
    fn subdirs_are_the_same_compiled_in_and_from_the_directory() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
        let dir = Expectations::Dir(root);
        for kind in ["golden", "golden-transcripts", "expected", "nothing"] {
            assert_eq!(
                Expectations::Compiled.subdirs(kind).unwrap(),
                dir.subdirs(kind).unwrap(),
                "{kind}"
            );
        }
        assert!(
            dir.subdirs("golden")
                .unwrap()
                .contains(&"0.171.0".to_string())
        );
    }

    #[test]
    fn a_golden_file_judges_from_its_release_to_the_next_one_that_has_its_own() {
        let dir = tempfile::tempdir().unwrap();
        for (version, scenario) in [("0.131.0", "s"), ("0.150.1", "s"), ("0.161.0", "t")] {
            let d = dir.path().join("golden").join(version);
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("{scenario}.json")), "{}").unwrap();
        }
        let e = Expectations::Dir(dir.path().to_path_buf());
        let of = |scenario: &str, version: &str| {
            e.covering("golden", scenario, version)
                .unwrap()
                .map(|(v, _)| v)
        };
        assert_eq!(of("s", "0.130.0"), None);
        assert_eq!(of("s", "0.131.0").as_deref(), Some("0.131.0"));
        assert_eq!(of("s", "0.150.0").as_deref(), Some("0.131.0"));
        assert_eq!(of("s", "0.150.1").as_deref(), Some("0.150.1"));
        // 0.161.0 has a golden directory, but not for `s`: 0.150.1's still judges.
        assert_eq!(of("s", "0.171.0").as_deref(), Some("0.150.1"));
        assert_eq!(of("s", "0.151.0-alpha.1").as_deref(), Some("0.150.1"));
        assert_eq!(of("t", "0.160.1"), None);
        assert_eq!(
            e.covering("golden", "t", "0.999.0").unwrap(),
            Some(("0.161.0".into(), "golden/0.161.0/t.json".into()))
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_naming_it_and_bless_is_refused_without_a_checkout() {
        let e = check_dir(Path::new("/no/such/fixtures"), "--fixtures").unwrap_err();
        assert!(format!("{e:#}").contains("/no/such/fixtures"), "{e:#}");
        let gone = Expectations::Dir(PathBuf::from("/no/such/fixtures"));
        let e = gone.bless_dir().unwrap_err();
        assert!(format!("{e:#}").contains("--fixtures DIR"), "{e:#}");
        let dir = tempfile::tempdir().unwrap();
        let here = Expectations::Dir(dir.path().to_path_buf());
        assert_eq!(here.bless_dir().unwrap(), dir.path());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
