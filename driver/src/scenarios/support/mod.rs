//! What only scenarios need: tiny PNG images, rollout-file cloning and what the transport
//! rows of group F share (`transport`).

pub mod png;
pub mod rollout;
pub mod transport;
