//! The table's bloom filter over **user keys** (FORMAT.md §4.4): one filter for the whole
//! table, so a lookup at any snapshot can skip a table that holds no version of its key.
//! Two layouts, chosen by the table's format version ([`Layout`]):
//!
//! * **Local** (version 3, what the writer makes): the bit array is a run of 512-bit lines
//!   (64 bytes, one cache line each). `h = XXH3-64(user_key)` (seed 0); the key's line is
//!   `((h >> 32) · lines) >> 32`; its `probes` bits are the top 9 bits of `g`,
//!   `g·φ`, `g·φ²`, … (32-bit wrapping products, `g = h mod 2^32`, `φ = 0x9E3779B9`),
//!   each a bit of that one line. A lookup reads one cache line: the decoded filter keeps
//!   its lines 64-byte aligned.
//! * **Spread** (versions 1 and 2): `delta = h.rotate_right(33)`; probe `i` (for `i` in
//!   `0..probes`) sets or tests bit `(h + i·delta) mod bit_count` (wrapping 64-bit
//!   arithmetic), i.e. double hashing over the whole array: one cache miss per probe.
//!
//! Bit `b` is bit `b % 8` (least significant first) of byte `b / 8` in both.
//!
//! Invariant: a key added to the builder is reported present by the decoded filter (no
//! false negatives), whatever the table size: sizes are capped by shrinking the bit array,
//! which only raises the false-positive rate.
//!
//! Thread-safety: [`Filter`] is immutable, `Send + Sync`.

use xxhash_rust::xxh3::xxh3_64;

use super::MAX_BLOCK_LEN;
use crate::error::Reason;

/// The hash of a user key that filters are built and probed with (FORMAT.md fixes it:
/// XXH3-64 without a seed); callers that probe several structures with one key compute
/// it once.
pub(crate) fn key_hash(user_key: &[u8]) -> u64 {
    xxh3_64(user_key)
}

/// Most probes per key a filter may use.
pub(crate) const MAX_PROBES: u8 = 30;

/// Smallest bit array, so tiny tables still get a useful filter.
const MIN_BITS: u64 = 64;

/// Largest bit array in bytes: the filter block (bits + probe count) stays within
/// [`MAX_BLOCK_LEN`].
const MAX_BIT_BYTES: u64 = MAX_BLOCK_LEN as u64 - 1;

/// The probe positions of a key's hash in a bit array of `bit_count` bits.
fn probe_bits(hash: u64, probes: u8, bit_count: u64) -> impl Iterator<Item = u64> {
    let delta = hash.rotate_right(33);
    (0..u64::from(probes)).map(move |i| hash.wrapping_add(i.wrapping_mul(delta)) % bit_count)
}

/// The positions [`probe_bits`] gives, computed with two divisions per key instead of one
/// per probe: each next position is the previous one plus `delta mod bit_count`, less
/// `2^64 mod bit_count` when the 64-bit sum `hash + i·delta` wraps (the definition adds
/// before it reduces). Positions stay below `bit_count <= 2^35`, so no sum overflows.
struct FastProbes {
    /// `hash + i·delta` (wrapping): only its carry out is used.
    sum: u64,
    delta: u64,
    /// `sum mod bit_count`.
    pos: u64,
    /// `delta mod bit_count`.
    step: u64,
    /// `2^64 mod bit_count`.
    wrap: u64,
    bit_count: u64,
    left: u8,
}

impl Iterator for FastProbes {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.left = self.left.checked_sub(1)?;
        let bit = self.pos;
        let (sum, carried) = self.sum.overflowing_add(self.delta);
        self.sum = sum;
        let mut pos = self.pos + self.step;
        if pos >= self.bit_count {
            pos -= self.bit_count;
        }
        if carried {
            pos = if pos >= self.wrap {
                pos - self.wrap
            } else {
                pos + self.bit_count - self.wrap
            };
        }
        self.pos = pos;
        Some(bit)
    }
}

/// `2^64 mod bit_count`.
///
/// Requires: `bit_count >= 1`.
fn wrap_of(bit_count: u64) -> u64 {
    let m = bit_count.max(1);
    (u64::MAX % m + 1) % m
}

/// [`probe_bits`] as [`FastProbes`] computes it; `wrap` is `wrap_of(bit_count)`.
///
/// Requires: `1 <= bit_count <= 2^62`.
fn fast_probe_bits(hash: u64, probes: u8, bit_count: u64, wrap: u64) -> FastProbes {
    let m = bit_count.max(1);
    let delta = hash.rotate_right(33);
    FastProbes {
        sum: hash,
        delta,
        pos: hash % m,
        step: delta % m,
        wrap,
        bit_count: m,
        left: probes,
    }
}

/// The number of probes for `bits_per_key`: `bits_per_key · 0.69` (≈ ln 2, which
/// minimises false positives), clamped to `1..=MAX_PROBES`.
fn probes_for(bits_per_key: u32) -> u8 {
    (bits_per_key.saturating_mul(69) / 100).clamp(1, u32::from(MAX_PROBES)) as u8
}

/// How a filter block's bits are laid out (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    /// Every probe of a key in one 64-byte line (format version 3).
    Local,
    /// Probes over the whole bit array (format versions 1 and 2).
    Spread,
}

/// Bytes of a line of a [`Layout::Local`] filter.
const LINE: usize = 64;

/// Bits of a line.
const LINE_BITS: u64 = LINE as u64 * 8;

/// The multiplier of a local filter's probe sequence (2^32 / golden ratio).
const PHI32: u32 = 0x9E37_79B9;

/// One line of a local filter, aligned so it is one cache line.
#[derive(Debug, Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; LINE]);

/// The line of `lines` that key hash `h` probes.
fn line_of(h: u64, lines: usize) -> usize {
    (((h >> 32) * lines as u64) >> 32) as usize
}

/// The bits (`0..512`) of its line that key hash `h` probes.
fn line_bits(h: u64, probes: u8) -> impl Iterator<Item = u32> {
    let mut g = h as u32;
    (0..probes).map(move |_| {
        let bit = g >> 23;
        g = g.wrapping_mul(PHI32);
        bit
    })
}

/// Collects the hashes of a table's distinct user keys and builds the filter block.
#[derive(Debug)]
pub(crate) struct FilterBuilder {
    bits_per_key: u32,
    hashes: Vec<u64>,
}

impl FilterBuilder {
    /// A builder spending `bits_per_key` bits per distinct user key.
    ///
    /// Requires: `bits_per_key >= 1`.
    pub(crate) fn new(bits_per_key: u32) -> FilterBuilder {
        debug_assert!(bits_per_key >= 1);
        FilterBuilder {
            bits_per_key: bits_per_key.max(1),
            hashes: Vec::new(),
        }
    }

    /// Adds a user key. Consecutive versions of one key are added once.
    pub(crate) fn add(&mut self, user_key: &[u8]) {
        let h = key_hash(user_key);
        if self.hashes.last() != Some(&h) {
            self.hashes.push(h);
        }
    }

    /// The filter block in `layout`: the bit array, then the probe count.
    pub(crate) fn finish(&self, layout: Layout) -> Vec<u8> {
        match layout {
            Layout::Local => self.finish_local(),
            Layout::Spread => self.finish_spread(),
        }
    }

    /// A [`Layout::Local`] filter block.
    fn finish_local(&self) -> Vec<u8> {
        let wanted = (self.hashes.len() as u64).saturating_mul(u64::from(self.bits_per_key));
        let max_lines = (MAX_BIT_BYTES / LINE as u64).max(1);
        let lines = wanted.div_ceil(LINE_BITS).clamp(1, max_lines) as usize;
        let probes = probes_for(self.bits_per_key);
        let mut out = vec![0u8; lines * LINE + 1];
        for &h in &self.hashes {
            let base = line_of(h, lines) * LINE;
            for bit in line_bits(h, probes) {
                if let Some(b) = out.get_mut(base + (bit / 8) as usize) {
                    *b |= 1 << (bit % 8);
                }
            }
        }
        if let Some(last) = out.last_mut() {
            *last = probes;
        }
        out
    }

    /// A [`Layout::Spread`] filter block.
    fn finish_spread(&self) -> Vec<u8> {
        let wanted = (self.hashes.len() as u64).saturating_mul(u64::from(self.bits_per_key));
        let bytes = wanted.max(MIN_BITS).div_ceil(8).min(MAX_BIT_BYTES);
        let bit_count = bytes * 8;
        let probes = probes_for(self.bits_per_key);
        let mut out = vec![0u8; bytes as usize + 1];
        for &h in &self.hashes {
            for bit in probe_bits(h, probes, bit_count) {
                if let Some(b) = out.get_mut((bit / 8) as usize) {
                    *b |= 1 << (bit % 8);
                }
            }
        }
        if let Some(last) = out.last_mut() {
            *last = probes;
        }
        out
    }
}

/// A decoded filter block.
#[derive(Debug)]
pub(crate) struct Filter {
    bits: Bits,
    probes: u8,
}

/// A decoded filter's bit array, in its layout.
#[derive(Debug)]
enum Bits {
    Local(Vec<Line>),
    Spread {
        bits: Vec<u8>,
        /// `2^64 mod (bits.len() * 8)`, for [`fast_probe_bits`].
        wrap: u64,
    },
}

impl Filter {
    /// Validates a raw filter block laid out as `layout`.
    ///
    /// # Errors
    /// `Truncated` if it has no bit array, `BadEntry` if the probe count is outside
    /// `1..=MAX_PROBES` or a local filter's bit array is not whole lines.
    pub(crate) fn decode(block: &[u8], layout: Layout) -> Result<Filter, Reason> {
        let (&probes, raw) = block.split_last().ok_or(Reason::Truncated)?;
        if raw.is_empty() {
            return Err(Reason::Truncated);
        }
        if probes == 0 || probes > MAX_PROBES {
            return Err(Reason::BadEntry("filter probe count is outside 1..=30"));
        }
        let bits = match layout {
            Layout::Local => {
                if !raw.len().is_multiple_of(LINE) {
                    return Err(Reason::BadEntry("filter is not a whole number of lines"));
                }
                let lines = raw
                    .chunks_exact(LINE)
                    .map(|c| {
                        let mut line = [0u8; LINE];
                        line.copy_from_slice(c);
                        Line(line)
                    })
                    .collect();
                Bits::Local(lines)
            }
            Layout::Spread => {
                let wrap = wrap_of(raw.len() as u64 * 8);
                Bits::Spread {
                    bits: raw.to_vec(),
                    wrap,
                }
            }
        };
        Ok(Filter { bits, probes })
    }

    /// Bytes of the decoded filter (its bit array).
    pub(crate) fn len(&self) -> usize {
        match &self.bits {
            Bits::Local(lines) => lines.len() * LINE,
            Bits::Spread { bits, .. } => bits.len(),
        }
    }

    /// False if `user_key` is certainly absent from the table.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(key_hash(user_key))
    }

    /// Starts fetching what [`Filter::may_contain_hash`] of `h` reads first: its line (or,
    /// spread, its first probe's byte).
    pub(crate) fn prefetch_hash(&self, h: u64) {
        let byte = match &self.bits {
            Bits::Local(lines) => lines.get(line_of(h, lines.len())).map(|l| l.0.as_ptr()),
            Bits::Spread { bits, wrap } => fast_probe_bits(h, 1, bits.len() as u64 * 8, *wrap)
                .next()
                .and_then(|bit| bits.get((bit / 8) as usize))
                .map(std::ptr::from_ref),
        };
        if let Some(byte) = byte {
            crate::mmap::prefetch_address(byte);
        }
    }

    /// [`Filter::may_contain`] of the key whose [`key_hash`] is `h`.
    pub(crate) fn may_contain_hash(&self, h: u64) -> bool {
        match &self.bits {
            Bits::Local(lines) => {
                let Some(Line(line)) = lines.get(line_of(h, lines.len())) else {
                    return true;
                };
                line_bits(h, self.probes).all(|bit| {
                    line.get((bit / 8) as usize)
                        .is_some_and(|b| b & (1 << (bit % 8)) != 0)
                })
            }
            Bits::Spread { bits, wrap } => {
                let bit_count = bits.len() as u64 * 8;
                fast_probe_bits(h, self.probes, bit_count, *wrap).all(|bit| {
                    bits.get((bit / 8) as usize)
                        .is_some_and(|b| b & (1 << (bit % 8)) != 0)
                })
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    fn filter_of(keys: impl Iterator<Item = Vec<u8>>, bits_per_key: u32, layout: Layout) -> Filter {
        let mut b = FilterBuilder::new(bits_per_key);
        for k in keys {
            b.add(&k);
        }
        Filter::decode(&b.finish(layout), layout).unwrap()
    }

    #[test]
    fn no_false_negatives_and_about_one_percent_false_positives() {
        let present = |i: u32| format!("present-{i}").into_bytes();
        // Expected about 0.84% spread and about 1% local, at 10 bits per key with 6 probes.
        for (layout, most) in [(Layout::Spread, 130), (Layout::Local, 160)] {
            let f = filter_of((0..100_000).map(present), 10, layout);
            assert_eq!(f.probes, 6);
            for i in 0..100_000 {
                assert!(
                    f.may_contain(&present(i)),
                    "{layout:?}: false negative for key {i}"
                );
            }
            let fp = (0..10_000u32)
                .filter(|i| f.may_contain(format!("absent-{i}").as_bytes()))
                .count();
            assert!(fp < most, "{layout:?}: {fp} false positives in 10,000");
            assert!(
                fp > 20,
                "{layout:?}: {fp} false positives is implausibly low"
            );
        }
    }

    #[test]
    fn a_local_filter_is_whole_aligned_lines() {
        let f = filter_of(
            (0..1000u32).map(|i| i.to_le_bytes().to_vec()),
            10,
            Layout::Local,
        );
        // 10,000 bits make 20 lines of 512.
        assert_eq!(f.len(), 20 * 64);
        let Bits::Local(lines) = &f.bits else {
            panic!("a local filter decodes to lines");
        };
        assert_eq!(
            lines.as_ptr() as usize % 64,
            0,
            "lines are cache-line aligned"
        );
        assert!(Filter::decode(&[vec![0; 64], vec![6]].concat(), Layout::Local).is_ok());
        assert_eq!(
            Filter::decode(&[vec![0; 63], vec![6]].concat(), Layout::Local).err(),
            Some(Reason::BadEntry("filter is not a whole number of lines"))
        );
    }

    #[test]
    fn tiny_and_empty_filters_work() {
        for (layout, least) in [(Layout::Spread, 8), (Layout::Local, 64)] {
            let f = filter_of(std::iter::empty(), 10, layout);
            assert_eq!(f.len(), least, "{layout:?}: the smallest bit array");
            assert!(!f.may_contain(b"anything"), "no bit is set");
            let f = filter_of([b"".to_vec(), b"a".to_vec()].into_iter(), 1, layout);
            assert!(f.may_contain(b"") && f.may_contain(b"a"));
            assert_eq!(f.probes, 1);
        }
    }

    /// The lookup's division-free probe positions are the ones the format defines (and
    /// the builder sets), including when `hash + i·delta` wraps past 2^64, for bit counts
    /// from the smallest filter to the largest.
    #[test]
    fn fast_probes_are_the_defined_probes() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            state
        };
        let mut wrapped = 0;
        for bit_count in [64, 72, 8 * 1000, 8 * 1_250_001, 8 * 4096, MAX_BIT_BYTES * 8] {
            let wrap = wrap_of(bit_count);
            for _ in 0..5000 {
                let h = next();
                let delta = h.rotate_right(33);
                wrapped += usize::from(h.checked_add(delta).is_none());
                let want: Vec<u64> = probe_bits(h, MAX_PROBES, bit_count).collect();
                let got: Vec<u64> = fast_probe_bits(h, MAX_PROBES, bit_count, wrap).collect();
                assert_eq!(got, want, "hash {h:#x} bits {bit_count}");
            }
            for h in [0, 1, u64::MAX, u64::MAX - 1, 1 << 63, bit_count] {
                let want: Vec<u64> = probe_bits(h, MAX_PROBES, bit_count).collect();
                let got: Vec<u64> = fast_probe_bits(h, MAX_PROBES, bit_count, wrap).collect();
                assert_eq!(got, want, "hash {h:#x} bits {bit_count}");
            }
        }
        assert!(wrapped > 1000, "the wrapping case was hit {wrapped} times");
    }

    #[test]
    fn versions_of_one_key_count_once() {
        let mut b = FilterBuilder::new(10);
        for _ in 0..5 {
            b.add(b"same");
        }
        b.add(b"other");
        assert_eq!(b.hashes.len(), 2);
    }

    #[test]
    fn bad_blocks_are_refused() {
        for layout in [Layout::Spread, Layout::Local] {
            let line = |probes: u8| [vec![0xff; 64], vec![probes]].concat();
            assert_eq!(Filter::decode(&[], layout).err(), Some(Reason::Truncated));
            assert_eq!(Filter::decode(&[6], layout).err(), Some(Reason::Truncated));
            assert!(Filter::decode(&line(0), layout).is_err());
            assert!(Filter::decode(&line(31), layout).is_err());
            assert!(Filter::decode(&line(30), layout).is_ok());
        }
    }
}
