//! The engine's two kinds of cache, each one implementation with several uses.
//!
//! | type | what it holds | used by |
//! |---|---|---|
//! | [`BlockCache`] | decoded blocks within a byte budget, sharded, CLOCK eviction, scan-resistant admission (a full shard keeps a block only on its second miss) | the ordered store's tables (`table::BlockCache`, keyed by table id and block offset) and the constant store's compressed logs (`hash::block::BlockCache`, keyed by block offset) |
//! | [`OpenFiles`] | open files (or readers of them) by id, at most a fixed number, least recently used closed first, every operation O(1) | the ordered store's table readers (`db::table_cache`) and blob files (`vlog::reader`) |
//!
//! Both hand out clones of what they hold (`Arc`s or types built on one), so an entry
//! evicted while in use stays valid for its user until the user drops it: eviction only
//! forgets the cache's own reference.

mod blocks;
mod open_files;

pub(crate) use blocks::{BlockCache, Lookup, Weigh};
pub(crate) use open_files::OpenFiles;
