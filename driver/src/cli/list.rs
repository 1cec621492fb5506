//! `codex-parity list`: the scenarios with their catalogue ids, or the catalogue document.

use std::process::ExitCode;

use codex_parity::scenarios::catalogue;

use crate::cli::sources::ScenarioSources;

/// Prints one line per scenario (id, name, summary), or with `markdown` the catalogue
/// document that `docs/scenarios.md` holds; scenario files of `sources` are read and
/// checked first (exit status 2 on a bad one).
pub(crate) fn list(markdown: bool, sources: &ScenarioSources) -> ExitCode {
    let all = match sources.load() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("codex-parity: error: {e:#}");
            return ExitCode::from(2);
        }
    };
    if markdown {
        print!("{}", catalogue::markdown(&all));
        return ExitCode::SUCCESS;
    }
    for s in all {
        println!("{:<5} {:<50} {}", s.id, s.name, s.summary);
    }
    ExitCode::SUCCESS
}
