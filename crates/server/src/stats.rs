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
        Stats::add(&self.calls, 1);
        Stats::add(&self.usec, usec);
        if failed {
            Stats::add(&self.failed, 1);
        }
        let bucket = LATENCY_BOUNDS_US
            .iter()
            .position(|&b| usec <= b)
            .unwrap_or(LATENCY_BOUNDS_US.len());
        if let Some(c) = self.latency.get(bucket) {
            Stats::add(c, 1);
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
