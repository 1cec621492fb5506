//! `codex-parity upgrade --from A --to B`: "can I upgrade from A to B?" as one verdict,
//! from everything the integration relies on:
//!
//! - the **surface** its uses file lists, checked from A to B (`crate::codex::surface`);
//! - its **configuration** (a `config check` profile: config.toml, `-c`, features, flags,
//!   the package layout), judged on A and on B ([`configuration`]);
//! - every **recording** (scenario file) of its folder, run on A and on B: codex still does
//!   what the file says, or not;
//! - its **client**, checked against the session of each recording as A sends it and as B
//!   sends it (`crate::client_check`): a client that works with A's stream and not with
//!   B's breaks on the upgrade even when codex "still does what the file says";
//! - the catalogue's **known changes** between A and B ([`known`]), and the protocol's
//!   methods added and removed.
//!
//! [`Upgrade`] ([`verdict`]) holds all of it and says what broke.

pub mod configuration;
pub mod known;
pub mod verdict;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;

use crate::client_check::checker::{self, CheckOptions};
use crate::client_check::mutation::Mutation;
use crate::client_check::source::Source;
use crate::codex::binaries::OneBinary;
use crate::codex::binary::CodexBinary;
use crate::codex::schema_diff;
use crate::codex::surface::{self, Surface};
use crate::config::profile::Profile;
use crate::drift::exec_surface;
use crate::harness::baseline::Baselines;
use crate::harness::expectations::Expectations;
use crate::harness::outcome::OutcomeKind;
use crate::harness::sidecar::SidecarLauncher;
use crate::plan::{Options, Plan};

pub use verdict::{ClientRow, ConfigItem, ConfigPart, RecordingRow, SurfacePart, Upgrade};

/// What to judge.
#[derive(Debug, Clone)]
pub struct UpgradeOptions {
    /// The codex the integration works with today.
    pub from: CodexBinary,
    /// The codex to move to.
    pub to: CodexBinary,
    /// The integration's uses file (`docs/surface.md`).
    pub uses: Option<PathBuf>,
    /// The integration's configuration profile, read (`docs/config.md`).
    pub profile: Option<Profile>,
    /// A folder of scenario files: the integration's recordings.
    pub recordings: Option<PathBuf>,
    /// The integration's client and its arguments (checked against each recording).
    pub command: Vec<OsString>,
    /// The client's time limit per check.
    pub timeout: Duration,
    /// codex-parity's own executable (what client-check's shim runs).
    pub exe: PathBuf,
    /// How many recordings run at once (`None`: the default of `run`).
    pub jobs: Option<usize>,
}

/// Judges the upgrade (see the module documentation). Bad input (a uses file that does not
/// read, a folder without scenario files) is an error before anything runs.
pub async fn upgrade(o: &UpgradeOptions) -> anyhow::Result<Upgrade> {
    let uses = o.uses.as_deref().map(surface::read_uses).transpose()?;
    let profile = o.profile.as_ref();
    let recordings = match &o.recordings {
        Some(dir) => recording_files(dir)?,
        None => Vec::new(),
    };
    if !o.command.is_empty() && recordings.is_empty() {
        anyhow::bail!(
            "a client to check needs recordings to serve it: give --recordings DIR (the folder \
             `codex-parity record` wrote into)"
        );
    }
    let (from, to) = (&o.from, &o.to);
    eprintln!(
        "codex-parity: upgrade {} -> {}: the protocol{}{}{}{}",
        from.version,
        to.version,
        if uses.is_some() { ", your uses" } else { "" },
        if profile.is_some() {
            ", your configuration"
        } else {
            ""
        },
        if recordings.is_empty() {
            String::new()
        } else {
            format!(", {} recording(s)", recordings.len())
        },
        if o.command.is_empty() {
            ""
        } else {
            ", your client"
        }
    );
    let (mut old, mut new) = (Surface::generate(from).await?, Surface::generate(to).await?);
    let protocol =
        schema_diff::diff(&from.label(), &old.schema, &to.label(), &new.schema).summary();
    let surface = match &uses {
        Some(uses) => {
            let expectations = Expectations::current()?;
            old.exec = exec_surface::observed(&expectations, &from.version)?;
            new.exec = exec_surface::observed(&expectations, &to.version)?;
            let changes = surface::check(uses, &old, &new);
            Some(SurfacePart {
                text: surface::render(uses, &changes, &old, &new),
                incompatible: changes.iter().filter(|c| c.incompatible).count(),
                unknown: changes.iter().filter(|c| c.unknown).count(),
            })
        }
        None => None,
    };
    let config = match profile {
        Some(profile) => Some(configuration::judge(profile, from, to).await?),
        None => None,
    };
    let known = known::between(&Baselines::builtin()?, &from.version, &to.version);
    let recorded = match &o.recordings {
        Some(dir) if !recordings.is_empty() => replay(o, dir).await?,
        _ => Vec::new(),
    };
    let mut clients = Vec::new();
    if !o.command.is_empty() {
        for file in &recordings {
            clients.push(check_client(o, file).await?);
        }
    }
    Ok(Upgrade {
        from: from.version.clone(),
        to: to.version.clone(),
        protocol,
        surface,
        config,
        recordings: recorded,
        clients,
        known,
    })
}

/// The scenario files of `dir`, sorted; an error when it has none.
fn recording_files(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let entries = std::fs::read_dir(dir).with_context(|| {
        format!(
            "--recordings {}: expected a folder of scenario files",
            dir.display()
        )
    })?;
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml") && p.is_file())
        .collect();
    files.sort();
    anyhow::ensure!(
        !files.is_empty(),
        "--recordings {}: no scenario files (*.toml) in it",
        dir.display()
    );
    Ok(files)
}

/// Every recording of `dir` run on A and on B, as `run --scenarios DIR --only-files` runs
/// them (the folder's own `baselines.json` judging them too).
async fn replay(o: &UpgradeOptions, dir: &Path) -> anyhow::Result<Vec<RecordingRow>> {
    let options = Options {
        scenario_dirs: vec![dir.to_path_buf()],
        only_files: true,
        jobs: o.jobs,
        ..Options::default()
    };
    let plan = Plan::builder(options)?
        .build(
            vec![o.from.clone(), o.to.clone()],
            SidecarLauncher::current_exe()?,
        )
        .await?;
    let end = plan.run(&mut [], std::future::pending::<()>()).await;
    let (a, b) = (o.from.label(), o.to.label());
    let mut rows: Vec<RecordingRow> = Vec::new();
    for r in &end.finished.records {
        let at = match rows.iter().position(|row| row.scenario == r.scenario) {
            Some(at) => at,
            None => {
                rows.push(RecordingRow {
                    scenario: r.scenario.to_string(),
                    ..RecordingRow::default()
                });
                rows.len() - 1
            }
        };
        let kind = r.outcome.kind();
        let why = match kind {
            OutcomeKind::Failed | OutcomeKind::NotApplicable => r
                .outcome
                .detail()
                .map(|d| d.lines().next().unwrap_or("").to_string()),
            _ => None,
        };
        if r.label == a {
            rows[at].on_from = Some(kind);
            rows[at].why_from = why;
        } else if r.label == b {
            rows[at].on_to = Some(kind);
            rows[at].why_to = why;
        }
    }
    Ok(rows)
}

/// The client checked against one recording's session as A sends it and as B does.
async fn check_client(o: &UpgradeOptions, file: &Path) -> anyhow::Result<ClientRow> {
    let mut row = ClientRow {
        recording: file.display().to_string(),
        ..ClientRow::default()
    };
    for (binary, which) in [(&o.from, 0), (&o.to, 1)] {
        let source = Source::parse(file)?;
        // A recording made over a listener is served over one, as client-check does.
        let listen = source
            .over_listener()
            .then(|| "ws://127.0.0.1:0".to_string());
        let options = CheckOptions {
            source,
            listen,
            codex: OneBinary {
                path: Some(binary.path.clone()),
                version: None,
            },
            mutations: vec![Mutation::None],
            must_survive: vec!["none".into()],
            timeout: o.timeout,
            command: o.command.clone(),
            exe: o.exe.clone(),
            keep_in: None,
            whole_session: true,
            ignore_output: Vec::new(),
        };
        let (passed, why) = match checker::check(&options).await {
            Ok(v) => {
                let failed = v.rows.iter().find(|r| !r.passes());
                (
                    v.passed(),
                    failed.map(|r| r.reasons.first().cloned().unwrap_or_default()),
                )
            }
            Err(e) => (false, Some(format!("{e:#}"))),
        };
        if which == 0 {
            (row.with_from, row.why_from) = (Some(passed), why);
        } else {
            (row.with_to, row.why_to) = (Some(passed), why);
        }
    }
    Ok(row)
}
