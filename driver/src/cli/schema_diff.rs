//! `codex-parity schema-diff`: what changed in the app-server protocol between two codex
//! binaries.

use std::process::ExitCode;

use codex_parity::codex::binaries;
use codex_parity::codex::install::{Cache, StderrProgress};
use codex_parity::codex::schema::Schema;
use codex_parity::codex::schema_diff;

/// `schema-diff A B`: the diff as text, or as JSON with `--json`.
pub(crate) async fn schema_diff(from: String, to: String, json: bool) -> anyhow::Result<ExitCode> {
    let (cache, progress) = (Cache::from_env()?, StderrProgress::new());
    let (a, old) = experimental_schema(&from, &cache, &progress).await?;
    let (b, new) = experimental_schema(&to, &cache, &progress).await?;
    let diff = schema_diff::diff(&a, &old, &b, &new);
    if json {
        println!("{}", serde_json::to_string_pretty(&diff)?);
    } else {
        print!("{}", diff.to_text());
    }
    Ok(ExitCode::SUCCESS)
}

/// The label and `--experimental` schema of the codex `spec` names (a version or a path).
async fn experimental_schema(
    spec: &str,
    cache: &Cache,
    progress: &StderrProgress,
) -> anyhow::Result<(String, Schema)> {
    let binary = binaries::resolve_spec(spec, cache, progress).await?;
    Ok((binary.label(), Schema::generate(&binary, true).await?))
}
