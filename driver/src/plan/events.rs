//! What a run of a [`Plan`] tells as it goes: typed [`Event`]s, in order, to each
//! [`Sink`]; at the end each sink gives its [`Verdict`] and the run's is the worst of them.
//! Sinks never run scenarios and never change the records: the terminal, the report
//! files, the transcripts and the golden checks are all sinks.

use crate::harness::runner::{Cell, Finished};
use crate::plan::Plan;

/// One thing that happened in a run.
#[derive(Debug)]
pub enum Event<'a> {
    /// The run starts: the plan it runs.
    Started(&'a Plan),
    /// A scenario started on a binary.
    ScenarioStarted {
        /// The scenario's name.
        scenario: &'a str,
        /// The binary's label.
        label: &'a str,
    },
    /// A scenario ended on a binary: its record, judged by the baselines.
    ScenarioFinished(&'a Cell),
    /// The run ended, or was stopped (`stopped`): everything it got done.
    Finished {
        /// The plan it ran.
        plan: &'a Plan,
        /// The records, and what was stopped or never started.
        finished: &'a Finished,
        /// Whether it was stopped before its end (Ctrl-C, SIGTERM).
        stopped: bool,
    },
}

impl<'a> Event<'a> {
    /// The plan and what it got done, when this is the end of a run that was not stopped:
    /// what sinks that write or compare at the end act on.
    pub fn ended(&self) -> Option<(&'a Plan, &'a Finished)> {
        match *self {
            Event::Finished {
                plan,
                finished,
                stopped: false,
            } => Some((plan, finished)),
            _ => None,
        }
    }
}

/// What a sink made of the run, worst last: the exit status it calls for is its
/// [`Verdict::code`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    /// Nothing to object to.
    Pass,
    /// A result the user must look at (a failed scenario, a golden file that differs).
    Fail,
    /// The sink could not do its work (a file it could not write).
    Error,
}

impl Verdict {
    /// The verdict of a sink's work at the end: its own, or [`Verdict::Error`] with the
    /// error on stderr.
    pub fn of(result: anyhow::Result<Verdict>) -> Verdict {
        result.unwrap_or_else(|e| {
            eprintln!("codex-parity: {e:#}");
            Verdict::Error
        })
    }

    /// The exit status: 0, 1 or 2.
    pub fn code(self) -> u8 {
        match self {
            Verdict::Pass => 0,
            Verdict::Fail => 1,
            Verdict::Error => 2,
        }
    }
}

/// Something that consumes a run's events.
pub trait Sink: Send {
    /// Called with each event, in order, on the task that runs the plan.
    fn event(&mut self, event: &Event<'_>);

    /// What it made of the run, asked once after [`Event::Finished`].
    fn verdict(&self) -> Verdict {
        Verdict::Pass
    }
}
