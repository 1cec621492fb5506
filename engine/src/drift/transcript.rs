//! Transcripts: the messages `codex app-server` sent to the client during one scenario on
//! one codex (answers with the method they answer, notifications, server requests), in
//! arrival order per connection and normalised with the placeholders of
//! [`crate::drift::normalize`], so two runs give equal files and a renamed field shows.
//!
//! ```json
//! {"codex": "0.171.0", "scenario": "streaming_deltas",
//!  "connections": [{"world": 1, "connection": 1, "messages": [
//!    {"type": "response", "method": "initialize", "result": {…}},
//!    {"type": "notification", "method": "thread/started", "params": {…}}, …],
//!   "client_requests": ["initialize", "thread/start", …]}]}
//! ```
//!
//! `client_requests` lists the method of every request the client wrote to that app-server,
//! in order (left out for a `codex exec` stream); [`exercised_of`] reads a document back as
//! what it exercised of the protocol.
//!
//! `--report DIR` writes them to `DIR/transcripts/VERSION/SCENARIO.json` ([`write_report`]);
//! `--keep` leaves each world's own part in `WORLD/transcript.json` ([`write_kept`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde_json::{Value, json};

use crate::app_server::transcript::Sent;
use crate::drift::normalize::Normalizer;
use crate::harness::coverage::Exercised;
use crate::harness::runner::Cell;
use crate::harness::tally::Connection;

/// The file a kept world's transcript is written to, in the world's root directory.
pub const KEPT_FILE: &str = "transcript.json";

/// The normalised connections of one scenario run: one [`Normalizer`] for all of them, so
/// a thread id is `<thread-1>` wherever it appears.
pub fn normalize(connections: &[Connection]) -> Vec<Value> {
    let mut normalizer = Normalizer::default();
    let raw: Vec<Vec<Value>> = connections
        .iter()
        .map(|c| c.messages.iter().map(|m| m.to_json()).collect())
        .collect();
    for message in raw.iter().flatten() {
        normalizer.learn(message);
    }
    connections
        .iter()
        .zip(&raw)
        .map(|(c, messages)| {
            let messages: Vec<Value> = messages.iter().map(|m| normalizer.json(m)).collect();
            let mut value =
                json!({"world": c.world, "connection": c.connection, "messages": messages});
            if !c.requested.is_empty() {
                value["client_requests"] = json!(c.requested);
            }
            value
        })
        .collect()
}

/// The messages of each connection of a transcript document (the inverse of [`document`]
/// for what it keeps); entries that are not messages are left out.
pub fn connections_of(doc: &Value) -> Vec<Vec<Sent>> {
    doc.get("connections")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            c.get("messages")
                .and_then(Value::as_array)
                .map(|m| m.iter().filter_map(Sent::from_json).collect())
                .unwrap_or_default()
        })
        .collect()
}

/// What a transcript document exercised of the protocol: each connection's
/// `client_requests` and messages (see [`Exercised::add_connection`]).
pub fn exercised_of(doc: &Value) -> Exercised {
    let mut exercised = Exercised::default();
    let connections = doc.get("connections").and_then(Value::as_array);
    for (c, messages) in connections.into_iter().flatten().zip(connections_of(doc)) {
        let requested: Vec<String> = c
            .get("client_requests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str().map(String::from))
            .collect();
        exercised.add_connection(&requested, &messages);
    }
    exercised
}

/// The transcript document of one record (see the module docs).
pub fn document(record: &Cell, version: &str) -> Value {
    json!({
        "codex": version,
        "scenario": record.scenario,
        "connections": normalize(&record.transcripts),
    })
}

/// The version in a record's label (`codex-0.171.0` → `0.171.0`).
fn version_of(record: &Cell) -> &str {
    record.label.strip_prefix("codex-").unwrap_or(&record.label)
}

/// Writes `DIR/transcripts/VERSION/SCENARIO.json` for every record that has a transcript;
/// returns how many files it wrote.
pub fn write_report(dir: &Path, records: &[Cell]) -> anyhow::Result<usize> {
    let mut written = 0;
    for record in records.iter().filter(|r| !r.transcripts.is_empty()) {
        let version = version_of(record);
        let folder = dir.join("transcripts").join(version);
        std::fs::create_dir_all(&folder)
            .with_context(|| format!("creating {}", folder.display()))?;
        let path = folder.join(format!("{}.json", record.scenario));
        write_json(&path, &document(record, version))?;
        written += 1;
    }
    Ok(written)
}

/// Writes each kept world's part of its scenario's transcript to `WORLD/transcript.json`
/// (normalised over the whole scenario); returns the files written.
pub fn write_kept(records: &[Cell]) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    for record in records {
        let version = version_of(record);
        written.extend(write_kept_connections(
            record.scenario,
            version,
            &record.transcripts,
        )?);
    }
    Ok(written)
}

/// [`write_kept`] for the connections of one scenario run on codex `version`.
pub fn write_kept_connections(
    scenario: &str,
    version: &str,
    connections: &[Connection],
) -> anyhow::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut by_root: BTreeMap<&Path, Vec<Value>> = BTreeMap::new();
    for (c, value) in connections.iter().zip(normalize(connections)) {
        by_root.entry(c.root.as_path()).or_default().push(value);
    }
    for (root, connections) in by_root.into_iter().filter(|(r, _)| r.is_dir()) {
        let path = root.join(KEPT_FILE);
        let doc = json!({"codex": version, "scenario": scenario, "connections": connections});
        write_json(&path, &doc)?;
        written.push(path);
    }
    Ok(written)
}

fn write_json(path: &Path, value: &Value) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value).context("serialising a transcript")?;
    std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::app_server::transcript::{Sent, SentKind};

    fn connection(thread: &str, turn: &str, root: &str) -> Connection {
        let mut started = Sent::new(
            SentKind::Notification,
            "turn/started",
            json!({"threadId": thread, "turn": {"id": turn, "startedAt": 1_700_000_000}}),
        );
        started
            .extra
            .insert("emittedAtMs".into(), json!(1_700_000_000_123_u64));
        Connection {
            world: 1,
            connection: 1,
            root: PathBuf::from(root),
            messages: vec![
                Sent::new(
                    SentKind::Response,
                    "thread/start",
                    json!({"thread": {"id": thread, "cwd": format!("{root}/workspace")}}),
                ),
                started,
                Sent::new(
                    SentKind::Request,
                    "item/tool/call",
                    json!({"threadId": thread, "turnId": turn, "callId": "call_1"}),
                ),
            ],
            requested: vec!["thread/start".into()],
        }
    }

    #[test]
    fn two_runs_normalise_to_the_same_transcript() {
        let a = normalize(&[connection(
            "0f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c01",
            "1f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c02",
            "/tmp/codex-parity-AbC123",
        )]);
        let b = normalize(&[connection(
            "2f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c03",
            "3f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c04",
            "/tmp/codex-parity-XyZ789",
        )]);
        assert_eq!(a, b);
        let messages = &a[0]["messages"];
        assert_eq!(messages[0]["result"]["thread"]["id"], "<thread-1>");
        assert_eq!(messages[0]["result"]["thread"]["cwd"], "<world>/workspace");
        assert_eq!(messages[1]["params"]["turn"]["id"], "<turn-1>");
        assert_eq!(messages[1]["params"]["turn"]["startedAt"], "<timestamp>");
        assert_eq!(messages[1]["extra"]["emittedAtMs"], "<timestamp>");
        assert_eq!(messages[2]["params"]["turnId"], "<turn-1>");
        assert_eq!(messages[2]["type"], "request");
    }

    #[test]
    fn a_renamed_field_still_shows() {
        let mut renamed = connection(
            "0f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c01",
            "1f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c02",
            "/tmp/codex-parity-AbC123",
        );
        renamed.messages[2].payload = json!({"thread": "x", "callId": "call_1"});
        let plain = connection(
            "0f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c01",
            "1f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c02",
            "/tmp/codex-parity-AbC123",
        );
        assert_ne!(normalize(&[renamed]), normalize(&[plain]));
    }

    #[test]
    fn a_document_reads_back_as_what_its_connections_exercised() {
        let c = connection(
            "0f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c01",
            "1f3c1f7a-2b1e-4f5a-8c6d-0e9f8a7b6c02",
            "/tmp/codex-parity-AbC123",
        );
        let doc = json!({"codex": "0.171.0", "scenario": "s", "connections": normalize(std::slice::from_ref(&c))});
        assert_eq!(
            doc["connections"][0]["client_requests"],
            json!(["thread/start"])
        );
        let exercised = exercised_of(&doc);
        assert_eq!(exercised, Exercised::of(&[c]));
        assert!(exercised.server_requests.contains("item/tool/call"));
        // An exec stream's connection has no client requests, and says none.
        let mut exec = connection("a", "b", "/tmp/x");
        exec.requested.clear();
        assert!(normalize(&[exec])[0].get("client_requests").is_none());
    }
}
