//! `codex-parity upgrade --from A --to B`: "can I upgrade?" in one command, one verdict and
//! one report ([`codex_parity::upgrade`]).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use codex_parity::codex::binaries;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::config::profile::Profile;
use codex_parity::report::destination;
use codex_parity::upgrade::{self, UpgradeOptions};

/// The arguments of `upgrade`.
#[derive(Debug, clap::Args)]
pub(crate) struct UpgradeArgs {
    /// The codex your integration works with today: a version (installed from npm) or a
    /// path to a codex binary.
    #[arg(long, value_name = "A")]
    from: String,
    /// The codex to move to: a version or a path.
    #[arg(long, value_name = "B")]
    to: String,
    /// Your uses file (`KIND METHOD [FIELD ...]` per line, docs/surface.md), checked from
    /// A to B.
    #[arg(long, value_name = "FILE")]
    uses: Option<PathBuf>,
    /// Your configuration profile (config.toml, `-c` overrides, features, flags, the
    /// package layout; docs/config.md, `codex-parity config init` writes one), judged on A
    /// and on B.
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
    /// A folder of your scenario files (what `codex-parity record` wrote): each runs on A
    /// and on B, and your client (after `--`) is checked against its session as A and as
    /// B send it.
    #[arg(long, value_name = "DIR")]
    recordings: Option<PathBuf>,
    /// Your client's time limit per check.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout_secs: u64,
    /// How many recordings run at once.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    jobs: Option<u64>,
    /// Also write DIR/upgrade.json and DIR/upgrade.md.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// With --report: remove the files an earlier report left in DIR first.
    #[arg(long, requires = "report")]
    replace_report: bool,
    /// Print the result as JSON on stdout instead of the report.
    #[arg(long)]
    json: bool,
    /// Your client and its arguments, after `--` (needs --recordings).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Judges the upgrade: exit 0 when nothing your integration relies on broke, 1 when
/// something did (each named), 2 on bad input.
pub(crate) async fn upgrade(args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    if args.uses.is_none() && args.recordings.is_none() && args.profile.is_none() {
        anyhow::bail!(
            "nothing of your integration to judge: give --uses FILE (what it uses of the \
             protocol), --profile FILE (how it configures codex) and/or --recordings DIR (its \
             recorded sessions; with your client after `--`), e.g. `codex-parity upgrade \
             --from 0.161.0 --to 0.171.0 --uses codex-uses.txt --profile codex-profile.toml \
             --recordings tests/codex -- python3 my_client.py`"
        );
    }
    // The profile is read before any codex is looked for: a bad one costs no download.
    let profile = args.profile.as_deref().map(Profile::read).transpose()?;
    if let Some(dir) = &args.report {
        destination::prepare(dir, "--report", args.replace_report)?;
    }
    let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
    let from = binaries::resolve_spec(&args.from, &cache, &progress).await?;
    let to = binaries::resolve_spec(&args.to, &cache, &progress).await?;
    let options = UpgradeOptions {
        from,
        to,
        uses: args.uses,
        profile,
        recordings: args.recordings,
        command: args.command,
        timeout: Duration::from_secs(args.timeout_secs),
        exe: std::env::current_exe().context("finding codex-parity's own path")?,
        jobs: args.jobs.map(|j| j as usize),
    };
    let result = upgrade::upgrade(&options).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", result.text());
    }
    if let Some(dir) = &args.report {
        let json = dir.join("upgrade.json");
        std::fs::write(&json, serde_json::to_string_pretty(&result)?)
            .with_context(|| format!("writing {}", json.display()))?;
        let md = dir.join("upgrade.md");
        std::fs::write(&md, result.markdown())
            .with_context(|| format!("writing {}", md.display()))?;
    }
    Ok(ExitCode::from(result.code()))
}
