//! No code: this crate's dependencies name the features that the README's test command would
//! otherwise add to crates its first command already built (see its `Cargo.toml`).
