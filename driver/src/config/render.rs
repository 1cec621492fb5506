//! A check's report for people: a table (items down, the releases named across, a short
//! cell each, and where the outcome changed), then the details of every item not accepted
//! everywhere with codex's own words per release, the notes of each release, what was done
//! about the host's configuration, and the time each release took. `--json` prints the
//! [`Report`] itself.

use std::fmt::Write as _;

use crate::config::check::Report;
use crate::config::verdict::{Status, cell};

/// The text report.
pub fn text(report: &Report) -> String {
    let mut out = format!(
        "config check {}: {} item(s) on {} release(s): {}",
        report.profile,
        report.items.len(),
        report.releases.len(),
        report.releases.join(", ")
    );
    if !report.probed.is_empty() {
        let _ = write!(
            out,
            " (+{} probed to place changes: {})",
            report.probed.len(),
            report.probed.join(", ")
        );
    }
    out.push_str("\n\n");
    let width = report
        .items
        .iter()
        .map(|i| label(i).chars().count())
        .max()
        .unwrap_or(4)
        .clamp(4, 70);
    let col: Vec<usize> = report
        .releases
        .iter()
        .map(|r| {
            report
                .items
                .iter()
                .filter_map(|i| i.verdicts.get(r).map(|v| cell(v).len()))
                .chain([r.len(), 4])
                .max()
                .unwrap_or(4)
        })
        .collect();
    let _ = write!(out, "  {:width$}", "item");
    for (r, w) in report.releases.iter().zip(&col) {
        let _ = write!(out, "  {r:w$}");
    }
    out.push_str("  first changed\n");
    for item in &report.items {
        let shown: String = label(item).chars().take(width).collect();
        let _ = write!(out, "  {shown:width$}");
        for (r, w) in report.releases.iter().zip(&col) {
            let c = item.verdicts.get(r).map_or_else(|| "-".into(), cell);
            let _ = write!(out, "  {c:w$}");
        }
        let changed: Vec<String> = item
            .changes
            .iter()
            .map(|c| {
                if c.exact {
                    c.first.clone()
                } else {
                    format!("<={}", c.first)
                }
            })
            .collect();
        let _ = writeln!(out, "  {}", changed.join(", "));
    }
    let troubled: Vec<_> = report
        .items
        .iter()
        .filter(|i| i.verdicts.values().any(|v| v.status != Status::Accepted))
        .collect();
    if !troubled.is_empty() {
        out.push_str("\ndetails (items not accepted as given on every release):\n");
    }
    for item in troubled {
        let _ = writeln!(out, "  {} {} [{}]", item.at, item.item, item.family);
        for change in &item.changes {
            let _ = writeln!(
                out,
                "    changed in {}{}: {} -> {} (last before: {})",
                change.first,
                if change.exact {
                    ""
                } else {
                    " or earlier (releases between not probed)"
                },
                change.from,
                change.to,
                change.last_before
            );
        }
        // Releases in a row with the same outcome are one line, with the first's words.
        let mut groups: Vec<(Vec<&String>, &crate::config::verdict::Verdict)> = Vec::new();
        for (version, v) in &item.verdicts {
            match groups.last_mut() {
                Some((versions, first)) if first.outcome() == v.outcome() => versions.push(version),
                _ => groups.push((vec![version], v)),
            }
        }
        for (versions, v) in groups {
            let said: Vec<String> = v.messages.iter().map(|m| one_line(m)).collect();
            let span = match versions.as_slice() {
                [one] => (*one).clone(),
                [first, .., last] => format!("{first}..{last} ({} releases)", versions.len()),
                [] => continue,
            };
            let words = if said.is_empty() {
                String::new()
            } else {
                format!(": {}", said.join(" | "))
            };
            let _ = writeln!(out, "    {span}: {v}{words}");
        }
    }
    out.push_str("\nreleases:\n");
    // A note every release gave is said once.
    let mut notes: Vec<(&str, Vec<&str>)> = Vec::new();
    for run in &report.runs {
        for note in &run.notes {
            match notes.iter_mut().find(|(n, _)| n == note) {
                Some((_, versions)) => versions.push(&run.version),
                None => notes.push((note, vec![&run.version])),
            }
        }
    }
    for run in &report.runs {
        let _ = writeln!(
            out,
            "  {}{}: {} run(s) of codex in {:.1} s",
            run.version,
            if run.named { "" } else { " (probed)" },
            run.runs,
            run.took_ms as f64 / 1000.0
        );
        for leak in &run.leaks {
            let _ = writeln!(out, "    NOT ISOLATED: {leak}");
        }
        for c in &run.connections {
            let _ = writeln!(
                out,
                "    codex tried to connect to {c} (refused by the check's proxy)"
            );
        }
    }
    for (note, versions) in notes {
        let on = if versions.len() == report.runs.len() {
            "every release".to_string()
        } else {
            versions.join(", ")
        };
        let _ = writeln!(out, "  note ({on}): {}", one_line(note));
    }
    let _ = writeln!(out, "host configuration: {}", report.isolation);
    let failing = report
        .items
        .iter()
        .filter(|i| {
            report
                .releases
                .iter()
                .any(|r| !i.verdicts.get(r).is_some_and(|v| v.passes(report.strict)))
        })
        .count();
    let _ = writeln!(
        out,
        "result: {} of {} item(s) accepted{} on every release named",
        report.items.len() - failing,
        report.items.len(),
        if report.strict {
            " without a warning (--strict)"
        } else {
            " (warnings allowed)"
        }
    );
    out
}

fn label(item: &crate::config::check::ItemReport) -> String {
    format!(
        "{} {}",
        item.at.rsplit('/').next().unwrap_or(&item.at),
        item.item
    )
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::check::{Change, ItemReport, ReleaseReport};
    use crate::config::verdict::{Verdict, Warning};

    #[test]
    fn a_table_details_and_the_result() {
        let remapped = Verdict::warning(
            Warning::Remapped,
            Some("on-request".into()),
            "asked for on-failure".into(),
        );
        let report = Report {
            profile: "p.toml".into(),
            releases: vec!["0.131.0".into(), "0.171.0".into()],
            probed: vec!["0.143.0".into()],
            items: vec![ItemReport {
                id: 0,
                family: "config.toml".into(),
                item: "approval_policy = \"on-failure\"".into(),
                at: "/x/p.toml:7".into(),
                verdicts: [
                    ("0.131.0".to_string(), Verdict::accepted()),
                    ("0.143.0".to_string(), remapped.clone()),
                    ("0.171.0".to_string(), remapped),
                ]
                .into_iter()
                .collect(),
                changes: vec![Change {
                    last_before: "0.142.5".into(),
                    first: "0.143.0".into(),
                    exact: true,
                    from: "accepted".into(),
                    to: "warning (remapped on-request)".into(),
                }],
            }],
            runs: vec![ReleaseReport {
                version: "0.131.0".into(),
                named: true,
                notes: vec!["configWarning: no bubblewrap".into()],
                leaks: Vec::new(),
                connections: Vec::new(),
                runs: 2,
                took_ms: 1200,
            }],
            isolation: "no host configuration in /etc/codex".into(),
            strict: false,
        };
        let t = text(&report);
        assert!(
            t.contains("p.toml:7 approval_policy = \"on-failure\""),
            "{t}"
        );
        let row = t.lines().find(|l| l.contains("approval_policy")).unwrap();
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(
            words[words.len() - 3..],
            ["ok", "warn:remapped", "0.143.0"],
            "{t}"
        );
        assert!(
            t.contains("changed in 0.143.0: accepted -> warning (remapped on-request)"),
            "{t}"
        );
        assert!(t.contains("0.131.0: 2 run(s) of codex in 1.2 s"), "{t}");
        assert!(
            t.contains("result: 1 of 1 item(s) accepted (warnings allowed)"),
            "{t}"
        );
        assert!(report.passes());
        let strict = Report {
            strict: true,
            ..report
        };
        assert!(!strict.passes());
    }
}
