//! What a load runs against (`--backend`): one small trait, [`Backend`], and its three
//! implementations.
//!
//! - `memory.rs`: a sharded in-memory hash map, the throughput baseline (no files, no
//!   durability at all).
//! - `ordered.rs`: the ordered store, `cairn::Db`, with the `--durability` asked for.
//! - `constant.rs`: the constant store (Sparkey files through `cairn::hash`), read-only:
//!   the preload builds its log and index, the timed phase only reads.
//!
//! Every backend is shared by reference between the load threads (`Sync`). The preload
//! hands entries in batches to [`Backend::load`] and then calls [`Backend::end_preload`]
//! once; the timed phase calls `get`, `put` and `delete`.

mod constant;
mod memory;
mod ordered;

use std::path::Path;

use cairn::Durability;

use crate::errors::CliResult;

pub use constant::Constant;
pub use memory::Memory;
pub use ordered::Ordered;

/// A store the load drives.
pub trait Backend: Sync {
    /// Stores a batch of preload entries.
    ///
    /// # Errors
    /// The store's error.
    fn load(&self, entries: &[(Vec<u8>, Vec<u8>)]) -> CliResult<()>;

    /// Ends the preload: makes what it wrote durable (ordered store) or builds the index
    /// and opens it for reading (constant store).
    ///
    /// # Errors
    /// The store's error.
    fn end_preload(&self) -> CliResult<()>;

    /// Looks `key` up, copying its value into `buf`; true if found.
    ///
    /// # Errors
    /// The store's error.
    fn get(&self, key: &[u8], buf: &mut Vec<u8>) -> CliResult<bool>;

    /// Inserts or overwrites `key`.
    ///
    /// # Errors
    /// The store's error; always an error for a read-only backend.
    fn put(&self, key: &[u8], value: &[u8]) -> CliResult<()>;

    /// Removes `key`.
    ///
    /// # Errors
    /// The store's error; always an error for a read-only backend.
    fn delete(&self, key: &[u8]) -> CliResult<()>;

    /// `(last_seqno, durable_seqno)` of an ordered store: the acknowledged writes and
    /// those known to survive power loss. `None` for the other backends.
    fn seqnos(&self) -> Option<(u64, u64)> {
        None
    }

    /// The ordered store's counters. `None` for the other backends.
    fn stats(&self) -> Option<cairn::Stats> {
        None
    }

    /// Closes the store, reporting the error of its final work (the ordered store's last
    /// log sync).
    ///
    /// # Errors
    /// The store's error.
    fn close(self: Box<Self>) -> CliResult<()>;
}

/// `--backend`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A sharded in-memory hash map: the throughput baseline.
    Memory,
    /// The ordered store (cairn::Db) with --durability.
    Cairn,
    /// The constant store (Sparkey files), read-only.
    Constant,
}

impl Kind {
    /// The name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Memory => "memory",
            Kind::Cairn => "cairn",
            Kind::Constant => "constant",
        }
    }

    /// True if the backend keeps files (and so needs a directory).
    pub fn has_files(self) -> bool {
        !matches!(self, Kind::Memory)
    }
}

/// Opens a backend; `dir` is used by the backends that keep files.
///
/// # Errors
/// The store's error when opening or creating it.
pub fn open(kind: Kind, dir: Option<&Path>, durability: Durability) -> CliResult<Box<dyn Backend>> {
    let need_dir =
        || dir.ok_or_else(|| crate::errors::CliError::msg("load: this backend needs a directory"));
    Ok(match kind {
        Kind::Memory => Box::new(Memory::new()),
        Kind::Cairn => Box::new(Ordered::open(need_dir()?, durability)?),
        Kind::Constant => Box::new(Constant::create(need_dir()?)?),
    })
}
