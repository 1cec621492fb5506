//! The CPU time of this process and of every child it has waited for (codex app-servers,
//! sidecars, and what they waited for in turn: codex's shells and tools), from
//! `/proc/self/stat` (see [`crate::app_server::usage`], where the reading lives beside the
//! performance scenarios' reading of one codex). A suite's total CPU is the difference of
//! two readings around it: the processes of the suite end and are waited for inside it.

pub use crate::app_server::usage::{CpuTimes, parse_stat};
