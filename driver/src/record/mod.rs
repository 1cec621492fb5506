//! Recording an integrator's own session (`codex-parity record`): a shim relays the
//! client's JSON-RPC to the real `codex app-server`, a proxy forwards codex's model requests
//! to the upstream, and both sides become one scenario file.

pub mod exchange;

pub mod redact;
pub mod relay;
pub mod shim;
pub mod timeline;
pub mod toml_text;
pub mod writer;
