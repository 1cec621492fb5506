//! What only scenarios need: tiny PNG images, unsigned ChatGPT tokens, rollout-file cloning
//! and what the transport rows of group F share (`transport`).

pub mod chatgpt_token;
pub mod jwt;
pub mod png;
pub mod rollout;
pub mod transport;
