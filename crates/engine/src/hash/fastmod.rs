//! Remainder by a fixed divisor without a division instruction (Lemire, Kaser and Kurz,
//! "Faster remainder by direct computation", 2019): for 32-bit numerators and divisors,
//! `x mod d = ((M·x mod 2^64) · d) >> 64` with `M = ⌊(2^64 − 1) / d⌋ + 1`, exact for every
//! `x, d < 2^32`. Slot homes (`hash mod capacity`) are computed on every probe step of
//! every lookup and insertion, where a 64-bit `div` would dominate.

/// A divisor prepared for fast remainders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Modulus {
    d: u64,
    /// The magic multiplier, or 0 when `d` does not fit in 32 bits.
    m: u64,
}

impl Modulus {
    /// Prepares `d` (must be non-zero).
    pub fn new(d: u64) -> Modulus {
        debug_assert!(d > 0);
        let m = if d > 0 && d <= u64::from(u32::MAX) {
            (u64::MAX / d).wrapping_add(1)
        } else {
            0
        };
        Modulus { d, m }
    }

    /// `x mod d`.
    #[inline]
    pub fn rem(&self, x: u64) -> u64 {
        if self.m != 0 && x <= u64::from(u32::MAX) {
            let low = self.m.wrapping_mul(x);
            ((u128::from(low) * u128::from(self.d)) >> 64) as u64
        } else {
            x.checked_rem(self.d).unwrap_or(0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Modulus;

    #[test]
    fn matches_the_remainder_operator() {
        let divisors = [
            1u64,
            2,
            3,
            7,
            13,
            45,
            67,
            13_001,
            1_300_001,
            8_388_609,
            (1 << 31) + 11,
            u32::MAX as u64,
            1 << 33,
        ];
        let xs = [
            0u64,
            1,
            2,
            12_345,
            0xDEAD_BEEF,
            u32::MAX as u64 - 1,
            u32::MAX as u64,
            1 << 40,
            u64::MAX,
        ];
        for &d in &divisors {
            let m = Modulus::new(d);
            for &x in &xs {
                assert_eq!(m.rem(x), x % d, "{x} mod {d}");
            }
            let mut x = 0x9E37_79B9u64;
            for _ in 0..10_000 {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                let v = x >> 32;
                assert_eq!(m.rem(v), v % d, "{v} mod {d}");
            }
        }
    }
}
