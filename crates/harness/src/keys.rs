//! Keys: the numbers `0..num` written as fixed-width bytes whose byte order is their
//! numeric order, and the order `fillrandom` visits them in.
//!
//! - [`KeyFormat::Decimal`] is db_bench's `%016d`: ASCII digits, zero-padded on the left.
//! - [`KeyFormat::Binary`] is the number's big-endian bytes, zero-padded on the left.
//! - [`permuted`] visits every number of `0..n` exactly once in a scattered order.

use std::fmt;

/// How a key number becomes bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum KeyFormat {
    /// The number in ASCII decimal, zero-padded on the left (db_bench's `%016d`).
    Decimal,
    /// The number as big-endian bytes, zero-padded on the left (sorts like the number).
    Binary,
}

impl KeyFormat {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            KeyFormat::Decimal => "decimal",
            KeyFormat::Binary => "binary",
        }
    }

    /// The fewest bytes that hold every number below `num` (at least 1).
    pub fn width_for(self, num: u64) -> usize {
        let largest = num.saturating_sub(1);
        match self {
            KeyFormat::Decimal => largest.checked_ilog10().map_or(1, |d| d as usize + 1),
            KeyFormat::Binary => largest.checked_ilog2().map_or(1, |b| b as usize / 8 + 1),
        }
    }

    /// Writes number `n` over the whole of `out`, zero-padded on the left; digits or
    /// bytes that do not fit are dropped from the left.
    pub fn fill(self, n: u64, out: &mut [u8]) {
        let mut rest = n;
        match self {
            KeyFormat::Decimal => {
                for b in out.iter_mut().rev() {
                    *b = b'0' + (rest % 10) as u8;
                    rest /= 10;
                }
            }
            KeyFormat::Binary => {
                for b in out.iter_mut().rev() {
                    *b = rest as u8;
                    rest >>= 8;
                }
            }
        }
    }
}

impl fmt::Display for KeyFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Keys of a width too small for the numbers asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyWidthError {
    /// The width asked for, in bytes.
    pub size: usize,
    /// Keys were to hold the numbers `0..num`.
    pub num: u64,
    /// The format asked for.
    pub format: KeyFormat,
    /// The fewest bytes that would do.
    pub needed: usize,
}

impl fmt::Display for KeyWidthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-byte {} keys cannot hold the numbers below {}: they need at least {} bytes",
            self.size, self.format, self.num, self.needed
        )
    }
}

impl std::error::Error for KeyWidthError {}

/// Fixed-width keys for the numbers `0..num`; their byte order is their numeric order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keys {
    size: usize,
    format: KeyFormat,
}

impl Keys {
    /// Keys of `size` bytes able to hold every number below `num`.
    ///
    /// # Errors
    /// If `num - 1` does not fit in `size` bytes of the format.
    pub fn new(size: usize, format: KeyFormat, num: u64) -> Result<Keys, KeyWidthError> {
        let needed = format.width_for(num);
        if size < needed {
            return Err(KeyWidthError {
                size,
                num,
                format,
                needed,
            });
        }
        Ok(Keys { size, format })
    }

    /// Key length in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The format.
    pub fn format(&self) -> KeyFormat {
        self.format
    }

    /// Writes the key of number `n` into `buf` (replacing its contents).
    pub fn write(&self, n: u64, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.size, 0);
        self.format.fill(n, buf);
    }

    /// The key of number `n`, allocated.
    pub fn key(&self, n: u64) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.size);
        self.write(n, &mut buf);
        buf
    }
}

/// Multiplier of the `fillrandom` permutation: a prime larger than any key count a
/// benchmark uses, so `i -> i * PERM_PRIME mod n` is a bijection of `0..n`.
pub const PERM_PRIME: u64 = 2_654_435_761;

/// The `i`-th key number `fillrandom` writes out of `n`: over `i` in `0..n`, every number
/// of `0..n` exactly once, for any `n` up to [`PERM_PRIME`]. 0 for `n` = 0.
pub fn permuted(i: u64, n: u64) -> u64 {
    if n == 0 {
        return 0;
    }
    ((u128::from(i) * u128::from(PERM_PRIME)) % u128::from(n)) as u64
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use std::collections::HashSet;

    use super::*;

    #[test]
    fn decimal_keys_are_zero_padded_and_sorted() {
        let keys = Keys::new(16, KeyFormat::Decimal, 1_000_000).unwrap();
        assert_eq!(keys.key(0), b"0000000000000000");
        assert_eq!(keys.key(123_456), b"0000000000123456");
        let mut fixed = [0u8; 16];
        KeyFormat::Decimal.fill(42, &mut fixed);
        assert_eq!(&fixed, b"0000000000000042");
    }

    #[test]
    fn binary_keys_are_big_endian() {
        let keys = Keys::new(10, KeyFormat::Binary, 1 << 40).unwrap();
        assert_eq!(keys.key(0x0102), vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
    }

    #[test]
    fn keys_sort_like_their_numbers_and_never_repeat() {
        for (size, format) in [(4, KeyFormat::Decimal), (2, KeyFormat::Binary)] {
            let keys = Keys::new(size, format, 10_000).unwrap();
            let all: Vec<Vec<u8>> = (0..10_000).map(|n| keys.key(n)).collect();
            assert!(all.windows(2).all(|w| w[0] < w[1]), "{format}");
            assert!(all.iter().all(|k| k.len() == size));
            assert_eq!(all.iter().collect::<HashSet<_>>().len(), all.len());
        }
    }

    #[test]
    fn keys_too_short_for_num_are_refused() {
        assert!(Keys::new(3, KeyFormat::Decimal, 1000).is_ok());
        let err = Keys::new(3, KeyFormat::Decimal, 1001).unwrap_err();
        assert_eq!(err.needed, 4);
        assert!(err.to_string().contains("at least 4 bytes"), "{err}");
        assert!(Keys::new(1, KeyFormat::Binary, 256).is_ok());
        assert_eq!(Keys::new(1, KeyFormat::Binary, 257).unwrap_err().needed, 2);
        assert!(Keys::new(1, KeyFormat::Decimal, 0).is_ok());
        assert_eq!(KeyFormat::Decimal.width_for(1), 1);
        assert_eq!(KeyFormat::Decimal.width_for(100_000), 5);
        assert_eq!(KeyFormat::Decimal.width_for(100_001), 6);
    }

    #[test]
    fn the_permutation_visits_every_key_once() {
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
        // Scattered, not in order.
        assert_ne!(
            (0..10).map(|i| permuted(i, 1000)).collect::<Vec<_>>(),
            (0..10).collect::<Vec<_>>()
        );
        assert_eq!(permuted(5, 0), 0);
    }
}
