//! `codex-parity list`: the scenarios with their catalogue ids, or the catalogue document.

use std::process::ExitCode;

use codex_parity::scenarios::{self, catalogue};

/// Prints one line per scenario (id, name, summary), or with `markdown` the catalogue
/// document that `docs/scenarios.md` holds.
pub(crate) fn list(markdown: bool) -> ExitCode {
    let all = scenarios::registry();
    if markdown {
        print!("{}", catalogue::markdown(&all));
        return ExitCode::SUCCESS;
    }
    for s in all {
        println!("{:<5} {:<50} {}", s.id, s.name, s.summary);
    }
    ExitCode::SUCCESS
}
