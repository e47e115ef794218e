//! What every store is given: db_bench-style 16-byte decimal keys, values cut from a
//! buffer that compresses to about half, the random generator that picks keys, and the
//! permutation `fillrandom` writes in.
//!
//! Everything is deterministic for a seed, and the same definitions are written out in
//! `go/README.md` for the Go driver, so every store sees the same kind of data.

use std::sync::Arc;

/// Bytes of every key.
pub const KEY_LEN: usize = 16;

/// Multiplier of the `fillrandom` permutation: a prime larger than any key count the
/// suite accepts, so `i -> i * PERM_PRIME mod n` is a bijection of `0..n`.
pub const PERM_PRIME: u64 = 2_654_435_761;

/// The `i`-th key `fillrandom` writes out of `n`: every key of `0..n` exactly once.
pub fn permuted(i: u64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    ((u128::from(i) * u128::from(PERM_PRIME)) % u128::from(n)) as u64
}

/// Writes key number `k` as 16 ASCII decimal digits (db_bench's `%016d`) into `out`.
pub fn key(k: u64, out: &mut [u8; KEY_LEN]) {
    let mut x = k;
    for b in out.iter_mut().rev() {
        *b = b'0' + (x % 10) as u8;
        x /= 10;
    }
}

/// splitmix64: fast, and good enough to pick keys and read/write choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// The generator of thread `thread` of workload number `workload`.
    pub fn new(seed: u64, workload: u64, thread: u64) -> Rng {
        let stream = workload
            .wrapping_mul(16)
            .wrapping_add(thread)
            .wrapping_add(1);
        let mut rng = Rng(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        rng.next_u64();
        rng
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n >= 1`), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// A buffer values are cut from: 100-byte pieces of 50 random printable bytes written
/// twice, so a value compresses to about half (as db_bench's compression ratio 0.5).
#[derive(Debug, Clone)]
pub struct ValueSource {
    data: Arc<[u8]>,
    size: usize,
}

impl ValueSource {
    /// Values of `size` bytes from a buffer of at least 1 MiB.
    pub fn new(size: usize, seed: u64) -> ValueSource {
        let len = (1usize << 20).max(size) + 100;
        let mut rng = Rng::new(seed, u64::MAX, 0);
        let mut data = Vec::with_capacity(len + 100);
        while data.len() < len {
            let half: Vec<u8> = (0..50).map(|_| b' ' + rng.below(95) as u8).collect();
            data.extend_from_slice(&half);
            data.extend_from_slice(&half);
        }
        ValueSource {
            data: data.into(),
            size,
        }
    }

    /// One thread's cursor: consecutive values are consecutive slices, wrapping.
    pub fn cursor(&self, start: usize) -> Values<'_> {
        let room = self.data.len().saturating_sub(self.size).max(1);
        Values {
            source: self,
            pos: start % room,
        }
    }
}

/// One thread's position in a [`ValueSource`].
#[derive(Debug)]
pub struct Values<'a> {
    source: &'a ValueSource,
    pos: usize,
}

impl<'a> Values<'a> {
    /// Bytes of every value.
    pub fn size(&self) -> usize {
        self.source.size
    }

    /// The next value.
    pub fn next_value(&mut self) -> &'a [u8] {
        let size = self.source.size;
        if self.pos + size > self.source.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += size;
        let source: &'a ValueSource = self.source;
        source.data.get(start..start + size).unwrap_or(&[])
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn permutation_is_a_bijection() {
        for n in [1u64, 2, 7, 1000, 4096, 99_991] {
            let mut seen = vec![false; n as usize];
            for i in 0..n {
                let k = permuted(i, n) as usize;
                assert!(
                    !std::mem::replace(&mut seen[k], true),
                    "{k} twice for n={n}"
                );
            }
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn keys_are_zero_padded_decimal_and_sort_like_numbers() {
        let mut a = [0u8; KEY_LEN];
        let mut b = [0u8; KEY_LEN];
        key(42, &mut a);
        assert_eq!(&a, b"0000000000000042");
        key(9_999_999, &mut b);
        assert!(a < b);
    }

    #[test]
    fn values_have_the_size_asked_for_and_compress() {
        let source = ValueSource::new(100, 1);
        let mut values = source.cursor(0);
        for _ in 0..50_000 {
            assert_eq!(values.next_value().len(), 100);
        }
        let big = ValueSource::new(3 << 20, 1);
        assert_eq!(big.cursor(7).next_value().len(), 3 << 20);
        // Every 100-byte piece is 50 bytes repeated.
        let v = source.cursor(0).next_value().to_vec();
        assert_eq!(v[..50], v[50..]);
    }

    #[test]
    fn rng_below_stays_in_range() {
        let mut rng = Rng::new(1, 0, 0);
        for n in [1u64, 2, 10, 1_000_000] {
            for _ in 0..1000 {
                assert!(rng.below(n) < n);
            }
        }
    }
}
