//! Children that die with the process that started them, SIGKILL included: Linux's
//! parent-death signal, set between fork and exec. A process killed outright runs no code
//! of its own, so this is the one way its children learn of it at once. The sidecar's own
//! process handle ([`crate::control::spawn`]) uses it, and so does every long-lived child
//! of the driver (codex listeners, `app-server proxy`, the clients `record` runs).
//!
//! The signal follows the *thread* that spawned the child: spawn from a thread that lives
//! as long as the child should (a tokio worker or the main thread), never from a
//! short-lived one such as tokio's blocking pool, whose idle threads exit.

use tokio::process::Command;

/// Makes the process `command` starts receive SIGKILL when this process dies, and exit at
/// once if this process died before that was set.
pub fn die_with_parent(command: &mut Command) {
    let parent = rustix::process::getpid();
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: `prctl(PR_SET_PDEATHSIG)`, `getppid`, `getpid`
    // and `kill` are system calls, and nothing here allocates or takes a lock.
    unsafe {
        command.pre_exec(move || {
            rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL))?;
            if rustix::process::getppid() != Some(parent) {
                let _ = rustix::process::kill_process(
                    rustix::process::getpid(),
                    rustix::process::Signal::KILL,
                );
            }
            Ok(())
        });
    }
}
