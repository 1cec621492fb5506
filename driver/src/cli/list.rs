//! `codex-parity list`: the scenarios with their catalogue ids.

use std::process::ExitCode;

use codex_parity::harness::scenario;

/// Prints one line per scenario: id, name, summary.
pub(crate) fn list() -> ExitCode {
    for s in scenario::registry() {
        println!("{:<5} {:<50} {}", s.id, s.name, s.summary);
    }
    ExitCode::SUCCESS
}
