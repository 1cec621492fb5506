//! `junit.xml`: one `<testsuite>` per codex binary, one `<testcase>` per scenario that ran
//! on it, for CI systems that show JUnit results.
//!
//! A failure is a `<failure>` (first line as its message, the full reason as its text), a
//! not-applicable scenario is `<skipped message=REASON>`, and known drift is a passing
//! testcase whose `<system-out>` holds the notes. Each suite carries its codex version as
//! the property `codex.version`.

use std::fmt::Write;
use std::time::Duration;

use super::matrix::{Entry, Matrix};
use super::{escape, escape_attr};
use crate::harness::outcome::{KnownDrift, Outcome, OutcomeKind};

/// The matrix as JUnit XML.
pub fn render(matrix: &Matrix) -> String {
    let mut suites = String::new();
    let (mut tests, mut failures, mut skipped, mut time) = (0, 0, 0, Duration::ZERO);
    for column in &matrix.columns {
        let entries: Vec<_> = matrix
            .entries
            .iter()
            .filter(|e| e.codex == column.label)
            .collect();
        let t = matrix.totals(&column.label);
        let suite_time: Duration = entries.iter().map(|e| e.duration).sum();
        tests += entries.len();
        failures += t.failed;
        skipped += t.not_applicable;
        time += suite_time;
        let _ = writeln!(
            suites,
            r#"  <testsuite name="{}" tests="{}" failures="{}" errors="0" skipped="{}" time="{}">"#,
            escape(&column.label),
            entries.len(),
            t.failed,
            t.not_applicable,
            seconds(suite_time)
        );
        suites.push_str("    <properties>\n");
        let _ = writeln!(
            suites,
            r#"      <property name="codex.version" value="{}"/>"#,
            escape(&column.version)
        );
        if let Some(shard) = matrix.shard {
            let _ = writeln!(
                suites,
                r#"      <property name="codex-parity.shard" value="{shard}"/>"#
            );
        }
        suites.push_str("    </properties>\n");
        for e in entries {
            write_case(&mut suites, e);
        }
        suites.push_str("  </testsuite>\n");
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
         <testsuites name=\"codex-parity\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\" time=\"{}\">\n\
         {suites}</testsuites>\n",
        seconds(time)
    )
}

/// One `<testcase>`: empty when passed, else holding its failure, its skip or its drift.
fn write_case(suites: &mut String, e: &Entry) {
    let _ = write!(
        suites,
        r#"    <testcase name="{}" classname="{}" time="{}""#,
        escape(&e.scenario),
        escape(&e.codex),
        seconds(e.duration)
    );
    match &e.outcome {
        Outcome::Passed => suites.push_str("/>\n"),
        Outcome::Failed(reason) => {
            let _ = writeln!(
                suites,
                ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                escape_attr(&super::headline(reason)),
                escape(reason)
            );
        }
        Outcome::NotApplicable(reason) => {
            let _ = writeln!(
                suites,
                ">\n      <skipped message=\"{}\"/>\n    </testcase>",
                escape_attr(reason)
            );
        }
        // Known drift passes (as the baseline expects); a property says which kind,
        // so a CI dashboard can tell drift that contradicts the claim apart.
        Outcome::Drift(notes) => drift_case(suites, OutcomeKind::Drift, "known drift", notes),
        Outcome::Contradicts(notes) => drift_case(
            suites,
            OutcomeKind::Contradicts,
            "known drift that contradicts the scenario's headline claim",
            notes,
        ),
    }
}

/// The end of a passing case with drift: a `parity.status` property (`drift` or
/// `contradicts`) and the notes in `<system-out>`.
fn drift_case(suites: &mut String, kind: OutcomeKind, what: &str, known: &[KnownDrift]) {
    let status = kind.name();
    let _ = writeln!(
        suites,
        ">\n      <properties><property name=\"parity.status\" value=\"{status}\"/></properties>\n      <system-out>{what} (fixtures/expected/baselines.json):\n{}</system-out>\n    </testcase>",
        escape(&Outcome::lines(known).join("\n"))
    );
}

fn seconds(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    /// Parses the XML back: proves it is well formed and reads what a CI system reads.
    #[test]
    fn parses_back_with_one_suite_per_version() {
        let mut m = sample();
        // Characters XML 1.0 forbids (an ANSI colour code in codex's stderr, say) and
        // markup in reasons must not break the file.
        m.entries[1].outcome =
            Outcome::Failed("\u{1b}[31mred\u{1b}[0m </failure> ]]> & \"q\"\nline 2".into());
        let xml = render(&m);
        let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(root.attribute("tests"), Some("5"));
        assert_eq!(root.attribute("failures"), Some("1"));
        assert_eq!(root.attribute("skipped"), Some("1"));
        let suites: Vec<_> = root
            .children()
            .filter(|n| n.has_tag_name("testsuite"))
            .collect();
        let names: Vec<_> = suites
            .iter()
            .map(|s| s.attribute("name").unwrap())
            .collect();
        assert_eq!(names, ["codex-0.131.0", "codex-0.171.0"]);
        assert_eq!(suites[0].attribute("tests"), Some("2"));
        assert_eq!(suites[1].attribute("tests"), Some("3"));
        assert_eq!(suites[1].attribute("failures"), Some("1"));
        let version = suites[1]
            .descendants()
            .find(|n| n.attribute("name") == Some("codex.version"))
            .and_then(|n| n.attribute("value"));
        assert_eq!(version, Some("0.171.0"));

        let case = |suite: usize, name: &str| {
            suites[suite]
                .children()
                .find(|n| n.has_tag_name("testcase") && n.attribute("name") == Some(name))
                .unwrap()
        };
        let failure = case(1, "alpha")
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("red </failure> ]]> & \"q\""),
            "terminal colours stripped, markup escaped"
        );
        assert!(failure.text().unwrap().ends_with("\nline 2"));
        assert_eq!(case(1, "alpha").attribute("time"), Some("2.345"));
        assert_eq!(
            case(1, "alpha").attribute("classname"),
            Some("codex-0.171.0")
        );
        let skipped = case(0, "beta")
            .children()
            .find(|n| n.has_tag_name("skipped"))
            .unwrap();
        assert_eq!(skipped.attribute("message"), Some("no thread/goal methods"));
        let drift = case(1, "beta");
        assert!(!drift.children().any(|n| n.has_tag_name("failure")));
        let out = drift
            .children()
            .find(|n| n.has_tag_name("system-out"))
            .unwrap();
        assert!(
            out.text()
                .unwrap()
                .contains("injects output (goal_objective)")
        );
        assert!(case(0, "alpha").children().all(|n| !n.is_element()));
    }

    #[test]
    fn drift_cases_say_their_kind_in_a_property() {
        let mut m = sample();
        m.entries[4].outcome =
            Outcome::Contradicts(vec![crate::harness::outcome::KnownDrift::with_reason(
                "the goal stays active",
                true,
            )]);
        let xml = render(&m);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let status = |name: &str| {
            let case = doc
                .descendants()
                .find(|n| {
                    n.has_tag_name("testcase")
                        && n.attribute("name") == Some(name)
                        && n.attribute("classname") == Some("codex-0.171.0")
                })
                .unwrap();
            assert!(
                !case.children().any(|n| n.has_tag_name("failure")),
                "passes"
            );
            let property = case
                .descendants()
                .find(|n| n.has_tag_name("property"))
                .unwrap();
            assert_eq!(property.attribute("name"), Some("parity.status"));
            let out = case.descendants().find(|n| n.has_tag_name("system-out"));
            (
                property.attribute("value").unwrap().to_string(),
                out.and_then(|n| n.text()).unwrap().to_string(),
            )
        };
        let (kind, out) = status("gamma");
        assert_eq!(kind, "contradicts");
        assert!(out.starts_with("known drift that contradicts"), "{out}");
        assert!(out.ends_with("the goal stays active (as seen)"), "{out}");
        assert_eq!(status("beta").0, "drift");
    }
}
