//! The `codex-parity` command line: the arguments (clap) and one file per subcommand.

mod bench;
mod bisect;
mod client_check;
mod config;
mod install;
mod list;
mod matrix;
mod merge;
mod one_codex;
#[cfg(test)]
mod plan_options;
mod record;
mod review;
mod run;
mod schema_diff;
mod sidecar;
mod sources;
mod surface;
mod sweep;
mod upgrade;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use codex_parity::harness::run_dir;

use bench::BenchArgs;
use bisect::BisectArgs;
use config::ConfigCommand;
use run::RunArgs;
use surface::SurfaceCommand;
use sweep::{AuditArgs, SweepArgs};

/// Does Codex X still behave the way your integration relies on? codex-parity runs parity
/// scenarios against the real `codex app-server`, offline, with a mock Responses API.
#[derive(Debug, Parser)]
#[command(name = "codex-parity", version, about, long_about = None,
          after_long_help = FIXTURES_HELP)]
pub(crate) struct Cli {
    /// Judge by the expectations in DIR (a fixtures/ layout), where --bless writes too
    /// (`codex-parity --help` says more)
    #[arg(long, global = true, value_name = "DIR")]
    fixtures: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

/// What `--fixtures` is, said once, under the top-level help (every subcommand's help
/// gives the option one line).
const FIXTURES_HELP: &str = "\
--fixtures DIR: the expectations to judge by (baselines, golden requests and transcripts),
in the layout of the repository's fixtures/ (expected/baselines.json, golden/VERSION/,
golden-transcripts/VERSION/), instead of those compiled into this binary; also where
--bless writes. Default: $CODEX_PARITY_FIXTURES, else the compiled-in ones (--bless then
writes into the checkout this binary was built from).";

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the parity scenarios (on the pinned codex version when no binary is named).
    ///
    /// Examples:
    ///   codex-parity run                              # pinned version, installed on demand
    ///   codex-parity run --codex-version 0.161.0      # another version from npm
    ///   codex-parity run --compare                    # the whole comparison set
    ///   codex-parity run --sample                     # releases between them (as CI does)
    ///   codex-parity run --codex-version latest       # npm's latest release (a scheduled job)
    ///   codex-parity run --codex-bin ./codex --filter streaming
    ///   codex-parity run --compare --report out     # also write out/{results.json,junit.xml,report.md,report.html}
    ///   codex-parity run --compare --shard 2/3 --report out2   # a third of the work, for split CI
    ///   codex-parity run --compare --request-diff     # and what changed in the requests
    ///   codex-parity run --compare --transcript-diff  # and in what codex sends the client
    ///   codex-parity run --releases 0.161.0..0.171.0 --every 2   # a sweep over npm releases
    ///   codex-parity run --compare --bless --filter request_shape  # rewrite golden requests (review first)
    ///   codex-parity run --scenarios my-scenarios --only-files  # your own scenario files (docs/scenario-files.md)
    ///
    /// Exit status: 0 when every applicable scenario passed, 1 when any failed, 2 on a
    /// usage or install error, 130 when stopped by Ctrl-C (SIGINT) and 143 by SIGTERM: the
    /// running scenarios are cancelled, their codex and sidecar processes killed and their
    /// directories removed before it exits.
    #[command(verbatim_doc_comment)]
    Run(RunArgs),
    /// Record one session of your own program into a scenario file: the client's JSON-RPC
    /// with codex and codex's model requests, both as they happened (docs/record.md).
    ///
    /// COMMAND runs with a `codex` shim first on its PATH and in $CODEX_PARITY_CODEX; the
    /// shim runs the real codex app-server (--codex-bin, --codex-version or the pinned
    /// version) in a private CODEX_HOME (yours is not touched) and relays its stdio
    /// unchanged. Codex's model requests go through a recording proxy to --upstream, with
    /// the API key from --api-key-env passed through. The file replays with
    /// `codex-parity run --scenarios DIR` on this and every other codex version.
    ///
    /// Never written: authorization, API-key and cookie headers, account ids, and matches
    /// of --redact. A recording that holds the API key, or that logged in through the
    /// app-server, is refused (a replay would need the secret).
    ///
    /// Examples:
    ///   codex-parity record --out tests/codex/tool_turn.toml -- python3 my_client.py
    ///   codex-parity record --codex-version 0.161.0 --out s.toml -- ./my-editor --headless
    ///   codex-parity record --upstream http://127.0.0.1:8080/v1 --redact 'acct_[0-9]+' \
    ///       --out s.toml -- cargo run --example my_client
    ///   codex-parity record --listen ws://127.0.0.1:0 --out s.toml -- ./my-ide-plugin-test
    ///     (a client of the app-server's listener: its URL is in $CODEX_PARITY_LISTEN)
    ///
    /// Exit status: 0 when the file was written and the client exited 0; 1 when the client
    /// failed (the file is still written, marked as possibly incomplete); 2 when nothing was
    /// written (no command, the upstream unreachable, the client never started codex, a
    /// session without a turn, a secret in the recording).
    #[command(verbatim_doc_comment)]
    Record(record::RecordArgs),
    /// (internal) What the `codex` shim of `record` runs.
    #[command(name = "record-relay", hide = true)]
    RecordRelay {
        /// The recording's session directory.
        session: PathBuf,
        /// codex's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// (internal) Kills the process groups it is told to watch, and removes its owner's run
    /// directory, when its owner dies (`record`, `client-check`).
    #[command(name = "guard", hide = true)]
    Guard {
        /// The owner's run directory, removed once its lock is free.
        #[arg(long, value_name = "DIR")]
        run_dir: Option<PathBuf>,
    },
    /// Check your own program against what codex sends it, and what a next release, a
    /// loaded server or a crash could send instead (docs/client-check.md).
    ///
    /// COMMAND is served a session by a mock codex, once as recorded and once per mutation
    /// (a message dropped or doubled, a method, enum value, event, item or field no
    /// release has, reordered notifications, an overloaded, crashing or failing codex,
    /// slow messages, another codex version's stream), and a table says how it coped.
    ///
    /// COMMAND finds the mock as `codex`: first on its PATH and in $CODEX_PARITY_CODEX, as
    /// with `record`. It serves `codex app-server` on stdio, `codex exec` (one recorded
    /// run per process, as OpenAI's TypeScript SDK runs it), and with --listen (on by
    /// default for a recording made over a listener) a WebSocket listener whose URL is in
    /// $CODEX_PARITY_LISTEN. Each run is bounded by --timeout-secs; COMMAND's process group
    /// is killed after it. A mutation expects COMMAND to survive (exit 0, every server
    /// request answered), to end by itself rather than hang (drop:*, exit-mid-turn,
    /// unknown-enum), to fail (exit non-zero: no-terminal-event, turn-failed,
    /// exit-mid-stream) or to cope (survive or fail cleanly: renamed-field).
    ///
    /// Examples:
    ///   codex-parity client-check --from tests/codex/tool_turn.toml -- python3 my_client.py
    ///   codex-parity client-check --from out/transcripts/0.171.0/streaming_deltas.json \
    ///       --must-survive all -- ./target/debug/my-editor --headless
    ///   codex-parity client-check --from s.toml --mutations none,as:0.161.0,drop:turn/completed \
    ///       --report cc -- npm test
    ///   codex-parity client-check --from exec-session.toml -- node my-sdk-script.mjs
    ///     (new Codex({ codexPathOverride: process.env.CODEX_PARITY_CODEX }) in the script)
    ///   codex-parity client-check --from kept-dir --listen ws://127.0.0.1:0 -- ./my-ide-test
    ///
    /// Exit status: 0 when every --must-survive mutation passed (a mutation that does not
    /// apply to the session is not a pass), 1 when one did not, 2 on bad input (no such
    /// source, a source without client requests or exec runs, COMMAND not found, an
    /// unknown mutation, a --listen where the mock cannot listen).
    #[command(verbatim_doc_comment)]
    ClientCheck(client_check::ClientCheckArgs),
    /// Can I upgrade from A to B? One verdict from everything your integration relies on:
    /// your uses file checked from A to B, each of your recordings run on A and on B, your
    /// client checked against each recording's session as A and as B send it, and the
    /// catalogue's known changes between them (docs/upgrade.md).
    ///
    /// Example: codex-parity upgrade --from 0.161.0 --to 0.171.0 --uses codex-uses.txt \
    ///              --recordings tests/codex -- python3 my_client.py
    ///
    /// Exit status: 0 when nothing your integration relies on broke; 1 when something did
    /// (each named: a use changed incompatibly, a recording that does not replay on B, your
    /// client failing on B's session); 2 on bad input (an unreadable uses file, a folder
    /// without scenario files, a codex that cannot be had).
    #[command(verbatim_doc_comment)]
    Upgrade(upgrade::UpgradeArgs),
    /// (internal) The mock codex the `codex` shim of `client-check` runs (and its
    /// listener).
    #[command(name = "client-check-serve", hide = true)]
    ClientCheckServe {
        /// The mutation's run directory.
        dir: PathBuf,
        /// codex's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Review the pending expectations that `run --bless` (golden requests, golden
    /// transcripts) and `baselines audit --bless` (baselines) proposed: each is shown as a
    /// diff against its accepted file; nothing counts until it is accepted.
    ///
    /// Examples:
    ///   codex-parity review                          # the diffs of everything pending
    ///   codex-parity review --accept golden/0.171.0  # accept the pending files under it
    ///   codex-parity review --reject                 # drop every pending file
    ///
    /// Exit status: 0 when done or nothing is pending, 2 when a file could not be read,
    /// moved or removed, or there is no writable fixtures directory (--fixtures DIR).
    #[command(verbatim_doc_comment)]
    Review(review::ReviewArgs),
    /// Download codex versions from npm into the cache (fetched once, reused after), and
    /// keep the cache bounded.
    ///
    /// The cache is $CODEX_PARITY_CACHE, else $XDG_CACHE_HOME/codex-parity/codex, else
    /// ~/.cache/codex-parity/codex. Needs `npm` on PATH. Each release takes 200-450 MB.
    ///
    /// With --prune, after installing, remove the other releases: all of them, or with a
    /// cap (--cache-max or $CODEX_PARITY_CACHE_MAX) the least recently used until the cache
    /// fits. A release whose binary a running process uses is never removed, nor one being
    /// installed; what is removed or kept is printed. When $CODEX_PARITY_CACHE_MAX is set,
    /// every install (run, bench, bisect, install) enforces it the same way.
    ///
    /// Examples:
    ///   codex-parity install 0.161.0 0.171.0
    ///   codex-parity install --compare --prune          # the comparison set, nothing else
    ///   codex-parity install --prune --cache-max 2G     # the pinned one; LRU others to 2 GB
    ///   CODEX_PARITY_CACHE_MAX=3G codex-parity bisect ...   # probes evict old releases
    #[command(verbatim_doc_comment)]
    Install {
        /// Versions such as 0.171.0 (default: the pinned version).
        versions: Vec<String>,
        /// Also install the whole comparison set of fixtures/codex-versions.json.
        #[arg(long)]
        compare: bool,
        /// Also install the sample of releases between the comparison versions.
        #[arg(long)]
        sample: bool,
        /// Then remove the other cached releases (least recently used first when capped).
        #[arg(long)]
        prune: bool,
        /// The cap for --prune: bytes, or with K, M, G, T (2G); default
        /// $CODEX_PARITY_CACHE_MAX, else no cap (remove every release not installed now).
        #[arg(long, value_name = "SIZE", requires = "prune")]
        cache_max: Option<String>,
    },
    /// Join the results.json files of several runs into one matrix (the shards of a split
    /// run, or runs on different binaries), print it, and optionally write the reports.
    ///
    /// Example: codex-parity merge shard-1 shard-2 shard-3 --report merged
    ///
    /// Exit status: 0 when every applicable scenario passed, 1 when any failed, 2 when the
    /// files cannot be read or joined (a shard missing or given twice, a cell in two files).
    #[command(verbatim_doc_comment)]
    Merge {
        /// Directories holding a results.json (or results.json files).
        #[arg(required = true, value_name = "DIR")]
        dirs: Vec<PathBuf>,
        /// Write results.json, junit.xml, report.md and report.html of the joined matrix here
        /// (a new or empty directory, not one of the inputs).
        #[arg(long, value_name = "DIR")]
        report: Option<PathBuf>,
        /// With --report: remove the files an earlier report left in DIR first.
        #[arg(long, requires = "report")]
        replace_report: bool,
    },
    /// List the scenarios with their catalogue ids.
    ///
    /// With --markdown, print the catalogue document instead (docs/scenarios.md is this
    /// output: `codex-parity list --markdown > docs/scenarios.md`). With --scenarios DIR,
    /// the scenario files too, after checking them (exit 2 on a bad file, naming it).
    List {
        /// Print the catalogue as Markdown, grouped, with time limits.
        #[arg(long)]
        markdown: bool,
        /// Scenario files to list too (checked: a bad file exits 2, naming it).
        #[command(flatten)]
        sources: sources::ScenarioSources,
    },
    /// Measure what the harness costs and how it holds up (numbers, not pass/fail).
    ///
    /// Pick any of the measures; with none, --overhead and --suite run:
    ///   --overhead  median world set-up and teardown (ours) against codex spawn->initialize
    ///   --suite     wall time of the suite on each binary alone, then on all of them
    ///               together, with --jobs (how it grows from 1 to N versions); each with
    ///               its total CPU (user + sys of every process) and the ratio of the wall
    ///               time to the CPU-bound limit (CPU / cores)
    ///   --soak      --turns consecutive turns on one thread, then --threads threads running
    ///               turns at once in one app-server, against one sidecar: every request
    ///               captured once (none lost or duplicated), sidecar memory sampled
    ///   --load      the sidecar (capture on) under HTTP load from --clients keep-alive
    ///               clients, against a bare hyper server sending the same SSE body;
    ///               requests/s, p50/p99 latency and their ratio (no codex needed)
    ///   --transports  --runs turns and thread/read round trips over stdio, a ws://
    ///               and a unix:// listener (codex app-server --listen), one world each
    ///
    /// Measures that need codex use the first binary; --suite uses all of them. Exit
    /// status: 0, or 1 when a soak check or a suite scenario failed, 2 on errors.
    ///
    /// Examples:
    ///   codex-parity bench --runs 10 --codex-version 0.171.0
    ///   codex-parity bench --suite --jobs 2 --codex-version 0.131.0 --codex-version 0.171.0
    ///   codex-parity bench --soak --turns 500 --threads 50 --codex-bin ./codex
    ///   codex-parity bench --load --requests 20000 --clients 8
    ///   codex-parity bench --transports --runs 50 --codex-version 0.171.0
    #[command(verbatim_doc_comment)]
    Bench(BenchArgs),
    /// Find the first codex release in which one scenario's outcome changed.
    ///
    /// Lists the stable releases of @openai/codex on npm from --good to --bad (no alpha or
    /// other pre-release), runs the scenario on both ends, then binary-searches between
    /// them for the first release whose outcome differs from --good's. An outcome is the
    /// status (pass, drift, FAIL, n/a) and every drift key with its observed value, before
    /// any baseline judges it: "drift A" and "drift B" are different outcomes. Only the
    /// releases it probes are installed (into the cache, reused by later runs). One line per
    /// probe: version, outcome, run time, install time.
    ///
    /// Example (a second turn/interrupt for a finished turn stopped hanging):
    ///   codex-parity bisect --filter turn_interrupt_ends_turn_interrupted \
    ///       --good 0.161.0 --bad 0.171.0
    ///   probe 1: 0.161.0   drift turn.interrupt_after_end={"while_idle":…  (2.3 s run, …)
    ///   probe 2: 0.171.0   pass  (1.6 s run, 0.1 s install or cache)
    ///   probe 3: 0.165.0   drift turn.interrupt_after_end={"while_idle":…  (2.3 s run, …)
    ///   probe 4: 0.167.2   drift …  (1.9 s run, 16.1 s install or cache)
    ///   probe 5: 0.168.0   drift …
    ///   probe 6: 0.169.0   pass  …
    ///   first changed release: 0.169.0
    ///     0.168.0: drift
    ///       turn.interrupt_after_end = {"while_idle":"no answer within 1 s",…}
    ///     0.169.0: pass
    ///
    /// When the first change leads to an outcome other than --bad's, the search goes on and
    /// lists every later change too. When its probes show an outcome coming back (A, then B,
    /// then A again), the history is not monotonic: it names those three releases.
    ///
    /// Exit status: 0 when the first changed release was found; 1 when the history is not
    /// monotonic or both ends have the same outcome; 2 on errors (an unknown or equal
    /// version, npm unreachable, an install that failed, --filter not naming one scenario).
    #[command(verbatim_doc_comment)]
    Bisect(BisectArgs),
    /// Run the default catalogue on every stable release of a range, then audit the
    /// baselines against what each release did (see `baselines audit`).
    ///
    /// One release at a time, each as its own `codex-parity run --codex-version V --report
    /// DIR/V`, the cache kept under --cache-max (least recently used releases evicted as
    /// each is installed). A release whose DIR/V/results.json exists is not run again, so
    /// a stopped sweep resumes. About 30-40 s a release on 2 cores, install included.
    ///
    /// Examples:
    ///   codex-parity sweep --out sweep                      # 0.131.0 (oldest compared) to latest
    ///   codex-parity sweep --releases 0.150.0..0.161.0 --out sweep --cache-max 2G
    ///   codex-parity sweep --filter I --out sweep-i          # one group on every release
    ///   codex-parity sweep --out sweep --table docs/releases.md   # and rewrite the table
    ///
    /// Exit status: 0 when every cell passes or drifts as listed and the audit finds
    /// nothing, 1 otherwise, 2 on errors (npm unreachable, a run that wrote no results),
    /// 130/143 when stopped (the running release's processes are stopped first).
    #[command(verbatim_doc_comment)]
    Sweep(SweepArgs),
    /// Check the baselines against what releases did.
    #[command(subcommand)]
    Baselines(BaselinesCommand),
    /// Show what changed in the app-server protocol between two codex versions.
    ///
    /// Runs `codex app-server generate-json-schema --experimental` for A and B and reports
    /// client requests, server requests and notifications added and removed, named types
    /// added and removed, and for each type both have: fields added, removed, changed in
    /// type or in being required, enum values added or removed, and union variants added,
    /// removed or changed (an object that became a tagged union is compared with each new
    /// variant). Lines start with `-` removed, `+` added, `~` changed.
    ///
    /// A and B are versions (installed from npm into the cache on first use, like
    /// `install`) or paths to codex binaries.
    ///
    /// Examples:
    ///   codex-parity schema-diff 0.131.0 0.171.0
    ///   codex-parity schema-diff 0.161.0 ./target/codex             # a local build
    ///   codex-parity schema-diff 0.131.0 0.171.0 --json | jq '.changed_types[] | select(.name == "ThreadGoalStatus")'
    ///
    /// Reading the report (an excerpt of 0.131.0 -> 0.171.0):
    ///   client requests: +87 -2
    ///     - thread/rollback                          gone: calls to it now fail
    ///   changed types: 130
    ///     DynamicToolSpec: object -> union tagged by `type`
    ///       + variant function (fields compared with the former object)
    ///           - field namespace: string|null
    ///           + field type: "function" (required)
    ///     ThreadGoalStatus
    ///       + value blocked                          a value your client may now receive
    ///
    /// Exit status: 0 when both schemas were read (drift is not an error), 2 on a usage
    /// or install error.
    #[command(verbatim_doc_comment)]
    SchemaDiff {
        /// The older codex: a version such as 0.131.0, or a path to a codex binary.
        #[arg(value_name = "A")]
        from: String,
        /// The newer codex: a version such as 0.171.0, or a path to a codex binary.
        #[arg(value_name = "B")]
        to: String,
        /// Print the diff as JSON (fields `client_requests`, `server_requests`,
        /// `notifications`, `client_notifications`, `types`: {added, removed}; and
        /// `changed_types`: [{name, kind?, values, fields, variants}]).
        #[arg(long)]
        json: bool,
    },
    /// The integrator's surface as a CI gate: what an integration uses of the protocol,
    /// checked between two codex versions (`surface check`), started from transcripts
    /// (`surface init`). See docs/surface.md.
    ///
    /// Examples:
    ///   codex-parity surface check --uses codex-uses.txt 0.131.0 0.171.0
    ///   codex-parity surface init --from out/transcripts/0.171.0 > codex-uses.txt
    ///
    /// Exit status of check: 0 nothing used broke, 1 something used was removed or changed
    /// incompatibly, 2 the uses file is unreadable or malformed (the line is named) or a
    /// codex cannot be had.
    #[command(verbatim_doc_comment)]
    Surface {
        #[command(subcommand)]
        command: SurfaceCommand,
    },
    /// Your configuration judged on real codex releases: how your program launches and
    /// configures codex (config.toml and profile files, -c overrides, features, flags,
    /// thread/start params, the path your launcher expects in the npm package), offline
    /// and without a model (`config check`); a profile written from an existing codex home
    /// (`config init`). See docs/config.md.
    ///
    /// Examples:
    ///   codex-parity config init --codex-home ~/.codex --out codex-profile.toml -- app-server
    ///   codex-parity config check codex-profile.toml 0.131.0 0.171.0
    ///
    /// Exit status of check: 0 every item accepted on every release named (warnings too,
    /// unless --strict), 1 otherwise, 2 a bad profile (file:line:column named) or a codex
    /// that cannot be had.
    #[command(verbatim_doc_comment)]
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Run the mock Responses API sidecar (same as `codex-parity-sidecar`).
    #[command(disable_help_flag = true)]
    Sidecar {
        /// Arguments for the sidecar (see `codex-parity sidecar --help`).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

/// The subcommands of `baselines`.
#[derive(Debug, Subcommand)]
enum BaselinesCommand {
    /// Judge a sweep's results again by today's baselines and audit every entry.
    ///
    /// Reads DIR/VERSION/results.json (from `codex-parity sweep --out DIR`, or any runs'
    /// --report directories): the raw drift and failures each cell kept, judged again by
    /// the baselines (compiled in, --fixtures, or CODEX_PARITY_EXPECTED). Prints the counts
    /// per release, every cell that now fails, and the findings:
    ///   stale: ENTRY did not happen on RELEASES; the sweep supports RANGES
    ///   unlisted: SCENARIO KEY = VALUE on RELEASES (seen on RANGES)
    ///   overlap / contradicting: two entries list the same drift on RELEASES
    ///   not swept: published releases inside the sweep's span that it did not run
    /// RANGES are written as a baseline's `versions` would be: each ends where codex changed.
    ///
    /// Examples:
    ///   codex-parity baselines audit sweep
    ///   codex-parity baselines audit sweep --table docs/releases.md
    ///
    /// Exit status: 0 when no cell fails and nothing is found, 1 otherwise, 2 on bad input
    /// (an unreadable results.json, an entry naming no known scenario, a range that
    /// includes no published release: the entry is named).
    #[command(verbatim_doc_comment)]
    Audit(AuditArgs),
}

impl Cli {
    /// Runs the subcommand; its exit status.
    pub(crate) fn run(self) -> ExitCode {
        if let Some(dir) = &self.fixtures
            && let Err(e) = codex_parity::harness::expectations::use_dir(dir)
        {
            eprintln!("codex-parity: error: {e:#}");
            return ExitCode::from(2);
        }
        // Removed when this returns; left by a SIGKILL, removed by the next run.
        let _run_dir = if self.command.makes_worlds() {
            match claim_run_dir() {
                Ok(dir) => Some(dir),
                Err(e) => {
                    eprintln!("codex-parity: error: {e:#}");
                    return ExitCode::from(2);
                }
            }
        } else {
            None
        };
        match self.command {
            Command::Sidecar { args } => sidecar::sidecar(args),
            Command::List { markdown, sources } => list::list(markdown, &sources),
            Command::Install {
                versions,
                compare,
                sample,
                prune,
                cache_max,
            } => {
                let prune = prune.then_some(install::Prune { cache_max });
                with_runtime(install::install_versions(versions, compare, sample, prune))
            }
            Command::Merge {
                dirs,
                report,
                replace_report,
            } => with_runtime(merge::merge(dirs, report, replace_report)),
            Command::Run(args) => with_runtime(run::run(args)),
            Command::Record(args) => with_runtime(record::record(args)),
            Command::RecordRelay { session, args } => with_runtime(record::relay(session, args)),
            Command::Guard { run_dir } => {
                ExitCode::from(codex_parity::harness::guard::serve(run_dir) as u8)
            }
            Command::ClientCheck(args) => with_runtime(client_check::client_check(args)),
            Command::Upgrade(args) => with_runtime(upgrade::upgrade(args)),
            Command::ClientCheckServe { dir, args } => exit_status(client_check::serve(dir, args)),
            Command::Review(args) => exit_status(review::review(args)),
            Command::Bench(args) => with_runtime(bench::bench(args)),
            Command::Bisect(args) => with_runtime(bisect::bisect(args)),
            Command::SchemaDiff { from, to, json } => {
                with_runtime(schema_diff::schema_diff(from, to, json))
            }
            Command::Surface { command } => with_runtime(surface::surface(command)),
            Command::Config { command } => with_runtime(config::config(command)),
            Command::Sweep(args) => with_runtime(sweep::sweep(args)),
            Command::Baselines(BaselinesCommand::Audit(args)) => {
                with_runtime(sweep::baselines_audit(args))
            }
        }
    }
}

impl Command {
    /// Whether the command starts codex or makes temporary directories for it: it then
    /// works in a run directory of its own ([`run_dir`]).
    fn makes_worlds(&self) -> bool {
        matches!(
            self,
            Command::Run(_)
                | Command::Record(_)
                | Command::ClientCheck(_)
                | Command::Upgrade(_)
                | Command::Bench(_)
                | Command::Bisect(_)
                | Command::SchemaDiff { .. }
                | Command::Surface { .. }
                | Command::Config { .. }
                | Command::Sweep(_)
        )
    }
}

/// Claims this process's run directory ([`run_dir::claim_for_process`]: in memory unless
/// `TMPDIR` says where), saying on stderr which directories of killed runs it removed.
fn claim_run_dir() -> anyhow::Result<run_dir::RunDir> {
    let (dir, removed) = run_dir::claim_for_process()?;
    if let Some(parent) = removed.first().and_then(|p| p.parent()) {
        eprintln!(
            "codex-parity: removed {} directory(ies) of killed runs from {}",
            removed.len(),
            parent.display()
        );
    }
    Ok(dir)
}

/// Runs `fut` on a new tokio runtime; an error is printed and exits with 2.
fn with_runtime(fut: impl std::future::Future<Output = anyhow::Result<ExitCode>>) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("codex-parity: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    exit_status(runtime.block_on(fut))
}

/// A command's exit status: its own, or 2 with the error on stderr.
fn exit_status(result: anyhow::Result<ExitCode>) -> ExitCode {
    result.unwrap_or_else(|e| {
        eprintln!("codex-parity: error: {e:#}");
        ExitCode::from(2)
    })
}
