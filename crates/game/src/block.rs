//! Blocks (SPEC §2): the secret, its public commitment, the exact public shuffle
//! of a block's outcomes, and the per-unit scenario seed. `docs/AUDIT.md`
//! describes the same algorithm for anyone re-implementing it.

use crate::math::{LEVELS, Level};
use hmac::{Hmac, Mac};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};
use std::fmt;

/// How many game units a block holds (Article 2).
pub const UNITS_PER_BLOCK: u32 = 450_000;

/// The 32-byte secret a block is shuffled with. It is drawn by the caller from
/// the operating system's CSPRNG; this crate never draws it itself.
#[derive(Clone, PartialEq, Eq)]
pub struct BlockSecret([u8; 32]);

/// Why a text is not a block secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretError;

impl fmt::Display for SecretError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a block secret is exactly 64 hexadecimal digits (32 bytes)")
    }
}

impl std::error::Error for SecretError {}

/// A secret and its commitment are both 32 bytes, written as 64
/// hexadecimal digits: made from bytes, parsed and shown alike.
macro_rules! bytes_32 {
    ($name:ident) => {
        impl $name {
            pub const fn from_bytes(bytes: [u8; 32]) -> Self {
                $name(bytes)
            }

            /// Parses 64 hexadecimal digits (blanks around them ignored).
            pub fn parse_hex(text: &str) -> Result<Self, SecretError> {
                let mut bytes = [0u8; 32];
                hex::decode_to_slice(text.trim(), &mut bytes).map_err(|_| SecretError)?;
                Ok($name(bytes))
            }

            pub fn to_hex(&self) -> String {
                hex::encode(self.0)
            }
        }
    };
}

bytes_32!(BlockSecret);

impl BlockSecret {
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The public commitment `sha256(secret)`, published before any sale.
    pub fn commitment(&self) -> Commitment {
        Commitment(Sha256::digest(self.0).into())
    }
}

/// Never print a secret by accident: it must not reach a log while on sale.
impl fmt::Debug for BlockSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BlockSecret(<hidden>)")
    }
}

/// `sha256(block secret)`, shown as 64 lowercase hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Commitment([u8; 32]);

bytes_32!(Commitment);

impl fmt::Display for Commitment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_hex())
    }
}

/// `uniform(n)` of SPEC §2: rejection sampling on the ChaCha20 word stream, so
/// every value below `n` is exactly equally likely.
fn uniform(rng: &mut ChaCha20Rng, n: u32) -> u32 {
    debug_assert!(n > 0);
    let zone = (1u64 << 32) / u64::from(n) * u64::from(n);
    loop {
        let r = rng.next_u32();
        if u64::from(r) < zone {
            return r % n;
        }
    }
}

/// The outcome level of every unit of a block of « L'Ile au Trésor », unit 0
/// first: the canonical list (level 1 first, …, level 9, then the losing
/// units) shuffled by `shuffle`.
pub fn block_outcomes(secret: &BlockSecret) -> Vec<Level> {
    let mut outcomes = Vec::with_capacity(UNITS_PER_BLOCK as usize);
    for spec in &LEVELS {
        let level = Level::new(spec.level).expect("table levels are 1 to 9");
        outcomes.extend(std::iter::repeat_n(level, spec.units_per_block as usize));
    }
    outcomes.resize(UNITS_PER_BLOCK as usize, Level::LOSE);
    shuffle(outcomes, secret)
}

/// Shuffles a block's canonical outcome list by Fisher–Yates on the ChaCha20
/// stream keyed by the secret (SPEC §2): for i from the last index down to 1,
/// j = uniform(i + 1), swap.
pub(crate) fn shuffle(mut outcomes: Vec<Level>, secret: &BlockSecret) -> Vec<Level> {
    let mut rng = ChaCha20Rng::from_seed(secret.0);
    for i in (1..outcomes.len() as u32).rev() {
        let j = uniform(&mut rng, i + 1);
        outcomes.swap(i as usize, j as usize);
    }
    outcomes
}

/// Derives the scenario seeds of one block's units; keeps the keyed HMAC state
/// so each seed costs only the message half of HMAC-SHA256.
#[derive(Clone)]
pub struct ScenarioSeeder(Hmac<Sha256>);

impl fmt::Debug for ScenarioSeeder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ScenarioSeeder(<hidden>)")
    }
}

impl ScenarioSeeder {
    pub fn new(secret: &BlockSecret) -> Self {
        ScenarioSeeder(
            Hmac::<Sha256>::new_from_slice(&secret.0).expect("HMAC takes a key of any length"),
        )
    }

    /// `HMAC-SHA256(key = secret, message = "scenario" || index as u32 LE)`.
    pub fn seed(&self, index: u32) -> [u8; 32] {
        let mut mac = self.0.clone();
        mac.update(b"scenario");
        mac.update(&index.to_le_bytes());
        mac.finalize().into_bytes().into()
    }
}

/// The seed of unit `index`'s scenario (SPEC §2).
pub fn scenario_seed(secret: &BlockSecret, index: u32) -> [u8; 32] {
    ScenarioSeeder::new(secret).seed(index)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shuffled_block_holds_exactly_its_table() {
        let outcomes = block_outcomes(&BlockSecret::from_bytes([7; 32]));
        assert_eq!(outcomes.len(), UNITS_PER_BLOCK as usize);
        let mut counts = [0u32; 10];
        for level in &outcomes {
            counts[usize::from(level.get())] += 1;
        }
        assert_eq!(
            counts,
            [
                330_396, 1, 3, 100, 1_000, 500, 2_000, 26_000, 38_000, 52_000
            ]
        );
    }

    #[test]
    fn secrets_parse_from_exactly_64_hex_digits() {
        assert!(BlockSecret::parse_hex(&"ab".repeat(32)).is_ok());
        assert_eq!(BlockSecret::parse_hex(&"ab".repeat(31)), Err(SecretError));
        assert_eq!(BlockSecret::parse_hex(&"zz".repeat(32)), Err(SecretError));
        assert_eq!(
            format!("{:?}", BlockSecret::from_bytes([1; 32])),
            "BlockSecret(<hidden>)"
        );
    }

    /// The known-answer vectors of docs/AUDIT.md, also reproduced there by an
    /// independent implementation: (secret, commitment, first 32 levels,
    /// index of the level-1 unit, scenario seeds of units 0 and 449,999).
    struct Vector {
        secret: [u8; 32],
        commitment: &'static str,
        first: [u8; 32],
        jackpot: usize,
        seed_0: &'static str,
        seed_last: &'static str,
    }

    const VECTORS: [Vector; 2] = [
        Vector {
            secret: [0; 32],
            commitment: "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925",
            first: [
                0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 7, 0, 9, 9, 0, 0, 0, 9, 0, 0, 0,
                8, 0, 0, 0,
            ],
            jackpot: 329_825,
            seed_0: "34f9320b996ecaa23b1f9077a851c40627c44b6220f079042a1c547ade9f0a6c",
            seed_last: "18eb3613f9067b41d6bf12e909fad5a62925cb41f2046c37911a0c0f64647371",
        },
        Vector {
            secret: counting_bytes(),
            commitment: "630dcd2966c4336691125448bbb25b4ff412a49c732db2c8abc1b8581bd710dd",
            first: [
                9, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 8, 0, 0, 0, 0, 7, 0, 9, 8, 0, 0, 0, 0, 0,
                0, 9, 0, 0,
            ],
            jackpot: 218_399,
            seed_0: "748ff55c64afd4786d30fdf66c2276a132ce2476cf322c81c9bbeab77f8c8efd",
            seed_last: "d478394a030b63f16e160712ce23ceb324a4cfa211ee456ce3752d3c9340f9f3",
        },
    ];

    const fn counting_bytes() -> [u8; 32] {
        let mut bytes = [0u8; 32];
        let mut i = 0;
        while i < 32 {
            bytes[i] = i as u8;
            i += 1;
        }
        bytes
    }

    #[test]
    fn the_known_answer_vectors_of_the_audit_guide_hold() {
        for Vector {
            secret,
            commitment,
            first,
            jackpot,
            seed_0,
            seed_last,
        } in VECTORS
        {
            let secret = BlockSecret::from_bytes(secret);
            assert_eq!(secret.commitment().to_hex(), commitment);
            let outcomes = block_outcomes(&secret);
            let levels: Vec<u8> = outcomes[..32].iter().map(|l| l.get()).collect();
            assert_eq!(levels, first);
            let ones: Vec<usize> = (0..outcomes.len())
                .filter(|&i| outcomes[i].get() == 1)
                .collect();
            assert_eq!(ones, [jackpot]);
            assert_eq!(hex::encode(scenario_seed(&secret, 0)), seed_0);
            assert_eq!(hex::encode(scenario_seed(&secret, 449_999)), seed_last);
        }
    }
}
