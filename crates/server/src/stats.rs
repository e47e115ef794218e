//! The server's counters: connections, commands (calls, time and failures per command),
//! bytes in and out, keyspace hits and misses. Relaxed atomics: each counter is exact,
//! a set of them read together is not a snapshot.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters of one command.
#[derive(Debug, Default)]
pub(crate) struct CommandStats {
    pub(crate) calls: AtomicU64,
    pub(crate) usec: AtomicU64,
    pub(crate) failed: AtomicU64,
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
