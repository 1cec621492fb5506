//! `codex-parity schema-diff`: what changed in the app-server protocol between two codex
//! binaries, and in their configuration surface (features, flags, package: the surface
//! cards, `codex::card`).

use std::process::ExitCode;

use codex_parity::codex::binaries::{self, CodexBinary};
use codex_parity::codex::card;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::schema::Schema;
use codex_parity::codex::schema_diff;

/// `schema-diff A B`: the diff as text, or as JSON with `--json`.
pub(crate) async fn schema_diff(from: String, to: String, json: bool) -> anyhow::Result<ExitCode> {
    let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
    let a = binaries::resolve_spec(&from, &cache, &progress).await?;
    let b = binaries::resolve_spec(&to, &cache, &progress).await?;
    let (old, new) = (
        experimental_schema(&a).await?,
        experimental_schema(&b).await?,
    );
    let diff = schema_diff::diff(&a.label(), &old, &b.label(), &new);
    // The protocol diff stands without the cards: a binary that cannot print its features
    // or completions is said, not fatal.
    let cards = match (
        card::card(&a, &progress).await,
        card::card(&b, &progress).await,
    ) {
        (Ok(ca), Ok(cb)) => Ok(card::diff(&ca, &cb)),
        (Err(e), _) | (_, Err(e)) => Err(format!("{e:#}")),
    };
    if json {
        let mut value = serde_json::to_value(&diff)?;
        let surface = match &cards {
            Ok(d) => serde_json::to_value(d)?,
            Err(e) => serde_json::json!({"error": e}),
        };
        if let Some(object) = value.as_object_mut() {
            object.insert("configuration_surface".into(), surface);
        }
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", diff.to_text());
        match &cards {
            Ok(d) => print!("{}", d.to_text()),
            Err(e) => println!("\nconfiguration surface: not compared ({e})"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The `--experimental` schema of `binary`.
async fn experimental_schema(binary: &CodexBinary) -> anyhow::Result<Schema> {
    Schema::generate(binary, true).await
}
