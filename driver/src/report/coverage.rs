//! Protocol coverage: per codex binary, the client requests, notifications and server
//! requests the run's scenarios exercised (see [`crate::harness::coverage`]) out of those
//! its schema lists, stable and experimental apart, and those never exercised. One line per
//! binary on the terminal ([`line()`]), the section "Protocol coverage" of `report.md` and
//! `report.html` ([`section`]), and the `coverage` field of `results.json` ([`Coverage`]).
//!
//! ```text
//! protocol coverage codex 0.171.0: client requests 24/110 stable + 3/79 experimental,
//!   notifications 27/87, server requests 4/10
//! ```
//!
//! A client request counts when the client wrote it, however codex answered; those answered
//! only with an error, never answered or outside the schema are listed apart.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::codex::surface::UseKind;
use crate::harness::coverage::{Answer, Exercised, Listed};
use crate::report::matrix::Matrix;
use crate::report::sections::{Item, Section};

/// The methods of one part of a schema's list (stable, or only experimental).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Split {
    /// How many methods the list has.
    pub listed: usize,
    /// Those some scenario exercised, in order.
    pub exercised: Vec<String>,
    /// Those no scenario exercised, in order.
    pub never: Vec<String>,
}

impl Split {
    fn of(
        methods: &std::collections::BTreeSet<String>,
        exercised: &Exercised,
        kind: UseKind,
    ) -> Split {
        let (exercised, never): (Vec<String>, Vec<String>) = methods
            .iter()
            .cloned()
            .partition(|m| exercised.has(kind, m));
        Split {
            listed: methods.len(),
            exercised,
            never,
        }
    }

    /// Every method of the list, exercised or not.
    pub fn methods(&self) -> impl Iterator<Item = &String> {
        self.exercised.iter().chain(&self.never)
    }

    /// `exercised/listed`.
    fn ratio(&self) -> String {
        format!("{}/{}", self.exercised.len(), self.listed)
    }
}

/// The coverage of one kind of message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KindCoverage {
    /// The methods of the stable schema.
    pub stable: Split,
    /// The methods only the experimental schema has.
    pub experimental: Split,
    /// Methods exercised that the schema does not list (a scenario calling a method that
    /// does not exist, on purpose, or codex sending one it does not publish).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unlisted: Vec<String>,
    /// Client requests codex answered only with an error (among the exercised).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answered_with_error: Vec<String>,
    /// Client requests codex never answered (among the exercised).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unanswered: Vec<String>,
}

impl KindCoverage {
    fn of(listed: &Listed, exercised: &Exercised, kind: UseKind) -> KindCoverage {
        let answered = |want: Answer| -> Vec<String> {
            exercised
                .requests
                .iter()
                .filter(|(_, a)| **a == want)
                .map(|(m, _)| m.clone())
                .collect()
        };
        let (answered_with_error, unanswered) = if kind == UseKind::Request {
            (answered(Answer::Error), answered(Answer::Unanswered))
        } else {
            (Vec::new(), Vec::new())
        };
        KindCoverage {
            stable: Split::of(&listed.stable, exercised, kind),
            experimental: Split::of(&listed.experimental, exercised, kind),
            unlisted: exercised
                .methods(kind)
                .into_iter()
                .filter(|m| !listed.contains(m))
                .map(String::from)
                .collect(),
            answered_with_error,
            unanswered,
        }
    }

    /// The schema's lists this coverage was counted against.
    pub fn listed(&self) -> Listed {
        Listed {
            stable: self.stable.methods().cloned().collect(),
            experimental: self.experimental.methods().cloned().collect(),
        }
    }

    /// `24/110 stable + 3/79 experimental`, or `27/87` when the experimental schema adds
    /// none.
    fn ratio(&self) -> String {
        if self.experimental.listed == 0 {
            self.stable.ratio()
        } else {
            format!(
                "{} stable + {} experimental",
                self.stable.ratio(),
                self.experimental.ratio()
            )
        }
    }
}

/// The protocol coverage of one binary.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Coverage {
    /// The binary's label (`codex-0.171.0`).
    pub codex: String,
    /// Its version.
    pub version: String,
    /// How many of the column's scenarios exercised anything.
    pub scenarios: usize,
    /// Client requests.
    pub client_requests: KindCoverage,
    /// Notifications.
    pub notifications: KindCoverage,
    /// Server requests.
    pub server_requests: KindCoverage,
}

impl Coverage {
    /// The three kinds with their names, in the order they are shown.
    pub fn kinds(&self) -> [(&'static str, &KindCoverage); 3] {
        [
            ("client requests", &self.client_requests),
            ("notifications", &self.notifications),
            ("server requests", &self.server_requests),
        ]
    }
}

/// Everything the scenarios of column `label` exercised, joined.
pub fn exercised(matrix: &Matrix, label: &str) -> Exercised {
    let mut all = Exercised::default();
    for e in matrix.entries.iter().filter(|e| e.codex == label) {
        all.join(&e.exercised);
    }
    all
}

/// The coverage of every column whose schema lists are known, in column order.
pub fn coverage(matrix: &Matrix) -> Vec<Coverage> {
    matrix
        .columns
        .iter()
        .filter_map(|column| {
            let protocol = column.protocol.as_ref()?;
            let all = exercised(matrix, &column.label);
            let scenarios = matrix
                .entries
                .iter()
                .filter(|e| e.codex == column.label && !e.exercised.is_empty())
                .count();
            Some(Coverage {
                codex: column.label.clone(),
                version: column.version.clone(),
                scenarios,
                client_requests: KindCoverage::of(&protocol.requests, &all, UseKind::Request),
                notifications: KindCoverage::of(
                    &protocol.notifications,
                    &all,
                    UseKind::Notification,
                ),
                server_requests: KindCoverage::of(
                    &protocol.server_requests,
                    &all,
                    UseKind::ServerRequest,
                ),
            })
        })
        .collect()
}

/// The scenarios of column `label` that exercised `method` of `kind`, as (catalogue id,
/// name), in row order.
pub fn exercised_by<'m>(
    matrix: &'m Matrix,
    label: &str,
    kind: UseKind,
    method: &str,
) -> Vec<(&'m str, &'m str)> {
    matrix
        .entries
        .iter()
        .filter(|e| e.codex == label && e.exercised.has(kind, method))
        .map(|e| (matrix.id_of(&e.scenario), e.scenario.as_str()))
        .collect()
}

/// The terminal's line of one binary: `protocol coverage codex 0.171.0: client requests
/// 24/110 stable + 3/79 experimental, notifications 27/87, server requests 4/10`, with the
/// client requests answered only with an error, never answered or outside the schema
/// counted after it when there are any.
pub fn line(c: &Coverage) -> String {
    let kinds: Vec<String> = c
        .kinds()
        .iter()
        .map(|(name, k)| format!("{name} {}", k.ratio()))
        .collect();
    let mut text = format!(
        "protocol coverage codex {}: {}",
        c.version,
        kinds.join(", ")
    );
    let requests = &c.client_requests;
    let notes: Vec<String> = [
        (
            requests.answered_with_error.len(),
            "answered only with an error",
        ),
        (requests.unanswered.len(), "never answered"),
        (requests.unlisted.len(), "outside the schema"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !notes.is_empty() {
        text.push_str(&format!(" (client requests: {})", notes.join(", ")));
    }
    text
}

/// The section "Protocol coverage": one item per binary, titled with its [`line()`], listing
/// per kind the methods exercised (each with how many scenarios exercised it) and those
/// never exercised.
pub fn section(matrix: &Matrix) -> Section {
    let items = coverage(matrix)
        .iter()
        .map(|c| {
            let mut counts: BTreeMap<(UseKind, &str), usize> = BTreeMap::new();
            for e in matrix.entries.iter().filter(|e| e.codex == c.codex) {
                for kind in [
                    UseKind::Request,
                    UseKind::Notification,
                    UseKind::ServerRequest,
                ] {
                    for m in e.exercised.methods(kind) {
                        *counts.entry((kind, m)).or_default() += 1;
                    }
                }
            }
            let mut lines = Vec::new();
            let kinds = [
                UseKind::Request,
                UseKind::Notification,
                UseKind::ServerRequest,
            ];
            for ((name, k), kind) in c.kinds().into_iter().zip(kinds) {
                let with_counts = |methods: &[String]| -> String {
                    methods
                        .iter()
                        .map(|m| {
                            let n = counts.get(&(kind, m.as_str())).copied().unwrap_or(0);
                            format!("{m} ({n})")
                        })
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let parts: Vec<(&str, &Split)> = if k.experimental.listed == 0 {
                    vec![("", &k.stable)]
                } else {
                    vec![(" stable", &k.stable), (" experimental", &k.experimental)]
                };
                for (part, split) in parts {
                    lines.push(format!(
                        "{name}{part} exercised ({}/{}): {}",
                        split.exercised.len(),
                        split.listed,
                        with_counts(&split.exercised)
                    ));
                    lines.push(format!(
                        "{name}{part} never exercised ({}): {}",
                        split.never.len(),
                        split.never.join(", ")
                    ));
                }
                for (what, methods) in [
                    ("outside the schema", &k.unlisted),
                    ("answered only with an error", &k.answered_with_error),
                    ("never answered", &k.unanswered),
                ] {
                    if !methods.is_empty() {
                        lines.push(format!(
                            "{name} {what} ({}): {}",
                            methods.len(),
                            with_counts(methods)
                        ));
                    }
                }
            }
            Item {
                anchor: None,
                title: line(c),
                text: lines.join("\n"),
            }
        })
        .collect();
    Section {
        id: "protocol-coverage".into(),
        title: "Protocol coverage".into(),
        intro: "Per codex, the client requests the scenarios wrote and the notifications and \
                server requests codex sent them, out of those its schema lists \
                (generate-json-schema, and what --experimental adds); in brackets, how many \
                scenarios exercised each. A client request counts however codex answered it."
            .into(),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::matrix::tests::sample;

    #[test]
    fn counts_the_sample_against_its_schema_lists() {
        let m = sample();
        let all = coverage(&m);
        assert_eq!(all.len(), 1, "only the column whose lists are known");
        let c = &all[0];
        assert_eq!((c.codex.as_str(), c.scenarios), ("codex-0.171.0", 2));
        let r = &c.client_requests;
        assert_eq!(r.stable.exercised, ["initialize", "thread/start"]);
        assert_eq!(r.stable.never, ["turn/start"]);
        assert_eq!(r.experimental.exercised, ["thread/goal/set"]);
        assert_eq!(r.unlisted, ["x/y"]);
        assert_eq!(r.answered_with_error, ["thread/start", "x/y"]);
        assert!(r.unanswered.is_empty());
        for (_, k) in c.kinds() {
            for split in [&k.stable, &k.experimental] {
                assert_eq!(split.listed, split.exercised.len() + split.never.len());
            }
        }
        assert_eq!(c.notifications.stable.never, ["turn/completed"]);
        assert_eq!(c.server_requests.stable.exercised, ["item/tool/call"]);
        assert_eq!(
            line(c),
            "protocol coverage codex 0.171.0: client requests 2/3 stable + 1/1 experimental, \
             notifications 1/2, server requests 1/1 (client requests: 2 answered only with an \
             error, 1 outside the schema)"
        );
        assert_eq!(
            exercised_by(&m, "codex-0.171.0", UseKind::Request, "initialize"),
            [("A1", "alpha"), ("B2", "gamma")]
        );
        assert!(exercised_by(&m, "codex-0.131.0", UseKind::Request, "thread/start").is_empty());
    }

    #[test]
    fn the_section_lists_exercised_and_never_exercised_per_kind() {
        let s = section(&sample());
        assert_eq!(s.items.len(), 1);
        let text = &s.items[0].text;
        assert!(
            text.contains(
                "client requests stable exercised (2/3): initialize (2), thread/start (1)"
            ),
            "{text}"
        );
        assert!(text.contains("client requests stable never exercised (1): turn/start"));
        assert!(text.contains("client requests experimental exercised (1/1): thread/goal/set (1)"));
        assert!(
            text.contains("notifications never exercised (1): turn/completed"),
            "{text}"
        );
        assert!(text.contains("client requests outside the schema (1): x/y (1)"));
        assert!(
            !text.contains("notifications stable"),
            "no experimental part to tell apart"
        );
    }
}
