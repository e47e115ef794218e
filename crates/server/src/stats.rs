//! The server's counters: connections, commands (calls, time and failures per command),
//! bytes in and out, keyspace hits and misses. Relaxed atomics: each counter is exact,
//! a set of them read together is not a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// Upper bounds of the latency histogram's buckets, in microseconds (Prometheus `le`);
/// a last bucket counts everything slower.
pub(crate) const LATENCY_BOUNDS_US: [u64; 14] = [
    25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 1_000_000,
];

/// Counters of one command. The latency histogram has fixed buckets (Prometheus's
/// idiom): recording is one relaxed increment, with no lock on the command path.
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    pub(crate) calls: AtomicU64,
    pub(crate) usec: AtomicU64,
    pub(crate) failed: AtomicU64,
    /// Calls per latency bucket (`LATENCY_BOUNDS_US`, then the overflow bucket).
    pub(crate) latency: [AtomicU64; LATENCY_BOUNDS_US.len() + 1],
}

impl CommandStats {
    /// Counts one call that took `usec` microseconds.
    pub(crate) fn record(&self, usec: u64, failed: bool) {
        self.record_many(1, usec, u64::from(failed));
    }

    /// Counts `calls` calls that took `usec` microseconds each, `failed` of them failed:
    /// what as many [`CommandStats::record`]s would count, in one increment per counter.
    pub(crate) fn record_many(&self, calls: u64, usec: u64, failed: u64) {
        if calls == 0 {
            return;
        }
        Stats::add(&self.calls, calls);
        Stats::add(&self.usec, usec.saturating_mul(calls));
        if failed > 0 {
            Stats::add(&self.failed, failed);
        }
        let bucket = LATENCY_BOUNDS_US
            .iter()
            .position(|&b| usec <= b)
            .unwrap_or(LATENCY_BOUNDS_US.len());
        if let Some(c) = self.latency.get(bucket) {
            Stats::add(c, calls);
        }
    }
}

/// The server's counters.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    pub(crate) connections_received: AtomicU64,
    pub(crate) rejected_connections: AtomicU64,
    pub(crate) commands_processed: AtomicU64,
    pub(crate) protocol_errors: AtomicU64,
    pub(crate) keyspace_hits: AtomicU64,
    pub(crate) keyspace_misses: AtomicU64,
    pub(crate) net_input_bytes: AtomicU64,
    pub(crate) net_output_bytes: AtomicU64,
    /// One entry per command of `command::COMMANDS`, by index.
    pub(crate) commands: Vec<CommandStats>,
}

impl Stats {
    pub(crate) fn new(commands: usize) -> Stats {
        Stats {
            commands: (0..commands).map(|_| CommandStats::default()).collect(),
            ..Stats::default()
        }
    }

    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Counts a lookup that found (`hit`) or missed its key.
    pub(crate) fn lookup(&self, hit: bool) {
        Stats::add(
            if hit {
                &self.keyspace_hits
            } else {
                &self.keyspace_misses
            },
            1,
        );
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn counts(c: &CommandStats) -> (u64, u64, u64, Vec<u64>) {
        (
            c.calls.load(Ordering::Relaxed),
            c.usec.load(Ordering::Relaxed),
            c.failed.load(Ordering::Relaxed),
            c.latency
                .iter()
                .map(|b| b.load(Ordering::Relaxed))
                .collect(),
        )
    }

    #[test]
    fn a_run_of_calls_counts_as_its_calls_one_by_one() {
        for (calls, usec, failed) in [(3, 40, 1), (1, 0, 0), (5, 2_000_000, 5), (2, 25, 0)] {
            let (one_by_one, at_once) = (CommandStats::default(), CommandStats::default());
            for i in 0..calls {
                one_by_one.record(usec, i < failed);
            }
            at_once.record_many(calls, usec, failed);
            assert_eq!(counts(&at_once), counts(&one_by_one), "{calls} x {usec} us");
        }
        let none = CommandStats::default();
        none.record_many(0, 10, 0);
        assert_eq!(counts(&none), counts(&CommandStats::default()));
    }
}
