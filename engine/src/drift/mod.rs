//! The drift layer: what changed in the model requests codex sends and in the messages it
//! sends its client. Requests and transcripts are normalised (placeholders for ids, paths,
//! times, long texts), diffed structurally, compared with golden files and across versions;
//! the golden exec streams also give each release its `codex exec --json` surface.

pub mod exec_surface;
pub mod golden;
pub mod golden_transcript;
pub mod normalize;
pub mod request_diff;
pub mod request_drift;
pub mod transcript;
pub mod transcript_diff;
