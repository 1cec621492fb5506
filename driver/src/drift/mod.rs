//! The drift layer: what changed in the model requests codex sends and in the messages it
//! sends its client. Requests and transcripts are normalised (placeholders for ids, paths,
//! times, long texts), diffed structurally, compared with golden files and across versions.

pub mod golden;
pub mod golden_transcript;
pub mod normalize;
pub mod request_diff;
pub mod request_drift;
pub mod transcript;
pub mod transcript_diff;
