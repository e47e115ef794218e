//! The one checksum of the ordered store: CRC32C (Castagnoli), and the masked form in which
//! it is stored on disk.
//!
//! Owns: computing a [`Checksum`] over bytes (in one call or piecewise with
//! [`Checksum::extend`]) and converting it to and from its stored, masked form. It does not
//! decide which bytes a format covers; each `FORMAT.md` says that.
//!
//! Why masked: every stored CRC goes through [`Checksum::masked`] (leveldb's
//! `crc32c::Mask`: rotate right by 15 bits, add `0xa282ead8`). The bytes a CRC covers are
//! not always free of CRCs themselves: a WAL record's payload is a write batch of user
//! values, and a user may store any bytes, including whole Cairn records (a backup of one
//! store kept inside another, a replicated WAL segment). The CRC of a byte string that ends
//! in its own CRC is a fixed residue, so a checksum computed over such data and stored next
//! to it is much weaker than a random 32-bit value. Masking breaks that algebraic
//! relation at the cost of one rotate and one add; doing it for every stored CRC keeps
//! the rule simple (there is no "does this payload contain CRCs?" question to answer per
//! format). The unmasked value never appears on disk.
//!
//! Invariants: `Checksum::unmask(c.masked()) == c` for every `c`; CRC32C is computed with the
//! `crc32c` crate, which uses the SSE4.2 / ARMv8 CRC instructions when available and gives
//! the same value on every platform.
//!
//! Thread-safety: plain values and pure functions; `Send + Sync`.

/// Added after the rotation in the masked form (the constant leveldb uses).
const MASK_DELTA: u32 = 0xa282_ead8;

/// An unmasked CRC32C value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Checksum(u32);

impl Checksum {
    /// The CRC32C of `data`.
    pub(crate) fn of(data: &[u8]) -> Checksum {
        Checksum(crc32c::crc32c(data))
    }

    /// The CRC32C of the bytes this checksum covered followed by `data`.
    pub(crate) fn extend(self, data: &[u8]) -> Checksum {
        Checksum(crc32c::crc32c_append(self.0, data))
    }

    /// The raw (unmasked) CRC32C value.
    // Only the CBOR dump trailer (`transfer`) reads raw values.
    #[cfg_attr(not(feature = "transfer"), allow(dead_code))]
    pub(crate) fn get(self) -> u32 {
        self.0
    }

    /// The form stored on disk: rotated right by 15 bits plus [`MASK_DELTA`].
    pub(crate) fn masked(self) -> u32 {
        self.0.rotate_right(15).wrapping_add(MASK_DELTA)
    }

    /// The checksum whose masked form is `stored`.
    // Only the CBOR dump trailer (`transfer`) unmasks; readers compare masked forms.
    #[cfg_attr(not(feature = "transfer"), allow(dead_code))]
    pub(crate) fn unmask(stored: u32) -> Checksum {
        Checksum(stored.wrapping_sub(MASK_DELTA).rotate_left(15))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// Test vectors from RFC 3720 (iSCSI), appendix B.4, which defines CRC32C.
    #[test]
    fn crc32c_matches_rfc3720_vectors() {
        assert_eq!(Checksum::of(&[0u8; 32]).get(), 0x8a91_36aa);
        assert_eq!(Checksum::of(&[0xffu8; 32]).get(), 0x62a8_ab43);
        let ascending: Vec<u8> = (0u8..32).collect();
        assert_eq!(Checksum::of(&ascending).get(), 0x46dd_794e);
        let descending: Vec<u8> = (0u8..32).rev().collect();
        assert_eq!(Checksum::of(&descending).get(), 0x113f_db5c);
        assert_eq!(Checksum::of(b"123456789").get(), 0xe306_9283);
        assert_eq!(Checksum::of(b"").get(), 0);
    }

    #[test]
    fn extend_equals_one_shot() {
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 7 + 3) as u8).collect();
        for cut in [0, 1, 17, 500, 999, 1000] {
            let piecewise = Checksum::of(&data[..cut]).extend(&data[cut..]);
            assert_eq!(piecewise, Checksum::of(&data), "cut at {cut}");
        }
    }

    #[test]
    fn mask_round_trips_and_changes_the_value() {
        for v in [0u32, 1, 0x8000_0000, 0xffff_ffff, 0xe306_9283, MASK_DELTA] {
            let c = Checksum(v);
            assert_eq!(Checksum::unmask(c.masked()), c);
            assert_ne!(c.masked(), v, "mask must not be the identity for {v:#x}");
            // Masking twice is not the identity either (leveldb's test).
            assert_ne!(Checksum(c.masked()).masked(), v);
        }
        // A fixed value keeps the on-disk definition from drifting.
        assert_eq!(Checksum(0xe306_9283).masked(), 0xc78a_b0e5);
    }

    #[test]
    fn any_flipped_bit_changes_the_checksum() {
        let data = b"cairn write-ahead log record".to_vec();
        let good = Checksum::of(&data);
        for i in 0..data.len() * 8 {
            let mut bad = data.clone();
            bad[i / 8] ^= 1 << (i % 8);
            assert_ne!(Checksum::of(&bad), good, "bit {i}");
        }
    }
}
