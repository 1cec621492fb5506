//! The `config KEY [VALUE]` lines of a uses file (`surface check`), judged live: codex
//! publishes no schema of its configuration, so each line becomes a one-setting profile
//! (`app-server`, `KEY = VALUE` in `config.toml`) checked on both releases like any profile
//! ([`crate::config::check`]). Without a VALUE, the key alone is tried with a string: a key
//! codex does not know is ignored (`--strict-config` names it), a known key of another type
//! is refused, which says it is known.

use std::path::Path;

use crate::codex::binaries::CodexBinary;
use crate::codex::install::Progress;
use crate::codex::surface::{Change, Use, UseKind};
use crate::config::check::{self, Options, Probe};
use crate::config::isolation::Isolation;
use crate::config::profile::{HomeFile, Placed, Profile};
use crate::config::verdict::{Status, Verdict, Warning};

/// The value a key is tried with when the line gives none.
const PROBE_VALUE: &str = "\"codex-parity-probe\"";

/// A probe that never probes: two releases are compared as named.
struct NoProbe;

impl Probe for NoProbe {
    async fn between(&self, _: &str, _: &str) -> anyhow::Result<Vec<String>> {
        Ok(Vec::new())
    }

    async fn install(&self, version: &str) -> anyhow::Result<CodexBinary> {
        anyhow::bail!("no probing here (asked for {version})")
    }
}

/// The changes from `a` to `b` of every `config` use.
pub async fn changes(
    uses: &[Use],
    a: &CodexBinary,
    b: &CodexBinary,
    isolation: &Isolation,
    progress: &dyn Progress,
) -> anyhow::Result<Vec<Change>> {
    let mut out = Vec::new();
    for u in uses.iter().filter(|u| u.kind == UseKind::Config) {
        let given = u.fields.first().map(|v| value_text(v));
        let text = format!(
            "{} = {}\n",
            u.method,
            given.as_deref().unwrap_or(PROBE_VALUE)
        );
        let profile = Profile {
            path: Path::new("uses").join(format!("line-{}", u.line)),
            args: vec![Placed {
                value: "app-server".into(),
                line: u.line,
            }],
            package: Vec::new(),
            home: vec![HomeFile {
                name: "config.toml".into(),
                text,
                source: Path::new("uses").to_path_buf(),
                first_line: u.line,
                line: u.line,
            }],
            thread_start: Vec::new(),
        };
        let options = Options {
            isolation,
            strict: false,
            bisect: false,
        };
        let report = check::check(
            &profile,
            vec![a.clone(), b.clone()],
            options,
            &NoProbe,
            progress,
        )
        .await?;
        let Some(item) = report.items.iter().find(|i| i.family == "config.toml") else {
            out.push(Change {
                line: u.line,
                incompatible: false,
                unknown: false,
                text: format!(
                    "config {}: not checked (not a TOML key and value)",
                    u.method
                ),
            });
            continue;
        };
        let (was, now) = (&item.verdicts[&a.version], &item.verdicts[&b.version]);
        let what = match &given {
            Some(v) => format!("config {} {v}", u.method),
            None => format!("config {}", u.method),
        };
        out.extend(compare(
            u.line,
            &what,
            was,
            now,
            given.is_none(),
            &b.version,
        ));
    }
    Ok(out)
}

/// A VALUE as TOML: as written when it is TOML, else a string.
fn value_text(raw: &str) -> String {
    match toml::de::DeValue::parse(raw) {
        Ok(_) => raw.to_string(),
        Err(_) => format!("{raw:?}"),
    }
}

/// The change of one setting, if any.
fn compare(
    line: usize,
    what: &str,
    was: &Verdict,
    now: &Verdict,
    key_only: bool,
    to: &str,
) -> Option<Change> {
    let words = |v: &Verdict| {
        v.messages
            .first()
            .map(|m| format!(": {}", one_line(m)))
            .unwrap_or_default()
    };
    if key_only {
        // Only whether the key is known: ignored means unknown.
        let unknown = |v: &Verdict| v.warning == Some(Warning::Ignored);
        return match (unknown(was), unknown(now)) {
            (false, true) => Some(Change {
                line,
                incompatible: true,
                unknown: false,
                text: format!("{what}: no longer a key of {to}{}", words(now)),
            }),
            (true, false) => Some(Change {
                line,
                incompatible: false,
                unknown: false,
                text: format!("{what}: new in {to}"),
            }),
            (true, true) => Some(Change {
                line,
                incompatible: false,
                // Like a method neither schema has: a typo of the file, most likely.
                unknown: true,
                text: format!("{what}: a key of neither release"),
            }),
            (false, false) => None,
        };
    }
    if was.outcome() == now.outcome() {
        return (now.status != Status::Accepted).then(|| Change {
            line,
            incompatible: false,
            unknown: false,
            text: format!("{what}: {now} on both{}", words(now)),
        });
    }
    let incompatible =
        was.passes(true) && !now.passes(true) || was.passes(false) && !now.passes(false);
    Some(Change {
        line,
        incompatible,
        unknown: false,
        text: format!("{what}: {was} -> {now}{}", words(now)),
    })
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_that_got_worse_is_incompatible() {
        let ok = Verdict::accepted();
        let remapped =
            Verdict::warning(Warning::Remapped, Some("on-request".into()), "asked".into());
        let refused = Verdict::new(
            Status::RefusedAtStart,
            None,
            None,
            Some("no longer supported".into()),
        );
        let c = compare(
            3,
            "config approval_policy \"on-failure\"",
            &ok,
            &remapped,
            false,
            "0.171.0",
        )
        .unwrap();
        assert!(
            c.incompatible && c.text.contains("accepted -> warning (remapped on-request)"),
            "{c:?}"
        );
        assert!(
            !compare(3, "x", &refused, &ok, false, "b")
                .unwrap()
                .incompatible
        );
        assert!(compare(3, "x", &ok, &ok, false, "b").is_none());
        let ignored = Verdict::warning(Warning::Ignored, Some("silently".into()), "unknown".into());
        let gone = compare(4, "config tools", &refused, &ignored, true, "0.171.0").unwrap();
        assert!(
            gone.incompatible
                && gone
                    .text
                    .starts_with("config tools: no longer a key of 0.171.0")
        );
        assert_eq!(value_text("on-failure"), "\"on-failure\"");
        assert_eq!(value_text("\"x\""), "\"x\"");
        assert_eq!(value_text("3"), "3");
    }
}
