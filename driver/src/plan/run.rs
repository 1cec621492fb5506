//! Running a [`Plan`]: every cell, so many at once, until the end or a stop, each
//! scenario's progress told to the sinks as typed [`Event`]s on the task that runs the
//! plan; each record judged by its golden transcript before any sink sees it; the run's
//! verdict is the worst of the sinks'.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::mpsc;

use crate::drift::golden_transcript;
use crate::harness::expectations::Expectations;
use crate::harness::outcome::Outcome;
use crate::harness::runner::{self, Cell, Finished, Progress};
use crate::plan::Plan;
use crate::plan::events::{Event, Sink, Verdict};

/// What a run of a plan got done, and what its sinks made of it.
#[derive(Debug)]
pub struct RunEnd {
    /// The scenarios that ended, and those stopped or never started.
    pub finished: Finished,
    /// Whether the run was stopped before its end.
    pub stopped: bool,
    /// The worst of the sinks' verdicts.
    pub verdict: Verdict,
}

impl Plan {
    /// Runs every cell, [`Options::jobs`](crate::plan::Options::jobs) at once, until the
    /// end or until `stop` resolves (every running scenario is then cancelled and has ended
    /// before this returns); each sink gets every event, in order, on this task.
    pub async fn run(
        &self,
        sinks: &mut [Box<dyn Sink>],
        stop: impl std::future::Future<Output = ()>,
    ) -> RunEnd {
        let emit = |sinks: &mut [Box<dyn Sink>], event: Event<'_>| {
            for sink in sinks.iter_mut() {
                sink.event(&event);
            }
        };
        emit(sinks, Event::Started(self));
        let (tx, mut rx) = mpsc::unbounded_channel();
        let on_progress = Arc::new(move |p: Progress| {
            let _ = tx.send(p);
        });
        let stopped = Arc::new(AtomicBool::new(false));
        let flag = stopped.clone();
        let stop = async move {
            stop.await;
            flag.store(true, Ordering::SeqCst);
        };
        let running = runner::run_shard_until(
            &self.targets,
            &self.scenarios,
            self.options.shard,
            self.settings.clone(),
            self.options.jobs(),
            on_progress,
            stop,
        );
        // Each record is judged by its golden transcript as it comes in (not with --bless,
        // which writes them), so that the progress, the matrix and its totals count such a
        // failure like any other.
        let golden = (!self.options.bless).then(Expectations::current);
        let mut judged: HashMap<(&'static str, String), Cell> = HashMap::new();
        let mut forward = |sinks: &mut [Box<dyn Sink>], progress: Progress| match progress {
            Progress::Started { scenario, label } => emit(
                sinks,
                Event::ScenarioStarted {
                    scenario,
                    label: &label,
                },
            ),
            Progress::Finished(mut record) => {
                match &golden {
                    Some(Ok(expectations)) => {
                        golden_transcript::judge(expectations, &mut record);
                    }
                    Some(Err(e)) if record.golden.transcript => {
                        record.outcome =
                            Outcome::Failed(format!("golden transcripts cannot be read: {e:#}"));
                    }
                    _ => {}
                }
                emit(sinks, Event::ScenarioFinished(&record));
                judged.insert((record.scenario, record.label.clone()), *record);
            }
        };
        tokio::pin!(running);
        let finished = loop {
            tokio::select! {
                biased;
                Some(progress) = rx.recv() => forward(sinks, progress),
                finished = &mut running => break finished,
            }
        };
        // What the last scenarios sent before the runner returned.
        while let Ok(progress) = rx.try_recv() {
            forward(sinks, progress);
        }
        let mut finished = finished;
        for r in &mut finished.records {
            if let Some(j) = judged.remove(&(r.scenario, r.label.clone())) {
                *r = j;
            }
        }
        let stopped = stopped.load(Ordering::SeqCst);
        emit(
            sinks,
            Event::Finished {
                plan: self,
                finished: &finished,
                stopped,
            },
        );
        let verdict = sinks
            .iter()
            .map(|s| s.verdict())
            .max()
            .unwrap_or(Verdict::Pass);
        RunEnd {
            finished,
            stopped,
            verdict,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::sidecar::SidecarLauncher;
    use crate::plan::Options;

    /// A sink that keeps the names of the events it saw and gives a set verdict.
    struct Seen(Arc<std::sync::Mutex<Vec<&'static str>>>, Verdict);

    impl Sink for Seen {
        fn event(&mut self, event: &Event<'_>) {
            self.0.lock().unwrap().push(match event {
                Event::Started(_) => "started",
                Event::ScenarioStarted { .. } => "scenario started",
                Event::ScenarioFinished(_) => "scenario finished",
                Event::Finished { stopped: false, .. } => "finished",
                Event::Finished { stopped: true, .. } => "stopped",
            });
        }

        fn verdict(&self) -> Verdict {
            self.1
        }
    }

    #[tokio::test]
    async fn a_run_tells_every_sink_in_order_and_its_verdict_is_the_worst() {
        // No binary: no cell runs and no codex is needed, but the run still starts and ends.
        let plan = Plan::builder(Options::default())
            .unwrap()
            .build(
                Vec::new(),
                SidecarLauncher::codex_parity("/nonexistent/codex-parity"),
            )
            .await
            .unwrap();
        assert!(plan.cells().is_empty());
        let (first, second) = (Arc::default(), Arc::default());
        let mut sinks: Vec<Box<dyn Sink>> = vec![
            Box::new(Seen(Arc::clone(&first), Verdict::Pass)),
            Box::new(Seen(Arc::clone(&second), Verdict::Fail)),
        ];
        let end = plan.run(&mut sinks, std::future::pending::<()>()).await;
        assert!(!end.stopped);
        assert!(end.finished.records.is_empty());
        assert_eq!(end.verdict, Verdict::Fail);
        assert_eq!(end.verdict.code(), 1);
        for seen in [first, second] {
            assert_eq!(*seen.lock().unwrap(), ["started", "finished"]);
        }
        let mut none: Vec<Box<dyn Sink>> = Vec::new();
        let end = plan.run(&mut none, std::future::pending::<()>()).await;
        assert_eq!(end.verdict, Verdict::Pass);
    }
}
