//! `codex-parity sidecar`: the mock Responses API sidecar, as this executable (the harness
//! starts it so).

use std::ffi::OsString;
use std::process::ExitCode;

/// Runs the sidecar's own command line with `args`.
pub(crate) fn sidecar(args: Vec<OsString>) -> ExitCode {
    let mut argv = vec![OsString::from("codex-parity sidecar")];
    argv.extend(args);
    let code = codex_parity_sidecar::cli::main_with_args(argv);
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
