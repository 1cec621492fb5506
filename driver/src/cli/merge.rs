//! `codex-parity merge`: join the results of several runs into one matrix, shown as `run`
//! shows its own (terminal, report files, exit status).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use codex_parity::report::{self, Matrix, destination};

/// `merge`: reads each directory's results.json and shows the joined matrix; the report
/// goes to a directory of its own (never one of the inputs).
pub(crate) async fn merge(
    dirs: Vec<PathBuf>,
    report_dir: Option<PathBuf>,
    replace: bool,
) -> anyhow::Result<ExitCode> {
    let parts = dirs
        .iter()
        .map(|d| report::read_dir(d))
        .collect::<anyhow::Result<Vec<Matrix>>>()?;
    if let Some(out) = &report_dir {
        if let Some(input) = dirs.iter().find(|d| same_dir(&folder_of(d), out)) {
            anyhow::bail!(
                "--report {}: it is also an input ({}); write the merged report elsewhere",
                out.display(),
                input.display()
            );
        }
        destination::prepare(out, "--report", replace)?;
    }
    let verdict = report::show(&Matrix::merge(parts)?, report_dir.as_deref(), Vec::new())?;
    Ok(ExitCode::from(verdict.code()))
}

/// The directory an input names: itself, or the one holding a `results.json` named.
fn folder_of(path: &Path) -> PathBuf {
    if path.is_file() {
        path.parent().map_or_else(PathBuf::new, Path::to_path_buf)
    } else {
        path.to_path_buf()
    }
}

/// Whether two paths name the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    let canonical = |p: &Path| {
        let p = if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        };
        p.canonicalize().ok()
    };
    matches!((canonical(a), canonical(b)), (Some(x), Some(y)) if x == y)
}
