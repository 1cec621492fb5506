//! codex-parity's catalogue: the parity scenarios (groups A-I, X and the later ones), one
//! file per group, each a recipe run against the real `codex app-server` by the engine's
//! harness. The `codex-parity` crate re-exports [`scenarios`] under the same name.
//!
//! The engine's layers are imported here under their own names, so that the catalogue's
//! code names them as the `codex-parity` crate does (`crate::harness::…`).

pub mod scenarios;

use codex_parity_engine::{app_server, codex, drift, ensure_eq, harness, scenario};
