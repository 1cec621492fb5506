//! Request drift across codex versions (`codex-parity run --request-diff`): for each scenario, what
//! changed in the model requests codex sent, from each version to the next (oldest first), as
//! [`crate::drift::request_diff`] lines over [`crate::drift::normalize`]d requests.
//!
//! Most scenarios share the same drift (the base prompt, the tools, the headers), so within
//! one pair of versions a change line already printed is not printed again: a request then
//! says how many of its changes were shown above, and only its own are listed.

use std::collections::HashSet;

use crate::codex::binaries::CodexBinary;
use crate::codex::versions;
use crate::drift::normalize;
use crate::drift::request_diff::{diff_requests, lines};
use crate::harness::outcome::Outcome;
use crate::harness::runner::Cell;

/// New change lines printed per request at most; the rest are counted.
const LINES_PER_REQUEST: usize = 40;

/// The binaries oldest first (stable for equal versions).
pub fn oldest_first(binaries: &[CodexBinary]) -> Vec<CodexBinary> {
    let mut sorted = binaries.to_vec();
    sorted.sort_by_key(|b| versions::sort_key(&b.version));
    sorted
}

/// The report: one block per scenario, one section per pair of consecutive versions.
pub fn report(records: &[Cell], binaries: &[CodexBinary]) -> String {
    let not_compared = |a: &Cell, b: &Cell| {
        [a, b].iter().find_map(|r| match &r.outcome {
            Outcome::NotApplicable(why) => Some(format!("n/a on {}: {why}", r.label)),
            _ => None,
        })
    };
    pairwise("request drift", records, binaries, not_compared, pair_text)
}

/// A drift report over consecutive versions (oldest first): a header naming `what`, then per
/// scenario (in the records' order) one line per pair of versions, `old -> new: ` followed by
/// `not run on both`, `not compared (REASON)` when `not_compared` gives a reason, or what
/// `pair` says. `pair` gets the changes already shown for that pair of versions, so a change
/// shown once is then only counted.
pub fn pairwise(
    what: &str,
    records: &[Cell],
    binaries: &[CodexBinary],
    not_compared: impl Fn(&Cell, &Cell) -> Option<String>,
    mut pair: impl FnMut(&Cell, &Cell, &mut HashSet<String>) -> String,
) -> String {
    let labels: Vec<String> = oldest_first(binaries)
        .iter()
        .map(CodexBinary::label)
        .collect();
    let mut text = format!(
        "\n{what}, oldest first: {}\n(within a pair of versions, a change shown once is then only counted)\n",
        labels.join(" -> ")
    );
    let mut scenarios: Vec<(&str, &str)> = Vec::new();
    for r in records {
        if !scenarios.iter().any(|(name, _)| *name == r.scenario) {
            scenarios.push((r.scenario, r.id));
        }
    }
    let mut seen: Vec<HashSet<String>> = vec![HashSet::new(); labels.len().saturating_sub(1)];
    for (name, id) in scenarios {
        text.push_str(&format!("\n{name} ({id})\n"));
        let find = |label: &str| {
            records
                .iter()
                .find(|r| r.scenario == name && r.label == label)
        };
        for (at, w) in labels.windows(2).enumerate() {
            let (old, new) = (&w[0], &w[1]);
            text.push_str(&format!("  {old} -> {new}: "));
            let (Some(a), Some(b)) = (find(old), find(new)) else {
                text.push_str("not run on both\n");
                continue;
            };
            match not_compared(a, b) {
                Some(reason) => text.push_str(&format!("not compared ({reason})\n")),
                None => text.push_str(&pair(a, b, &mut seen[at])),
            }
        }
    }
    text
}

/// One pair's section, after `old -> new: `.
fn pair_text(a: &Cell, b: &Cell, seen: &mut HashSet<String>) -> String {
    let (old, new) = (
        normalize::model_requests(&a.requests),
        normalize::model_requests(&b.requests),
    );
    let diff = diff_requests(&old, &new);
    let mut text = if old.len() == new.len() {
        format!(
            "{} request{} each",
            old.len(),
            if old.len() == 1 { "" } else { "s" }
        )
    } else {
        format!("requests {} -> {}", old.len(), new.len())
    };
    let failed: Vec<&str> = [a, b]
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Failed(_)))
        .map(|r| r.label.as_str())
        .collect();
    if !failed.is_empty() {
        text.push_str(&format!(" (FAIL on {})", failed.join(", ")));
    }
    if diff.is_empty() {
        text.push_str(", no change\n");
        return text;
    }
    text.push('\n');
    // Requests whose changes were all shown above, listed together.
    let mut repeats: Vec<(usize, usize)> = Vec::new();
    for (i, changes) in &diff.changed {
        let all = lines(changes);
        let fresh: Vec<String> = all.iter().filter(|l| !seen.contains(*l)).cloned().collect();
        let (count, shown_above) = (all.len(), all.len() - fresh.len());
        seen.extend(all);
        if fresh.is_empty() {
            repeats.push((*i, count));
            continue;
        }
        text.push_str(&repeated(&std::mem::take(&mut repeats)));
        text.push_str(&format!("    request #{i}: {count} change(s)"));
        if shown_above > 0 {
            text.push_str(&format!(", {shown_above} as shown above"));
        }
        text.push('\n');
        for line in fresh.iter().take(LINES_PER_REQUEST) {
            text.push_str(&format!("      {line}\n"));
        }
        if fresh.len() > LINES_PER_REQUEST {
            text.push_str(&format!(
                "      … and {} more\n",
                fresh.len() - LINES_PER_REQUEST
            ));
        }
    }
    text.push_str(&repeated(&repeats));
    for (i, summary) in &diff.only_old {
        text.push_str(&format!(
            "    request #{i}: only on {} ({summary})\n",
            a.label
        ));
    }
    for (i, summary) in &diff.only_new {
        text.push_str(&format!(
            "    request #{i}: only on {} ({summary})\n",
            b.label
        ));
    }
    text
}

/// One line for requests (index, change count) whose changes were all shown above.
fn repeated(requests: &[(usize, usize)]) -> String {
    let (Some(first), Some(last)) = (requests.first(), requests.last()) else {
        return String::new();
    };
    let counts: Vec<usize> = requests.iter().map(|r| r.1).collect();
    let (min, max) = (
        counts.iter().min().copied().unwrap_or(0),
        counts.iter().max().copied().unwrap_or(0),
    );
    if requests.len() == 1 {
        return format!(
            "    request #{}: {} change(s), all as shown above\n",
            first.0, first.1
        );
    }
    let each = if min == max {
        format!("{min}")
    } else {
        format!("{min} to {max}")
    };
    format!(
        "    requests #{} to #{}: {each} change(s) each, all as shown above\n",
        first.0, last.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex_parity_sidecar::captured::CapturedRequest;
    use serde_json::json;
    use std::time::Duration;

    fn binary(version: &str) -> CodexBinary {
        CodexBinary {
            path: format!("/c/{version}/codex").into(),
            version: version.into(),
        }
    }

    fn request(thread: &str, body: serde_json::Value) -> CapturedRequest {
        serde_json::from_value(json!({
            "method": "POST", "path": "/v1/responses",
            "all_headers": {"thread-id": thread}, "body": body
        }))
        .unwrap()
    }

    fn record(scenario: &'static str, version: &str, requests: Vec<CapturedRequest>) -> Cell {
        Cell {
            perf: Default::default(),
            golden: crate::harness::scenario::GoldenKinds::default(),
            scenario,
            id: "E1",
            label: binary(version).label(),
            outcome: Outcome::Passed,
            duration: Duration::ZERO,
            requests,
            observations: Vec::new(),
            transcripts: Vec::new(),
            checked: None,
            drift: Vec::new(),
            failure: None,
        }
    }

    #[test]
    fn versions_sort_numerically_with_prereleases_first() {
        let sorted: Vec<String> = oldest_first(&[
            binary("0.171.0"),
            binary("0.131.0"),
            binary("0.172.0-alpha.1"),
            binary("0.20.0"),
            binary("0.172.0"),
        ])
        .into_iter()
        .map(|b| b.version)
        .collect();
        assert_eq!(
            sorted,
            ["0.20.0", "0.131.0", "0.171.0", "0.172.0-alpha.1", "0.172.0"]
        );
    }

    #[test]
    fn report_shows_changes_per_scenario_and_counts_repeats() {
        let old = |t: &str| request(t, json!({"instructions": "x", "stream": true}));
        let new = |t: &str| request(t, json!({"stream": true, "include": ["r"]}));
        let records = vec![
            // Given newest first: the report orders them.
            record(
                "one",
                "0.171.0",
                vec![new("b7a0e0c8-1b6a-4c38-9a50-1c8b5a6b7c01")],
            ),
            record(
                "two",
                "0.171.0",
                vec![new("b7a0e0c8-1b6a-4c38-9a50-1c8b5a6b7c02")],
            ),
            record("three", "0.171.0", vec![new("a"), new("a")]),
            record(
                "one",
                "0.131.0",
                vec![old("d3c1f7a2-2b1e-4f5a-8c6d-0e9f8a7b6c03")],
            ),
            record(
                "two",
                "0.131.0",
                vec![old("d3c1f7a2-2b1e-4f5a-8c6d-0e9f8a7b6c04")],
            ),
            Cell {
                outcome: Outcome::NotApplicable("no goals".into()),
                ..record("three", "0.131.0", vec![])
            },
        ];
        let text = report(&records, &[binary("0.171.0"), binary("0.131.0")]);
        assert!(
            text.contains("oldest first: codex-0.131.0 -> codex-0.171.0"),
            "{text}"
        );
        assert!(
            text.contains(
                "one (E1)\n  codex-0.131.0 -> codex-0.171.0: 1 request each\n    request #0: 2 change(s)\n      + body.include: [\"r\"]\n      - body.instructions: \"x\"\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("two (E1)\n  codex-0.131.0 -> codex-0.171.0: 1 request each\n    request #0: 2 change(s), all as shown above\n\nthree"),
            "{text}"
        );
        assert!(
            text.contains("not compared (n/a on codex-0.131.0: no goals)"),
            "{text}"
        );
    }

    #[test]
    fn requests_that_only_repeat_earlier_changes_share_a_line() {
        assert_eq!(repeated(&[]), "");
        assert_eq!(
            repeated(&[(3, 8)]),
            "    request #3: 8 change(s), all as shown above\n"
        );
        assert_eq!(
            repeated(&[(0, 8), (1, 10), (2, 8)]),
            "    requests #0 to #2: 8 to 10 change(s) each, all as shown above\n"
        );
    }

    #[test]
    fn equal_requests_say_no_change_and_count_changes_are_listed() {
        let r = |t: &str| request(t, json!({"stream": true}));
        let records = vec![
            record("s", "0.1.0", vec![r("a")]),
            record("s", "0.2.0", vec![r("a")]),
            record("s", "0.3.0", vec![r("a"), r("a")]),
        ];
        let text = report(
            &records,
            &[binary("0.1.0"), binary("0.2.0"), binary("0.3.0")],
        );
        assert!(
            text.contains("codex-0.1.0 -> codex-0.2.0: 1 request each, no change\n"),
            "{text}"
        );
        assert!(
            text.contains("codex-0.2.0 -> codex-0.3.0: requests 1 -> 2\n    request #1: only on codex-0.3.0 (POST /v1/responses, 0 input items)\n"),
            "{text}"
        );
    }
}
