//! The run as a library: every front-end (`codex-parity run`, `bisect`, `bench --suite`,
//! the libtest harness of `cargo test`, a [`session::Session`]) turns what its user set into
//! one [`Options`], builds a [`Plan`] from it, and runs that plan ([`run`]); what happens as
//! it runs goes to [`events::Sink`]s as typed [`events::Event`]s (the terminal, report files,
//! transcripts and golden checks are sinks, in `crate::report::sinks`).
//!
//! A plan is built in two steps so that nothing slow happens before the input is known to
//! be good: [`Plan::builder`] reads and checks the scenario files and the `--bless`
//! destination (no codex runs), [`PlanBuilder::build`] then reads each binary's schema and
//! judges it by the baselines of its version, the extra baselines and `strict`.

pub mod events;
pub mod run;
pub mod session;

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::codex::binaries::CodexBinary;
use crate::codex::binaries::OneBinary;
use crate::codex::versions;
use crate::harness::baseline::{self, Baselines};
use crate::harness::expectations::Expectations;
use crate::harness::perf::{self, PerfSettings};
use crate::harness::runner::{self, Ran, Target};
use crate::harness::scenario::Scenario;
use crate::harness::shard::Shard;
use crate::harness::sidecar::SidecarLauncher;
use crate::harness::world::Settings;
use crate::scenario_file;
use crate::scenarios;
use crate::scenarios::catalogue;

/// The environment variable that keeps each world's directories in the libtest harness
/// (`--keep` of `run`).
pub const KEEP_ENV: &str = "CODEX_PARITY_KEEP";

/// What a user sets, the same in every front-end: which scenarios, judged how, run how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Directories of scenario files run beside the built-in scenarios (`--scenarios`,
    /// `CODEX_PARITY_SCENARIOS`); a `baselines.json` in one is added to the baselines.
    pub scenario_dirs: Vec<PathBuf>,
    /// Run the scenario files only, no built-in scenario (`--only-files`).
    pub only_files: bool,
    /// Only the scenarios [`Scenario::matches`] selects (`--filter`).
    pub filter: Option<String>,
    /// Baselines files of the user's own, added to the built-in ones (`--baselines`).
    pub baselines: Vec<PathBuf>,
    /// Any drift fails, even drift the baselines list (`--strict`, `CODEX_PARITY_STRICT`).
    pub strict: bool,
    /// Keep each world's directories and say where (`--keep`, `CODEX_PARITY_KEEP`).
    pub keep: bool,
    /// Rewrite the golden files from this run instead of checking them (`--bless`).
    pub bless: bool,
    /// The share of the (scenario, binary) cells to run (`--shard K/N`).
    pub shard: Shard,
    /// Scenarios run at once; `None` for [`runner::default_jobs`].
    pub jobs: Option<usize>,
    /// How long one JSON-RPC call to codex may take; `None` for
    /// [`crate::app_server::DEFAULT_CALL_TIMEOUT`].
    pub call_timeout: Option<Duration>,
    /// What the performance scenarios (group P) are told.
    pub perf: PerfOptions,
    /// Keep the groups a run leaves out unless a filter selects them
    /// ([`catalogue::OPT_IN`]) without a filter too (`list` shows every scenario).
    pub with_opt_in: bool,
}

/// What a user sets for the performance scenarios (`--perf-reference`, `--perf-reps`,
/// `--perf-scale`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PerfOptions {
    /// The reference binary: a version (installed from npm) or a path; `None` for the
    /// pinned version.
    pub reference: Option<String>,
    /// Repetitions of each side; `None` for [`perf::DEFAULT_REPETITIONS`].
    pub repetitions: Option<usize>,
    /// The size of the homes in thousandths of the catalogue's; `None` for 1000 (1,000 and
    /// 10,000 threads, a rollout of 20,000 records).
    pub scale_permille: Option<u32>,
}

impl PerfOptions {
    /// The binary the measurements are held against: `reference` resolved (a version
    /// installed on first use), else the pinned version.
    pub async fn reference_binary(&self) -> anyhow::Result<CodexBinary> {
        let one = match &self.reference {
            None => OneBinary::default(),
            Some(r) if versions::is_version(r) || r == "latest" => OneBinary::version(r),
            Some(path) => OneBinary {
                path: Some(PathBuf::from(path)),
                version: None,
            },
        };
        one.resolve().await.with_context(|| {
            format!(
                "resolving the reference binary of the performance scenarios ({})",
                self.reference.as_deref().unwrap_or("the pinned version")
            )
        })
    }

    /// The settings of a run whose reference is `reference`.
    pub fn settings(&self, reference: Option<CodexBinary>) -> PerfSettings {
        PerfSettings {
            reference,
            repetitions: self.repetitions.unwrap_or(perf::DEFAULT_REPETITIONS).max(1),
            scale: f64::from(self.scale_permille.unwrap_or(1000)) / 1000.0,
        }
    }
}

impl Default for Options {
    fn default() -> Options {
        Options {
            scenario_dirs: Vec::new(),
            only_files: false,
            filter: None,
            baselines: Vec::new(),
            strict: false,
            keep: false,
            bless: false,
            shard: Shard::ALL,
            jobs: None,
            call_timeout: None,
            perf: PerfOptions::default(),
            with_opt_in: false,
        }
    }
}

impl Options {
    /// The options the environment sets (`CODEX_PARITY_SCENARIOS`, `CODEX_PARITY_STRICT`,
    /// `CODEX_PARITY_KEEP`), read through `var`: what the libtest harness runs with.
    pub fn from_vars(var: impl Fn(&str) -> Option<OsString>) -> Options {
        let on = |name: &str| var(name).is_some_and(|v| !v.is_empty() && v != "0");
        let scenario_dirs = var(scenario_file::ENV)
            .map(|v| {
                std::env::split_paths(&v)
                    .filter(|p| !p.as_os_str().is_empty())
                    .collect()
            })
            .unwrap_or_default();
        Options {
            scenario_dirs,
            strict: on(baseline::STRICT_ENV),
            keep: var(KEEP_ENV).is_some(),
            ..Options::default()
        }
    }

    /// [`Options::from_vars`] of this process's environment.
    pub fn from_env() -> Options {
        Options::from_vars(|name| std::env::var_os(name))
    }

    /// The scenarios run at once.
    pub fn jobs(&self) -> usize {
        self.jobs.unwrap_or_else(runner::default_jobs).max(1)
    }
}

/// The first step of a plan: its scenarios read and checked, before any codex runs.
#[derive(Debug, Clone)]
pub struct PlanBuilder {
    options: Options,
    scenarios: Vec<Scenario>,
    baselines: Vec<PathBuf>,
}

impl PlanBuilder {
    /// The scenarios the plan will run.
    pub fn scenarios(&self) -> &[Scenario] {
        &self.scenarios
    }

    /// The plan on `binaries`: each one's schema read (about a second each, cached), its
    /// version's baselines with the extra ones; worlds start their sidecar with `sidecar`.
    pub async fn build(
        self,
        binaries: Vec<CodexBinary>,
        sidecar: SidecarLauncher,
    ) -> anyhow::Result<Plan> {
        let targets = runner::prepare(binaries, &Baselines::builtin()?).await?;
        // The performance scenarios hold every measurement against one reference binary.
        let reference = if self.scenarios.iter().any(catalogue::opt_in) {
            Some(self.options.perf.reference_binary().await?)
        } else {
            None
        };
        let settings = Settings {
            bless: self.options.bless,
            perf: self.options.perf.settings(reference),
            call_timeout: self
                .options
                .call_timeout
                .unwrap_or(crate::app_server::DEFAULT_CALL_TIMEOUT),
            ..Settings::new(sidecar, self.options.keep)
        };
        let mut plan = Plan {
            targets,
            scenarios: self.scenarios,
            settings: Arc::new(settings),
            baselines: self.baselines,
            options: self.options,
        };
        let files = plan.baselines.clone();
        plan.judge(&files)?;
        Ok(plan)
    }
}

/// Everything a run needs, built once: the binaries with their capabilities and
/// baselines, the scenarios, the settings worlds are made with, the options.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The binaries, each with what it supports and its version's baseline.
    pub targets: Vec<Target>,
    /// The scenarios, built-in then from files.
    pub scenarios: Vec<Scenario>,
    /// How worlds are made.
    pub settings: Arc<Settings>,
    /// The extra baselines files: `--baselines` and the scenario directories' own.
    pub baselines: Vec<PathBuf>,
    /// What the plan was built from.
    pub options: Options,
}

impl Plan {
    /// The first step of a plan: reads the built-in scenarios and the scenario files of
    /// `options` (every problem of every file at once), keeps those `filter` selects, and
    /// refuses a `--bless` with nowhere to write. No codex runs.
    pub fn builder(options: Options) -> anyhow::Result<PlanBuilder> {
        let builtins = scenarios::registry();
        let names: Vec<&str> = builtins.iter().map(|s| s.name).collect();
        let loaded = scenario_file::load_dirs(&options.scenario_dirs, &names)?;
        // Every baselines file is read now, before any codex runs, and each entry must name
        // a scenario: a built-in one or one of the files, whatever the filter.
        let known: Vec<&str> = names
            .iter()
            .copied()
            .chain(loaded.scenarios.iter().map(|s| s.name))
            .collect();
        let mut baselines = options.baselines.clone();
        baselines.extend(loaded.baselines.iter().cloned());
        Baselines::builtin()?.check_scenarios(&known)?;
        for file in &baselines {
            Baselines::read(file)
                .with_context(|| format!("reading the baselines {}", file.display()))?
                .check_scenarios(&known)?;
        }
        let mut scenarios = if options.only_files {
            Vec::new()
        } else {
            builtins
        };
        scenarios.extend(loaded.scenarios);
        if let Some(f) = &options.filter {
            anyhow::ensure!(
                f.split(',').any(|part| !part.trim().is_empty()),
                "--filter {f:?} selects nothing by name, id or group (an unset shell variable?): \
                 give one, e.g. --filter A or --filter streaming (`codex-parity list` shows \
                 them), or leave --filter out to run every scenario"
            );
            scenarios.retain(|s| s.matches(f));
            anyhow::ensure!(
                !scenarios.is_empty(),
                "no scenario matches --filter {f}; `codex-parity list` shows them"
            );
        } else if !options.with_opt_in {
            // The groups that take minutes run only when a filter selects them.
            scenarios.retain(|s| !catalogue::opt_in(s));
        }
        if options.bless {
            Expectations::current()?.bless_dir()?;
        }
        Ok(PlanBuilder {
            options,
            scenarios,
            baselines,
        })
    }

    /// Adds the baselines at `files` to every target's baseline (its version's built-in
    /// entries, read once by [`runner::prepare`]) and sets `strict`.
    fn judge(&mut self, files: &[PathBuf]) -> anyhow::Result<()> {
        for target in &mut self.targets {
            let baseline = Arc::make_mut(&mut target.baseline);
            for file in files {
                baseline
                    .add(file)
                    .with_context(|| format!("reading the baselines {}", file.display()))?;
            }
            baseline.strict = self.options.strict;
        }
        Ok(())
    }

    /// The same plan judged with more baselines (a file, or a directory holding
    /// `baselines.json`).
    pub fn with_baselines(mut self, location: PathBuf) -> anyhow::Result<Plan> {
        self.judge(std::slice::from_ref(&location))?;
        self.options.baselines.push(location.clone());
        self.baselines.push(location);
        Ok(self)
    }

    /// The same plan on the targets `keep` selects (their capabilities already read).
    pub fn only(&self, keep: impl Fn(&Target) -> bool) -> Plan {
        Plan {
            targets: self.targets.iter().filter(|t| keep(t)).cloned().collect(),
            ..self.clone()
        }
    }

    /// The binaries.
    pub fn binaries(&self) -> Vec<CodexBinary> {
        self.targets.iter().map(|t| t.binary.clone()).collect()
    }

    /// The (target, scenario) cells of the plan's shard, in (target, scenario) order.
    pub fn cells(&self) -> Vec<(&Target, &Scenario)> {
        runner::planned(&self.targets, &self.scenarios, self.options.shard)
    }

    /// Runs one scenario (of the plan or not) on one of its targets, as a run would.
    pub async fn run_one(&self, scenario: &Scenario, target: &Target) -> Ran {
        runner::run_scenario(scenario, target, self.settings.clone()).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builder_filters_loads_files_and_refuses_what_selects_nothing() {
        let all = Plan::builder(Options::default()).unwrap();
        let opt_in = scenarios::registry()
            .iter()
            .filter(|s| catalogue::opt_in(s))
            .count();
        assert!(opt_in > 0);
        assert_eq!(all.scenarios().len(), scenarios::registry().len() - opt_in);
        assert!(all.scenarios().iter().all(|s| !s.id.starts_with('P')));
        // A filter selects an opt-in group.
        let p = Plan::builder(Options {
            filter: Some("P".into()),
            ..Options::default()
        })
        .unwrap();
        assert_eq!(p.scenarios().len(), opt_in);
        let group = Plan::builder(Options {
            filter: Some("A".into()),
            ..Options::default()
        })
        .unwrap();
        assert!(!group.scenarios().is_empty());
        assert!(group.scenarios().iter().all(|s| s.id.starts_with('A')));
        let none = Plan::builder(Options {
            filter: Some("no-such-scenario".into()),
            ..Options::default()
        })
        .unwrap_err();
        assert!(format!("{none:#}").contains("no scenario matches --filter no-such-scenario"));
        // Files only, from a directory with one file and its baselines beside it.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("mine.toml"),
            "name = \"mine\"\nid = \"MY-1\"\nsummary = \"s\"\n[[step]]\ndo = \"turn\"\ninput = \"hi\"\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("baselines.json"), "{\"expected\": []}").unwrap();
        let extra = dir.path().join("extra.json");
        std::fs::write(&extra, "{\"expected\": []}").unwrap();
        let files = Plan::builder(Options {
            scenario_dirs: vec![dir.path().to_path_buf()],
            only_files: true,
            baselines: vec![extra.clone()],
            ..Options::default()
        })
        .unwrap();
        let names: Vec<&str> = files.scenarios().iter().map(|s| s.name).collect();
        assert_eq!(names, ["mine"]);
        assert_eq!(
            files.baselines,
            [extra.clone(), dir.path().join("baselines.json")]
        );
        // An empty filter (an unset shell variable) selects nothing, said before anything.
        for empty in ["", " , "] {
            let err = Plan::builder(Options {
                filter: Some(empty.into()),
                ..Options::default()
            })
            .unwrap_err();
            assert!(
                format!("{err:#}").contains("an unset shell variable?"),
                "{err:#}"
            );
        }
        // A baselines entry naming no scenario is refused before anything runs.
        let entry = |scenario: &str| {
            format!(
                "{{\"expected\": [{{\"scenario\": \"{scenario}\", \"key\": \"k\", \"observed\": 1, \
                 \"versions\": [\">=0.1.0\"], \"reason\": \"r\", \"contradicts\": false}}]}}"
            )
        };
        std::fs::write(&extra, entry("mnie")).unwrap();
        let with = |extra: &PathBuf| Options {
            scenario_dirs: vec![dir.path().to_path_buf()],
            baselines: vec![extra.clone()],
            ..Options::default()
        };
        let err = format!("{:#}", Plan::builder(with(&extra)).unwrap_err());
        assert!(
            err.contains("entry #0 (mnie k) names no scenario (did you mean mine?)"),
            "{err}"
        );
        std::fs::write(&extra, entry("streaming_deltas")).unwrap();
        Plan::builder(with(&extra)).unwrap();
        std::fs::write(&extra, entry("mine")).unwrap();
        Plan::builder(with(&extra)).unwrap();
    }

    #[test]
    fn options_from_the_environment_read_what_the_libtest_harness_is_told() {
        let vars = |name: &str| -> Option<OsString> {
            match name {
                "CODEX_PARITY_SCENARIOS" => Some("a:b".into()),
                "CODEX_PARITY_STRICT" => Some("0".into()),
                _ => None,
            }
        };
        let o = Options::from_vars(vars);
        assert_eq!(o.scenario_dirs, [PathBuf::from("a"), PathBuf::from("b")]);
        assert!(!o.strict && !o.keep);
        assert_eq!(Options::default().shard, Shard::ALL);
        assert!(Options::default().jobs() >= 1);
        assert_eq!(
            Options {
                jobs: Some(0),
                ..Options::default()
            }
            .jobs(),
            1
        );
    }
}
