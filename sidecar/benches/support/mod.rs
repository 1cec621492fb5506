//! What both sidecar benches use: the sidecar's peak memory.

/// Peak resident memory (`VmHWM`) of process `pid`, in KiB.
pub(crate) fn peak_rss_kib(pid: u32) -> u64 {
    let status =
        std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read /proc/PID/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmHWM")
}
