//! The codex layer: a codex binary (probe and version), where it comes from (resolution,
//! npm install, the cache), what it supports (its protocol schema, the help of its `exec`
//! and `app-server` commands and the capabilities read from them) and how two binaries
//! differ (schema diff). Knows nothing of scenarios.

pub mod app_server_flags;
pub mod binaries;
pub mod binary;
pub mod capabilities;
pub mod card;
pub mod completion;
pub mod conformance;
pub mod exec_flags;
pub mod features;
pub mod fingerprint;
pub mod help;
pub mod install;
pub mod json_schema;
pub mod package;
pub mod private_run;
pub mod schema;
pub mod schema_cache;
pub mod schema_diff;
pub mod surface;
pub mod versions;
