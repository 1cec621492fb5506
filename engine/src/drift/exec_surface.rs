//! The `codex exec --json` events one release is known to send, read from the golden
//! transcripts that cover it (the exec scenarios' streams, kind `event`): the surface
//! `surface check` holds an integration's `exec-event` uses against, since the binary
//! publishes no schema of those events.

use std::collections::BTreeSet;

use anyhow::Context;
use serde_json::Value;

use crate::app_server::transcript::{Sent, SentKind};
use crate::codex::surface::ExecSurface;
use crate::drift::golden_transcript::KIND;
use crate::drift::transcript;
use crate::harness::expectations::Expectations;

/// The exec events of the golden transcripts covering `version` (each scenario's file of
/// the nearest release at or below it); `None` when none of them holds an exec event.
pub fn observed(expectations: &Expectations, version: &str) -> anyhow::Result<Option<ExecSurface>> {
    let mut scenarios = BTreeSet::new();
    for release in expectations.subdirs(KIND)? {
        for file in expectations.files(&format!("{KIND}/{release}"))? {
            if let Some(name) = file.strip_suffix(".json") {
                scenarios.insert(name.to_string());
            }
        }
    }
    let mut surface = ExecSurface::default();
    let mut from = BTreeSet::new();
    for scenario in scenarios {
        let Some((release, name, text)) = expectations.read_covering(KIND, &scenario, version)?
        else {
            continue;
        };
        let doc: Value =
            serde_json::from_str(&text).with_context(|| format!("{name} is not JSON"))?;
        let events: Vec<Sent> = transcript::connections_of(&doc)
            .into_iter()
            .flatten()
            .filter(|s| s.kind == SentKind::Event)
            .collect();
        if events.is_empty() {
            continue;
        }
        for event in &events {
            surface.add(&event.payload);
        }
        from.insert(format!("{scenario}@{release}"));
    }
    if surface.events.is_empty() {
        return Ok(None);
    }
    surface.from = format!(
        "the golden exec streams {}",
        from.into_iter().collect::<Vec<_>>().join(", ")
    );
    Ok(Some(surface))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_compiled_golden_streams_give_each_release_its_exec_events() {
        let e = Expectations::Compiled;
        let old = observed(&e, "0.131.0")
            .unwrap()
            .expect("0.131.0 has golden exec streams");
        let new = observed(&e, "0.171.0")
            .unwrap()
            .expect("0.171.0 has golden exec streams");
        for s in [&old, &new] {
            let completed = &s.events["item.completed"];
            assert!(
                completed.contains("item.type=agent_message"),
                "{completed:?}"
            );
            assert!(completed.contains("item.text"));
            assert!(s.events.contains_key("turn.completed"));
            assert!(s.from.contains("exec_plain_prompt@"), "{}", s.from);
        }
        // 0.161.0 began to report the unknown model's metadata as an error item, and a
        // usage field: what a surface check of 0.131.0 -> 0.171.0 names as new.
        assert!(!old.events["item.completed"].contains("item.type=error"));
        assert!(new.events["item.completed"].contains("item.type=error"));
        assert!(new.events["turn.completed"].contains("usage.cache_write_input_tokens"));
        assert_eq!(observed(&e, "0.100.0").unwrap(), None);
    }
}
