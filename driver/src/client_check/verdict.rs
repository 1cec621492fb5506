//! The verdict of a `client-check`: one [`Row`] per mutation (what COMMAND did and whether
//! that passes what the mutation expects), shown as a table, written as
//! `client-check.json` and `junit.xml`. The check passes when every mutation marked
//! must-survive passed (or, unless the whole session is asked for, stopped early); one that
//! did not apply is not a pass.

use std::fmt::Write;

use serde::Serialize;

use crate::harness::outcome::OutcomeKind;

use crate::client_check::mutation::Expect;
use crate::report::{escape, escape_attr};

/// How one mutation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RowResult {
    /// COMMAND did what the mutation expects.
    Passed,
    /// It did what the mutation expects but ended before the session's end, which passes
    /// unless the whole session is asked for (`--whole-session`: the row then fails).
    StoppedEarly,
    /// It did not (the reasons say how).
    Failed,
    /// The session has nothing this mutation changes (the reason says why).
    NotApplicable,
}

impl RowResult {
    /// The word in tables: the matrix's words (`crate::harness::outcome::OutcomeKind`),
    /// and `stopped early`, a pass of its own.
    pub fn word(self) -> &'static str {
        match self {
            RowResult::Passed => OutcomeKind::Passed.word(),
            RowResult::StoppedEarly => "stopped early",
            RowResult::Failed => OutcomeKind::Failed.word(),
            RowResult::NotApplicable => OutcomeKind::NotApplicable.word(),
        }
    }
}

/// One mutation's run.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The mutation, as `--mutations` names it.
    pub mutation: String,
    /// What it expects of COMMAND.
    #[serde(serialize_with = "expect_word")]
    pub expect: Expect,
    /// Whether the check fails unless it passes.
    pub must_survive: bool,
    /// How it ended.
    pub result: RowResult,
    /// COMMAND's exit status (`None`: killed, by the time limit or a signal).
    pub exit: Option<i32>,
    /// Whether the time limit killed it.
    pub timed_out: bool,
    /// How long COMMAND ran.
    pub seconds: f64,
    /// How many app-servers it started (or connections it opened to the listener).
    pub launches: usize,
    /// How many `codex exec` it ran.
    pub exec_runs: usize,
    /// Why it failed (or why the mutation did not apply).
    pub reasons: Vec<String>,
    /// What else was seen: requests the session does not answer, answers never asked for,
    /// where a client that stopped early stopped.
    pub notes: Vec<String>,
}

fn expect_word<S: serde::Serializer>(e: &Expect, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(e.word())
}

impl Row {
    /// A mutation with nothing to change in the session.
    pub fn not_applicable(mutation: &str, expect: Expect, must: bool, why: String) -> Row {
        Row {
            mutation: mutation.into(),
            expect,
            must_survive: must,
            result: RowResult::NotApplicable,
            exit: None,
            timed_out: false,
            seconds: 0.0,
            launches: 0,
            exec_runs: 0,
            reasons: vec![why],
            notes: Vec::new(),
        }
    }

    /// The row in one line (progress on stderr).
    pub fn line(&self) -> String {
        let mut line = format!(
            "{} {} ({} s)",
            self.mutation,
            self.result.word(),
            secs(self.seconds)
        );
        if let Some(first) = self.reasons.first().or(self.notes.first()) {
            let _ = write!(line, ": {first}");
        }
        line
    }

    /// Whether it counts as a pass of a must-survive mutation.
    pub fn passes(&self) -> bool {
        matches!(self.result, RowResult::Passed | RowResult::StoppedEarly)
    }

    fn exit_word(&self) -> String {
        match (self.result, self.exit, self.timed_out) {
            (RowResult::NotApplicable, _, _) => "-".into(),
            (_, _, true) => "timeout".into(),
            (_, Some(c), _) => c.to_string(),
            (_, None, _) => "signal".into(),
        }
    }
}

fn secs(s: f64) -> String {
    format!("{s:.1}")
}

/// Every row of a check, and what it was run on.
#[derive(Debug, Clone, Serialize)]
pub struct CheckVerdict {
    /// The session served.
    pub source: String,
    /// The codex version the session came from.
    pub codex: String,
    /// COMMAND.
    pub command: Vec<String>,
    /// The time limit per mutation.
    pub timeout_secs: u64,
    /// Whether a client that stops before the session's end fails (`--whole-session`).
    pub whole_session: bool,
    /// Where the mock listened for the client's WebSocket connections (`None`: stdio
    /// and exec only).
    pub listen: Option<String>,
    /// One per mutation, in order.
    pub rows: Vec<Row>,
}

impl CheckVerdict {
    /// Whether every must-survive mutation passed.
    pub fn passed(&self) -> bool {
        self.rows.iter().filter(|r| r.must_survive).all(Row::passes)
    }

    /// The table for the terminal.
    pub fn table(&self) -> String {
        let width = self
            .rows
            .iter()
            .map(|r| r.mutation.len())
            .max()
            .unwrap_or(8)
            .max(8);
        let result = self
            .rows
            .iter()
            .map(|r| r.result.word().len())
            .max()
            .unwrap_or(6)
            .max(6);
        let mut out = format!(
            "client-check: `{}` against {} (codex {}){}\n\n\
             {:<width$}  {:<7}  {:<4}  {:<result$}  {:<7}  {:>6}  why / notes\n",
            self.command.join(" "),
            self.source,
            self.codex,
            match &self.listen {
                Some(url) => format!(", served on a WebSocket listener ({url})"),
                None => String::new(),
            },
            "mutation",
            "expect",
            "must",
            "result",
            "exit",
            "time s",
        );
        for r in &self.rows {
            let mut why: Vec<&str> = r.reasons.iter().map(String::as_str).collect();
            why.extend(r.notes.iter().map(String::as_str));
            let _ = writeln!(
                out,
                "{:<width$}  {:<7}  {:<4}  {:<result$}  {:<7}  {:>6}  {}",
                r.mutation,
                r.expect.word(),
                if r.must_survive { "yes" } else { "" },
                r.result.word(),
                r.exit_word(),
                secs(r.seconds),
                why.first().copied().unwrap_or("")
            );
            for more in why.iter().skip(1) {
                let _ = writeln!(out, "{:<w$}  {more}", "", w = width + result + 36);
            }
        }
        let count = |k: RowResult| self.rows.iter().filter(|r| r.result == k).count();
        let must = self.rows.iter().filter(|r| r.must_survive).count();
        let missed: Vec<&str> = self
            .rows
            .iter()
            .filter(|r| r.must_survive && !r.passes())
            .map(|r| r.mutation.as_str())
            .collect();
        let _ = writeln!(
            out,
            "\n{} passed, {} stopped early, {} failed, {} not applicable; {} must survive \
             (--must-survive), {}{}: {}",
            count(RowResult::Passed),
            count(RowResult::StoppedEarly),
            count(RowResult::Failed),
            count(RowResult::NotApplicable),
            must,
            if missed.is_empty() {
                "all passed".to_string()
            } else {
                format!("{} did not pass ({})", missed.len(), missed.join(", "))
            },
            if self.whole_session {
                "; the whole session asked for (--whole-session)"
            } else {
                ""
            },
            if self.passed() { "PASS" } else { "FAIL" }
        );
        out
    }

    /// `client-check.json`.
    pub fn json(&self) -> anyhow::Result<String> {
        let mut value = serde_json::to_value(self)?;
        value["passed"] = serde_json::Value::Bool(self.passed());
        // Each row says whether it passes (a row that stopped early does, unless the whole
        // session was asked for), so a reader need not know the rules.
        if let Some(rows) = value["rows"].as_array_mut() {
            for (row, r) in rows.iter_mut().zip(&self.rows) {
                row["passes"] = serde_json::Value::Bool(r.passes());
            }
        }
        Ok(serde_json::to_string_pretty(&value)? + "\n")
    }

    /// `junit.xml`: one suite, a test case per mutation; a must-survive mutation that did
    /// not pass (or did not apply) is a `<failure>`, one that may fail is a passing case
    /// whose output says how it ended, another mutation that did not apply is `<skipped>`.
    pub fn junit(&self) -> String {
        let failures = self
            .rows
            .iter()
            .filter(|r| r.must_survive && !r.passes())
            .count();
        let skipped = self
            .rows
            .iter()
            .filter(|r| r.result == RowResult::NotApplicable)
            .count();
        let time: f64 = self.rows.iter().map(|r| r.seconds).sum();
        let mut out = format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite \
             name=\"client-check\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" \
             skipped=\"{skipped}\" time=\"{time:.3}\">\n    <properties>\n      <property \
             name=\"codex.version\" value=\"{}\"/>\n      <property name=\"source\" \
             value=\"{}\"/>\n    </properties>\n",
            self.rows.len(),
            escape_attr(&self.codex),
            escape_attr(&self.source)
        );
        for r in &self.rows {
            let _ = write!(
                out,
                "    <testcase classname=\"client-check\" name=\"{}\" time=\"{:.3}\">",
                escape_attr(&r.mutation),
                r.seconds
            );
            let text = r
                .reasons
                .iter()
                .chain(&r.notes)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n");
            let first = r.reasons.first().cloned().unwrap_or_default();
            match r.result {
                RowResult::NotApplicable if !r.must_survive => {
                    let _ = write!(out, "<skipped message=\"{}\"/>", escape_attr(&first));
                }
                RowResult::Failed | RowResult::NotApplicable if r.must_survive => {
                    let _ = write!(
                        out,
                        "<failure message=\"{}\">{}</failure>",
                        escape_attr(&first),
                        escape(&text)
                    );
                }
                result => {
                    let _ = write!(
                        out,
                        "<system-out>{}{}</system-out>",
                        escape(result.word()),
                        escape(&if text.is_empty() {
                            String::new()
                        } else {
                            format!("\n{text}")
                        })
                    );
                }
            }
            out.push_str("</testcase>\n");
        }
        out.push_str("  </testsuite>\n</testsuites>\n");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, result: RowResult, must: bool) -> Row {
        Row {
            mutation: name.into(),
            expect: Expect::Survive,
            must_survive: must,
            result,
            exit: Some(if result == RowResult::Passed { 0 } else { 3 }),
            timed_out: false,
            seconds: 0.5,
            launches: 1,
            exec_runs: 0,
            reasons: if result == RowResult::Passed {
                vec![]
            } else {
                vec!["exited with status 3".into()]
            },
            notes: vec![],
        }
    }

    fn verdict(rows: Vec<Row>) -> CheckVerdict {
        CheckVerdict {
            source: "transcript t.json".into(),
            codex: "0.171.0".into(),
            command: vec!["client".into()],
            timeout_secs: 30,
            whole_session: false,
            listen: None,
            rows,
        }
    }

    #[test]
    fn only_must_survive_mutations_decide_and_not_applicable_is_no_pass() {
        let v = verdict(vec![
            row("none", RowResult::Passed, true),
            row("unknown-notification", RowResult::Failed, false),
        ]);
        assert!(v.passed());
        let table = v.table();
        assert!(
            table.contains(
                "1 passed, 0 stopped early, 1 failed, 0 not applicable; 1 must survive \
                 (--must-survive), all passed: PASS"
            ),
            "{table}"
        );
        let junit = v.junit();
        assert!(junit.contains("failures=\"0\""), "{junit}");
        assert!(
            junit.contains("<system-out>FAIL\nexited with status 3</system-out>"),
            "{junit}"
        );
        let mut n = v.clone();
        n.rows[1] = Row::not_applicable("unknown-enum", Expect::Survive, true, "no turn".into());
        assert!(!n.passed());
        assert!(
            n.junit().contains("<failure message=\"no turn\">"),
            "{}",
            n.junit()
        );
        n.rows[1].must_survive = false;
        assert!(n.junit().contains("<skipped message=\"no turn\"/>"));
        let mut f = v.clone();
        f.rows[1].must_survive = true;
        assert!(!f.passed());
        assert!(
            f.junit()
                .contains("<failure message=\"exited with status 3\">")
        );
        let json: serde_json::Value = serde_json::from_str(&f.json().unwrap()).unwrap();
        assert_eq!(json["passed"], false);
        assert_eq!(json["rows"][1]["result"], "failed");
        assert_eq!(json["rows"][1]["expect"], "survive");
    }

    #[test]
    fn a_client_that_stopped_early_is_a_result_of_its_own_that_passes() {
        let mut early = row("none", RowResult::StoppedEarly, true);
        early.reasons.clear();
        early.exit = Some(0);
        early.notes = vec!["app-server 1: stopped 4 step(s) before the session's end".into()];
        let v = verdict(vec![early]);
        assert!(v.passed());
        let table = v.table();
        assert!(table.contains("yes   stopped early"), "{table}");
        assert!(
            table.contains("0 passed, 1 stopped early, 0 failed"),
            "{table}"
        );
        assert!(
            v.rows[0]
                .line()
                .contains("stopped early (0.5 s): app-server 1")
        );
        let json: serde_json::Value = serde_json::from_str(&v.json().unwrap()).unwrap();
        assert_eq!(json["rows"][0]["result"], "stopped_early");
        assert!(
            v.junit()
                .contains("<system-out>stopped early\napp-server 1")
        );
    }
}
