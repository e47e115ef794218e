//! MurmurHash3, exactly as Sparkey index files use it.
//!
//! * 32-bit slots: `MurmurHash3_x86_32(key, seed)`.
//! * 64-bit slots: the first 64-bit word (`h1`) of `MurmurHash3_x64_128(key, seed)` with both
//!   lanes seeded by the 32-bit seed, zero-extended.
//!
//! Blocks are read little-endian on every platform; the key length is mixed in as a 32-bit
//! value, so keys of 2^31 bytes or more cannot be hashed compatibly and are refused by the
//! index builder (see `hash/FORMAT.md`). Reference values: `shared/vectors/sparkey/murmur3.tsv`.

/// Longest key the index can hash compatibly with other Sparkey implementations.
pub const MAX_HASHED_KEY_LEN: u64 = (1 << 31) - 1;

#[inline]
fn fmix32(mut h: u32) -> u32 {
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

#[inline]
fn fmix64(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

#[inline]
fn split16(block: &[u8; 16]) -> ([u8; 8], [u8; 8]) {
    let (lo, hi) = block.split_at(8);
    let mut a = [0u8; 8];
    let mut b = [0u8; 8];
    a.copy_from_slice(lo);
    b.copy_from_slice(hi);
    (a, b)
}

/// MurmurHash3_x86_32.
#[inline]
pub fn murmur3_x86_32(key: &[u8], seed: u32) -> u32 {
    const C1: u32 = 0xcc9e_2d51;
    const C2: u32 = 0x1b87_3593;
    let mut h1 = seed;
    let (blocks, tail) = key.as_chunks::<4>();
    for block in blocks {
        let mut k1 = u32::from_le_bytes(*block);
        k1 = k1.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1.rotate_left(13).wrapping_mul(5).wrapping_add(0xe654_6b64);
    }
    if !tail.is_empty() {
        let mut word = [0u8; 4];
        for (dst, src) in word.iter_mut().zip(tail) {
            *dst = *src;
        }
        let k1 = u32::from_le_bytes(word)
            .wrapping_mul(C1)
            .rotate_left(15)
            .wrapping_mul(C2);
        h1 ^= k1;
    }
    // The reference mixes in the length as a C `int`.
    h1 ^= key.len() as u32;
    fmix32(h1)
}

/// First 64-bit word of MurmurHash3_x64_128 with both lanes seeded by `seed`.
#[inline]
pub fn murmur3_x64_128_h1(key: &[u8], seed: u32) -> u64 {
    const C1: u64 = 0x87c3_7b91_1142_53d5;
    const C2: u64 = 0x4cf5_ad43_2745_937f;
    let mut h1 = u64::from(seed);
    let mut h2 = u64::from(seed);
    let (blocks, tail) = key.as_chunks::<16>();
    for block in blocks {
        let (lo, hi) = split16(block);
        let k1 = u64::from_le_bytes(lo)
            .wrapping_mul(C1)
            .rotate_left(31)
            .wrapping_mul(C2);
        h1 ^= k1;
        h1 = h1
            .rotate_left(27)
            .wrapping_add(h2)
            .wrapping_mul(5)
            .wrapping_add(0x52dc_e729);
        let k2 = u64::from_le_bytes(hi)
            .wrapping_mul(C2)
            .rotate_left(33)
            .wrapping_mul(C1);
        h2 ^= k2;
        h2 = h2
            .rotate_left(31)
            .wrapping_add(h1)
            .wrapping_mul(5)
            .wrapping_add(0x3849_5ab5);
    }
    if !tail.is_empty() {
        let mut padded = [0u8; 16];
        for (dst, src) in padded.iter_mut().zip(tail) {
            *dst = *src;
        }
        let (lo, hi) = split16(&padded);
        if tail.len() > 8 {
            let k2 = u64::from_le_bytes(hi)
                .wrapping_mul(C2)
                .rotate_left(33)
                .wrapping_mul(C1);
            h2 ^= k2;
        }
        let k1 = u64::from_le_bytes(lo)
            .wrapping_mul(C1)
            .rotate_left(31)
            .wrapping_mul(C2);
        h1 ^= k1;
    }
    // The reference passes the length as a C `int`, sign-extended to 64 bits.
    let len = i64::from(key.len() as i32) as u64;
    h1 ^= len;
    h2 ^= len;
    h1 = h1.wrapping_add(h2);
    h2 = h2.wrapping_add(h1);
    h1 = fmix64(h1);
    h2 = fmix64(h2);
    h1.wrapping_add(h2)
}
