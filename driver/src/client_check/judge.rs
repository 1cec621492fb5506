//! The judgement of one run of COMMAND against one mutation: its [`Row`]. A run fails on
//! how it ended (timed out, crashed, reached no mock, a launch escaped its group), then, for
//! a mutation it must survive, on what it did (a non-zero exit, a server request left
//! unanswered or answered otherwise, output other than `none`'s); a mutation it must end
//! under fails on exit 0. What it asked that the session does not answer, and a session it
//! left before its end (`stopped early`, failing with `--whole-session`), are said.

use std::os::unix::process::ExitStatusExt;
use std::time::Duration;

use crate::client_check::mutation::{Expect, Mutation};
use crate::client_check::output;
use crate::client_check::served::{Served, Via};
use crate::client_check::verdict::{Row, RowResult};
use crate::record::recorder::LISTEN_ENV;

/// What the other mutations' output is held against: what COMMAND printed for `none`.
pub(super) enum Reference {
    /// `none` is not among the mutations.
    NotRun,
    /// `none` did not pass: its output is no reference.
    Failed,
    /// `none` passed, printing this on stdout.
    Printed(String),
}

/// How COMMAND ran against one mutation.
#[derive(Debug)]
pub(super) struct Ran {
    /// Its exit status (`None`: killed at the time limit).
    pub(super) status: Option<std::process::ExitStatus>,
    /// How long it ran.
    pub(super) seconds: f64,
    /// The time limit it had.
    pub(super) limit: Duration,
    /// What each app-server it started saw (or why that could not be read).
    pub(super) served: anyhow::Result<Vec<Served>>,
    /// App-servers still running after COMMAND exited (outside its process group), killed.
    pub(super) escaped: Vec<usize>,
    /// Its stderr.
    pub(super) stderr: String,
    /// Its stdout.
    pub(super) stdout: String,
    /// How many app-server connections the session has.
    pub(super) connections: usize,
    /// How many `codex exec` runs it has.
    pub(super) execs: usize,
    /// Where the mock listened (`None`: no listener).
    pub(super) listened: Option<String>,
}

/// What the user asked of the judgement (`--whole-session`, `--ignore-output`).
pub(super) struct Rules<'a> {
    /// A client that ends before the session's end fails.
    pub(super) whole_session: bool,
    /// Lines of stdout left out when it is held against `none`'s.
    pub(super) ignore_output: &'a [regex::Regex],
}

/// What a run is found to have done wrong (`failures`) and worth saying (`notes`).
#[derive(Default)]
struct Findings {
    failures: Vec<String>,
    notes: Vec<String>,
}

/// The row of one run: passed, stopped early or failed against what the mutation expects,
/// with why; a mutation that should not change the output is held against `reference`.
pub(super) fn judge(
    mutation: &Mutation,
    must: bool,
    ran: &Ran,
    rules: &Rules<'_>,
    reference: &Reference,
) -> Row {
    let expect = mutation.expect();
    let mut f = Findings::default();
    let records: &[Served] = match &ran.served {
        Ok(all) => all,
        // Nothing can be said of a run whose records cannot be read: no pass.
        Err(e) => {
            f.failures
                .push(format!("what the mock saw cannot be read: {e:#}"));
            &[]
        }
    };
    let (served, refused): (Vec<&Served>, Vec<&Served>) =
        records.iter().partition(|s| s.via != Via::Refused);
    let code = ran.status.and_then(|s| s.code());
    f.ending(ran, &served);
    // Cope: exit 0 is judged as survive; a non-zero exit by itself is a clean failure.
    let surviving = expect == Expect::Survive || (expect == Expect::Cope && code == Some(0));
    if surviving {
        f.survival(mutation, code, ran, &served, rules, reference);
    } else if let Some(c) = code {
        match expect {
            Expect::Fail if c == 0 => f.failures.push(format!(
                "exited 0: it took {} for success",
                mutation.failure()
            )),
            Expect::Cope => f.notes.push(format!("failed cleanly with status {c}")),
            _ => f.notes.push(format!("ended with status {c}")),
        }
    }
    if *mutation == Mutation::UnknownEnum && code == Some(0) {
        f.notes.push(
            "exited 0 on a turn status it cannot know: did it take it for success? \
             (openclaw #99284)"
                .into(),
        );
    }
    f.asked(&served, &refused);
    // A client that copes but ends before the session does is a result of its own; with
    // the whole session asked for, it fails.
    let early = early_ends(ran, &served);
    let stopped_early = surviving && !early.is_empty();
    if stopped_early && rules.whole_session {
        f.failures
            .extend(early.into_iter().map(|e| format!("{e} (--whole-session)")));
    } else {
        f.notes.extend(early);
    }
    Row {
        mutation: mutation.name(),
        expect,
        must_survive: must,
        result: if !f.failures.is_empty() {
            RowResult::Failed
        } else if stopped_early {
            RowResult::StoppedEarly
        } else {
            RowResult::Passed
        },
        exit: code,
        timed_out: ran.status.is_none(),
        seconds: ran.seconds,
        launches: served.iter().filter(|s| s.via.app_server()).count(),
        exec_runs: served.iter().filter(|s| s.via == Via::Exec).count(),
        reasons: f.failures,
        notes: f.notes,
    }
}

/// Every record's list `pick` gives, in order.
fn all(served: &[&Served], pick: fn(&Served) -> &Vec<String>) -> Vec<String> {
    served.iter().flat_map(|s| pick(s)).cloned().collect()
}

impl Findings {
    /// How the run ended: timed out, crashed, reached no mock, a launch escaped.
    fn ending(&mut self, ran: &Ran, served: &[&Served]) {
        let next = served.iter().rev().find_map(|s| s.next.clone());
        match ran.status {
            None => self.failures.push(format!(
                "timed out after {} s (killed); {}",
                ran.limit.as_secs(),
                match &next {
                    Some(n) => format!("the session was at {n}"),
                    None => format!(
                        "codex had sent all {} message(s) of the session",
                        served.iter().map(|s| s.sent).sum::<usize>()
                    ),
                }
            )),
            Some(s) if s.signal().is_some() => self.failures.push(format!(
                "crashed: killed by signal {}",
                s.signal().unwrap_or_default()
            )),
            Some(_) => {}
        }
        if served.is_empty() && ran.served.is_ok() {
            self.failures.push(never_started(ran));
        }
        if !ran.escaped.is_empty() {
            self.failures.push(format!(
                "launch(es) {:?} of the mock codex left COMMAND's process group and still ran \
                 after the group was gone (killed)",
                ran.escaped
            ));
        }
    }

    /// What a client that must survive did wrong: a non-zero exit, server requests left
    /// unanswered or answered otherwise, threads it made up, output other than `none`'s.
    fn survival(
        &mut self,
        mutation: &Mutation,
        code: Option<i32>,
        ran: &Ran,
        served: &[&Served],
        rules: &Rules<'_>,
        reference: &Reference,
    ) {
        if let Some(c) = code.filter(|c| *c != 0) {
            let last = ran.stderr.lines().rev().find(|l| !l.trim().is_empty());
            self.failures.push(match last {
                Some(l) => format!("exited with status {c}: {l}"),
                None => format!("exited with status {c}"),
            });
        }
        let unanswered = all(served, |s| &s.unanswered);
        if !unanswered.is_empty() {
            self.failures
                .push(format!("left unanswered: {}", unanswered.join(", ")));
        }
        self.failures.extend(all(served, |s| &s.answers_differ));
        self.failures.extend(all(served, |s| &s.foreign_threads));
        let compared =
            mutation.keeps_output() || mutation.expect() == Expect::Cope || mutation.notes_output();
        if !compared {
            return;
        }
        let said = match reference {
            Reference::Printed(none) => output::difference(none, &ran.stdout, rules.ignore_output),
            Reference::NotRun => {
                Some("output not compared: `none` is not among --mutations".into())
            }
            Reference::Failed => Some("output not compared: `none` did not pass".into()),
        };
        match (said, reference) {
            (Some(d), Reference::Printed(_)) if !mutation.notes_output() => self.failures.push(d),
            (Some(d), _) => self.notes.push(d),
            (None, _) => {}
        }
    }

    /// What the client asked or ran that the session does not answer, and the mock's notes.
    fn asked(&mut self, served: &[&Served], refused: &[&Served]) {
        let refusals: Vec<String> = refused
            .iter()
            .map(|s| {
                format!(
                    "`codex {}` ({})",
                    s.args.join(" "),
                    s.notes.first().map_or("", String::as_str)
                )
            })
            .collect();
        let listed = [
            (
                "asked what the session does not answer",
                all(served, |s| &s.unmatched),
            ),
            (
                "asked before initialize (refused)",
                all(served, |s| &s.before_initialize),
            ),
            ("never asked", all(served, |s| &s.not_asked)),
            ("sent what is not JSON-RPC", all(served, |s| &s.malformed)),
            ("ran what the session does not serve", refusals),
        ];
        for (what, items) in listed.into_iter().filter(|(_, i)| !i.is_empty()) {
            self.notes.push(format!("{what}: {}", items.join("; ")));
        }
        self.notes.extend(all(served, |s| &s.notes));
    }
}

/// How the client left the session before its end: launches stopped before their last
/// step, fewer app-servers, connections or exec runs than the session has.
fn early_ends(ran: &Ran, served: &[&Served]) -> Vec<String> {
    let cut = |s: &&&Served| s.ended.as_deref().is_some_and(|e| e.starts_with("exited"));
    let mut early: Vec<String> = served
        .iter()
        .filter(|s| s.not_reached > 0 && ran.status.is_some() && !cut(s))
        .map(|s| {
            format!(
                "{} {}: stopped {} step(s) before the session's end (next: {})",
                if s.via == Via::Exec {
                    "exec"
                } else {
                    "app-server"
                },
                s.launch,
                s.not_reached,
                s.next.as_deref().unwrap_or("-")
            )
        })
        .collect();
    let apps = served.iter().filter(|s| s.via.app_server()).count();
    let execs = served.iter().filter(|s| s.via == Via::Exec).count();
    if ran.status.is_some() && !served.is_empty() {
        if apps < ran.connections {
            early.push(match ran.listened {
                Some(_) => format!(
                    "opened {apps} of the session's {} connection(s) to the listener",
                    ran.connections
                ),
                None => format!(
                    "started {apps} of the session's {} app-server(s)",
                    ran.connections
                ),
            });
        }
        if execs < ran.execs {
            early.push(format!(
                "ran {execs} of the session's {} codex exec run(s)",
                ran.execs
            ));
        }
    }
    early
}

/// Why a run in which COMMAND reached no mock failed: what it should have started.
fn never_started(ran: &Ran) -> String {
    let shim = "the shim is first on PATH and in $CODEX_PARITY_CODEX";
    match (&ran.listened, ran.connections > 0, ran.execs > 0) {
        (Some(url), _, false) => format!(
            "never connected to the mock app-server's listener at {url} (in \
             ${LISTEN_ENV})"
        ),
        (Some(url), _, true) => format!(
            "never connected to the mock app-server's listener at {url} (in \
             ${LISTEN_ENV}) nor ran `codex exec` ({shim})"
        ),
        (None, true, true) => {
            format!("never started `codex app-server` nor ran `codex exec` ({shim})")
        }
        (None, false, true) => format!("never ran `codex exec` ({shim})"),
        (None, _, false) => format!("never started `codex app-server` ({shim})"),
    }
}
