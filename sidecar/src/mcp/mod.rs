//! A scripted MCP server on stdio, for codex to launch from `config.toml`
//! (`[mcp_servers.NAME] command = ...`): `codex-parity-sidecar mcp --script FILE --capture
//! FILE` (also `codex-parity sidecar mcp ...`). It offers the [`script`]'s tools, answers
//! calls as scripted (text, tool error, delay, crash, malformed line) and appends every
//! message it receives to the capture file as JSONL ([`server`]). See `docs/mcp-server.md`.

pub mod script;
pub mod server;

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use clap::Parser;

pub use script::{Fault, McpReply, McpScript, McpTool};
pub use server::{Action, Capture, PROTOCOL_VERSIONS, Session};

/// Command-line arguments of `codex-parity-sidecar mcp`.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "codex-parity-sidecar mcp",
    about = "A scripted MCP server speaking JSON-RPC on stdin/stdout"
)]
pub struct McpArgs {
    /// JSON file `{"tools": [...]}` with the tools and their answers.
    #[arg(long, value_name = "FILE")]
    pub script: PathBuf,
    /// JSONL file every received message (and start, crash, end) is appended to.
    #[arg(long, value_name = "FILE")]
    pub capture: Option<PathBuf>,
}

/// Parses `args` (the first item is the program name) and serves until stdin closes;
/// returns the exit status.
pub fn main_with_args<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    match McpArgs::try_parse_from(args) {
        Ok(args) => match run(&args) {
            Ok(status) => status,
            Err(e) => {
                eprintln!("codex-parity mcp: error: {e:#}");
                2
            }
        },
        Err(e) => {
            let _ = e.print();
            e.exit_code()
        }
    }
}

/// Loads the script, opens the capture and serves.
pub fn run(args: &McpArgs) -> anyhow::Result<i32> {
    let script = McpScript::load(&args.script)?;
    let file = match &args.capture {
        Some(path) => Some(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("cannot open the capture {}", path.display()))?,
        ),
        None => None,
    };
    let capture = Capture::new(file);
    if let Some(status) = script.exit_at_start {
        capture.record(serde_json::json!({"event": "exitAtStart", "status": status}));
        return Ok(status);
    }
    Ok(server::serve(&Session::new(script), &capture))
}
