//! `codex-parity merge`: join the results of several runs into one matrix, shown as `run`
//! shows its own (terminal, report files, exit status).

use std::path::PathBuf;
use std::process::ExitCode;

use codex_parity::report::{self, Matrix};

/// `merge`: reads each directory's results.json and shows the joined matrix.
pub(crate) async fn merge(
    dirs: Vec<PathBuf>,
    report_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let parts = dirs
        .iter()
        .map(|d| report::read_dir(d))
        .collect::<anyhow::Result<Vec<Matrix>>>()?;
    let verdict = report::show(&Matrix::merge(parts)?, report_dir.as_deref(), Vec::new())?;
    Ok(ExitCode::from(verdict.code()))
}
