//! The ordered stores under benchmark, behind one small trait.
//!
//! Every store is opened with the same promise to the writer: a committed batch has been
//! handed to the operating system (its log or pages written, not fsynced), so it survives
//! a crash of the process but not of the machine. Each store's module says which of its
//! options gives that, and [`Store::durability`] reports it in every row.
//!
//! Block caches are all sized to `--cache-mb`; stores that read through the page cache
//! (LMDB, and redb's and sled's own caches aside) get the whole machine's page cache, as
//! every store does for its files: nothing is opened with `O_DIRECT`.

use std::path::Path;

pub mod cairn;
pub mod fjall;
pub mod lmdb;
pub mod redb;
pub mod rocks;
pub mod sled;

/// One write of a batch.
#[derive(Debug, Clone, Copy)]
pub enum Op<'a> {
    /// Set `key` to `value`.
    Put(&'a [u8], &'a [u8]),
    /// Remove `key`.
    Delete(&'a [u8]),
}

/// Settings every store is opened with.
#[derive(Debug, Clone, Copy)]
pub struct Config {
    /// Bytes of the store's own block or page cache.
    pub cache_bytes: usize,
    /// Cairn's memtable size in bytes, if not its default (`--cairn-memtable-mb`).
    pub cairn_memtable_bytes: Option<usize>,
    /// Whether Cairn reads its tables through memory maps (`--cairn-mmap-reads`).
    pub cairn_mmap_reads: bool,
    /// Cairn's block compression, if not its default (`--cairn-compression`).
    pub cairn_compression: Option<::cairn::Compression>,
}

/// Parses a `--cairn-compression` value: `none`, `lz4`, `snappy`, `zstd` or
/// `zstd:<level>`.
///
/// # Errors
/// A message naming the accepted values.
pub fn parse_compression(name: &str) -> Result<::cairn::Compression, String> {
    match name {
        "none" => Ok(::cairn::Compression::None),
        "lz4" => Ok(::cairn::Compression::Lz4),
        "snappy" => Ok(::cairn::Compression::Snappy),
        "zstd" => Ok(::cairn::Compression::Zstd(3)),
        _ => name
            .strip_prefix("zstd:")
            .and_then(|l| l.parse().ok())
            .map(::cairn::Compression::Zstd)
            .ok_or_else(|| format!("{name:?}: expected none, lz4, snappy, zstd or zstd:<level>")),
    }
}

/// The `--cairn-compression` spelling of `compression`.
pub fn compression_name(compression: ::cairn::Compression) -> String {
    match compression {
        ::cairn::Compression::None => "none".into(),
        ::cairn::Compression::Lz4 => "lz4".into(),
        ::cairn::Compression::Snappy => "snappy".into(),
        ::cairn::Compression::Zstd(level) => format!("zstd:{level}"),
        other => format!("{other:?}"),
    }
}

/// An open ordered store. Shared by the benchmark's threads.
pub trait Store: Send + Sync {
    /// Applies `ops` as one atomic batch (one transaction), without fsync.
    fn write(&self, ops: &[Op<'_>]) -> anyhow::Result<()>;
    /// Copies the value of `key` into `out`; false if absent.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool>;
    /// Visits every entry in key order (backwards with `reverse`); returns how many.
    fn scan(&self, reverse: bool, visit: &mut dyn FnMut(&[u8], &[u8])) -> anyhow::Result<u64>;
    /// Visits up to `limit` entries from the first key at or after `key`; returns how many.
    fn seek(
        &self,
        key: &[u8],
        limit: usize,
        visit: &mut dyn FnMut(&[u8], &[u8]),
    ) -> anyhow::Result<usize>;
    /// Untimed work between workloads that the store needs to stay healthy (redb: a
    /// durable commit, without which it cannot reuse freed pages). Default: nothing.
    fn settle(&self) -> anyhow::Result<()> {
        Ok(())
    }
    /// Puts everything written into the store's files, so that another process opening
    /// them finds it there rather than in a log to replay (Cairn, RocksDB: a memtable
    /// flush; LMDB: an fsync). Default: [`Store::settle`].
    fn flush(&self) -> anyhow::Result<()> {
        self.settle()
    }
    /// [`Store::flush`], then a full compaction where the store has one (Cairn's
    /// `Db::compact`, RocksDB's `compact_range` over everything), waited for.
    fn compact(&self) -> anyhow::Result<()> {
        self.flush()
    }
    /// Moves a follower's view to the writer's latest state; false if nothing changed (or
    /// the store has no followers). Default: false.
    fn refresh(&self) -> anyhow::Result<bool> {
        Ok(false)
    }
}

/// How a reader process opens a store another process writes, or wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadMode {
    /// The store's read-only open: Cairn's `Db::open_read_only`, RocksDB's
    /// `DB::open_for_read_only`, redb's `ReadOnlyDatabase::open`, LMDB's `MDB_RDONLY`.
    ReadOnly,
    /// A view that follows the writer when [`Store::refresh`] moves it: Cairn's
    /// `Db::open_follower`, RocksDB's secondary instance (`DB::open_as_secondary`,
    /// `try_catch_up_with_primary`).
    Follower,
}

impl ReadMode {
    /// The name on the (internal) command line.
    pub fn name(self) -> &'static str {
        match self {
            ReadMode::ReadOnly => "ro",
            ReadMode::Follower => "follower",
        }
    }

    /// The mode named `name`.
    pub fn parse(name: &str) -> Option<ReadMode> {
        [ReadMode::ReadOnly, ReadMode::Follower]
            .into_iter()
            .find(|m| m.name() == name)
    }
}

/// Drives a double-ended iterator to its end, forwards or (with `reverse`) backwards,
/// calling `each` on every item; returns how many there were. The stores' scans share it.
pub fn walk<I: DoubleEndedIterator>(
    mut iter: I,
    reverse: bool,
    mut each: impl FnMut(I::Item) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    let mut n = 0;
    while let Some(item) = if reverse {
        iter.next_back()
    } else {
        iter.next()
    } {
        each(item)?;
        n += 1;
    }
    Ok(n)
}

/// A store that can be opened: its name, configuration and durability, for the report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Cairn's ordered store.
    Cairn,
    /// RocksDB with the library's defaults.
    RocksDb,
    /// RocksDB with a bloom filter, a block cache of `--cache-mb` and LZ4.
    RocksDbTuned,
    /// fjall.
    Fjall,
    /// redb.
    Redb,
    /// LMDB (heed).
    Lmdb,
    /// sled.
    Sled,
}

impl Kind {
    /// Every store, in report order.
    pub const ALL: [Kind; 7] = [
        Kind::Cairn,
        Kind::RocksDb,
        Kind::RocksDbTuned,
        Kind::Fjall,
        Kind::Redb,
        Kind::Lmdb,
        Kind::Sled,
    ];

    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Cairn => "cairn",
            Kind::RocksDb => "rocksdb",
            Kind::RocksDbTuned => "rocksdb-tuned",
            Kind::Fjall => "fjall",
            Kind::Redb => "redb",
            Kind::Lmdb => "lmdb",
            Kind::Sled => "sled",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the store can be closed and opened again within one process (`--reopen`).
    /// The LMDB binding keeps each environment for the life of the process (heed refuses
    /// a second open of a path), so its reopen is not measured here; `open-ro` measures
    /// its opens in fresh processes.
    pub fn reopens_in_process(self) -> bool {
        !matches!(self, Kind::Lmdb)
    }

    /// How the store is configured, for the report.
    pub fn config(self) -> &'static str {
        match self {
            Kind::Cairn => cairn::CONFIG,
            Kind::RocksDb => rocks::CONFIG_DEFAULT,
            Kind::RocksDbTuned => rocks::CONFIG_TUNED,
            Kind::Fjall => fjall::CONFIG,
            Kind::Redb => redb::CONFIG,
            Kind::Lmdb => lmdb::CONFIG,
            Kind::Sled => sled::CONFIG,
        }
    }

    /// How the store is configured in this run, for the report: [`Kind::config`] and the
    /// settings `config` changes from it.
    pub fn config_label(self, config: &Config) -> String {
        let mut label = self.config().to_owned();
        if self == Kind::Cairn {
            if let Some(bytes) = config.cairn_memtable_bytes {
                label.push_str(&format!("; memtable {} MiB", bytes >> 20));
            }
            if config.cairn_mmap_reads {
                label.push_str("; Options::mmap_reads");
            }
            if let Some(c) = config.cairn_compression {
                label.push_str(&format!("; compression {}", compression_name(c)));
            }
        }
        label
    }

    /// What a committed write survives, for the report.
    pub fn durability(self) -> &'static str {
        match self {
            Kind::Cairn => cairn::DURABILITY,
            Kind::RocksDb | Kind::RocksDbTuned => rocks::DURABILITY,
            Kind::Fjall => fjall::DURABILITY,
            Kind::Redb => redb::DURABILITY,
            Kind::Lmdb => lmdb::DURABILITY,
            Kind::Sled => sled::DURABILITY,
        }
    }

    /// The call a reader of this store opens it with in `mode`, for the report; `None`
    /// if the store has no such open.
    pub fn reader_api(self, mode: ReadMode) -> Option<&'static str> {
        match (self, mode) {
            (Kind::Cairn, ReadMode::ReadOnly) => Some(cairn::READ_ONLY_API),
            (Kind::Cairn, ReadMode::Follower) => Some(cairn::FOLLOWER_API),
            (Kind::RocksDb | Kind::RocksDbTuned, ReadMode::ReadOnly) => Some(rocks::READ_ONLY_API),
            (Kind::RocksDb | Kind::RocksDbTuned, ReadMode::Follower) => Some(rocks::SECONDARY_API),
            (Kind::Redb, ReadMode::ReadOnly) => Some(redb::READ_ONLY_API),
            (Kind::Lmdb, ReadMode::ReadOnly) => Some(lmdb::READ_ONLY_API),
            _ => None,
        }
    }

    /// The read modes this store has, in report order.
    pub fn read_modes(self) -> Vec<ReadMode> {
        [ReadMode::ReadOnly, ReadMode::Follower]
            .into_iter()
            .filter(|&m| self.reader_api(m).is_some())
            .collect()
    }

    /// The read modes in which readers in other processes may read beside a live writer
    /// of this store's configuration (redb's default `ExclusiveWriter` writer locks its
    /// file against read-only handles).
    pub fn shared_read_modes(self) -> Vec<ReadMode> {
        match self {
            Kind::Redb => Vec::new(),
            _ => self.read_modes(),
        }
    }

    /// Opens the existing store in `dir` for reading only, in `mode`, beside a writer in
    /// another process or none; its writes fail.
    pub fn open_reader(
        self,
        dir: &Path,
        config: Config,
        mode: ReadMode,
    ) -> anyhow::Result<Box<dyn Store>> {
        Ok(match (self, mode) {
            (Kind::Cairn, _) => Box::new(cairn::CairnStore::open_reader(
                dir,
                config,
                mode == ReadMode::Follower,
            )?),
            (Kind::RocksDb, ReadMode::ReadOnly) => {
                Box::new(rocks::Rocks::open_read_only(dir, config, false)?)
            }
            (Kind::RocksDbTuned, ReadMode::ReadOnly) => {
                Box::new(rocks::Rocks::open_read_only(dir, config, true)?)
            }
            (Kind::RocksDb, ReadMode::Follower) => {
                Box::new(rocks::Rocks::open_secondary(dir, config, false)?)
            }
            (Kind::RocksDbTuned, ReadMode::Follower) => {
                Box::new(rocks::Rocks::open_secondary(dir, config, true)?)
            }
            (Kind::Redb, ReadMode::ReadOnly) => Box::new(redb::RedbReader::open(dir, config)?),
            (Kind::Lmdb, ReadMode::ReadOnly) => Box::new(lmdb::Lmdb::open_read_only(dir)?),
            _ => anyhow::bail!("{} has no {} open", self.name(), mode.name()),
        })
    }

    /// Opens (creating) the store in the empty directory `dir`.
    pub fn open(self, dir: &Path, config: Config) -> anyhow::Result<Box<dyn Store>> {
        Ok(match self {
            Kind::Cairn => Box::new(cairn::CairnStore::open(dir, config)?),
            Kind::RocksDb => Box::new(rocks::Rocks::open(dir, config, false)?),
            Kind::RocksDbTuned => Box::new(rocks::Rocks::open(dir, config, true)?),
            Kind::Fjall => Box::new(fjall::FjallStore::open(dir, config)?),
            Kind::Redb => Box::new(redb::RedbStore::open(dir, config)?),
            Kind::Lmdb => Box::new(lmdb::Lmdb::open(dir, config)?),
            Kind::Sled => Box::new(sled::SledStore::open(dir, config)?),
        })
    }
}

/// What one attempt of a transaction ended in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attempt {
    /// Committed: every write is in the store.
    Committed,
    /// Refused by the store's conflict detection (or, for a compare-and-swap, the value
    /// differed from the one expected): nothing of it was written; the caller may retry.
    Conflict,
}

/// Decides a transaction's writes from the values it read: gets the values of the keys
/// read (in order; `None`: absent) and pushes `(index of the key, new value)` pairs.
pub type Decide<'a> =
    &'a mut dyn FnMut(&[Option<u64>], &mut Vec<(usize, u64)>) -> anyhow::Result<()>;

/// An ordered store opened for transactions (`txn-*` workloads, `src/txn.rs`). Values are
/// 8-byte little-endian counters ([`counter_bytes`], [`counter`]). Shared by the
/// benchmark's threads.
pub trait TxStore: Send + Sync {
    /// Writes `entries` as one batch, outside any measured transaction (the load).
    fn load(&self, entries: &[(&[u8], u64)]) -> anyhow::Result<()>;
    /// The committed value of `key`, outside any transaction.
    fn read(&self, key: &[u8]) -> anyhow::Result<Option<u64>>;
    /// One attempt of a transaction: reads `keys` in order inside it, lets `decide` pick
    /// the writes, writes them and commits.
    fn transact(&self, keys: &[&[u8]], decide: Decide<'_>) -> anyhow::Result<Attempt>;
    /// Sets `key` to `new` if its value is `expected`, atomically; [`Attempt::Conflict`]
    /// when it differs or the store refused the commit. Default: a transaction of one read
    /// and one write ([`TxStore::transact`]).
    fn compare_and_swap(
        &self,
        key: &[u8],
        expected: Option<u64>,
        new: u64,
    ) -> anyhow::Result<Attempt> {
        let mut matched = false;
        let attempt = self.transact(&[key], &mut |values, writes| {
            matched = values.first().copied().flatten() == expected;
            if matched {
                writes.push((0, new));
            }
            Ok(())
        })?;
        Ok(if matched { attempt } else { Attempt::Conflict })
    }
    /// Untimed work between workloads (redb: a durable commit). Default: nothing.
    fn settle(&self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// The bytes of a counter value.
pub fn counter_bytes(value: u64) -> [u8; 8] {
    value.to_le_bytes()
}

/// The counter in `bytes`, which must be 8 bytes long.
pub fn counter(bytes: &[u8]) -> anyhow::Result<u64> {
    let array: [u8; 8] = bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("a counter of {} bytes, not 8", bytes.len()))?;
    Ok(u64::from_le_bytes(array))
}

/// A store opened for transactions: its name, configuration and durability, for the
/// report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxKind {
    /// Cairn, `Db::transaction` (snapshot isolation, write-write conflicts).
    Cairn,
    /// Cairn, `Isolation::Serializable` (read-set validation).
    CairnSerializable,
    /// fjall's `OptimisticTxDatabase`.
    FjallOptimistic,
    /// fjall's `SingleWriterTxDatabase`: one write transaction at a time, no conflicts.
    FjallSingleWriter,
    /// RocksDB's `OptimisticTransactionDB`.
    RocksOptimistic,
    /// RocksDB's `TransactionDB` (pessimistic: locks taken by `get_for_update`).
    RocksPessimistic,
    /// redb write transactions (one at a time).
    Redb,
    /// LMDB write transactions (one at a time).
    Lmdb,
}

impl TxKind {
    /// Every store, in report order.
    pub const ALL: [TxKind; 8] = [
        TxKind::Cairn,
        TxKind::CairnSerializable,
        TxKind::FjallOptimistic,
        TxKind::FjallSingleWriter,
        TxKind::RocksOptimistic,
        TxKind::RocksPessimistic,
        TxKind::Redb,
        TxKind::Lmdb,
    ];

    /// The name used on the command line and in the report.
    pub fn name(self) -> &'static str {
        match self {
            TxKind::Cairn => "cairn",
            TxKind::CairnSerializable => "cairn-serializable",
            TxKind::FjallOptimistic => "fjall-optimistic",
            TxKind::FjallSingleWriter => "fjall-single-writer",
            TxKind::RocksOptimistic => "rocksdb-optimistic",
            TxKind::RocksPessimistic => "rocksdb-pessimistic",
            TxKind::Redb => "redb",
            TxKind::Lmdb => "lmdb",
        }
    }

    /// The kind named `name`.
    pub fn parse(name: &str) -> Option<TxKind> {
        TxKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether the store detects conflicts at commit (optimistic), rather than running
    /// one writer at a time or locking.
    pub fn optimistic(self) -> bool {
        matches!(
            self,
            TxKind::Cairn
                | TxKind::CairnSerializable
                | TxKind::FjallOptimistic
                | TxKind::RocksOptimistic
        )
    }

    /// How the store is configured, for the report.
    pub fn config(self) -> &'static str {
        match self {
            TxKind::Cairn => cairn::TX_CONFIG,
            TxKind::CairnSerializable => cairn::TX_CONFIG_SERIALIZABLE,
            TxKind::FjallOptimistic => fjall::TX_CONFIG_OPTIMISTIC,
            TxKind::FjallSingleWriter => fjall::TX_CONFIG_SINGLE_WRITER,
            TxKind::RocksOptimistic => rocks::TX_CONFIG_OPTIMISTIC,
            TxKind::RocksPessimistic => rocks::TX_CONFIG_PESSIMISTIC,
            TxKind::Redb => redb::TX_CONFIG,
            TxKind::Lmdb => lmdb::TX_CONFIG,
        }
    }

    /// What a committed transaction survives, for the report.
    pub fn durability(self) -> &'static str {
        match self {
            TxKind::Cairn | TxKind::CairnSerializable => cairn::DURABILITY,
            TxKind::FjallOptimistic | TxKind::FjallSingleWriter => fjall::DURABILITY,
            TxKind::RocksOptimistic | TxKind::RocksPessimistic => rocks::DURABILITY,
            TxKind::Redb => redb::DURABILITY,
            TxKind::Lmdb => lmdb::DURABILITY,
        }
    }

    /// Opens (creating) the store in the empty directory `dir`.
    pub fn open(self, dir: &Path, config: Config) -> anyhow::Result<Box<dyn TxStore>> {
        Ok(match self {
            TxKind::Cairn => Box::new(cairn::CairnTx::open(dir, config, false)?),
            TxKind::CairnSerializable => Box::new(cairn::CairnTx::open(dir, config, true)?),
            TxKind::FjallOptimistic => Box::new(fjall::FjallOptimistic::open(dir, config)?),
            TxKind::FjallSingleWriter => Box::new(fjall::FjallSingleWriter::open(dir, config)?),
            TxKind::RocksOptimistic => Box::new(rocks::RocksOptimistic::open(dir, config)?),
            TxKind::RocksPessimistic => Box::new(rocks::RocksPessimistic::open(dir, config)?),
            TxKind::Redb => Box::new(redb::RedbStore::open(dir, config)?),
            TxKind::Lmdb => Box::new(lmdb::Lmdb::open(dir, config)?),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_round_trip_and_refuse_other_lengths() {
        assert_eq!(counter(&counter_bytes(1_000)).ok(), Some(1_000));
        assert!(counter(b"1000").is_err());
    }

    #[test]
    fn tx_names_round_trip() {
        for k in TxKind::ALL {
            assert_eq!(TxKind::parse(k.name()), Some(k));
        }
    }
}
