//! `--shard K/N`: a stable share of a run's (scenario, codex) cells, so that several CI
//! machines can split a large matrix and `codex-parity merge` can join their results.
//!
//! A cell belongs to shard `fnv1a64(scenario + "\0" + label) % N + 1`. The hash is written
//! here (FNV-1a, 64 bit), not std's randomized hasher, so every machine and every build
//! agrees. It was chosen over round-robin on the cell list because a cell's shard then
//! depends on nothing but the cell itself, not on its position: machines that list the
//! binaries in another order still split the cells the same way. The price is that shards
//! are only roughly even.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One share of N: `index` in `1..=count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    /// Which share, counted from 1.
    pub index: u32,
    /// How many shares there are.
    pub count: u32,
}

impl Shard {
    /// The whole run: shard 1 of 1.
    pub const ALL: Shard = Shard { index: 1, count: 1 };

    /// Whether the cell of `scenario` on the binary labelled `label` belongs to this shard.
    pub fn contains(&self, scenario: &str, label: &str) -> bool {
        shard_of(scenario, label, self.count) == self.index
    }
}

/// The shard (counted from 1) of a cell when the work is split `count` ways.
pub fn shard_of(scenario: &str, label: &str, count: u32) -> u32 {
    let mut hash = Fnv1a::new();
    hash.write(scenario.as_bytes());
    hash.write(&[0]);
    hash.write(label.as_bytes());
    // `count` is at least 1 for every parsed shard; `max` keeps the division defined.
    (hash.finish() % u64::from(count.max(1))) as u32 + 1
}

/// The 64-bit FNV-1a hash, fixed across platforms and builds.
#[derive(Debug, Clone, Copy)]
pub struct Fnv1a(u64);

impl Fnv1a {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    /// A fresh hash.
    pub fn new() -> Fnv1a {
        Fnv1a(Self::OFFSET)
    }

    /// Feeds bytes.
    pub fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(Self::PRIME);
        }
    }

    /// The hash of everything written.
    pub fn finish(&self) -> u64 {
        self.0
    }
}

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a::new()
    }
}

impl FromStr for Shard {
    type Err = String;

    /// Parses `K/N` with `1 <= K <= N`.
    fn from_str(s: &str) -> Result<Shard, String> {
        let bad = || format!("--shard takes K/N with 1 <= K <= N (e.g. 2/3), not {s:?}");
        let (k, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = k.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if index == 0 || index > count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a_matches_the_published_test_vectors() {
        let hash = |s: &str| {
            let mut h = Fnv1a::new();
            h.write(s.as_bytes());
            h.finish()
        };
        assert_eq!(hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(hash("a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(hash("foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn parses_k_of_n_and_rejects_the_rest() {
        assert_eq!("2/3".parse(), Ok(Shard { index: 2, count: 3 }));
        assert_eq!("1/1".parse(), Ok(Shard::ALL));
        for bad in ["0/3", "4/3", "3", "a/b", "1/0", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert_eq!(Shard { index: 2, count: 5 }.to_string(), "2/5");
    }

    #[test]
    fn a_cells_shard_is_fixed() {
        // Pinned values (computed independently): a change here would make CI machines
        // running different builds split the cells differently, so it must be deliberate.
        let of = |label: &str, count| shard_of("smoke_uses_mock_responses", label, count);
        assert_eq!(of("codex-0.131.0", 7), 5);
        assert_eq!(of("codex-0.161.0", 7), 2);
        assert_eq!(of("codex-0.171.0", 7), 1);
        assert_eq!(of("codex-0.131.0", 2), 1);
        assert_eq!(of("codex-0.161.0", 2), 2);
        assert_eq!(of("codex-0.171.0", 1), 1);
    }
}
