//! How one release treats one item of a profile: accepted; accepted with a warning (a key it
//! ignores, a value it deprecates or silently remaps, a retired feature, a legacy alias, a
//! file it does not read); refused at start; refused at `thread/start`; an unknown flag or
//! subcommand; a path missing from the package; or not checked (with why). Each verdict
//! carries codex's own words.

use std::fmt;

use serde::Serialize;

/// The outcome of one item on one release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Codex took it as given.
    Accepted,
    /// Codex took it, with a warning or a change ([`Warning`] says which).
    Warning,
    /// It could not be judged on this release (the reason is in the messages).
    NotChecked,
    /// Codex exited before answering `initialize` (or before `exec` started).
    RefusedAtStart,
    /// `thread/start` failed because of it.
    RefusedAtThreadStart,
    /// A flag, value or subcommand this release's command line does not have.
    UnknownFlag,
    /// The path is not in this release's npm package.
    MissingFromPackage,
}

impl Status {
    /// Its name in the report.
    pub fn word(self) -> &'static str {
        match self {
            Status::Accepted => "accepted",
            Status::Warning => "warning",
            Status::NotChecked => "not checked",
            Status::RefusedAtStart => "refused at start",
            Status::RefusedAtThreadStart => "refused at thread/start",
            Status::UnknownFlag => "unknown flag",
            Status::MissingFromPackage => "missing from package",
        }
    }

    /// How bad it is: a refusal outranks a warning, which outranks acceptance.
    fn severity(self) -> u8 {
        match self {
            Status::Accepted => 0,
            Status::Warning => 1,
            Status::NotChecked => 2,
            _ => 3,
        }
    }
}

/// What kind of warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Warning {
    /// The key or feature is not one this release knows: it is ignored.
    Ignored,
    /// The value or name is deprecated.
    Deprecated,
    /// Codex applied another value than the one given.
    Remapped,
    /// The feature is listed as removed (accepted, without effect).
    Retired,
    /// The feature name is a legacy alias of another.
    Alias,
    /// Codex did not read the file the setting is in.
    NotRead,
    /// Host-managed configuration overrode it.
    Managed,
    /// Another warning codex gave about it.
    Other,
}

impl Warning {
    /// Its name in the report.
    pub fn word(self) -> &'static str {
        match self {
            Warning::Ignored => "ignored",
            Warning::Deprecated => "deprecated",
            Warning::Remapped => "remapped",
            Warning::Retired => "retired",
            Warning::Alias => "alias",
            Warning::NotRead => "not read",
            Warning::Managed => "managed",
            Warning::Other => "warned",
        }
    }
}

/// One item on one release.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// The outcome.
    pub status: Status,
    /// For [`Status::Warning`], which kind.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<Warning>,
    /// A stable detail that is part of the outcome (`on-request` for a remap, `hooks` for an
    /// alias).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// What codex said (its own messages, `<CODEX_HOME>` for the private home), or how it
    /// was seen.
    pub messages: Vec<String>,
}

impl Verdict {
    /// Accepted, nothing said.
    pub fn accepted() -> Verdict {
        Verdict::new(Status::Accepted, None, None, None)
    }

    /// A verdict with one message.
    pub fn new(
        status: Status,
        warning: Option<Warning>,
        detail: Option<String>,
        message: Option<String>,
    ) -> Verdict {
        Verdict {
            status,
            warning,
            detail,
            messages: message.into_iter().collect(),
        }
    }

    /// A warning of `kind`.
    pub fn warning(kind: Warning, detail: Option<String>, message: String) -> Verdict {
        Verdict::new(Status::Warning, Some(kind), detail, Some(message))
    }

    /// What two releases are compared by: the status, the warning kind and the detail (not
    /// the messages, whose wording may change).
    pub fn outcome(&self) -> (Status, Option<Warning>, Option<&str>) {
        (self.status, self.warning, self.detail.as_deref())
    }

    /// Adds what `other` found: the worse status wins; messages are kept, each once.
    pub fn merge(&mut self, other: Verdict) {
        if other.status.severity() > self.status.severity() {
            self.status = other.status;
            self.warning = other.warning;
            self.detail = other.detail;
        } else if self.warning.is_none() && other.warning.is_some() {
            self.warning = other.warning;
            self.detail = self.detail.take().or(other.detail);
        }
        for m in other.messages {
            if !self.messages.contains(&m) {
                self.messages.push(m);
            }
        }
    }

    /// Whether it counts as accepted: [`Status::Accepted`], or a warning unless `strict`.
    pub fn passes(&self, strict: bool) -> bool {
        match self.status {
            Status::Accepted => true,
            Status::Warning => !strict,
            _ => false,
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.warning, &self.detail) {
            (Some(w), Some(d)) => write!(f, "{} ({} {d})", self.status.word(), w.word()),
            (Some(w), None) => write!(f, "{} ({})", self.status.word(), w.word()),
            (None, _) => write!(f, "{}", self.status.word()),
        }
    }
}

/// A short cell for the table: `ok`, `warn:remapped`, `REFUSED@start`, ….
pub fn cell(v: &Verdict) -> String {
    match v.status {
        Status::Accepted => "ok".into(),
        Status::Warning => format!("warn:{}", v.warning.map_or("warned", Warning::word)),
        Status::NotChecked => "not checked".into(),
        Status::RefusedAtStart => "REFUSED start".into(),
        Status::RefusedAtThreadStart => "REFUSED thread".into(),
        Status::UnknownFlag => "UNKNOWN".into(),
        Status::MissingFromPackage => "MISSING".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worse_status_wins_and_messages_are_kept_once() {
        let mut v = Verdict::warning(Warning::Deprecated, None, "deprecated".into());
        v.merge(Verdict::new(
            Status::RefusedAtThreadStart,
            None,
            None,
            Some("unknown variant".into()),
        ));
        v.merge(Verdict::warning(Warning::Other, None, "deprecated".into()));
        assert_eq!(v.status, Status::RefusedAtThreadStart);
        assert_eq!(v.messages, ["deprecated", "unknown variant"]);
        assert!(!v.passes(false));
        let w = Verdict::warning(Warning::Remapped, Some("on-request".into()), "m".into());
        assert!(w.passes(false) && !w.passes(true));
        assert_eq!(w.to_string(), "warning (remapped on-request)");
        assert_eq!(cell(&w), "warn:remapped");
        let mut a = Verdict::accepted();
        a.merge(w.clone());
        assert_eq!(a.outcome(), w.outcome());
    }
}
