//! Where a command's scenarios come from: the built-in registry, scenario files
//! (`--scenarios DIR`, `--only-files`, see docs/scenario-files.md) and the integrator's own
//! baselines (`--baselines FILE`, and a `baselines.json` beside the files). Files are read
//! and checked before any codex starts; a bad file stops the command with exit status 2.

use std::path::PathBuf;

use anyhow::Context;
use codex_parity::harness::runner::Target;
use codex_parity::harness::scenario::Scenario;
use codex_parity::scenario_file;
use codex_parity::scenarios;

/// The arguments that choose the scenarios and extra baselines.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct ScenarioSources {
    /// A directory of scenario files (*.toml, docs/scenario-files.md) run beside the
    /// built-in scenarios (repeatable); a baselines.json in it is added to the baselines.
    #[arg(long = "scenarios", value_name = "DIR")]
    pub(crate) dirs: Vec<PathBuf>,
    /// Run the scenario files of --scenarios only, no built-in scenario.
    #[arg(long, requires = "dirs")]
    pub(crate) only_files: bool,
    /// A baselines file of your own (repeatable; the format of
    /// fixtures/expected/baselines.json), added to the built-in baselines.
    #[arg(long = "baselines", value_name = "FILE")]
    pub(crate) baselines: Vec<PathBuf>,
}

/// The scenarios of a command and the extra baselines to judge them with.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    /// Built-ins (unless `--only-files`), then the files' scenarios.
    pub(crate) scenarios: Vec<Scenario>,
    /// `--baselines` files and the scenario directories' `baselines.json`.
    pub(crate) baselines: Vec<PathBuf>,
}

impl ScenarioSources {
    /// Reads the scenario files (every problem of every file at once) and the built-ins.
    pub(crate) fn load(&self) -> anyhow::Result<Sources> {
        let builtins = scenarios::registry();
        let names: Vec<&str> = builtins.iter().map(|s| s.name).collect();
        let loaded = scenario_file::load_dirs(&self.dirs, &names)?;
        if !self.dirs.is_empty() {
            eprintln!(
                "codex-parity: {} scenario file(s) read from {}",
                loaded.scenarios.len(),
                self.dirs
                    .iter()
                    .map(|d| d.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        let mut scenarios = if self.only_files {
            Vec::new()
        } else {
            builtins
        };
        scenarios.extend(loaded.scenarios);
        let mut baselines = self.baselines.clone();
        baselines.extend(loaded.baselines);
        Ok(Sources {
            scenarios,
            baselines,
        })
    }
}

/// Adds the extra baselines to every target's baseline (the entries for its version).
pub(crate) fn add_baselines(targets: &mut [Target], files: &[PathBuf]) -> anyhow::Result<()> {
    for target in targets {
        let baseline = std::sync::Arc::make_mut(&mut target.baseline);
        for file in files {
            baseline
                .add(file)
                .with_context(|| format!("reading the baselines {}", file.display()))?;
        }
    }
    Ok(())
}
