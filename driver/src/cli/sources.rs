//! Where a command's scenarios come from: the built-in registry, scenario files
//! (`--scenarios DIR`, `--only-files`, see docs/scenario-files.md) and the integrator's own
//! baselines (`--baselines FILE`, and a `baselines.json` beside the files), as the
//! [`Options`] of the plan. Files are read and checked (by [`Plan::builder`]) before any
//! codex starts; a bad file stops the command with exit status 2.

use std::path::PathBuf;

use codex_parity::harness::scenario::Scenario;
use codex_parity::plan::{Options, Plan};
use codex_parity::scenario_file;

/// The arguments that choose the scenarios and extra baselines.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct ScenarioSources {
    /// A directory of scenario files (*.toml, docs/scenario-files.md), or one such file,
    /// run beside the built-in scenarios (repeatable); a directory's baselines.json is added
    /// to the baselines (for a file alone, give it with --baselines).
    #[arg(long = "scenarios", value_name = "DIR|FILE")]
    pub(crate) dirs: Vec<PathBuf>,
    /// Run the scenario files of --scenarios only, no built-in scenario.
    #[arg(long, requires = "dirs")]
    pub(crate) only_files: bool,
    /// A baselines file of your own (repeatable; the format of
    /// fixtures/expected/baselines.json), added to the built-in baselines.
    #[arg(long = "baselines", value_name = "FILE")]
    pub(crate) baselines: Vec<PathBuf>,
}

impl ScenarioSources {
    /// These arguments set on `options`.
    pub(crate) fn apply(&self, options: Options) -> Options {
        Options {
            scenario_dirs: self.dirs.clone(),
            only_files: self.only_files,
            baselines: self.baselines.clone(),
            ..options
        }
    }

    /// Says on stderr which `baselines.json` beside a file named alone is not read (it
    /// holds the entries of the file's neighbours too: `--baselines` adds it).
    pub(crate) fn note_unread_baselines(&self) {
        for file in self.dirs.iter().filter(|d| d.is_file()) {
            let beside = file
                .parent()
                .map(|p| p.join(scenario_file::BASELINES))
                .filter(|b| b.is_file() && !self.baselines.contains(b));
            if let Some(b) = beside {
                eprintln!(
                    "codex-parity: {} is run alone: {} beside it is not read (add it with \
                     --baselines {})",
                    file.display(),
                    b.display(),
                    b.display()
                );
            }
        }
    }

    /// The scenarios these arguments select (every problem of every file at once).
    pub(crate) fn load(&self) -> anyhow::Result<Vec<Scenario>> {
        let options = Options {
            with_opt_in: true,
            ..self.apply(Options::default())
        };
        let builder = Plan::builder(options)?;
        Ok(builder.scenarios().to_vec())
    }
}
