//! The sinks of a run (see [`crate::plan::events`]): what `codex-parity run` shows and
//! writes, each one concern that consumes the run's events. The CLI only picks them.
//!
//! - [`Progress`]: the plan's first line and a line per finished scenario (stderr);
//! - [`Results`]: the matrix on the terminal and, with a directory, the report files with
//!   their drift sections (schema, requests, transcripts across versions; a sweep's
//!   changes); a partial matrix and no file when the run was stopped;
//! - [`Transcripts`]: each scenario's transcript into the report directory or beside its
//!   kept world;
//! - [`Diffs`]: `--request-diff` and `--transcript-diff` on stdout;
//! - [`Golden`]: the releases no golden transcript covers said, or with `--bless` the golden
//!   requests and transcripts proposed as pending expectations (see
//!   [`crate::harness::pending`]).

use std::path::PathBuf;

use crate::codex::binaries::CodexBinary;
use crate::codex::schema::Schema;
use crate::codex::{schema_diff, versions};
use crate::drift::{golden, golden_transcript, request_drift, transcript, transcript_diff};
use crate::harness::coverage::Protocol;
use crate::harness::expectations::Expectations;
use crate::harness::pending;
use crate::harness::runner::{Cell, Finished};
use crate::plan::Plan;
use crate::plan::events::{Event, Sink, Verdict};
use crate::report::{self, Matrix, sections, terminal};

/// The first line of a run and one line per finished scenario, on stderr.
#[derive(Default)]
pub struct Progress {
    counter: Option<terminal::Progress>,
}

impl Sink for Progress {
    fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::Started(plan) => {
                let cells = plan.cells();
                let labels: Vec<String> = plan.targets.iter().map(|t| t.binary.label()).collect();
                let per_label = labels.iter().map(|l| {
                    let n = cells.iter().filter(|(t, _)| t.binary.label() == *l).count();
                    (l.as_str(), n)
                });
                self.counter = Some(terminal::Progress::new(per_label));
                let shard = plan.options.shard;
                eprintln!(
                    "codex-parity: {} scenario(s) on {} ({} runs{}, {} at once)",
                    plan.scenarios.len(),
                    labels.join(", "),
                    cells.len(),
                    if shard.count > 1 {
                        format!(" in shard {shard}")
                    } else {
                        String::new()
                    },
                    plan.options.jobs()
                );
            }
            Event::ScenarioFinished(record) => {
                if let Some(counter) = &self.counter {
                    eprintln!("{}", counter.line(record));
                }
            }
            _ => {}
        }
    }
}

/// The results matrix: on the terminal, and as report files in `dir` when there is one.
pub struct Results {
    /// Where the report files go (`--report`).
    pub dir: Option<PathBuf>,
    /// Whether the run is a sweep over releases: its changes lead the report.
    pub sweep: bool,
    verdict: Verdict,
}

impl Results {
    /// The matrix, with report files in `dir` when there is one.
    pub fn new(dir: Option<PathBuf>, sweep: bool) -> Results {
        Results {
            dir,
            sweep,
            verdict: Verdict::Pass,
        }
    }

    fn finish(&mut self, plan: &Plan, finished: &Finished) -> anyhow::Result<Verdict> {
        let binaries = plan.binaries();
        let shard = (plan.options.shard.count > 1).then_some(plan.options.shard);
        let mut matrix = Matrix::from_run(&plan.scenarios, &binaries, &finished.records, shard);
        for t in &plan.targets {
            matrix.set_protocol(&t.binary.label(), Protocol::of(&t.caps));
        }
        let mut drift = if self.dir.is_some() && binaries.len() > 1 {
            drift_sections(plan, &finished.records)
        } else {
            Vec::new()
        };
        for (label, totals) in report::conformance::totals(&matrix) {
            eprintln!(
                "codex-parity: against its own schema: {}; checks took {} ms",
                report::conformance::line(&label, &totals),
                totals.time.as_millis()
            );
        }
        let changes = report::changes::changes(&matrix);
        if self.sweep {
            drift.insert(0, report::changes::section(&changes));
        }
        let verdict = report::show(&matrix, self.dir.as_deref(), drift)?;
        if self.sweep {
            print!("\n{}", report::changes::render(&changes));
        }
        Ok(verdict)
    }
}

impl Sink for Results {
    fn event(&mut self, event: &Event<'_>) {
        let Event::Finished {
            plan,
            finished,
            stopped,
        } = event
        else {
            return;
        };
        if *stopped {
            // A partial matrix on the terminal; no report files for a run that did not end.
            let matrix =
                Matrix::from_run(&plan.scenarios, &plan.binaries(), &finished.records, None);
            print!("\n{}", terminal::render(&matrix));
            return;
        }
        self.verdict = Verdict::of(self.finish(plan, finished));
    }

    fn verdict(&self) -> Verdict {
        self.verdict
    }
}

/// The report's schema, request and transcript drift sections, for two or more binaries,
/// from the schemas read when the plan was built.
fn drift_sections(plan: &Plan, records: &[Cell]) -> Vec<sections::Section> {
    let mut order: Vec<_> = plan.targets.iter().collect();
    order.sort_by_key(|t| versions::sort_key(&t.binary.version));
    let schemas: Vec<(String, Schema)> = order
        .iter()
        .map(|t| (t.binary.label(), t.caps.schema()))
        .collect();
    let diffs: Vec<_> = schemas
        .windows(2)
        .map(|w| schema_diff::diff(&w[0].0, &w[0].1, &w[1].0, &w[1].1))
        .collect();
    let binaries = plan.binaries();
    vec![
        sections::schema_drift(&diffs),
        sections::request_drift(request_drift::report(records, &binaries)),
        sections::transcript_drift(transcript_diff::report(records, &binaries)),
    ]
}

/// Each scenario's transcript: into `dir/transcripts/` (`--report`), beside each kept
/// world (`--keep`).
pub struct Transcripts {
    /// The report directory.
    pub dir: Option<PathBuf>,
    /// Whether worlds were kept.
    pub keep: bool,
    verdict: Verdict,
}

impl Transcripts {
    /// Transcripts into `dir` and beside kept worlds.
    pub fn new(dir: Option<PathBuf>, keep: bool) -> Transcripts {
        Transcripts {
            dir,
            keep,
            verdict: Verdict::Pass,
        }
    }

    fn write(&self, records: &[Cell]) -> anyhow::Result<()> {
        if let Some(dir) = &self.dir {
            let n = transcript::write_report(dir, records)?;
            eprintln!(
                "codex-parity: wrote {n} transcript(s) to {}",
                dir.join("transcripts").display()
            );
        }
        if self.keep {
            for path in transcript::write_kept(records)? {
                eprintln!("codex-parity: kept {}", path.display());
            }
        }
        Ok(())
    }
}

impl Sink for Transcripts {
    fn event(&mut self, event: &Event<'_>) {
        if let Some((_, finished)) = event.ended() {
            let written = self.write(&finished.records).map(|()| Verdict::Pass);
            self.verdict = Verdict::of(written);
        }
    }

    fn verdict(&self) -> Verdict {
        self.verdict
    }
}

/// What changed from each version to the next, on stdout: the model requests
/// (`--request-diff`) and the messages codex sent the client (`--transcript-diff`).
pub struct Diffs {
    /// `--request-diff`.
    pub requests: bool,
    /// `--transcript-diff`.
    pub transcripts: bool,
}

impl Sink for Diffs {
    fn event(&mut self, event: &Event<'_>) {
        if let Some((plan, finished)) = event.ended() {
            let binaries: Vec<CodexBinary> = plan.binaries();
            if self.requests {
                print!("{}", request_drift::report(&finished.records, &binaries));
            }
            if self.transcripts {
                print!("{}", transcript_diff::report(&finished.records, &binaries));
            }
        }
    }
}

/// The golden expectations: the releases no golden transcript covers said (a differing
/// one fails its record as it comes in, and the golden requests are checked inside each
/// scenario), or with `bless` both kinds written from the run.
pub struct Golden {
    /// `--bless`.
    pub bless: bool,
    verdict: Verdict,
}

impl Golden {
    /// Checks, or blesses with `bless`.
    pub fn new(bless: bool) -> Golden {
        Golden {
            bless,
            verdict: Verdict::Pass,
        }
    }

    fn finish(&self, plan: &Plan, records: &[Cell]) -> anyhow::Result<Verdict> {
        let expectations = Expectations::current()?;
        if !self.bless {
            // A golden transcript that differs failed its record already (`Plan::run`), in the
            // matrix; here only the releases older than every golden file are said.
            print!("{}", golden_transcript::missing(&expectations, records)?);
            return Ok(Verdict::Pass);
        }
        let dir = expectations.bless_dir()?;
        println!("blessing into {}", dir.display());
        let mut verdict = Verdict::Pass;
        for outcome in golden::bless(records, &plan.binaries(), &dir) {
            if outcome.is_error() {
                verdict = Verdict::Error;
            }
            println!("{outcome}");
        }
        for f in golden_transcript::bless(&dir, records)? {
            println!("blessed: proposed golden transcript {}", f.display());
        }
        let pending = pending::list(&dir)?.len();
        println!(
            "{pending} pending expectation(s) in {}: `codex-parity review` shows them as diffs, \
             `--accept` or `--reject` settles them",
            dir.display()
        );
        Ok(verdict)
    }
}

impl Sink for Golden {
    fn event(&mut self, event: &Event<'_>) {
        if let Some((plan, finished)) = event.ended() {
            self.verdict = Verdict::of(self.finish(plan, &finished.records));
        }
    }

    fn verdict(&self) -> Verdict {
        self.verdict
    }
}
