//! The engine's block cache: one implementation with several uses.
//!
//! | type | what it holds | used by |
//! |---|---|---|
//! | [`BlockCache`] | decoded blocks within a byte budget, sharded, CLOCK eviction, scan-resistant admission (a full shard keeps a block only on its second miss) | the ordered store's tables (`table::BlockCache`, keyed by table id and block offset) and the constant store's compressed logs (`hash::block::BlockCache`, keyed by block offset) |
//!
//! It hands out clones of what it holds (`Arc`s or types built on one), so an entry
//! evicted while in use stays valid for its user until the user drops it: eviction only
//! forgets the cache's own reference.

mod blocks;

pub(crate) use blocks::{BlockCache, Lookup, Weigh};
