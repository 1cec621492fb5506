//! `codex-parity merge`: join the results of several runs into one matrix; and how a
//! matrix is shown (terminal, report files, exit status), which `run` shares.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use codex_parity::report::{self, Matrix, terminal};

/// `merge`: reads each directory's results.json and shows the joined matrix.
pub(crate) async fn merge(
    dirs: Vec<PathBuf>,
    report_dir: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let parts = dirs
        .iter()
        .map(|d| report::read_dir(d))
        .collect::<anyhow::Result<Vec<Matrix>>>()?;
    show(&Matrix::merge(parts)?, report_dir.as_deref(), Vec::new())
}

/// Prints the matrix, writes the reports if asked, and gives the exit status.
pub(crate) fn show(
    matrix: &Matrix,
    report_dir: Option<&Path>,
    drift: Vec<report::sections::Section>,
) -> anyhow::Result<ExitCode> {
    print!("\n{}", terminal::render(matrix));
    if let Some(dir) = report_dir {
        let mut sections = report::sections::standard(matrix);
        sections.extend(drift);
        sections.push(report::conformance::section(matrix));
        report::write_dir(dir, matrix, &sections)?;
        eprintln!(
            "codex-parity: wrote {} into {}",
            report::FILES.join(", "),
            dir.display()
        );
    }
    Ok(if matrix.any_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
