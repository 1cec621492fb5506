//! The documents generated from code are current: `docs/scenarios.md` is what
//! `codex-parity list --markdown` prints for the registry, and `docs/releases.md` (the
//! audit of a sweep) names every baseline entry as it is.

use std::path::Path;

use codex_parity::scenarios::{catalogue, registry};

#[test]
fn docs_scenarios_md_is_current() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/scenarios.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let current = catalogue::markdown(&registry());
    assert!(
        committed == current,
        "{} is stale (the scenario registry changed): regenerate it with\n  \
         cargo run -q -p codex-parity -- list --markdown > docs/scenarios.md",
        path.display()
    );
}

/// `docs/releases.md` (from `codex-parity baselines audit SWEEP --table docs/releases.md`)
/// names every baseline entry as it is now: an entry added or re-ranged without sweeping
/// again shows here.
#[test]
fn docs_releases_md_names_every_baseline_entry() {
    use codex_parity::harness::baseline::Baselines;
    use codex_parity::report::audit::describe;
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/releases.md");
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    let missing: Vec<String> = Baselines::builtin()
        .unwrap()
        .entries
        .iter()
        .map(describe)
        .filter(|d| !committed.contains(d.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "{} does not name these baseline entries (sweep and audit again:\n  \
         codex-parity sweep --out sweep --table docs/releases.md):\n{}",
        path.display(),
        missing.join("\n")
    );
}
