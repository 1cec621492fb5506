//! The CPU time of this process and of every child it has waited for (codex app-servers,
//! sidecars, and what they waited for in turn: codex's shells and tools), from
//! `/proc/self/stat` (`utime`, `stime`, `cutime`, `cstime`; Linux only, clock-tick
//! resolution). A suite's total CPU is the difference of two readings around it: the
//! processes of the suite end and are waited for inside it.

use std::time::Duration;

/// User and system CPU time of this process and its waited-for children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// User time.
    pub user: Duration,
    /// System (kernel) time.
    pub system: Duration,
}

impl CpuTimes {
    /// The current reading; `None` where `/proc/self/stat` is missing or unreadable.
    pub fn now() -> Option<CpuTimes> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        parse_stat(&stat, rustix::param::clock_ticks_per_second())
    }

    /// User plus system time.
    pub fn total(&self) -> Duration {
        self.user + self.system
    }

    /// The time spent since `earlier` (zero where a field went backwards).
    pub fn since(&self, earlier: &CpuTimes) -> CpuTimes {
        CpuTimes {
            user: self.user.saturating_sub(earlier.user),
            system: self.system.saturating_sub(earlier.system),
        }
    }
}

/// Reads `utime + cutime` and `stime + cstime` of a `/proc/PID/stat` line, in ticks of
/// `ticks_per_second`. The fields are counted after the command name, which may hold
/// spaces and parentheses: it ends at the last `)`.
pub fn parse_stat(stat: &str, ticks_per_second: u64) -> Option<CpuTimes> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    // Field 3 (state) is the first after the name; utime is field 14.
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .skip(11)
        .take(4)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [utime, stime, cutime, cstime] = fields[..] else {
        return None;
    };
    let ticks = |n: u64| Duration::from_nanos(n * 1_000_000_000 / ticks_per_second.max(1));
    Some(CpuTimes {
        user: ticks(utime + cutime),
        system: ticks(stime + cstime),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_and_children_times_are_added_past_a_name_with_parentheses() {
        let stat = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 150 25 300 40 20 0 3 0";
        let t = parse_stat(stat, 100).unwrap();
        assert_eq!(t.user, Duration::from_millis(4500));
        assert_eq!(t.system, Duration::from_millis(650));
        assert_eq!(t.total(), Duration::from_millis(5150));
        assert_eq!(parse_stat("4242 (x) S 1 2", 100), None);
    }

    #[test]
    fn this_process_has_a_reading_that_does_not_go_back() {
        let first = CpuTimes::now().unwrap();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_add(i * i);
        }
        assert!(x > 0);
        let second = CpuTimes::now().unwrap();
        assert!(second.total() >= first.total());
        assert_eq!(first.since(&second).total(), Duration::ZERO);
    }
}
