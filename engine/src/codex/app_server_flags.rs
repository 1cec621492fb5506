//! What `codex app-server` offers besides stdio, read from its own help (see
//! [`crate::codex::help`]): the transports `--listen` supports (`stdio`, `unix`, `ws`, `off`),
//! the `--ws-auth` modes, and its subcommands (`daemon`, `proxy`, …). The listener scenarios
//! (group I) decide "not applicable" from these, never from a version number.

use std::collections::BTreeSet;

use crate::codex::binaries::CodexBinary;
use crate::codex::help::Help;

/// `codex app-server --help`, read for what the listener scenarios need.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppServerFlags {
    /// The whole help (flags, subcommands).
    pub help: Help,
    /// The schemes `--listen` lists as supported (`stdio`, `unix`, `ws`, `off`).
    pub listen: BTreeSet<String>,
    /// The `--ws-auth` modes (`capability-token`, `signed-bearer-token`).
    pub ws_auth: BTreeSet<String>,
}

impl AppServerFlags {
    /// Reads `codex app-server --help` of `binary` (cached, see [`crate::codex::help`]).
    pub async fn detect(binary: &CodexBinary) -> anyhow::Result<AppServerFlags> {
        Ok(AppServerFlags::from_help(
            Help::read(binary, &["app-server"]).await?,
        ))
    }

    /// What one help text says.
    pub fn from_help(help: Help) -> AppServerFlags {
        // "Supported values: `stdio://` (default), `unix://`, `unix://PATH`, `ws://IP:PORT`,
        // `off`": the backquoted words, each up to its `://`.
        let listen = help
            .flag_text("--listen")
            .map(|text| {
                let after = text.split_once("Supported values:").map_or("", |(_, v)| v);
                after
                    .split('`')
                    .skip(1)
                    .step_by(2)
                    .map(|v| v.split("://").next().unwrap_or(v).to_string())
                    .collect()
            })
            .unwrap_or_default();
        // "[possible values: capability-token, signed-bearer-token]"
        let ws_auth = help
            .flag_text("--ws-auth")
            .and_then(|text| {
                let (_, values) = text.split_once("[possible values:")?;
                let values = values.split(']').next()?;
                Some(values.split(',').map(|v| v.trim().to_string()).collect())
            })
            .unwrap_or_default();
        AppServerFlags {
            help,
            listen,
            ws_auth,
        }
    }

    /// `Ok` when `--listen` supports `scheme` (`ws`, `unix`).
    pub fn require_listen(&self, scheme: &str) -> Result<(), String> {
        if self.listen.contains(scheme) {
            Ok(())
        } else {
            Err(format!(
                "codex app-server --help lists no {scheme}:// among the values of --listen"
            ))
        }
    }

    /// `Ok` when `--ws-auth` takes `mode`.
    pub fn require_ws_auth(&self, mode: &str) -> Result<(), String> {
        if self.ws_auth.contains(mode) {
            Ok(())
        } else {
            Err(format!(
                "codex app-server --help lists no --ws-auth mode {mode}"
            ))
        }
    }

    /// `Ok` when `codex app-server` has the subcommand `command` (`daemon`, `proxy`).
    pub fn require_command(&self, command: &str) -> Result<(), String> {
        if self.help.commands.contains(command) {
            Ok(())
        } else {
            Err(format!(
                "codex app-server --help lists no {command} subcommand"
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The part of codex 0.171.0's `app-server --help` read here, as it prints it.
    const HELP: &str = "Usage: codex app-server [OPTIONS] [COMMAND]

Commands:
  daemon                Manage the local app-server daemon
  proxy                 Proxy stdio bytes to the running app-server control socket
  help                  Print this message or the help of the given subcommand(s)

Options:
      --listen <URL>
          Transport endpoint URL. Supported values: `stdio://` (default), `unix://`, `unix://PATH`,
          `ws://IP:PORT`, `off`
          
          [default: stdio://]

      --ws-auth <MODE>
          Authentication mode for incoming WebSocket connections
          
          [possible values: capability-token, signed-bearer-token]

      --ws-token-file <PATH>
          Absolute path to the capability-token file
";

    #[test]
    fn listen_schemes_auth_modes_and_commands_come_from_the_help() {
        let flags = AppServerFlags::from_help(Help::parse(HELP));
        let listen: Vec<&str> = flags.listen.iter().map(String::as_str).collect();
        assert_eq!(listen, ["off", "stdio", "unix", "ws"]);
        let modes: Vec<&str> = flags.ws_auth.iter().map(String::as_str).collect();
        assert_eq!(modes, ["capability-token", "signed-bearer-token"]);
        assert_eq!(flags.require_listen("ws"), Ok(()));
        assert_eq!(flags.require_command("proxy"), Ok(()));
        assert_eq!(flags.require_ws_auth("capability-token"), Ok(()));
        let none = AppServerFlags::from_help(Help::parse("Usage: codex app-server\n"));
        assert_eq!(
            none.require_listen("unix"),
            Err("codex app-server --help lists no unix:// among the values of --listen".into())
        );
        assert_eq!(
            none.require_ws_auth("capability-token"),
            Err("codex app-server --help lists no --ws-auth mode capability-token".into())
        );
        assert_eq!(
            none.require_command("daemon"),
            Err("codex app-server --help lists no daemon subcommand".into())
        );
    }
}
