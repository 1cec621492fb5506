//! The documents generated from code are current: `docs/scenarios.md` is what
//! `codex-parity list --markdown` prints for the registry.

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
