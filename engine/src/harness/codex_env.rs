//! The environment a harness-started `codex app-server` gets: nothing of the caller's but
//! `PATH` (no `OPENAI_*` or `CODEX_*`), `HOME` and `TMPDIR` inside the world's directory,
//! `CODEX_HOME`, the mock's API key, and every proxy variable pointed at one proxy so that
//! any request not to the sidecar is caught (see [`crate::harness::egress_trap`]).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The API key codex sends to the mock (`authorization: Bearer ...`).
pub const MOCK_API_KEY: &str = "sk-codex-parity-mock";

/// Makes the directories of a world at `root` (`codex-home`, `workspace`, and the `HOME` and
/// `TMPDIR` of [`codex_env`]); returns `CODEX_HOME` and the workspace.
pub fn make_dirs(root: &Path) -> anyhow::Result<(PathBuf, PathBuf)> {
    let (home, workspace) = (root.join("codex-home"), root.join("workspace"));
    for d in [
        &home,
        &workspace,
        &root.join("user-home"),
        &root.join("tmp"),
    ] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    Ok((home, workspace))
}

/// The environment of a codex started in the world directory `root` with `CODEX_HOME` `home`
/// and its proxy at `proxy_url` (`root/user-home` is `HOME`, `root/tmp` is `TMPDIR`: a
/// temporary directory of its own keeps what codex stages under it, the sandbox's mount
/// targets and their lock, from being shared with concurrent worlds).
pub fn codex_env(root: &Path, home: &Path, proxy_url: &str) -> Vec<(OsString, OsString)> {
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        env.push(("PATH".into(), path));
    }
    env.push(("HOME".into(), root.join("user-home").into()));
    env.push(("TMPDIR".into(), root.join("tmp").into()));
    env.push(("CODEX_HOME".into(), home.into()));
    env.push(("MOCK_API_KEY".into(), MOCK_API_KEY.into()));
    env.push(("RUST_LOG".into(), "warn".into()));
    env.push(("LANG".into(), "C.UTF-8".into()));
    for var in [
        "HTTPS_PROXY",
        "HTTP_PROXY",
        "ALL_PROXY",
        "https_proxy",
        "http_proxy",
        "all_proxy",
    ] {
        env.push((var.into(), proxy_url.into()));
    }
    for var in ["NO_PROXY", "no_proxy"] {
        env.push((var.into(), "127.0.0.1,localhost".into()));
    }
    env
}
