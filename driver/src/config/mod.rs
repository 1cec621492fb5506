//! The integrator's configuration judged on real codex releases (`codex-parity config`,
//! docs/config.md): a profile of how a program launches and configures codex (`profile`),
//! what it is made of item by item (`items`), one live run of codex for it (`oracle`), every
//! item judged on one release (`judge`, with `verdict`), several releases and where each item
//! changed (`check`), the report (`render`), the host's own configuration kept out
//! (`isolation`), a profile written from an existing codex home (`init`), and the `config`
//! lines of a uses file judged the same way (`uses`).

pub mod check;
pub mod init;
pub mod isolation;
pub mod items;
pub mod judge;
pub mod oracle;
pub mod profile;
pub mod render;
pub mod uses;
pub mod verdict;
