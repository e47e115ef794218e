//! How a workload is split between its threads: thread `t` of `T` owns the operations
//! (or key numbers) `[t·X/T, (t+1)·X/T)` of a workload of `X`, so the shares differ by at
//! most one and together cover `0..X` exactly once.

use std::ops::Range;

/// `total * t / threads` without overflow: where thread `t`'s share starts (and, for
/// `t = threads`, where the last one ends). `threads` of 0 counts as 1.
pub fn portion(total: u64, t: usize, threads: usize) -> u64 {
    (u128::from(total) * t as u128 / threads.max(1) as u128) as u64
}

/// Thread `t`'s share of `0..total`.
pub fn share(total: u64, t: usize, threads: usize) -> Range<u64> {
    portion(total, t, threads)..portion(total, t + 1, threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_cover_the_range_once() {
        for (total, threads) in [(10u64, 3usize), (1_000_000, 2), (7, 1), (0, 2), (3, 8)] {
            let mut next = 0;
            for t in 0..threads {
                let r = share(total, t, threads);
                assert_eq!(r.start, next);
                assert!(r.end >= r.start && r.end - r.start <= total / threads as u64 + 1);
                next = r.end;
            }
            assert_eq!(next, total);
        }
        assert_eq!(portion(u64::MAX, 1, 1), u64::MAX);
        assert_eq!(share(5, 0, 0), 0..5);
    }
}
