//! [`ReadMode`]: one store's choice of whether its point reads release the GIL, from the
//! timing of a sample of reads (the policy is described in `point.rs`, which reads through
//! it; `shared.rs` keeps one per store).

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// A read under the GIL slower than this probably waited for the disk.
pub(crate) const SLOW: Duration = Duration::from_micros(50);

/// One read in this many under the GIL is timed.
pub(crate) const TIMED_EVERY: u32 = 8;

/// Point reads that release the GIL after a slow one.
pub(crate) const RELEASED_READS: u32 = 1024;

/// Whether the next point reads of one store release the GIL (see the module docs).
#[derive(Debug, Default)]
pub(crate) struct ReadMode {
    /// Point reads left that release the GIL.
    released: AtomicU32,
    /// Point reads made under the GIL (wrapping), to time one in [`TIMED_EVERY`].
    held: AtomicU32,
}

impl ReadMode {
    /// True if this read should release the GIL (and counts it).
    pub(crate) fn release_this(&self) -> bool {
        // Under the GIL the counter is only ever touched by one thread at a time, so a
        // load and a store are enough; a lost update costs at most one read's choice.
        let left = self.released.load(Ordering::Relaxed);
        if left == 0 {
            return false;
        }
        self.released.store(left - 1, Ordering::Relaxed);
        true
    }

    /// The start of a read under the GIL, if this one is to be timed.
    pub(crate) fn start(&self) -> Option<Instant> {
        let n = self.held.load(Ordering::Relaxed).wrapping_add(1);
        self.held.store(n, Ordering::Relaxed);
        n.is_multiple_of(TIMED_EVERY).then(Instant::now)
    }

    /// Notes how long a timed read under the GIL took.
    pub(crate) fn took(&self, started: Option<Instant>) {
        if started.is_some_and(|s| s.elapsed() > SLOW) {
            self.released.store(RELEASED_READS, Ordering::Relaxed);
        }
    }
}
