//! The scene generators' random draws: the ChaCha8 keystream keyed by the
//! unit's seed (key = seed, zero nonce, counter from 0), read as LE `u32`
//! words, and exact integer draws from it (docs/AUDIT.md, "Scenarios").

use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

pub(crate) struct SceneRng(ChaCha8Rng);

impl SceneRng {
    pub(crate) fn new(seed: &[u8; 32]) -> Self {
        SceneRng(ChaCha8Rng::from_seed(*seed))
    }

    /// A uniform integer in `0..n`, by Lemire's multiply-and-shift with
    /// rejection: `m = r * n` (64-bit); the low 32 bits of `m` below
    /// `2^32 mod n` are redrawn; the answer is `m >> 32`. Exactly uniform, and
    /// unlike the block shuffle's `uniform` it needs no division in the
    /// common case, which matters at a million scenes per second.
    pub(crate) fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let mut m = u64::from(self.0.next_u32()) * u64::from(n);
        if (m as u32) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(self.0.next_u32()) * u64::from(n);
            }
        }
        (m >> 32) as u32
    }

    /// Picks a count from a table of cumulative weights out of 20.
    pub(crate) fn weighted(&mut self, cumulative: &[u32]) -> usize {
        let r = self.below(20);
        cumulative
            .iter()
            .position(|&c| r < c)
            .unwrap_or(cumulative.len())
    }
}
