//! [`Budget`]: how `Options::memory_budget` is divided among the ordered store's three
//! consumers of memory that grow with the data, and the sizes the store runs with once
//! it is divided.
//!
//! The split is fixed (docs/DESIGN.md §5.4a gives the reasons):
//!
//! | share | of the budget | bounds | enforced by |
//! |---|---|---|---|
//! | block cache | 5/8 | decoded data blocks cached, and rows (`Options::row_cache_size`, at most half the share) | the capacities of `cache::BlockCache` and `db/row_cache.rs` (never exceeded) |
//! | memtables | 1/4 | charged bytes of the active and sealed memtables, every keyspace | the write leader: seals and flushes early, then holds writers back (`db/write/room.rs`) |
//! | index and filter | 1/8 | decoded index and filter blocks of the open tables | the table cache closes tables least recently used first, and super versions stop pinning (`db/table_cache.rs`, `db/pinned.rs`) |
//!
//! With a budget, `Options::block_cache_size` is replaced by the cache's share less the
//! row cache's (`Options::row_cache_size`, capped at half the share), and
//! `Options::memtable_size` is capped at a quarter of the memtable share (a smaller one
//! is kept), so about four memtables fit: one taking writes while others flush. Neither
//! replacement is recorded in the manifest: a budget belongs to the process that opens
//! the store, not to its files (`db/stored_options.rs` records the options as given).
//!
//! Invariants:
//! 1. The three shares add up to at most the budget.
//! 2. A budget below [`MIN_MEMORY_BUDGET`] is refused (`Error::InvalidArgument`), so each
//!    share can hold what the store needs to run: the memtable share at least four
//!    memtables of 1 MiB.

use crate::error::{Error, Result};
use crate::options::{Options, MIN_MEMORY_BUDGET};

/// Memtables the memtable share is sized for: `memtable_size` is capped at the share
/// divided by this.
const MEMTABLES_PER_SHARE: usize = 4;

/// A memory budget divided into its shares; see the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    /// The whole budget, in bytes.
    pub(crate) total: usize,
    /// Capacity of the block cache.
    pub(crate) block_cache: usize,
    /// Bound on the memtables' charged bytes (active and sealed).
    pub(crate) memtables: usize,
    /// Bound on the index and filter bytes of the tables kept open.
    pub(crate) index_filter: usize,
}

impl Budget {
    /// Divides `total` bytes (invariant 1).
    ///
    /// # Errors
    /// `InvalidArgument` if `total` is below [`MIN_MEMORY_BUDGET`] (invariant 2).
    pub(crate) fn split(total: usize) -> Result<Budget> {
        if total < MIN_MEMORY_BUDGET {
            return Err(Error::invalid(format!(
                "Options: memory_budget must be at least {MIN_MEMORY_BUDGET} bytes (16 MiB), \
                 got {total}"
            )));
        }
        let memtables = total / 4;
        let index_filter = total / 8;
        Ok(Budget {
            total,
            block_cache: total - memtables - index_filter,
            memtables,
            index_filter,
        })
    }

    /// The budget `options` ask for, divided (`None` without one).
    ///
    /// # Errors
    /// As [`Budget::split`].
    pub(crate) fn of(options: &Options) -> Result<Option<Budget>> {
        options.memory_budget.map(Budget::split).transpose()
    }

    /// `options` as the store runs with them: with the sizes their budget replaces, if
    /// they have one ([`Budget::apply`]).
    ///
    /// # Errors
    /// As [`Budget::split`].
    pub(crate) fn effective(options: Options) -> Result<Options> {
        Ok(match Budget::of(&options)? {
            Some(budget) => budget.apply(options),
            None => options,
        })
    }

    /// `options` with the sizes the budget replaces: the row cache's capacity at most half
    /// the block cache's share, the block cache's the rest of that share, and the memtable
    /// size at most a quarter of the memtable share.
    pub(crate) fn apply(&self, mut options: Options) -> Options {
        options.row_cache_size = options.row_cache_size.min(self.block_cache / 2);
        options.block_cache_size = self.block_cache - options.row_cache_size;
        options.memtable_size = options
            .memtable_size
            .min(self.memtables / MEMTABLES_PER_SHARE);
        options
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The shares are the fractions the documentation gives, add up to the budget, and
    /// the sizes they replace follow them.
    #[test]
    fn split_follows_the_documented_fractions() {
        for total in [MIN_MEMORY_BUDGET, 64 << 20, 256 << 20, (1 << 30) + 12345] {
            let b = Budget::split(total).unwrap();
            assert_eq!(b.total, total);
            assert_eq!(b.memtables, total / 4);
            assert_eq!(b.index_filter, total / 8);
            assert_eq!(b.block_cache, total - total / 4 - total / 8);
            assert!(b.block_cache >= total / 8 * 5);
            assert_eq!(b.block_cache + b.memtables + b.index_filter, total);
            let options = b.apply(Options::default().memtable_size(1 << 30));
            assert_eq!(options.block_cache_size, b.block_cache);
            assert_eq!(options.memtable_size, total / 16);
            // A memtable size below the cap is kept.
            let small = b.apply(Options::default().memtable_size(64 << 10));
            assert_eq!(small.memtable_size, 64 << 10);
            // A row cache comes out of the block cache's share, at most half of it.
            let rows = b.apply(Options::default().row_cache_size(1 << 20));
            assert_eq!(rows.row_cache_size, 1 << 20);
            assert_eq!(rows.block_cache_size, b.block_cache - (1 << 20));
            let huge = b.apply(Options::default().row_cache_size(usize::MAX));
            assert_eq!(huge.row_cache_size, b.block_cache / 2);
            assert_eq!(huge.row_cache_size + huge.block_cache_size, b.block_cache);
        }
    }

    /// A budget too small to run with is refused with `InvalidArgument`, never a panic.
    #[test]
    fn small_budgets_are_refused() {
        for total in [0, 1, 4096, MIN_MEMORY_BUDGET - 1] {
            let err = Budget::split(total).unwrap_err();
            assert!(
                matches!(&err, Error::InvalidArgument(m) if m.contains("memory_budget")),
                "{err:?}"
            );
        }
        assert!(Budget::of(&Options::default()).unwrap().is_none());
    }
}
