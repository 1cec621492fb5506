//! What `upgrade` found, and its verdict: [`Upgrade::broke`] lists everything the
//! integration relies on that does not hold on B (the exit status is 1 when it is not
//! empty); [`Upgrade::text`] is the terminal's report, [`Upgrade::markdown`] the report
//! file's, and the whole is JSON (`upgrade.json`).

use serde::Serialize;

use super::known::KnownChange;
use crate::harness::outcome::OutcomeKind;

/// The uses file checked from A to B.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SurfacePart {
    /// `surface check`'s report.
    pub text: String,
    /// Uses that changed incompatibly.
    pub incompatible: usize,
    /// Uses that name what neither codex has (a typo of the file).
    pub unknown: usize,
}

/// The integration's configuration (a `config check` profile) judged on A and on B.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConfigPart {
    /// `config check`'s report on the two releases.
    pub text: String,
    /// Each item not accepted on B (a warning counts as accepted), with B's cell and
    /// whether A accepted it.
    pub broken: Vec<ConfigItem>,
}

/// One item of the profile that does not hold on B.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ConfigItem {
    /// Where it is (`FILE:LINE`) and what it is, as `config check`'s table shows it.
    pub item: String,
    /// Its cell on B (`REFUSED start`, `remapped:on-request`, …).
    pub on_to: String,
    /// Whether A accepted it.
    pub held_on_from: bool,
}

/// One recording run on A and on B.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecordingRow {
    /// The scenario's name.
    pub scenario: String,
    /// How it ended on A (`None`: not run there).
    pub on_from: Option<OutcomeKind>,
    /// Why, when it failed or did not apply on A.
    pub why_from: Option<String>,
    /// How it ended on B.
    pub on_to: Option<OutcomeKind>,
    /// Why, when it failed or did not apply on B.
    pub why_to: Option<String>,
}

/// The client checked against one recording's session as A and as B send it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ClientRow {
    /// The recording served.
    pub recording: String,
    /// Whether the client handled A's session.
    pub with_from: Option<bool>,
    /// Why not.
    pub why_from: Option<String>,
    /// Whether it handled B's.
    pub with_to: Option<bool>,
    /// Why not.
    pub why_to: Option<String>,
}

/// Everything `upgrade` found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Upgrade {
    /// A's version.
    pub from: String,
    /// B's version.
    pub to: String,
    /// The protocol's change in one line (methods added and removed).
    pub protocol: String,
    /// The uses file's check, when one was given.
    pub surface: Option<SurfacePart>,
    /// The configuration's check, when a profile was given.
    pub config: Option<ConfigPart>,
    /// The recordings, each on A and B.
    pub recordings: Vec<RecordingRow>,
    /// The client against each recording.
    pub clients: Vec<ClientRow>,
    /// The catalogue's known changes between A and B.
    pub known: Vec<KnownChange>,
}

/// Whether an outcome holds (passed, or differs only as the baselines expect).
fn holds(kind: Option<OutcomeKind>) -> bool {
    matches!(
        kind,
        Some(OutcomeKind::Passed | OutcomeKind::Drift | OutcomeKind::Contradicts)
    )
}

impl Upgrade {
    /// What the integration relies on that does not hold on B, one sentence each.
    pub fn broke(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(s) = &self.surface {
            if s.incompatible > 0 {
                out.push(format!(
                    "{} use(s) of your uses file changed incompatibly",
                    s.incompatible
                ));
            }
            if s.unknown > 0 {
                out.push(format!(
                    "{} use(s) of your uses file name what neither codex has",
                    s.unknown
                ));
            }
        }
        for c in self.config.iter().flat_map(|c| &c.broken) {
            let also = if c.held_on_from {
                ""
            } else {
                " (nor by the codex you run today)"
            };
            out.push(format!(
                "your configuration's {} is not taken by {} ({}){also}",
                c.item, self.to, c.on_to
            ));
        }
        for r in &self.recordings {
            if !holds(r.on_to) {
                let also = if holds(r.on_from) {
                    ""
                } else {
                    " (and on the codex you run today)"
                };
                out.push(format!(
                    "recording {} does not replay on {}{also}: {}",
                    r.scenario,
                    self.to,
                    r.why_to.as_deref().unwrap_or("not run")
                ));
            }
        }
        for c in &self.clients {
            if c.with_to != Some(true) {
                let also = if c.with_from == Some(true) {
                    ""
                } else {
                    " (nor the one of the codex you run today)"
                };
                out.push(format!(
                    "your client does not handle {}'s session of {}{also}: {}",
                    self.to,
                    c.recording,
                    c.why_to.as_deref().unwrap_or("not run")
                ));
            }
        }
        out
    }

    /// The exit status: 0 when nothing broke, 1 otherwise.
    pub fn code(&self) -> u8 {
        u8::from(!self.broke().is_empty())
    }

    /// The report for the terminal.
    pub fn text(&self) -> String {
        let mut out = format!(
            "upgrade {} -> {}\n\nprotocol: {}\n",
            self.from, self.to, self.protocol
        );
        if let Some(s) = &self.surface {
            out.push_str(&format!(
                "\nyour uses ({} incompatible):\n{}",
                s.incompatible, s.text
            ));
        }
        if let Some(c) = &self.config {
            out.push_str(&format!(
                "\nyour configuration ({} not taken by {}):\n{}",
                c.broken.len(),
                self.to,
                c.text
            ));
        }
        if !self.recordings.is_empty() {
            out.push_str(&format!(
                "\nyour recordings on {} and {}:\n",
                self.from, self.to
            ));
            for r in &self.recordings {
                out.push_str(&format!(
                    "  {:<7} {:<7} {}{}\n",
                    word(r.on_from),
                    word(r.on_to),
                    r.scenario,
                    r.why_to
                        .as_ref()
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                ));
            }
        }
        if !self.clients.is_empty() {
            out.push_str(&format!(
                "\nyour client against each recording's session, as {} and {} send it:\n",
                self.from, self.to
            ));
            for c in &self.clients {
                out.push_str(&format!(
                    "  {:<7} {:<7} {}{}\n",
                    passed(c.with_from),
                    passed(c.with_to),
                    c.recording,
                    c.why_to
                        .as_ref()
                        .or(c.why_from.as_ref())
                        .map(|w| format!(": {w}"))
                        .unwrap_or_default()
                ));
            }
        }
        let contradicting = self.known.iter().filter(|k| k.contradicts).count();
        out.push_str(&format!(
            "\nthe catalogue's known changes between {} and {}: {} ({contradicting} change a \
             scenario's headline claim; each in full in upgrade.json):\n",
            self.from,
            self.to,
            self.known.len()
        ));
        let mut known: Vec<&KnownChange> = self.known.iter().collect();
        known.sort_by_key(|k| !k.contradicts);
        for k in known {
            out.push_str(&format!(
                "  {:<6} {}{} {}: {}\n",
                k.change,
                k.scenario,
                if k.contradicts { " (contradicts)" } else { "" },
                k.key,
                first_clause(&k.reason)
            ));
        }
        let broke = self.broke();
        if broke.is_empty() {
            out.push_str(&format!(
                "\nverdict: nothing your integration relies on broke from {} to {}\n",
                self.from, self.to
            ));
        } else {
            out.push_str(&format!("\nverdict: {} thing(s) broke:\n", broke.len()));
            for b in &broke {
                out.push_str(&format!("  - {b}\n"));
            }
        }
        out
    }

    /// The report as Markdown.
    pub fn markdown(&self) -> String {
        format!(
            "# upgrade {} -> {}\n\n```text\n{}```\n",
            self.from,
            self.to,
            self.text()
        )
    }
}

/// The first clause of a reason (up to its first colon, semicolon or full stop before a
/// space; a version's dots do not end it), at most 100
/// characters: a line each in the terminal.
fn first_clause(reason: &str) -> String {
    let end = [": ", ". ", "; "]
        .iter()
        .filter_map(|sep| reason.find(sep))
        .min()
        .unwrap_or(reason.len());
    let clause = &reason[..end];
    if clause.chars().count() > 100 {
        format!("{}…", clause.chars().take(100).collect::<String>())
    } else {
        clause.to_string()
    }
}

/// An outcome's matrix word, `-` when absent.
fn word(kind: Option<OutcomeKind>) -> &'static str {
    kind.map_or("-", OutcomeKind::word)
}

/// `pass`, `FAIL` or `-`.
fn passed(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "pass",
        Some(false) => "FAIL",
        None => "-",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_break_is_what_holds_on_a_and_not_on_b_and_failing_on_both_is_said() {
        let mut u = Upgrade {
            from: "0.131.0".into(),
            to: "0.171.0".into(),
            ..Upgrade::default()
        };
        assert!(u.broke().is_empty() && u.code() == 0);
        u.recordings.push(RecordingRow {
            scenario: "tool_turn".into(),
            on_from: Some(OutcomeKind::Passed),
            on_to: Some(OutcomeKind::Drift),
            ..RecordingRow::default()
        });
        assert!(u.broke().is_empty(), "listed drift holds");
        u.clients.push(ClientRow {
            recording: "t.toml".into(),
            with_from: Some(true),
            with_to: Some(false),
            why_to: Some("exited with status 1".into()),
            ..ClientRow::default()
        });
        u.recordings.push(RecordingRow {
            scenario: "old".into(),
            on_from: Some(OutcomeKind::Failed),
            on_to: Some(OutcomeKind::Failed),
            why_to: Some("x".into()),
            ..RecordingRow::default()
        });
        let broke = u.broke();
        assert_eq!(broke.len(), 2, "{broke:?}");
        assert!(
            broke[0].contains("(and on the codex you run today)"),
            "{broke:?}"
        );
        assert!(
            broke[1].contains("0.171.0's session of t.toml"),
            "{broke:?}"
        );
        assert_eq!(u.code(), 1);
        assert!(
            u.text().contains("verdict: 2 thing(s) broke"),
            "{}",
            u.text()
        );
    }

    #[test]
    fn a_configuration_item_b_does_not_take_breaks_the_upgrade() {
        let mut u = Upgrade {
            from: "0.142.5".into(),
            to: "0.143.0".into(),
            config: Some(ConfigPart::default()),
            ..Upgrade::default()
        };
        assert!(u.broke().is_empty(), "no item broken");
        u.config = Some(ConfigPart {
            text: "config check ...\n".into(),
            broken: vec![ConfigItem {
                item: "p.toml:3 thread/start approvalPolicy: \"on-failure\"".into(),
                on_to: "REFUSED thread".into(),
                held_on_from: true,
            }],
        });
        assert_eq!(
            u.broke(),
            [
                "your configuration's p.toml:3 thread/start approvalPolicy: \"on-failure\" is not \
              taken by 0.143.0 (REFUSED thread)"
            ]
        );
        assert!(
            u.text()
                .contains("your configuration (1 not taken by 0.143.0):")
        );
        assert_eq!(u.code(), 1);
    }
}
