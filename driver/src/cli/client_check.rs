//! `codex-parity client-check`: the integrator's program served a session, as recorded and
//! mutated (docs/client-check.md); and `client-check-serve`, the hidden mock codex its
//! `codex` shim runs (and its listener).

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use codex_parity::client_check::checker::{self, CheckOptions};
use codex_parity::client_check::mutation::{ALL, Mutation};
use codex_parity::client_check::serve;
use codex_parity::client_check::source::Source;
use codex_parity::report::destination;

use super::one_codex::OneCodex;

/// The arguments of `client-check`.
#[derive(Debug, clap::Args)]
pub(crate) struct ClientCheckArgs {
    /// The session to serve: a scenario file (.toml, e.g. from `record`; run for it on
    /// --codex-bin or --codex-version, else the pinned version), a transcript of a run's
    /// report (DIR/transcripts/VERSION/SCENARIO.json), or the directory `record --keep`
    /// kept. App-server sessions, `codex exec` runs, or both.
    #[arg(long, value_name = "SOURCE")]
    from: PathBuf,
    /// The mutations to serve, each in a run of its own, comma-separated. Both kinds:
    /// none, extra-field, slow[:MS], as:VERSION. App-server: drop:METHOD,
    /// duplicate:METHOD, unknown-notification, unknown-enum, reorder, overloaded,
    /// exit-mid-turn. codex exec: no-terminal-event, turn-failed, unknown-event,
    /// unknown-item, renamed-field, duplicate-items, other-usage, exit-mid-stream. `all`
    /// (the default) is every mutation of the kinds the session holds, with its default
    /// argument (as:VERSION is named on its own).
    #[arg(long, value_name = "LIST", default_value = ALL)]
    mutations: String,
    /// The mutations the check fails without (comma-separated names, or `all`; default:
    /// `none` when it is among --mutations, else `all`).
    #[arg(long, value_name = "LIST")]
    must_survive: Option<String>,
    /// Also write DIR/client-check.json, DIR/junit.xml and each mutation's run (its
    /// script, what the mock served, COMMAND's stdout and stderr) under DIR/runs/.
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
    /// With --report: remove the files an earlier check left in DIR first (without it, a
    /// DIR holding files is refused, so that no earlier run's record is read as this one's).
    #[arg(long, requires = "report")]
    replace_report: bool,
    /// COMMAND's time limit per mutation; it and everything it started are killed after.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..))]
    timeout_secs: u64,
    /// A client that ends before the session's end fails (its row is otherwise `stopped
    /// early`, which passes). On by default when the source is a recording of your own
    /// client (a `record --keep` directory, or a file `record` wrote).
    #[arg(long, overrides_with = "no_whole_session")]
    whole_session: bool,
    /// A client may end before the session's end (`stopped early` passes), also for a
    /// recording of your own client.
    #[arg(long, overrides_with = "whole_session")]
    no_whole_session: bool,
    /// Leave lines of COMMAND's stdout that match this regular expression out when it is
    /// held against what it printed for `none` (times, process ids; repeatable). Mutations
    /// that should not change the output (duplicate:*, reorder, extra-field,
    /// unknown-notification, slow) fail when it differs.
    #[arg(long, value_name = "REGEX")]
    ignore_output: Vec<String>,
    /// Serve the app-server connections on a WebSocket listener at this address
    /// (ws://127.0.0.1:0 picks a port), given to COMMAND in $CODEX_PARITY_LISTEN as
    /// `record --listen` gives it: for a client that connects to a listener rather than
    /// starting codex. On by default (at ws://127.0.0.1:0) when the source was recorded
    /// over a listener.
    #[arg(long, value_name = "URL", conflicts_with = "no_listen")]
    listen: Option<String>,
    /// Serve on stdio only, also for a source recorded over a listener.
    #[arg(long)]
    no_listen: bool,
    /// The codex a scenario-file source runs on.
    #[command(flatten)]
    codex: OneCodex,
    /// Your program and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<OsString>,
}

/// Runs the check: exit 0 when every must-survive mutation passed, 1 when one did not.
pub(crate) async fn client_check(args: ClientCheckArgs) -> anyhow::Result<ExitCode> {
    let source = Source::parse(&args.from)?;
    let mutations =
        Mutation::parse_list(&args.mutations, source.kinds()?).map_err(anyhow::Error::msg)?;
    let ignore_output = args
        .ignore_output
        .iter()
        .map(|r| regex::Regex::new(r).with_context(|| format!("--ignore-output {r:?}")))
        .collect::<anyhow::Result<Vec<_>>>()?;
    anyhow::ensure!(!mutations.is_empty(), "--mutations names no mutation");
    let names: Vec<String> = mutations.iter().map(Mutation::name).collect();
    // By default the unmutated replay must pass; without it, every mutation run must (a
    // check where nothing must pass would pass whatever happened).
    let default = if names.iter().any(|n| n == "none") {
        "none"
    } else {
        "all"
    };
    let must_survive: Vec<String> = args
        .must_survive
        .unwrap_or_else(|| default.to_string())
        .split(',')
        .map(|m| m.trim().to_string())
        .filter(|m| !m.is_empty())
        .collect();
    anyhow::ensure!(
        !must_survive.is_empty(),
        "--must-survive names no mutation: a check where nothing must pass passes whatever \
         happens; name some, or `all`, or leave it out (the default: none, else all)"
    );
    for m in must_survive.iter().filter(|m| *m != "all") {
        let name = Mutation::parse(m).map_err(anyhow::Error::msg)?.name();
        anyhow::ensure!(
            names.contains(&name),
            "--must-survive {m}: not among --mutations ({})",
            names.join(",")
        );
    }
    if let Some(dir) = &args.report {
        destination::prepare(dir, "--report", args.replace_report)?;
    }
    if let Some(url) = &args.listen {
        anyhow::ensure!(
            url.strip_prefix("ws://")
                .is_some_and(|a| a.trim_end_matches('/').rsplit_once(':').is_some()),
            "--listen {url}: expected ws://HOST:PORT, e.g. ws://127.0.0.1:0"
        );
    }
    let listen = match (args.listen, args.no_listen) {
        (_, true) => None,
        (Some(url), _) => Some(url),
        (None, false) => source.over_listener().then(|| {
            eprintln!(
                "codex-parity: {} was recorded over an app-server listener: serving it on \
                 one (ws://127.0.0.1:0, in $CODEX_PARITY_LISTEN; --no-listen for stdio)",
                source.describe()
            );
            "ws://127.0.0.1:0".to_string()
        }),
    };
    let exe = std::env::current_exe().context("finding codex-parity's own path")?;
    let whole_session = match (args.whole_session, args.no_whole_session) {
        (true, _) => true,
        (_, true) => false,
        _ => source.is_recording(),
    };
    let options = CheckOptions {
        source,
        codex: args.codex.binary(),
        mutations,
        must_survive,
        timeout: Duration::from_secs(args.timeout_secs),
        command: args.command,
        exe,
        keep_in: args.report.as_ref().map(|d| d.join("runs")),
        whole_session,
        ignore_output,
        listen,
    };
    let verdict = checker::check(&options).await?;
    print!("{}", verdict.table());
    if let Some(dir) = &args.report {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: String| {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        };
        write("client-check.json", verdict.json()?)?;
        write("junit.xml", verdict.junit())?;
        eprintln!(
            "codex-parity: wrote {}/client-check.json, junit.xml and runs/",
            dir.display()
        );
    }
    Ok(if verdict.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The hidden `client-check-serve DIR ARGS…` the shim runs.
pub(crate) fn serve(dir: PathBuf, args: Vec<OsString>) -> anyhow::Result<ExitCode> {
    let code = serve::serve(&dir, args)?;
    Ok(ExitCode::from(u8::try_from(code).unwrap_or(1)))
}
