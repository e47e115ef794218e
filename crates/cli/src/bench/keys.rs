//! What the benchmarks write: db_bench-style fixed-width keys, values cut from a
//! compressible pseudo-random buffer, and the generator that picks keys.
//!
//! Everything here is deterministic for a given seed, so two runs with the same flags
//! write the same keys in the same order and the same bytes.

use std::sync::Arc;

use clap::ValueEnum;

/// splitmix64: small, fast and good enough to pick keys and read/write choices.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator for one thread of one benchmark; different `stream`s give unrelated
    /// sequences for the same seed.
    pub fn new(seed: u64, stream: u64) -> Rng {
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

    /// A number in `0..n` (`n` >= 1), by multiply-shift (no division).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
}

/// How a key number becomes `--key-size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
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
}

/// Fixed-width keys for the numbers `0..num`; their byte order is their numeric order.
#[derive(Debug, Clone, Copy)]
pub struct Keys {
    size: usize,
    format: KeyFormat,
}

impl Keys {
    /// Keys of `size` bytes able to hold every number below `num`.
    ///
    /// # Errors
    /// A message if `num - 1` does not fit in `size` bytes of the format.
    pub fn new(size: usize, format: KeyFormat, num: u64) -> Result<Keys, String> {
        let largest = num.saturating_sub(1);
        let needed = match format {
            KeyFormat::Decimal => largest.checked_ilog10().map_or(1, |d| d as usize + 1),
            KeyFormat::Binary => largest.checked_ilog2().map_or(1, |b| b as usize / 8 + 1),
        };
        if size < needed {
            return Err(format!(
                "--key-size {size} is too small for --num {num}: {} keys need at least {needed} bytes",
                format.name()
            ));
        }
        Ok(Keys { size, format })
    }

    /// Key length in bytes.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Writes the key of number `n` into `buf` (replacing its contents).
    pub fn write(&self, n: u64, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.size, 0);
        let mut rest = n;
        match self.format {
            KeyFormat::Decimal => {
                for b in buf.iter_mut().rev() {
                    *b = b'0' + (rest % 10) as u8;
                    rest /= 10;
                }
            }
            KeyFormat::Binary => {
                for b in buf.iter_mut().rev() {
                    *b = rest as u8;
                    rest >>= 8;
                }
            }
        }
    }

    /// The key of number `n`, allocated.
    pub fn key(&self, n: u64) -> Vec<u8> {
        let mut buf = Vec::with_capacity(self.size);
        self.write(n, &mut buf);
        buf
    }
}

/// Bytes of the shared value buffer (db_bench uses 1 MiB), or one value if larger.
const VALUE_BUFFER_LEN: usize = 1 << 20;

/// The shared source of values: pieces of 100 bytes, each 50 random printable bytes
/// repeated, so blocks compress to about half (db_bench's `--compression_ratio=0.5`).
#[derive(Debug, Clone)]
pub struct ValueSource {
    data: Arc<[u8]>,
    size: usize,
}

impl ValueSource {
    /// A buffer for values of `size` bytes, from `seed`.
    pub fn new(size: usize, seed: u64) -> ValueSource {
        const PIECE: usize = 100;
        let len = VALUE_BUFFER_LEN.max(size);
        let mut rng = Rng::new(seed, u64::MAX);
        let mut data = Vec::with_capacity(len + PIECE);
        while data.len() < len {
            let raw: Vec<u8> = (0..PIECE / 2).map(|_| b' ' + rng.below(95) as u8).collect();
            for i in 0..PIECE {
                data.push(raw.get(i % raw.len()).copied().unwrap_or(b' '));
            }
        }
        data.truncate(len);
        ValueSource {
            data: data.into(),
            size,
        }
    }

    /// A cursor over the buffer for one thread.
    pub fn cursor(&self) -> Values {
        Values {
            data: Arc::clone(&self.data),
            size: self.size,
            pos: 0,
        }
    }
}

/// One thread's position in the value buffer: consecutive values are consecutive
/// slices, wrapping at the end, as db_bench's `RandomGenerator::Generate`.
#[derive(Debug)]
pub struct Values {
    data: Arc<[u8]>,
    size: usize,
    pos: usize,
}

impl Values {
    /// The next value (`size` bytes).
    pub fn next_value(&mut self) -> &[u8] {
        if self.pos + self.size > self.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += self.size;
        self.data.get(start..start + self.size).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn decimal_keys_are_zero_padded_and_sorted() {
        let keys = Keys::new(16, KeyFormat::Decimal, 1_000_000).unwrap();
        assert_eq!(keys.key(0), b"0000000000000000");
        assert_eq!(keys.key(123_456), b"0000000000123456");
        assert!(keys.key(99) < keys.key(100));
    }

    #[test]
    fn binary_keys_are_big_endian_and_sorted() {
        let keys = Keys::new(10, KeyFormat::Binary, 1 << 40).unwrap();
        assert_eq!(keys.key(0x0102), vec![0, 0, 0, 0, 0, 0, 0, 0, 1, 2]);
        assert!(keys.key(255) < keys.key(256));
    }

    #[test]
    fn keys_too_short_for_num_are_refused() {
        assert!(Keys::new(3, KeyFormat::Decimal, 1000).is_ok());
        assert!(Keys::new(3, KeyFormat::Decimal, 1001).is_err());
        assert!(Keys::new(1, KeyFormat::Binary, 256).is_ok());
        assert!(Keys::new(1, KeyFormat::Binary, 257).is_err());
        assert!(Keys::new(1, KeyFormat::Decimal, 0).is_ok());
    }

    #[test]
    fn values_have_the_size_and_about_half_distinct_bytes() {
        let source = ValueSource::new(100, 301);
        let mut values = source.cursor();
        let first = values.next_value().to_vec();
        assert_eq!(first.len(), 100);
        assert_eq!(first.get(..50), first.get(50..));
        assert_ne!(values.next_value(), first.as_slice());
        let mut big = ValueSource::new(3 << 20, 1).cursor();
        assert_eq!(big.next_value().len(), 3 << 20);
        assert_eq!(big.next_value().len(), 3 << 20);
    }

    #[test]
    fn below_stays_in_range() {
        let mut rng = Rng::new(7, 0);
        assert!((0..10_000).all(|_| rng.below(13) < 13));
        assert_eq!(rng.below(1), 0);
    }
}
