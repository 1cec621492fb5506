//! What only scenarios need: tiny PNG images and rollout-file cloning.

pub mod png;
pub mod rollout;
