//! `codex-parity config`: an integrator's configuration judged on real codex releases
//! (`check`), and a profile written from an existing codex home (`init`). See
//! docs/config.md.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::install::{self, Cache, StderrProgress};
use codex_parity::codex::versions;
use codex_parity::config::check::{self, Options, Probe};
use codex_parity::config::init;
use codex_parity::config::isolation::{HostConfig, Isolation};
use codex_parity::config::profile::Profile;
use codex_parity::config::render;
use tokio::sync::OnceCell;

/// The subcommands of `config`.
#[derive(Debug, clap::Subcommand)]
pub(crate) enum ConfigCommand {
    /// Judge an integrator profile on real codex releases, offline and without a model.
    ///
    /// PROFILE says how your program launches and configures codex: its command line
    /// (`args`), the files of its CODEX_HOME (`[home]`: config.toml and profile files), the
    /// params of its thread/start (`[thread_start]`) and the paths its launcher expects in
    /// the npm package (`package`). Each item is judged on each release: accepted; accepted
    /// with a warning (a key codex ignores, a deprecated or silently remapped value, a
    /// retired feature, a legacy alias, a file codex does not read); refused at start;
    /// refused at thread/start; an unknown flag or subcommand; a path missing from the
    /// package; or not checked (with why). Each comes with codex's own words, and where
    /// two releases named next to each other differ, the first release that changed it
    /// (found by probing the releases between; --no-bisect to skip).
    ///
    /// Codex runs as you launch it, in a private CODEX_HOME holding the profile's files,
    /// with a cleaned environment, an offline model provider (replacing yours: it is never
    /// contacted), --disable plugins, and /etc/codex hidden when it exists
    /// (--host-config). app-server gets the handshake (initialize, thread/start with your
    /// params, config/read), exec is started and stopped, other commands are judged on the
    /// release's surface card. About a second per release.
    ///
    /// Examples:
    ///   codex-parity config check codex-profile.toml                      # the comparison set
    ///   codex-parity config check codex-profile.toml 0.131.0 0.171.0     # and where it changed
    ///   codex-parity config check codex-profile.toml --releases 0.140.0..0.150.0
    ///   codex-parity config check codex-profile.toml ./target/codex --json
    ///
    /// Exit status: 0 when every item is accepted on every release named (warnings too,
    /// unless --strict), 1 otherwise, 2 on a bad profile (every problem named as
    /// file:line:column) or when a codex cannot be had.
    #[command(verbatim_doc_comment)]
    Check {
        /// The profile (docs/config.md; `config init` writes one).
        #[arg(value_name = "PROFILE")]
        profile: PathBuf,
        /// Codex versions (installed from npm into the cache) or paths to codex binaries;
        /// default: the comparison set.
        #[arg(value_name = "VERSIONS")]
        versions: Vec<String>,
        /// Every stable release of a range, A..B (both included; B may be `latest`).
        #[arg(long, value_name = "A..B", conflicts_with = "versions")]
        releases: Option<String>,
        /// Warnings fail too.
        #[arg(long)]
        strict: bool,
        /// Print the report as JSON.
        #[arg(long)]
        json: bool,
        /// Do not probe the releases between two named ones to place a change.
        #[arg(long)]
        no_bisect: bool,
        /// What to do with /etc/codex (the host's managed configuration): hide it from codex
        /// in a mount namespace when it exists (said when that is not possible), or keep it
        /// (the report then says what codex applied from it).
        #[arg(long, value_enum, default_value = "hide")]
        host_config: HostConfig,
    },
    /// Write a profile from an existing codex home and the command line you launch.
    ///
    /// Copies DIR's config.toml and NAME.config.toml files into [home], CODEX ARGS into
    /// args, and leaves package and thread_start as comments to fill in. Secrets never
    /// reach the profile: values of keys that name a token, secret, password, API key,
    /// bearer, authorization or cookie, and every MCP server env and http_headers value, are
    /// written "<redacted>" (each listed on stderr); auth.json is not read.
    ///
    /// Examples:
    ///   codex-parity config init --codex-home ~/.codex --out codex-profile.toml -- app-server
    ///   codex-parity config init --codex-home ./ci/codex-home -- exec --json -c model=o3
    ///
    /// Exit status: 0 when written, 2 when DIR cannot be read or FILE exists.
    #[command(verbatim_doc_comment)]
    Init {
        /// The codex home to read (CODEX_HOME, usually ~/.codex).
        #[arg(long, value_name = "DIR")]
        codex_home: PathBuf,
        /// Write the profile here (refused when it exists); default: stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// What follows the codex program on your command line (after `--`).
        #[arg(last = true, value_name = "CODEX ARGS")]
        args: Vec<String>,
    },
}

/// Runs one `config` subcommand.
pub(crate) async fn config(command: ConfigCommand) -> anyhow::Result<ExitCode> {
    match command {
        ConfigCommand::Check {
            profile,
            versions,
            releases,
            strict,
            json,
            no_bisect,
            host_config,
        } => {
            let profile = Profile::read(&profile)?;
            let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
            let specs = match (&releases, versions.is_empty()) {
                (Some(range), _) => {
                    install::releases_in(range, install::current_platform()?)
                        .await?
                        .0
                }
                (None, true) => versions::load()?.chosen(true, false),
                (None, false) => versions,
            };
            let mut binaries: Vec<CodexBinary> = Vec::new();
            for spec in &specs {
                binaries.push(binaries::resolve_spec(spec, &cache, &progress).await?);
            }
            let binaries = binaries::one_per_version(binaries)?;
            let isolation = Isolation::detect(host_config).await;
            let probe = NpmProbe {
                cache: &cache,
                progress: &progress,
                published: OnceCell::new(),
            };
            let options = Options {
                isolation: &isolation,
                strict,
                bisect: !no_bisect,
            };
            let report = check::check(&profile, binaries, options, &probe, &progress).await?;
            if json {
                println!("{}", serde_json::to_string_pretty(&report)?);
            } else {
                print!("{}", render::text(&report));
            }
            Ok(if report.passes() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
        ConfigCommand::Init {
            codex_home,
            out,
            args,
        } => {
            let written = init::profile_from(&codex_home, &args)?;
            init::write(out.as_ref(), &written)?;
            for r in &written.redacted {
                eprintln!("codex-parity: redacted {r}");
            }
            if let Some(out) = &out {
                eprintln!(
                    "codex-parity: wrote {} ({} from {}); check it with `codex-parity config \
                     check {}`",
                    out.display(),
                    if written.copied.is_empty() {
                        "no config files".to_string()
                    } else {
                        written.copied.join(", ")
                    },
                    codex_home.display(),
                    out.display()
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}

/// Releases to probe: npm's published list (read once), installed into the cache.
struct NpmProbe<'a> {
    cache: &'a Cache,
    progress: &'a StderrProgress,
    published: OnceCell<Vec<String>>,
}

impl Probe for NpmProbe<'_> {
    async fn between(&self, older: &str, newer: &str) -> anyhow::Result<Vec<String>> {
        let published = self
            .published
            .get_or_try_init(|| async {
                install::published_releases(install::current_platform()?)
                    .await
                    .context("listing the releases to probe (--no-bisect skips this)")
            })
            .await?;
        let range = install::between(published, older, newer)?;
        Ok(range[1..range.len().saturating_sub(1)].to_vec())
    }

    async fn install(&self, version: &str) -> anyhow::Result<CodexBinary> {
        install::install(self.cache, version, self.progress).await
    }
}
