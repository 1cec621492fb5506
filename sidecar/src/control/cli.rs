//! The `codex-parity-sidecar` program: arguments, config loading, the ready line and the
//! JSONL command loop. Callable in-process through [`main_with_args`] or [`run`].
//!
//! ```no_run
//! // What `codex-parity sidecar --port 0` can do from another binary:
//! let status = codex_parity_sidecar::cli::main_with_args(["codex-parity-sidecar", "--lenient"]);
//! std::process::exit(status);
//! ```

use std::ffi::OsString;
use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use crate::control::protocol::{Command, PROTOCOL_VERSION, Reply, parse_command, push_id};
use crate::mock::script::{self, Scripted};
use crate::mock::server::{RequestFilter, Server};

/// Exit status when the configuration is unusable (before any ready line).
pub const EXIT_BAD_CONFIG: i32 = 2;
/// Exit status when scripted responses were left over or requests were unscripted.
pub const EXIT_LEFTOVERS: i32 = 3;

/// Command-line arguments of `codex-parity-sidecar`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "codex-parity-sidecar",
    version,
    about = "A mock OpenAI Responses API on loopback, steered by JSONL on stdin/stdout"
)]
pub struct Args {
    /// JSON file `{"responses": [...]}` with the initial script.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// Port to listen on (0: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Exit with status 0 even when responses were left over or requests were unscripted.
    #[arg(long)]
    pub lenient: bool,
}

/// Parses `args` (the first item is the program name) and runs the sidecar to the end,
/// returning the process exit status. Builds its own tokio runtime; when called from inside
/// one, it runs on a separate thread.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    if args.get(1).is_some_and(|a| a == "mcp") {
        let mut rest = args;
        let program = rest.remove(0);
        rest[0] = format!("{} mcp", program.to_string_lossy()).into();
        return crate::mcp::main_with_args(rest);
    }
    match Args::try_parse_from(args) {
        Ok(args) => run_blocking(args),
        Err(e) => {
            // --help and --version print to stdout and exit 0; usage errors exit 2.
            let _ = e.print();
            e.exit_code()
        }
    }
}

/// Runs the sidecar on a fresh current-thread runtime and returns the exit status.
pub fn run_blocking(args: Args) -> i32 {
    let go = move || {
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => runtime,
            Err(e) => {
                eprintln!("codex-parity-sidecar: error: cannot start the async runtime: {e}");
                return 1;
            }
        };
        let status = match runtime.block_on(run(args)) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("codex-parity-sidecar: error: {e:#}");
                1
            }
        };
        // Don't wait for in-flight delayed responses.
        runtime.shutdown_background();
        status
    };
    if tokio::runtime::Handle::try_current().is_ok() {
        std::thread::scope(|scope| scope.spawn(go).join().unwrap_or(1))
    } else {
        go()
    }
}

/// Loads the config file's `responses`.
pub fn load_config(path: &std::path::Path) -> anyhow::Result<Vec<Scripted>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read config {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("config {} is not JSON", path.display()))?;
    let object = value
        .as_object()
        .with_context(|| format!("config {} is not a JSON object", path.display()))?;
    if let Some(key) = object.keys().find(|k| k.as_str() != "responses") {
        anyhow::bail!(
            "config {}: unknown key {key:?} (expected {{\"responses\": [...]}})",
            path.display()
        );
    }
    match object.get("responses") {
        None => Ok(Vec::new()),
        Some(list) => {
            script::parse_list(list).with_context(|| format!("config {}", path.display()))
        }
    }
}

/// Runs the sidecar: starts the server, prints the ready line, serves commands from stdin
/// until `shutdown` or EOF. Returns the exit status; a bad config returns
/// [`EXIT_BAD_CONFIG`] after printing the problem to stderr.
pub async fn run(args: Args) -> anyhow::Result<i32> {
    let (server, script) = match start(&args).await {
        Ok(started) => started,
        Err(e) => {
            eprintln!("codex-parity-sidecar: error: {e:#}");
            return Ok(EXIT_BAD_CONFIG);
        }
    };
    server
        .enqueue(&script)
        .context("the config's responses cannot be queued")?;
    let ready = Reply::Ready {
        server_url: server.server_url(),
        base_url: server.base_url(),
        protocol: PROTOCOL_VERSION,
        pid: std::process::id(),
    };
    write_line(&ready.to_line(None))?;
    eprintln!("codex-parity-sidecar: listening on {}", server.server_url());

    let (mut lines, mut closed) = spawn_stdin_reader();
    while let Some(line) = lines.recv().await {
        if line.trim().is_empty() {
            continue;
        }
        let (id, command) = parse_command(&line);
        let (reply, exit) = match command {
            // A command may wait a long time (`requests` with `min`, `wait_gate`): stdin's
            // end during the wait ends the sidecar at once, so that it never outlives its
            // owner by the length of a wait. A command done at once is answered first, so
            // commands piped in before the end still run.
            Ok(command) => tokio::select! {
                biased;
                done = handle(&server, &args, command, id.as_ref()) => done,
                _ = closed.wait_for(|c| *c) => break,
            },
            Err(e) => {
                eprintln!("codex-parity-sidecar: bad command: {e}");
                let reply = Reply::Error {
                    message: e.to_string(),
                };
                (reply.to_line(id.as_ref()), None)
            }
        };
        write_line(&reply)?;
        if let Some(status) = exit {
            return Ok(status);
        }
    }
    eprintln!("codex-parity-sidecar: stdin closed, shutting down");
    Ok(finish(&server, &args).1)
}

async fn start(args: &Args) -> anyhow::Result<(Server, Vec<Scripted>)> {
    let script = match &args.config {
        Some(path) => load_config(path)?,
        None => Vec::new(),
    };
    let server = Server::start(&args.host, args.port).await?;
    Ok((server, script))
}

/// Runs one command: its reply line, and the exit status when it ends the sidecar.
async fn handle(
    server: &Server,
    args: &Args,
    command: Command,
    id: Option<&Value>,
) -> (String, Option<i32>) {
    let reply = match command {
        Command::Requests {
            min,
            timeout_ms,
            since,
            all,
        } => {
            // Rendered straight to text: a long capture never exists twice as parsed JSON.
            let filter = RequestFilter { since, all };
            let min = usize::try_from(min).unwrap_or(usize::MAX);
            server
                .wait_for(filter, min, Duration::from_millis(timeout_ms))
                .await;
            return (requests_reply_line(server, filter, id), None);
        }
        Command::Shutdown => {
            let (reply, status) = finish(server, args);
            return (reply.to_line(id), Some(status));
        }
        Command::Enqueue { responses } => match server.enqueue(&responses) {
            Ok(pending) => Reply::Enqueued { pending },
            Err(e) => Reply::Error {
                message: format!("enqueue: {e}"),
            },
        },
        Command::Models { body } => {
            server.set_models(&body);
            Reply::Ok
        }
        Command::Status => Reply::Status(server.status()),
        Command::Reset => {
            server.reset().await;
            Reply::Ok
        }
        Command::Release { gate } => {
            let held = server.release(&gate);
            Reply::Released { gate, held }
        }
        Command::WaitGate { gate, timeout_ms } => {
            let held = server
                .wait_gate(&gate, Duration::from_millis(timeout_ms))
                .await;
            Reply::Gate { gate, held }
        }
        Command::Websocket {
            warmup,
            connections,
        } => Reply::Websocket {
            connections: server.websocket(warmup, connections),
        },
    };
    (reply.to_line(id), None)
}

/// The shutdown reply and exit status; names leftovers on stderr.
fn finish(server: &Server, args: &Args) -> (Reply, i32) {
    let leftovers = server.leftovers();
    for line in leftovers.pending.iter() {
        eprintln!("codex-parity-sidecar: never served: {line}");
    }
    for line in leftovers.unscripted.iter() {
        eprintln!("codex-parity-sidecar: unscripted request: {line}");
    }
    for gate in leftovers.unreleased_gates.iter() {
        eprintln!("codex-parity-sidecar: gate never released: {gate:?}");
    }
    let clean = leftovers.pending.is_empty()
        && leftovers.unscripted.is_empty()
        && leftovers.unreleased_gates.is_empty();
    let status = if clean || args.lenient {
        0
    } else {
        EXIT_LEFTOVERS
    };
    let reply = Reply::Shutdown {
        pending: leftovers.pending.len(),
        unscripted: leftovers.unscripted.len() as u64,
    };
    (reply, status)
}

fn write_line(line: &str) -> anyhow::Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout
        .write_all(line.as_bytes())
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush())
        .context("cannot write to stdout")
}

/// Reads stdin lines on a plain thread (so no runtime ever waits on a blocking read);
/// the channel closes at EOF or on a read error, and the watch turns `true` then, even
/// while lines read before it are still queued.
fn spawn_stdin_reader() -> (mpsc::UnboundedReceiver<String>, watch::Receiver<bool>) {
    let (sender, receiver) = mpsc::unbounded_channel();
    let (closed_tx, closed) = watch::channel(false);
    let spawned = std::thread::Builder::new()
        .name("sidecar-stdin".into())
        .spawn(move || {
            let mut stdin = std::io::stdin().lock();
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match stdin.read_until(b'\n', &mut buffer) {
                    Ok(0) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buffer);
                        let line = line.trim_end_matches(['\n', '\r']).to_string();
                        if sender.send(line).is_err() {
                            break;
                        }
                    }
                    Err(e) => {
                        eprintln!("codex-parity-sidecar: cannot read stdin: {e}");
                        break;
                    }
                }
            }
            let _ = closed_tx.send(true);
        });
    if let Err(e) = spawned {
        eprintln!("codex-parity-sidecar: cannot start the stdin reader: {e}");
    }
    (receiver, closed)
}

/// The `requests` reply line (without newline) for `filter`, carrying `id` if given,
/// rendered one request at a time, so a long capture never exists twice as parsed JSON.
fn requests_reply_line(server: &Server, filter: RequestFilter, id: Option<&Value>) -> String {
    let mut line = String::from("{\"type\":\"requests\",\"requests\":[");
    let mut first = true;
    server.each_request(filter, |request| {
        if !first {
            line.push(',');
        }
        first = false;
        match serde_json::to_string(&request) {
            Ok(text) => line.push_str(&text),
            // Plain data always serializes; never emit a broken line.
            Err(_) => line.push_str("null"),
        }
    });
    line.push_str("]}");
    push_id(&mut line, id);
    line
}
