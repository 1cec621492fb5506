//! `codex-parity review`: the pending expectations (`run --bless`, `baselines audit
//! --bless`) shown as diffs against the accepted files, then accepted or rejected.

use std::process::ExitCode;

use codex_parity::harness::expectations::Expectations;
use codex_parity::harness::pending::{self, Pending};

/// The arguments of `review`.
#[derive(Debug, clap::Args)]
pub(crate) struct ReviewArgs {
    /// Accept them: each pending file replaces its accepted file.
    #[arg(long, conflicts_with = "reject")]
    accept: bool,
    /// Reject them: each pending file is removed, the accepted file left as it is.
    #[arg(long)]
    reject: bool,
    /// Only the pending files whose path (under the fixtures) contains one of these texts,
    /// e.g. `golden/0.171.0` or `request_shape_plain`.
    #[arg(value_name = "FILTER")]
    filters: Vec<String>,
}

/// `review`: 0 when done (or nothing is pending), 2 when a file could not be read, moved or
/// removed.
pub(crate) fn review(args: ReviewArgs) -> anyhow::Result<ExitCode> {
    let root = Expectations::current()?.bless_dir()?;
    let relative = |p: &Pending| {
        p.accepted
            .strip_prefix(&root)
            .unwrap_or(&p.accepted)
            .display()
            .to_string()
    };
    let all: Vec<Pending> = pending::list(&root)?
        .into_iter()
        .filter(|p| {
            let name = relative(p);
            args.filters.is_empty() || args.filters.iter().any(|f| name.contains(f.as_str()))
        })
        .collect();
    if all.is_empty() {
        println!("nothing pending in {}", root.display());
        return Ok(ExitCode::SUCCESS);
    }
    for p in &all {
        let name = relative(p);
        if args.accept {
            p.accept()?;
            println!("accepted {name}");
        } else if args.reject {
            p.reject()?;
            println!("rejected {name}");
        } else {
            println!("pending {name}:\n{}", p.diff()?);
        }
    }
    if !(args.accept || args.reject) {
        println!(
            "{} pending expectation(s) in {}: `codex-parity review --accept [FILTER]` takes \
             them, `--reject [FILTER]` drops them",
            all.len(),
            root.display()
        );
    }
    Ok(ExitCode::SUCCESS)
}
