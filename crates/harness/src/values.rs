//! Values: slices of one shared buffer that compresses to about half.
//!
//! The buffer is 100-byte pieces, each 50 random printable bytes written twice
//! (db_bench's `RandomGenerator` with `--compression_ratio=0.5`), at least 1 MiB long, or
//! one value long if a value is larger. Each thread walks it with its own [`Values`]
//! cursor: consecutive values are consecutive slices, wrapping at the end, as db_bench's
//! `RandomGenerator::Generate`.

use std::sync::Arc;

use crate::rng::Rng;

/// Bytes of the shared value buffer (db_bench's 1 MiB), unless one value is larger.
pub const BUFFER_LEN: usize = 1 << 20;

/// Bytes of one piece: half random, half the same bytes again.
const PIECE: usize = 100;

/// The stream of a seed the buffer's bytes are drawn from (apart from every thread's).
const VALUE_STREAM: u64 = u64::MAX;

/// The shared source of values of one size.
#[derive(Debug, Clone)]
pub struct ValueSource {
    data: Arc<[u8]>,
    size: usize,
}

impl ValueSource {
    /// A buffer for values of `size` bytes, its bytes drawn from `seed`.
    pub fn new(size: usize, seed: u64) -> ValueSource {
        let len = BUFFER_LEN.max(size);
        let mut rng = Rng::new(seed, VALUE_STREAM);
        let mut data = Vec::with_capacity(len + PIECE);
        while data.len() < len {
            let half: Vec<u8> = (0..PIECE / 2).map(|_| b' ' + rng.below(95) as u8).collect();
            data.extend_from_slice(&half);
            data.extend_from_slice(&half);
        }
        data.truncate(len);
        ValueSource {
            data: data.into(),
            size,
        }
    }

    /// Bytes of every value.
    pub fn size(&self) -> usize {
        self.size
    }

    /// A cursor from the start of the buffer.
    pub fn cursor(&self) -> Values<'_> {
        Values {
            source: self,
            pos: 0,
        }
    }

    /// A cursor from byte `start` (taken modulo the room for one value), so threads
    /// that start at different offsets write different values.
    pub fn cursor_at(&self, start: usize) -> Values<'_> {
        let room = self.data.len().saturating_sub(self.size).max(1);
        Values {
            source: self,
            pos: start % room,
        }
    }
}

/// One thread's position in a [`ValueSource`].
#[derive(Debug, Clone)]
pub struct Values<'a> {
    source: &'a ValueSource,
    pos: usize,
}

impl<'a> Values<'a> {
    /// Bytes of every value.
    pub fn size(&self) -> usize {
        self.source.size
    }

    /// The next value (`size` bytes); it stays valid as long as the source, so a batch
    /// can hold several.
    pub fn next_value(&mut self) -> &'a [u8] {
        let size = self.source.size;
        if self.pos + size > self.source.data.len() {
            self.pos = 0;
        }
        let start = self.pos;
        self.pos += size;
        let source: &'a ValueSource = self.source;
        source.data.get(start..start + size).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_have_the_size_and_half_of_each_piece_repeats() {
        let source = ValueSource::new(100, 301);
        let mut values = source.cursor();
        let first = values.next_value();
        assert_eq!(first.len(), 100);
        assert_eq!(first.get(..50), first.get(50..));
        assert!(first.iter().all(|b| (b' '..=b'~').contains(b)));
        assert_ne!(values.next_value(), first);
        for _ in 0..50_000 {
            assert_eq!(values.next_value().len(), 100);
        }
    }

    #[test]
    fn large_values_get_a_buffer_of_their_own_size() {
        let big = ValueSource::new(3 << 20, 1);
        let mut values = big.cursor_at(7);
        assert_eq!(values.next_value().len(), 3 << 20);
        assert_eq!(values.next_value().len(), 3 << 20);
        assert_eq!(ValueSource::new(0, 1).cursor().next_value(), b"");
    }

    #[test]
    fn a_seed_gives_the_same_bytes_and_offsets_differ() {
        let (a, b) = (ValueSource::new(64, 9), ValueSource::new(64, 9));
        assert_eq!(a.cursor().next_value(), b.cursor().next_value());
        assert_ne!(
            a.cursor().next_value(),
            ValueSource::new(64, 10).cursor().next_value()
        );
        assert_ne!(a.cursor_at(7919).next_value(), a.cursor().next_value());
    }
}
