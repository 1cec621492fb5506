//! `codex-parity surface`: the integrator's surface as a CI gate. `check --uses FILE A B`
//! prints the changes from A to B that touch what FILE lists and fails on incompatible
//! ones; `init --from DIR` writes a starting FILE from transcripts.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use codex_parity::app_server::transcript::SentKind;
use codex_parity::codex::binaries;
use codex_parity::codex::card;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::surface::{self, Surface, UseKind};
use codex_parity::config::isolation::{HostConfig, Isolation};
use codex_parity::config::uses as config_uses;
use codex_parity::drift::{exec_surface, transcript};
use codex_parity::harness::expectations::Expectations;
use codex_parity::report::uses_coverage;

/// The subcommands of `surface`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum SurfaceCommand {
    /// Print the changes from A to B that touch the uses FILE lists; exit 1 when one is
    /// incompatible (a used method removed; a field it names gone, retyped or no longer
    /// required; an enum value of such a field removed; a new required params field of a
    /// request it makes; an exec event, field or value gone from the golden exec streams;
    /// a feature gone or retired, a subcommand, flag or flag value gone, a package path
    /// gone, a setting codex now ignores, remaps or refuses), 0 otherwise, 2 when FILE
    /// cannot be read (naming the line), names a method or field neither schema has (a
    /// typo: the closest name is suggested) or a codex cannot be had.
    ///
    /// `feature`, `flag` and `package` lines are judged on the releases' surface cards;
    /// `config KEY [VALUE]` lines on the binaries themselves (as `config check` does).
    ///
    /// With --report DIR, the uses are also looked up in that run of B: each is either
    /// exercised by named behaviour scenarios (`=`) or only schema-checked (`?`).
    ///
    /// Example: codex-parity surface check --uses codex-uses.txt 0.131.0 0.171.0
    ///          codex-parity surface check --uses codex-uses.txt --report out 0.131.0 0.171.0
    #[command(verbatim_doc_comment)]
    Check {
        /// The uses file: `KIND METHOD [FIELD ...]` per line (docs/surface.md).
        #[arg(long, value_name = "FILE")]
        uses: PathBuf,
        /// The codex the integration works with today: a version or a path.
        #[arg(value_name = "A")]
        from: String,
        /// The codex to move to: a version or a path.
        #[arg(value_name = "B")]
        to: String,
        /// A run's report directory (`run --report DIR`, or its results.json): also print
        /// which uses a behaviour scenario exercised on B and which are only schema-checked.
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
    },
    /// Print a starting uses file from transcripts (`run --report DIR` writes them to
    /// DIR/transcripts): every client request answered without an error, notification,
    /// server request and `codex exec --json` event seen. Trim it to what your integration
    /// really uses and add the fields it reads.
    ///
    /// Example: codex-parity surface init --from out/transcripts/0.171.0 > codex-uses.txt
    #[command(verbatim_doc_comment)]
    Init {
        /// A transcript file or a directory searched for them.
        #[arg(long, value_name = "DIR")]
        from: PathBuf,
    },
}

/// Runs one `surface` subcommand.
pub(crate) async fn surface(command: SurfaceCommand) -> anyhow::Result<ExitCode> {
    match command {
        SurfaceCommand::Check {
            uses,
            from,
            to,
            report,
        } => check(&uses, &from, &to, report.as_deref()).await,
        SurfaceCommand::Init { from } => {
            print!("{}", init(&from)?);
            Ok(ExitCode::SUCCESS)
        }
    }
}

async fn check(
    uses_file: &Path,
    from: &str,
    to: &str,
    report: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let uses = surface::read_uses(uses_file)?;
    // The run is read before any codex is fetched: a wrong directory fails fast.
    let run = report.map(codex_parity::report::read_dir).transpose()?;
    let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
    let a = binaries::resolve_spec(from, &cache, &progress).await?;
    let b = binaries::resolve_spec(to, &cache, &progress).await?;
    let (mut old, mut new) = (Surface::generate(&a).await?, Surface::generate(&b).await?);
    let expectations = Expectations::current()?;
    old.exec = exec_surface::observed(&expectations, &a.version)?;
    new.exec = exec_surface::observed(&expectations, &b.version)?;
    if uses.iter().any(|u| u.kind.is_launch()) {
        // A card that cannot be read leaves its launch uses "not checked", said per line.
        for (surface, binary) in [(&mut old, &a), (&mut new, &b)] {
            match card::card(binary, &progress).await {
                Ok(c) => surface.card = Some(c),
                Err(e) => eprintln!(
                    "codex-parity: {}: no surface card ({e:#}); its feature, flag and package \
                     uses are not checked",
                    binary.label()
                ),
            }
        }
    }
    let mut changes = surface::check(&uses, &old, &new);
    if uses.iter().any(|u| u.kind == UseKind::Config) {
        let isolation = Isolation::detect(HostConfig::Hide).await;
        changes.extend(config_uses::changes(&uses, &a, &b, &isolation, &progress).await?);
        changes.sort_by_key(|c| c.line);
    }
    print!("{}", surface::render(&uses, &changes, &old, &new));
    if let (Some(run), Some(dir)) = (&run, report) {
        let (label, list) = uses_coverage::of(run, &b.version, &uses)?;
        print!(
            "\n{}",
            uses_coverage::render(&dir.display().to_string(), label, &list)
        );
    }
    // A use naming what neither codex has is a mistake of the file, not a compatible
    // change: said with the closest name, and a usage error.
    let unknown: Vec<String> = changes
        .iter()
        .filter(|c| c.unknown)
        .map(|c| format!("{}:{}: {}", uses_file.display(), c.line, c.text))
        .collect();
    anyhow::ensure!(
        unknown.is_empty(),
        "{} use(s) name what neither {} nor {} has (a typo?):\n{}",
        unknown.len(),
        a.label(),
        b.label(),
        unknown.join("\n")
    );
    Ok(if changes.iter().any(|c| c.incompatible) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The uses file the transcripts under `from` suggest.
fn init(from: &Path) -> anyhow::Result<String> {
    let mut files = Vec::new();
    collect_json(from, &mut files)?;
    let mut seen = BTreeSet::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let doc: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", file.display()))?;
        for sent in transcript::connections_of(&doc).into_iter().flatten() {
            // An error answer says nothing the integration can rely on (protocol tests call
            // methods that do not exist on purpose).
            let kind = match sent.kind {
                SentKind::Error => continue,
                SentKind::Event => UseKind::ExecEvent,
                SentKind::Response => UseKind::Request,
                SentKind::Notification => UseKind::Notification,
                SentKind::Request => UseKind::ServerRequest,
            };
            if sent.method != codex_parity::app_server::transcript::UNKNOWN_METHOD {
                seen.insert((kind, sent.method));
            }
        }
    }
    if seen.is_empty() {
        anyhow::bail!("no transcript messages under {}", from.display());
    }
    let mut text = format!(
        "# What an integration uses of codex app-server and exec, from {} transcript file(s).\n\
         # KIND METHOD [FIELD ...]; keep what you use, add the fields you read (docs/surface.md).\n",
        files.len()
    );
    for (kind, method) in seen {
        text.push_str(&format!("{} {method}\n", kind.word()));
    }
    Ok(text)
}

/// Every `.json` file at or under `path`.
fn collect_json(path: &Path, out: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if path.is_file() {
        out.push(path.to_path_buf());
        return Ok(());
    }
    let entries = std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))?;
    let mut paths: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            collect_json(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
    Ok(())
}
