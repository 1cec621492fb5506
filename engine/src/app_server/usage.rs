//! What a process has used so far, read from Linux's `/proc`: CPU time (`/proc/PID/stat`:
//! `utime`, `stime`, and `cutime`, `cstime` of the children it has waited for, at clock-tick
//! resolution) and peak resident memory (`VmHWM` of `/proc/PID/status`, the high-water mark
//! of its resident set since it started). The performance scenarios read a codex app-server's
//! before and after what they measure; `bench` reads its own process's.

use std::path::Path;
use std::time::Duration;

/// User and system CPU time of a process and its waited-for children.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CpuTimes {
    /// User time.
    pub user: Duration,
    /// System (kernel) time.
    pub system: Duration,
}

impl CpuTimes {
    /// This process's reading; `None` where `/proc/self/stat` is missing or unreadable.
    pub fn now() -> Option<CpuTimes> {
        CpuTimes::of_stat_file(Path::new("/proc/self/stat"))
    }

    /// The reading of process `pid`; `None` when it is gone or `/proc` is not there.
    pub fn of(pid: u32) -> Option<CpuTimes> {
        CpuTimes::of_stat_file(&Path::new("/proc").join(pid.to_string()).join("stat"))
    }

    fn of_stat_file(path: &Path) -> Option<CpuTimes> {
        let stat = std::fs::read_to_string(path).ok()?;
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

/// The peak resident set of process `pid` so far, in KiB (`VmHWM`); `None` when it is gone.
pub fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status =
        std::fs::read_to_string(Path::new("/proc").join(pid.to_string()).join("status")).ok()?;
    parse_hwm(&status)
}

/// `VmHWM` of a `/proc/PID/status` text, in KiB.
pub fn parse_hwm(status: &str) -> Option<u64> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
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
        let by_pid = CpuTimes::of(std::process::id()).unwrap();
        assert!(by_pid.total() >= second.total());
    }

    #[test]
    fn the_peak_resident_set_is_read_from_status() {
        let status = "Name:\tcodex\nVmPeak:\t  900 kB\nVmHWM:\t  123456 kB\nVmRSS:\t 100 kB\n";
        assert_eq!(parse_hwm(status), Some(123_456));
        assert_eq!(parse_hwm("Name:\tx\n"), None);
        // A buffer this process touched is within its own high-water mark.
        let buffer = vec![1u8; 8 << 20];
        assert!(buffer.iter().map(|&b| u64::from(b)).sum::<u64>() > 0);
        assert!(peak_rss_kib(std::process::id()).unwrap() >= 8 * 1024);
        assert_eq!(peak_rss_kib(u32::MAX), None);
    }
}
