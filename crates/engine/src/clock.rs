//! [`Clock`]: the one source of "now" for entry expiry (TTL). Readers, compaction and the
//! cold-data check all ask the store's clock, so a test can move time by hand and watch
//! entries expire without sleeping.
//!
//! Invariant: a manual clock only moves when told to; [`Clock::advance`] never moves it
//! back. (Expiry assumes time does not go backwards: compaction turns an expired entry
//! into a tombstone for good.)
//!
//! Thread-safety: `Send + Sync`; clones of a manual clock share one time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where a store reads the time from to decide whether an entry has expired.
///
/// The default is the system clock. [`Clock::manual`] makes a clock that only moves when
/// told to, for tests:
///
/// ```
/// use std::time::Duration;
/// use cairn::Clock;
///
/// let clock = Clock::manual(1_000);
/// let shared = clock.clone();
/// shared.advance(Duration::from_secs(2));
/// assert_eq!(clock.now_ms(), 3_000);
/// ```
#[derive(Clone, Default)]
pub struct Clock {
    manual: Option<Arc<AtomicU64>>,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.manual {
            None => f.write_str("Clock::System"),
            Some(ms) => write!(f, "Clock::Manual({})", ms.load(Ordering::Relaxed)),
        }
    }
}

impl Clock {
    /// The system clock (the default).
    pub fn system() -> Clock {
        Clock { manual: None }
    }

    /// A clock that reads `start_ms` (Unix milliseconds) until moved with
    /// [`Clock::advance`] or [`Clock::set`]. Clones share the time.
    pub fn manual(start_ms: u64) -> Clock {
        Clock {
            manual: Some(Arc::new(AtomicU64::new(start_ms))),
        }
    }

    /// The current Unix time in milliseconds (0 if the system clock reads before 1970).
    pub fn now_ms(&self) -> u64 {
        match &self.manual {
            Some(ms) => ms.load(Ordering::Acquire),
            None => to_unix_ms(SystemTime::now()),
        }
    }

    /// Moves a manual clock forward by `by` (saturating); does nothing to the system clock.
    pub fn advance(&self, by: Duration) {
        if let Some(ms) = &self.manual {
            let add = u64::try_from(by.as_millis()).unwrap_or(u64::MAX);
            let _ = ms.fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                Some(now.saturating_add(add))
            });
        }
    }

    /// Sets a manual clock to `ms` if that is later than its current time; does nothing to
    /// the system clock.
    pub fn set(&self, ms: u64) {
        if let Some(now) = &self.manual {
            now.fetch_max(ms, Ordering::AcqRel);
        }
    }
}

/// `t` as Unix milliseconds, 0 before the epoch, saturating far in the future.
pub(crate) fn to_unix_ms(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clocks_move_only_forward_and_are_shared() {
        let c = Clock::manual(10);
        let d = c.clone();
        d.advance(Duration::from_millis(5));
        assert_eq!(c.now_ms(), 15);
        c.set(12);
        assert_eq!(d.now_ms(), 15, "set never moves back");
        c.set(40);
        assert_eq!(d.now_ms(), 40);
        c.advance(Duration::MAX);
        assert_eq!(c.now_ms(), u64::MAX);
        let sys = Clock::system();
        assert!(sys.now_ms() > 1_600_000_000_000);
        assert_eq!(to_unix_ms(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }
}
