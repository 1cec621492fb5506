//! What only scenarios need: git workspaces, tiny PNG images and rollout-file cloning.

pub mod git;
pub mod png;
pub mod rollout;
