//! `codex-parity client-check`: the integrator's own program served what codex sends, and
//! what a next release, a loaded server or a crash could send instead. The session comes
//! from a [`source::Source`] (a run's transcript, a `record --keep` directory, or a
//! scenario file run on codex) as a [`script::Script`] ([`placeholders`] gives a
//! normalised transcript concrete ids); each [`mutation::Mutation`] changes it, and
//! [`checker`] runs COMMAND once per mutation with a `codex` that is the mock app-server of
//! [`serve`] (its state in [`mock`], what it saw in [`served`]). [`verdict`] judges and
//! reports the runs; [`output`] holds what COMMAND printed against what it printed for
//! `none`.

pub mod checker;
pub mod mock;
pub mod mutation;
pub mod output;
pub mod placeholders;
pub mod script;
pub mod serve;
pub mod served;
pub mod source;
pub mod verdict;
