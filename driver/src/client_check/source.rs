//! Where the session `client-check` serves comes from (`--from`): a transcript from a
//! run's report (`DIR/transcripts/VERSION/SCENARIO.json`, or a kept world's
//! `transcript.json`), the directory `record --keep` left (its relay logs: every line in
//! both directions, so the client's answers are checked too, and each `codex exec` run
//! with its arguments, stdin, stream and exit status), or a scenario file (one `record`
//! wrote, or any), which is run on a real codex for the session it produces, its `reply`
//! steps being the answers the client is held against. Each source holds app-server
//! connections, `codex exec` runs, or both ([`Source::kinds`], read without running
//! codex), and says whether it was recorded over an app-server listener
//! ([`Source::over_listener`]).
//! `as:VERSION` takes the same session from another version: the sibling transcript of
//! the report, or the scenario file run on that version.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::app_server::transcript::Sent;
use crate::client_check::placeholders::Placeholders;
use crate::client_check::script::{ExecScript, Kinds, MockStep, Script};
use crate::codex::binaries::{self, CodexBinary, OneBinary};
use crate::harness::outcome::Outcome;
use crate::harness::sidecar::SidecarLauncher;
use crate::plan::Options;
use crate::plan::session::Session;
use crate::record::{relay, timeline};
use crate::scenario_file::load::Compiled;
use crate::scenario_file::matching;
use crate::scenario_file::steps::Step as FileStep;
use crate::scenario_file::steps::reply::ReplyStep;

/// How a scenario file `codex-parity record` wrote begins.
pub const RECORDED_MARK: &str = "# Recorded by `codex-parity record`";

/// What the notes of a file `record --listen` wrote say.
pub const LISTENER_MARK: &str = "recorded over the app-server's WebSocket listener";

/// A session to serve.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// A transcript of a run (normalised; its placeholders get concrete values).
    Transcript(PathBuf),
    /// The relay logs of `record --keep`: its directory, or one `sessions/N.jsonl`.
    RelayLog(PathBuf),
    /// A scenario file, run on codex.
    ScenarioFile(PathBuf),
}

impl Source {
    /// What `--from PATH` names.
    pub fn parse(path: &Path) -> anyhow::Result<Source> {
        let kinds = "a scenario file (.toml, e.g. one `codex-parity record` wrote), a \
                     transcript of a run's report (DIR/transcripts/VERSION/SCENARIO.json) or \
                     the directory `codex-parity record --keep` kept";
        if !path.exists() {
            bail!("no such source: {}; --from takes {kinds}", path.display());
        }
        if path.is_dir() {
            // The kept directory holds the recording's session directory.
            for session in [path.join("session"), path.to_path_buf()] {
                if relay::logs_dir(&session).is_dir() {
                    return Ok(Source::RelayLog(session));
                }
            }
            let transcripts = path.join("transcripts");
            if transcripts.is_dir() {
                bail!(
                    "{} is a run's report: name one of its transcripts, \
                     e.g. --from {}/VERSION/SCENARIO.json",
                    path.display(),
                    transcripts.display()
                );
            }
            bail!("{} holds no session; --from takes {kinds}", path.display());
        }
        match path.extension().and_then(|e| e.to_str()) {
            Some("toml") => Ok(Source::ScenarioFile(path.to_path_buf())),
            Some("json") => Ok(Source::Transcript(path.to_path_buf())),
            Some("jsonl") => Ok(Source::RelayLog(path.to_path_buf())),
            _ => bail!("{} is none of {kinds}", path.display()),
        }
    }

    /// Whether it is a recording of the integrator's own client: a `record --keep`
    /// directory, or a scenario file `record` wrote (its first line says so). The same client
    /// is then expected to go through the whole session (`--whole-session`'s default).
    pub fn is_recording(&self) -> bool {
        match self {
            Source::RelayLog(_) => true,
            Source::Transcript(_) => false,
            Source::ScenarioFile(path) => {
                std::fs::read_to_string(path).is_ok_and(|text| text.starts_with(RECORDED_MARK))
            }
        }
    }

    /// What it holds: app-server connections, `codex exec` runs, or both, read without
    /// running codex (a scenario file's steps, a transcript's entries, the relay logs).
    pub fn kinds(&self) -> anyhow::Result<Kinds> {
        let kinds = |app_server: bool, exec: bool| Kinds {
            app_server: app_server || !exec,
            exec,
        };
        Ok(match self {
            Source::ScenarioFile(path) => {
                let compiled =
                    crate::scenario_file::compile_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
                let exec = compiled
                    .steps
                    .iter()
                    .any(|s| matches!(s.item, FileStep::Exec(_)));
                kinds(compiled.app_server, exec)
            }
            Source::Transcript(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("reading {}", path.display()))?;
                let doc: Value = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not JSON", path.display()))?;
                let script =
                    Script::from_sent("", "", &crate::drift::transcript::connections_of(&doc));
                script.kinds()
            }
            Source::RelayLog(path) => {
                let (app, exec) = if path.is_dir() {
                    let all = timeline::read(&relay::logs_dir(path))?;
                    (!all.app.is_empty(), !all.exec.is_empty())
                } else {
                    let exec = matches!(
                        relay::read_log(path)?.first(),
                        Some(relay::LogEntry::Start { exec: true, .. })
                    );
                    (!exec, exec)
                };
                kinds(app, exec)
            }
        })
    }

    /// Whether the session was recorded from a client of an app-server listener (`record
    /// --listen`): its client connects to `$CODEX_PARITY_LISTEN` rather than starting codex.
    pub fn over_listener(&self) -> bool {
        match self {
            Source::ScenarioFile(path) => std::fs::read_to_string(path)
                .is_ok_and(|text| text.starts_with(RECORDED_MARK) && text.contains(LISTENER_MARK)),
            Source::RelayLog(path) => {
                let logs = if path.is_dir() {
                    timeline::read(&relay::logs_dir(path)).map(|s| s.app)
                } else {
                    relay::read_log(path).map(|e| vec![timeline::session(e)])
                };
                logs.is_ok_and(|app| {
                    app.iter().any(|s| {
                        s.args
                            .windows(2)
                            .any(|w| w[0] == "--listen" && w[1].starts_with("ws://"))
                    })
                })
            }
            Source::Transcript(_) => false,
        }
    }

    /// What the report calls it.
    pub fn describe(&self) -> String {
        match self {
            Source::Transcript(p) => format!("transcript {}", p.display()),
            Source::RelayLog(p) => format!("recorded session {}", p.display()),
            Source::ScenarioFile(p) => format!("scenario file {}", p.display()),
        }
    }

    /// The session as codex `version` sends it (`None`: as the source has it, or for a
    /// scenario file the `codex` given); `world` stands for a transcript's `<world>`.
    pub async fn script(
        &self,
        version: Option<&str>,
        codex: &OneBinary,
        world: &Path,
    ) -> anyhow::Result<Script> {
        match self {
            Source::Transcript(path) => {
                let path = match version {
                    Some(v) => sibling(path, v)?,
                    None => path.clone(),
                };
                transcript(&path, world)
            }
            Source::RelayLog(path) => match version {
                Some(v) => bail!(
                    "as:{v} needs the session as another codex sent it: a recorded session \
                     holds one codex's; pass the scenario file `record` wrote (--from F.toml)"
                ),
                None => relay_log(path).await,
            },
            Source::ScenarioFile(path) => {
                let binary = match version {
                    Some(v) => OneBinary::version(v).resolve().await?,
                    None => codex.resolve().await?,
                };
                scenario_file(path, binary).await
            }
        }
    }
}

/// The same transcript of codex `version`: `…/transcripts/VERSION/SCENARIO.json`.
fn sibling(path: &Path, version: &str) -> anyhow::Result<PathBuf> {
    let folder = path.parent().and_then(Path::parent);
    let (Some(folder), Some(name)) = (folder, path.file_name()) else {
        bail!(
            "as:{version}: {} is not in a report's transcripts/VERSION/",
            path.display()
        );
    };
    let other = folder.join(version).join(name);
    if other.is_file() {
        return Ok(other);
    }
    let mut have: Vec<String> = std::fs::read_dir(folder)
        .map(|d| {
            d.flatten()
                .filter(|e| e.path().join(name).is_file())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    have.sort();
    bail!(
        "as:{version}: the report has no transcript of {} on codex {version} ({} missing); it \
         has it for: {}. Run the report with that version too (`codex-parity run --compare \
         --report DIR`) or pass a scenario file",
        name.to_string_lossy(),
        other.display(),
        if have.is_empty() {
            "none".into()
        } else {
            have.join(", ")
        }
    )
}

/// A transcript document (`crate::drift::transcript`) as a script.
fn transcript(path: &Path, world: &Path) -> anyhow::Result<Script> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let doc: Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let version = doc["codex"].as_str().unwrap_or("unknown").to_string();
    if !doc["connections"].is_array() {
        bail!(
            "{} is not a transcript: it has no \"connections\" (see docs/client-check.md)",
            path.display()
        );
    }
    let mut placeholders = Placeholders::new(&version, world);
    let connections: Vec<Vec<Sent>> = crate::drift::transcript::connections_of(&doc)
        .iter()
        .map(|sent| placeholders.messages(sent))
        .collect();
    Ok(Script::from_sent(
        &format!("transcript {}", path.display()),
        &version,
        &connections,
    ))
}

/// The relay logs of `record --keep` as a script: each app-server session a connection,
/// each `codex exec` a run.
async fn relay_log(path: &Path) -> anyhow::Result<Script> {
    let (sessions, execs, session) = if path.is_dir() {
        let all = timeline::read(&relay::logs_dir(path))?;
        (all.app, all.exec, Some(path))
    } else {
        let session = path.parent().and_then(Path::parent);
        let entries = relay::read_log(path)?;
        match entries.first() {
            Some(relay::LogEntry::Start { exec: true, .. }) => {
                (vec![], vec![timeline::exec_session(entries)], session)
            }
            _ => (vec![timeline::session(entries)], vec![], session),
        }
    };
    let version = match session {
        Some(session) => version_of_relay(session).await,
        None => "unknown".into(),
    };
    let rpcs: Vec<_> = sessions.into_iter().map(|s| s.rpcs).collect();
    let mut script = Script::from_rpcs(
        &format!("recorded session {}", path.display()),
        &version,
        &rpcs,
    );
    script.execs = execs.iter().map(ExecScript::from_session).collect();
    Ok(script)
}

/// The version of the codex a recording relayed to, as its binary reports it.
async fn version_of_relay(session: &Path) -> String {
    let config: Option<relay::RelayConfig> = std::fs::read_to_string(relay::config_path(session))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    match config {
        Some(c) => binaries::probe(&c.codex)
            .await
            .map_or_else(|_| "unknown".into(), |b| b.version),
        None => "unknown".into(),
    }
}

/// A scenario file run on `binary`: the session its app-servers sent.
async fn scenario_file(path: &Path, binary: CodexBinary) -> anyhow::Result<Script> {
    let compiled = crate::scenario_file::compile_file(path).map_err(|e| anyhow::anyhow!("{e}"))?;
    let replies = replies(&compiled);
    let scenario = crate::scenario_file::scenario(compiled);
    eprintln!(
        "codex-parity: running {} on codex {} for the session to serve",
        path.display(),
        binary.version
    );
    let session = Session::with_options(
        binary.clone(),
        SidecarLauncher::current_exe()?,
        Options::default(),
    )
    .await?;
    let ran = session.run(&scenario).await;
    let mut failed = None;
    match &ran.outcome {
        Outcome::NotApplicable(why) => {
            bail!(
                "{} does not apply to codex {}: {why}",
                path.display(),
                binary.version
            )
        }
        Outcome::Failed(why) => {
            let note = format!(
                "the session served is of a run of {} that failed on codex {} ({}): what \
                 codex sent anyway",
                path.display(),
                binary.version,
                why.lines().next().unwrap_or_default()
            );
            eprintln!("codex-parity: warning: {note}");
            failed = Some(note);
        }
        _ => {}
    }
    let connections: Vec<Vec<Sent>> = ran.transcripts.into_iter().map(|c| c.messages).collect();
    let mut script = Script::from_sent(
        &format!("{} on codex {}", path.display(), binary.version),
        &binary.version,
        &connections,
    );
    for step in script.connections.iter_mut().flatten() {
        if let MockStep::Ask {
            method, expected, ..
        } = step
        {
            *expected = replies.get(method.as_str()).cloned();
        }
    }
    script.notes.extend(failed);
    Ok(script)
}

/// The answer a file's `reply` steps give each server request method (`{"result": …}` or
/// `{"error": …}`), for the methods with one reply and no variables in it: what the client
/// is held against. A method the file answers in several ways, or with a captured value,
/// is left unchecked.
fn replies(compiled: &Compiled) -> BTreeMap<String, Value> {
    let mut seen: BTreeMap<String, Option<Value>> = BTreeMap::new();
    for placed in &compiled.steps {
        let FileStep::Reply(ReplyStep {
            method,
            result,
            error,
            unanswered: false,
        }) = &placed.item
        else {
            continue;
        };
        let answer = match (result, error) {
            (Some(r), _) => json!({"result": matching::literals(r)}),
            (None, Some(e)) => json!({"error": matching::literals(e)}),
            (None, None) => continue,
        };
        let fixed = matching::references(&answer).is_empty();
        let entry = seen
            .entry(method.clone())
            .or_insert_with(|| Some(answer.clone()));
        if !fixed || entry.as_ref() != Some(&answer) {
            *entry = None;
        }
    }
    seen.into_iter()
        .filter_map(|(m, a)| a.map(|a| (m, a)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_source_is_named_by_what_it_is_and_bad_ones_say_what_to_give() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let no = Source::parse(&p.join("nope.json")).unwrap_err().to_string();
        assert!(
            no.contains("no such source") && no.contains("record --keep"),
            "{no}"
        );
        std::fs::write(p.join("s.toml"), "").unwrap();
        assert_eq!(
            Source::parse(&p.join("s.toml")).unwrap(),
            Source::ScenarioFile(p.join("s.toml"))
        );
        std::fs::create_dir_all(p.join("report/transcripts/0.171.0")).unwrap();
        let report = Source::parse(&p.join("report")).unwrap_err().to_string();
        assert!(report.contains("name one of its transcripts"), "{report}");
        std::fs::create_dir_all(p.join("kept/session/sessions")).unwrap();
        assert_eq!(
            Source::parse(&p.join("kept")).unwrap(),
            Source::RelayLog(p.join("kept/session"))
        );
        // A recording of the integrator's own client: the kept directory, or the file
        // `record` wrote; not another scenario file, not a transcript.
        assert!(Source::parse(&p.join("kept")).unwrap().is_recording());
        assert!(!Source::ScenarioFile(p.join("s.toml")).is_recording());
        let recorded = format!("{RECORDED_MARK} on 2026-12-01 from: python3 c.py\n");
        std::fs::write(p.join("r.toml"), recorded).unwrap();
        assert!(Source::ScenarioFile(p.join("r.toml")).is_recording());
        assert!(!Source::Transcript(p.join("t.json")).is_recording());
    }

    #[test]
    fn a_files_replies_are_what_the_client_is_held_against() {
        let text = r#"name = "r"
id = "R-1"
summary = "s"
[[step]]
do = "reply"
method = "item/commandExecution/requestApproval"
result = { decision = "accept" }
[[step]]
do = "reply"
method = "item/tool/call"
result = { success = true }
[[step]]
do = "reply"
method = "item/tool/call"
result = { success = false }
[[step]]
do = "turn"
input = "hi"
"#;
        let compiled = crate::scenario_file::load::compile(Path::new("r.toml"), text).unwrap();
        let got = replies(&compiled);
        assert_eq!(
            got.get("item/commandExecution/requestApproval"),
            Some(&json!({"result": {"decision": "accept"}}))
        );
        assert_eq!(
            got.get("item/tool/call"),
            None,
            "answered two ways: unchecked"
        );
    }

    #[test]
    fn as_version_finds_the_sibling_transcript_or_lists_the_versions_there() {
        let dir = tempfile::tempdir().unwrap();
        let t = dir.path().join("transcripts");
        for v in ["0.161.0", "0.171.0"] {
            std::fs::create_dir_all(t.join(v)).unwrap();
            std::fs::write(t.join(v).join("plain.json"), "{}").unwrap();
        }
        let mine = t.join("0.171.0/plain.json");
        assert_eq!(
            sibling(&mine, "0.161.0").unwrap(),
            t.join("0.161.0/plain.json")
        );
        let missing = sibling(&mine, "0.131.0").unwrap_err().to_string();
        assert!(
            missing.contains("it has it for: 0.161.0, 0.171.0"),
            "{missing}"
        );
    }
}
