//! `codex-parity bench`: what one scenario costs that is ours (a world: sidecar start,
//! proxy, directories, config) against what is codex's (spawn to `initialize` answered),
//! and the wall time of the whole registry on one binary.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::binaries::CodexBinary;
use crate::world::{Settings, World, WorldOptions};

/// Medians over the runs, and the raw samples.
#[derive(Debug, Clone)]
pub struct Overhead {
    /// World set-up: sidecar ready, proxy listening, home and config written.
    pub world_setup: Vec<Duration>,
    /// `codex app-server` spawn until `initialize` answered.
    pub codex_start: Vec<Duration>,
    /// `finish`: checks, codex and sidecar shut down, directory removed.
    pub teardown: Vec<Duration>,
}

/// The median of samples (zero when empty).
pub fn median(samples: &[Duration]) -> Duration {
    let mut s = samples.to_vec();
    s.sort();
    s.get(s.len() / 2).copied().unwrap_or_default()
}

/// Measures `runs` empty worlds, one after the other.
pub async fn overhead(
    binary: &CodexBinary,
    settings: &Settings,
    runs: usize,
) -> anyhow::Result<Overhead> {
    let mut out = Overhead {
        world_setup: vec![],
        codex_start: vec![],
        teardown: vec![],
    };
    for _ in 0..runs {
        let t0 = Instant::now();
        let mut world =
            World::new(binary, settings, WorldOptions::default(), Arc::default()).await?;
        let t1 = Instant::now();
        world.start().await?;
        let t2 = Instant::now();
        world.finish().await?;
        let t3 = Instant::now();
        out.world_setup.push(t1 - t0);
        out.codex_start.push(t2 - t1);
        out.teardown.push(t3 - t2);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_of_odd_even_and_empty() {
        let ms = |v: &[u64]| {
            v.iter()
                .map(|&x| Duration::from_millis(x))
                .collect::<Vec<_>>()
        };
        assert_eq!(median(&ms(&[5, 1, 3])), Duration::from_millis(3));
        assert_eq!(median(&ms(&[4, 1, 3, 2])), Duration::from_millis(3));
        assert_eq!(median(&[]), Duration::ZERO);
    }
}
