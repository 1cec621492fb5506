//! The mock `codex exec`: what the client's `codex exec …` (or `codex e …`) runs during
//! `client-check`. The N-th exec the client starts plays the script's N-th exec run
//! (cycling from the first when the client runs more than the session has):
//!
//! 1. it reads the client's stdin to its end when stdin is not a terminal, as codex does
//!    (the prompt comes from stdin, or stdin is appended to the prompt argument), and
//!    notes a prompt other than the recorded one;
//! 2. a `resume ID` must name a thread the session served (the thread id of an earlier
//!    run's `thread.started`, which the client was given): another id is reported like a
//!    request the session does not answer, and a resume where the recording had none (or
//!    the other way round) is noted;
//! 3. it prints the run's events, one JSON line each (`slow` pauses before each), or,
//!    without `--json`/`--experimental-json`, the final message alone, writes the final
//!    message to `--output-last-message FILE`, and exits with the run's status.
//!
//! Its record (`DIR/served/exec-N.json`) is saved before each line it prints.

use std::collections::BTreeSet;
use std::io::{IsTerminal, Read, Write};
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use crate::app_server::exec::event_type;
use crate::client_check::exec_args::ExecArgs;
use crate::client_check::script::{ExecScript, Script};
use crate::client_check::served::{self, Served, Via};

/// The longest part of a prompt a note shows.
const SHOWN: usize = 60;

/// Plays one `codex exec` (see the module docs) with `args` (after `codex`); returns the
/// exit status. `Ok(None)`: the session has no exec run to play.
pub fn serve(dir: &Path, script: &Script, args: &[String]) -> anyhow::Result<Option<i32>> {
    let Some(call) = ExecArgs::of(args) else {
        return Ok(None);
    };
    if script.execs.is_empty() {
        return Ok(None);
    }
    let (launch, path) = served::claim(dir, Via::Exec)?;
    let index = (launch - 1) % script.execs.len();
    let run = &script.execs[index];
    let mut served = Served {
        via: Via::Exec,
        launch,
        connection: index + 1,
        pid: std::process::id(),
        pgid: rustix::process::getpgrp().as_raw_nonzero().get() as u32,
        args: args.to_vec(),
        not_reached: run.events.len(),
        next: Some("the end of codex exec's stdin (codex reads it first)".into()),
        ..Served::default()
    };
    let save = |s: &Served| served::save(&path, s);
    save(&served)?;
    if !std::io::stdin().is_terminal() {
        let mut bytes = Vec::new();
        // A stdin that cannot be read is one codex would not read either.
        let _ = std::io::stdin().lock().read_to_end(&mut bytes);
        let text = String::from_utf8_lossy(&bytes);
        if let Some(want) = &run.stdin
            && want.trim() != text.trim()
        {
            served.notes.push(format!(
                "exec {launch}: stdin {} where the recording had {}",
                shown(&text),
                shown(want)
            ));
        }
    }
    check_resume(&call, run, launch, &script.thread_ids(), &mut served);
    let code = play(run, &call, script.gap_ms, &mut served, &save)?;
    save(&served)?;
    Ok(Some(code))
}

/// Holds the client's `resume` against the threads the session served and the recorded
/// run's own.
fn check_resume(
    call: &ExecArgs,
    run: &ExecScript,
    launch: usize,
    threads: &BTreeSet<String>,
    served: &mut Served,
) {
    let asked = call.resume.as_ref().map(|r| r.id.clone());
    if let Some(Some(id)) = &asked
        && !threads.contains(id)
    {
        served.foreign_threads.push(format!(
            "exec {launch}: resume {id}: a thread the session never served (it served {})",
            threads.iter().cloned().collect::<Vec<_>>().join(", ")
        ));
    }
    let Some(recorded) = run.recorded_resume() else {
        return;
    };
    match (&asked, &recorded) {
        (None, Some(id)) => served.notes.push(format!(
            "exec {launch}: started a new thread where the recording resumed {id}"
        )),
        (Some(_), None)
            if run
                .args
                .as_ref()
                .is_some_and(|a| !a.contains(&"resume".into())) =>
        {
            served.notes.push(format!(
                "exec {launch}: resumed a thread where the recording started a new one"
            ))
        }
        _ => {}
    }
}

/// Prints the run's stream (or its final message) and writes `--output-last-message`;
/// the exit status.
fn play(
    run: &ExecScript,
    call: &ExecArgs,
    gap_ms: u64,
    served: &mut Served,
    save: &dyn Fn(&Served) -> anyhow::Result<()>,
) -> anyhow::Result<i32> {
    let mut out = std::io::stdout().lock();
    for (i, event) in run.events.iter().enumerate() {
        if gap_ms > 0 {
            std::thread::sleep(Duration::from_millis(gap_ms));
        }
        served.sent = i + 1;
        served.not_reached = run.events.len() - i - 1;
        served.next = run
            .events
            .get(i + 1)
            .map(|e| format!("the event {}", event_type(e)));
        // In the record before it goes out: a client that exits as soon as it has read
        // the last line was seen to have had it.
        save(served)?;
        if !call.json {
            continue;
        }
        let line = match event {
            Value::String(raw) => raw.clone(),
            other => other.to_string(),
        };
        if writeln!(out, "{line}").and_then(|()| out.flush()).is_err() {
            served.sent = i;
            served.not_reached = run.events.len() - i;
            served.ended = Some("the client stopped reading codex exec's stdout".into());
            return Ok(1);
        }
    }
    if !call.json
        && let Some(text) = run.final_message()
    {
        let _ = writeln!(out, "{text}").and_then(|()| out.flush());
    }
    if let Some(file) = &call.last_message {
        std::fs::write(file, run.final_message().unwrap_or_default())
            .with_context(|| format!("writing --output-last-message {file}"))?;
    }
    served.ended = Some(if run.cut {
        eprintln!("codex-parity client-check: codex exec exits mid-stream (exit-mid-stream)");
        format!("exited with status {} mid-stream", run.exit)
    } else {
        format!(
            "printed the whole stream and ended with status {}",
            run.exit
        )
    });
    Ok(run.exit)
}

/// A prompt as a note shows it: quoted, cut to [`SHOWN`] characters.
fn shown(text: &str) -> String {
    let mut cut: String = text.trim().chars().take(SHOWN).collect();
    if cut.len() < text.trim().len() {
        cut.push('…');
    }
    format!("{cut:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_resume_of_another_thread_or_another_kind_of_run_is_reported() {
        let threads = BTreeSet::from(["t1".to_string()]);
        let mut run =
            ExecScript::from_events(vec![json!({"type": "thread.started", "thread_id": "t1"})]);
        run.args = Some(vec!["exec".into(), "resume".into(), "t1".into()]);
        let resume = |id: &str| ExecArgs::of(&["exec".into(), "resume".into(), id.into()]);
        let mut s = Served::default();
        check_resume(&resume("t1").unwrap(), &run, 2, &threads, &mut s);
        assert!(s.foreign_threads.is_empty() && s.notes.is_empty(), "{s:?}");
        check_resume(&resume("t9").unwrap(), &run, 2, &threads, &mut s);
        assert!(
            s.foreign_threads[0]
                .starts_with("exec 2: resume t9: a thread the session never served")
        );
        let fresh = ExecArgs::of(&["exec".into(), "--json".into()]).unwrap();
        check_resume(&fresh, &run, 2, &threads, &mut s);
        assert_eq!(
            s.notes,
            ["exec 2: started a new thread where the recording resumed t1"]
        );
        assert_eq!(shown(&"x".repeat(100)).chars().count(), SHOWN + 3);
    }
}
