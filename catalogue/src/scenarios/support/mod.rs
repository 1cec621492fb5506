//! What only scenarios need: tiny PNG images, unsigned ChatGPT tokens, rollout files (cloned,
//! and written), homes at scale for group P (`history_home`) and what the transport rows of
//! group F share (`transport`).

pub mod chatgpt_token;
pub mod history_home;
pub mod jwt;
pub mod png;
pub mod rollout;
pub mod transport;
