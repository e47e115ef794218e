//! The random generator of every benchmark and load: splitmix64.
//!
//! Small, fast and good enough to pick keys, operation kinds and value bytes. It is not a
//! crate's generator on purpose: the peer suite's Go driver implements the same sequence
//! (`threadRNG` in crates/ordered-peers/go/data.go), and Sparkey's reference `bench.c`
//! draws its lookup keys the same way.

/// Multiplier that spreads stream numbers over the seed space (splitmix64's second
/// mixing constant).
const STREAM_MIX: u64 = 0xD1B5_4A32_D192_ED03;

/// splitmix64. Equal seeds (and streams) give equal sequences on every platform.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of one stream of a seed: state `seed ^ stream × 0xD1B54A32D192ED03`,
    /// one output discarded. Different streams give unrelated sequences for the same seed,
    /// so each thread (and each benchmark of a run) gets its own.
    pub fn new(seed: u64, stream: u64) -> Rng {
        let mut rng = Rng(seed ^ stream.wrapping_mul(STREAM_MIX));
        rng.next_u64();
        rng
    }

    /// The generator whose state is exactly `state`, nothing discarded (how the
    /// constant-store benchmark seeds it, after Sparkey's `bench.c`).
    pub fn from_state(state: u64) -> Rng {
        Rng(state)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n` >= 1; 0 for `n` = 0), by multiply-shift: no division, and a
    /// bias below 2^-40 for `n` < 2^24.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A uniform number in `[0, 1)` with 53 random bits.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64() {
        // The reference outputs of splitmix64 from state 0.
        let mut rng = Rng::from_state(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(rng.next_u64(), 0x6E78_9E6A_A1B9_65F4);
        assert_eq!(rng.next_u64(), 0x06C4_5D18_8009_454F);
    }

    #[test]
    fn a_seed_and_stream_always_give_the_same_sequence() {
        let mut rng = Rng::new(301, 0);
        assert_eq!(rng.next_u64(), 0x1A43_2F36_6EBA_4879);
        assert_eq!(rng.next_u64(), 0x200E_950C_027B_7341);
        assert_eq!(rng.next_u64(), 0xAA1E_D3A1_34CA_8E05);
        // The peer suite's stream of workload 2, thread 0 (Go's threadRNG(1, 2, 0)).
        assert_eq!(Rng::new(1, 2 * 16 + 1).next_u64(), 0x6164_066F_DC50_4B98);
        let a: Vec<u64> = (0..100)
            .map({
                let mut r = Rng::new(7, 3);
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..100)
            .map({
                let mut r = Rng::new(7, 3);
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
        assert_ne!(Rng::new(7, 3).next_u64(), Rng::new(7, 4).next_u64());
    }

    #[test]
    fn below_and_unit_stay_in_range() {
        let mut rng = Rng::new(7, 0);
        assert!((0..10_000).all(|_| rng.below(13) < 13));
        assert_eq!(rng.below(1), 0);
        assert_eq!(rng.below(0), 0);
        assert!((0..10_000).all(|_| (0.0..1.0).contains(&rng.unit())));
        let mut seen = [0u32; 10];
        for _ in 0..10_000 {
            if let Some(s) = seen.get_mut(rng.below(10) as usize) {
                *s += 1;
            }
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }
}
