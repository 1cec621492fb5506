//! `codex-parity client-check`: the integrator's own program served what codex sends, and
//! what a next release, a loaded server or a crash could send instead. The session comes
//! from a [`source::Source`] (a run's transcript, a `record --keep` directory, or a
//! scenario file run on codex) as a [`script::Script`] of app-server connections and
//! `codex exec` runs ([`placeholders`] gives a normalised transcript concrete ids); each
//! [`mutation::Mutation`] changes it (the exec ones through [`exec_mutation`]), and
//! [`checker`] runs COMMAND once per mutation with a `codex` that is the mock codex of
//! [`serve`]: an app-server on stdio (its state in [`mock`]) or on a WebSocket listener
//! ([`ws_serve`]), and `codex exec` ([`exec_serve`], its command line read by
//! [`exec_args`]); what each launch saw is in [`served`]. [`judge`] makes each run a row,
//! [`verdict`] holds and reports the rows; [`output`] holds what COMMAND printed against
//! what it printed for `none`.

pub mod checker;
pub mod exec_args;
pub mod exec_mutation;
pub mod exec_serve;
pub mod judge;
pub mod mock;
pub mod mutation;
pub mod output;
pub mod placeholders;
pub mod script;
pub mod serve;
pub mod served;
pub mod source;
pub mod verdict;
pub mod ws_serve;
