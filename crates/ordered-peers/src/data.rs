//! What every store is given, as the suite's contract with the Go driver
//! (`go/README.md`, `go/data.go`) spells it: 16-byte decimal keys
//! ([`cairn_harness::KeyFormat::Decimal`]), values cut from the harness's
//! [`cairn_harness::ValueSource`], the `fillrandom` permutation
//! ([`cairn_harness::keys::permuted`]) and one splitmix64 stream per thread of each
//! workload ([`thread_rng`]).
//!
//! Everything is deterministic for a seed, so every store sees the same kind of data.

use cairn_harness::Rng;

/// Bytes of every key.
pub const KEY_LEN: usize = 16;

/// The generator of thread `thread` of workload number `workload`: the harness's stream
/// `workload * 16 + thread + 1` of `seed` (Go's `threadRNG`).
pub fn thread_rng(seed: u64, workload: u64, thread: u64) -> Rng {
    let stream = workload
        .wrapping_mul(16)
        .wrapping_add(thread)
        .wrapping_add(1);
    Rng::new(seed, stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_streams_match_the_go_driver() {
        // threadRNG(1, 2, 0) in go/data.go: state 1 ^ (33 * 0xD1B54A32D192ED03), one
        // output discarded.
        assert_eq!(thread_rng(1, 2, 0).next_u64(), 0x6164_066F_DC50_4B98);
        assert_ne!(
            thread_rng(1, 2, 0).next_u64(),
            thread_rng(1, 2, 1).next_u64()
        );
    }
}
