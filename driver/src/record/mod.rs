//! Recording an integrator's own session (`codex-parity record`): a shim relays the
//! client's JSON-RPC to the real `codex app-server`, a proxy forwards codex's model requests
//! to the upstream, and both sides become one scenario file.

pub mod exchange;
