//! The `codex-parity` command: run the parity scenarios against real codex binaries,
//! install codex versions, list scenarios, or serve as the sidecar. The subcommands live in
//! [`cli`], one file each.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    cli::Cli::parse().run()
}
