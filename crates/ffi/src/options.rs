//! Option objects: `cairn_options_t` (a store's [`engine::Options`]),
//! `cairn_writeoptions_t` (the durability of one write) and `cairn_entryoptions_t` (an
//! entry's tag, metadata, expiry and durability: [`engine::EntryOptions`]).
//!
//! Setters never fail on values the engine checks later: [`engine::Options::validate`]
//! runs when a store is opened, so a bad memtable size is reported by `cairn_db_open`
//! (`CAIRN_INVALID_ARGUMENT`, naming the option). Setters that take an enumerated mode
//! check it at once.
//!
//! Thread-safety: an options object may be read by several threads at once (opens and
//! writes only read it), but must not be changed while another thread uses it.

use std::ffi::{c_char, c_int};
use std::time::{Duration, SystemTime};

use crate::args;
use crate::guard::run;
use crate::status::{cairn_status_t, Failure, CAIRN_OK};

/// Durability mode `CAIRN_DURABILITY_SYNC`: fsynced before the call returns (default).
pub const CAIRN_DURABILITY_SYNC: c_int = 0;
/// Durability mode `CAIRN_DURABILITY_PERIODIC`: handed to the OS; fsynced by a background
/// thread every `param` microseconds.
pub const CAIRN_DURABILITY_PERIODIC: c_int = 1;
/// Durability mode `CAIRN_DURABILITY_BUFFERED`: handed to the OS; survives a process
/// crash, not a power loss.
pub const CAIRN_DURABILITY_BUFFERED: c_int = 2;
/// Durability mode `CAIRN_DURABILITY_ASYNC`: queued for a background writer holding at
/// most `param` batches.
pub const CAIRN_DURABILITY_ASYNC: c_int = 3;
/// Durability mode `CAIRN_DURABILITY_NONE`: memtable only, durable once flushed.
pub const CAIRN_DURABILITY_NONE: c_int = 4;

/// Table compression `CAIRN_COMPRESSION_NONE`.
pub const CAIRN_COMPRESSION_NONE: c_int = 0;
/// Table compression `CAIRN_COMPRESSION_LZ4` (default).
pub const CAIRN_COMPRESSION_LZ4: c_int = 1;
/// Table compression `CAIRN_COMPRESSION_SNAPPY`.
pub const CAIRN_COMPRESSION_SNAPPY: c_int = 2;
/// Table compression `CAIRN_COMPRESSION_ZSTD` at `level` 1-22.
pub const CAIRN_COMPRESSION_ZSTD: c_int = 3;

/// A durability mode and its parameter.
pub(crate) fn durability(mode: c_int, param: u64) -> Result<engine::Durability, Failure> {
    use engine::Durability as D;
    Ok(match mode {
        CAIRN_DURABILITY_SYNC => D::Sync,
        CAIRN_DURABILITY_PERIODIC => D::Periodic(Duration::from_micros(param)),
        CAIRN_DURABILITY_BUFFERED => D::Buffered,
        CAIRN_DURABILITY_ASYNC => D::Async {
            queue_depth: usize::try_from(param)
                .map_err(|_| Failure::invalid(format!("queue depth {param} is too large")))?,
        },
        CAIRN_DURABILITY_NONE => D::None,
        _ => return Err(Failure::invalid(format!("unknown durability mode {mode}"))),
    })
}

/// Options of a store, given to the `cairn_db_open*` functions. Create with
/// `cairn_options_create`, free with `cairn_options_destroy`.
#[allow(non_camel_case_types)]
pub struct cairn_options_t {
    pub(crate) options: engine::Options,
}

/// Durability of one write (`cairn_put`, `cairn_delete`, `cairn_batch_commit`, ...).
/// NULL where a function takes one means the store's default.
#[allow(non_camel_case_types)]
pub struct cairn_writeoptions_t {
    pub(crate) durability: Option<engine::Durability>,
}

/// What `cairn_put_entry` and `cairn_batch_put_entry` attach to an entry: a type tag and
/// metadata, a time to live or an absolute expiry, and (single writes only) a durability.
#[allow(non_camel_case_types)]
pub struct cairn_entryoptions_t {
    pub(crate) options: engine::EntryOptions,
}

/// The durability of a write given its options (`None`: the store's default).
pub(crate) fn write_durability(w: Option<&cairn_writeoptions_t>) -> Option<engine::Durability> {
    w.and_then(|w| w.durability)
}

/// New store options with Cairn's defaults (durability SYNC, create if missing, 16 MiB
/// memtables, 64 MiB block cache, LZ4, no value separation). Never NULL.
#[no_mangle]
pub extern "C" fn cairn_options_create() -> *mut cairn_options_t {
    Box::into_raw(Box::new(cairn_options_t {
        options: engine::Options::default(),
    }))
}

/// Frees options (NULL is ignored). Stores opened with them are unaffected.
#[no_mangle]
pub extern "C" fn cairn_options_destroy(options: Option<Box<cairn_options_t>>) {
    drop(options);
}

/// Sets the default durability of writes: a `CAIRN_DURABILITY_*` mode and its parameter
/// (microseconds for PERIODIC, queue depth for ASYNC, ignored otherwise).
#[no_mangle]
pub extern "C" fn cairn_options_set_durability(
    options: Option<&mut cairn_options_t>,
    mode: c_int,
    param: u64,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let o = options.ok_or_else(|| Failure::invalid("options is NULL"))?;
        o.options.durability = durability(mode, param)?;
        Ok(CAIRN_OK)
    })
}

/// Sets whether a missing store is created (default 1).
#[no_mangle]
pub extern "C" fn cairn_options_set_create_if_missing(
    options: Option<&mut cairn_options_t>,
    value: u8,
) {
    if let Some(o) = options {
        o.options.create_if_missing = value != 0;
    }
}

/// Sets the bytes of entries after which a memtable is sealed (default 16 MiB).
#[no_mangle]
pub extern "C" fn cairn_options_set_memtable_size(
    options: Option<&mut cairn_options_t>,
    bytes: usize,
) {
    if let Some(o) = options {
        o.options.memtable_size = bytes;
    }
}

/// Sets the log bytes that force a memtable flush, bounding recovery time (default
/// 256 MiB).
#[no_mangle]
pub extern "C" fn cairn_options_set_max_wal_size(
    options: Option<&mut cairn_options_t>,
    bytes: u64,
) {
    if let Some(o) = options {
        o.options.max_wal_size = bytes;
    }
}

/// Sets the bytes of decoded table blocks kept in memory (default 64 MiB).
#[no_mangle]
pub extern "C" fn cairn_options_set_block_cache_size(
    options: Option<&mut cairn_options_t>,
    bytes: usize,
) {
    if let Some(o) = options {
        o.options.block_cache_size = bytes;
    }
}

/// Sets the bytes of the row cache (`Options::row_cache_size`, default 0: none): the
/// answers of point reads of tables, so a key read again costs one cache-line probe
/// instead of an index and block search. Under a memory budget it comes out of the block
/// cache's share, at most half of it.
#[no_mangle]
pub extern "C" fn cairn_options_set_row_cache_size(
    options: Option<&mut cairn_options_t>,
    bytes: usize,
) {
    if let Some(o) = options {
        o.options.row_cache_size = bytes;
    }
}

/// Reads table blocks through memory maps of the table files when `on` is nonzero
/// (`Options::mmap_reads`, default off): faster reads of stores larger than the block
/// cache (uncompressed data blocks are read where they lie, the page cache serving as
/// their cache), but a device error on a mapped page stops the process with `SIGBUS` instead of
/// failing the call with `CAIRN_IO`.
#[no_mangle]
pub extern "C" fn cairn_options_set_mmap_reads(options: Option<&mut cairn_options_t>, on: c_int) {
    if let Some(o) = options {
        o.options.mmap_reads = on != 0;
    }
}

/// Sets one bound, in bytes, on the block cache, the memtables and the index and filter
/// blocks of open tables together (`Options::memory_budget`: 5/8 block cache, 1/4
/// memtables, 1/8 index and filter; it replaces the block cache size and caps the
/// memtable size). 0 (the default) sets none. A budget below 16 MiB makes the open fail
/// with `CAIRN_INVALID_ARGUMENT`. The `stats.memory_budget`, `stats.memtable_limit`,
/// `stats.block_cache_capacity` and `stats.index_filter_limit` properties report the
/// shares, `stats.memtable_bytes`, `stats.block_cache_bytes` and
/// `stats.index_filter_bytes` their use.
#[no_mangle]
pub extern "C" fn cairn_options_set_memory_budget(
    options: Option<&mut cairn_options_t>,
    bytes: usize,
) {
    if let Some(o) = options {
        o.options.memory_budget = (bytes != 0).then_some(bytes);
    }
}

/// Sets the compression of table blocks: a `CAIRN_COMPRESSION_*` kind, and the level for
/// ZSTD (ignored otherwise).
#[no_mangle]
pub extern "C" fn cairn_options_set_compression(
    options: Option<&mut cairn_options_t>,
    kind: c_int,
    level: c_int,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let o = options.ok_or_else(|| Failure::invalid("options is NULL"))?;
        o.options.compression = match kind {
            CAIRN_COMPRESSION_NONE => engine::Compression::None,
            CAIRN_COMPRESSION_LZ4 => engine::Compression::Lz4,
            CAIRN_COMPRESSION_SNAPPY => engine::Compression::Snappy,
            CAIRN_COMPRESSION_ZSTD => engine::Compression::Zstd(level),
            _ => return Err(Failure::invalid(format!("unknown compression {kind}"))),
        };
        Ok(CAIRN_OK)
    })
}

/// Separates values of at least `bytes` bytes into the value log (blob files) for
/// keyspaces without their own threshold; 0 (the default) turns separation off.
#[no_mangle]
pub extern "C" fn cairn_options_set_blob_threshold(
    options: Option<&mut cairn_options_t>,
    bytes: usize,
) {
    if let Some(o) = options {
        o.options.blob_threshold = (bytes != 0).then_some(bytes);
    }
}

/// Sets the number of background threads for flushes and compactions (default 2).
#[no_mangle]
pub extern "C" fn cairn_options_set_background_threads(
    options: Option<&mut cairn_options_t>,
    threads: usize,
) {
    if let Some(o) = options {
        o.options.background_threads = threads;
    }
}

/// Sets the share of the entries a compaction rewrites, in percent, that its tombstones
/// must be estimated to free for a compaction to run for them alone when no level is over
/// its trigger (`Options::tombstone_compaction_percent`, default 50; 0 turns it off). Above
/// 100 makes the open fail with `CAIRN_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn cairn_options_set_tombstone_compaction_percent(
    options: Option<&mut cairn_options_t>,
    percent: u8,
) {
    if let Some(o) = options {
        o.options.tombstone_compaction_percent = percent;
    }
}

/// Sets the size of level 0, in percent of the level-1 bytes it overlaps, at which a
/// keyspace's level 0 is merged into level 1 once writes pause, dropping versions that
/// overwrites replaced (`Options::idle_compaction_percent`, default 25; 0 turns it off).
#[no_mangle]
pub extern "C" fn cairn_options_set_idle_compaction_percent(
    options: Option<&mut cairn_options_t>,
    percent: u8,
) {
    if let Some(o) = options {
        o.options.idle_compaction_percent = percent;
    }
}

/// Sets whether memtable memory asks for transparent huge pages (Linux;
/// `Options::memtable_huge_pages`, default 0): faster memtable searches, but the write
/// that first touches a 2 MiB chunk may stall while the kernel compacts memory.
#[no_mangle]
pub extern "C" fn cairn_options_set_memtable_huge_pages(
    options: Option<&mut cairn_options_t>,
    value: u8,
) {
    if let Some(o) = options {
        o.options.memtable_huge_pages = value != 0;
    }
}

/// Sets whether recovery skips damaged log ranges instead of failing (default 0).
#[no_mangle]
pub extern "C" fn cairn_options_set_salvage_wal(options: Option<&mut cairn_options_t>, value: u8) {
    if let Some(o) = options {
        o.options.salvage_wal = value != 0;
    }
}

/// For a follower: refresh automatically every `millis` milliseconds (0, the default:
/// only on `cairn_db_refresh`).
#[no_mangle]
pub extern "C" fn cairn_options_set_refresh_interval_ms(
    options: Option<&mut cairn_options_t>,
    millis: u64,
) {
    if let Some(o) = options {
        o.options.refresh_interval = (millis != 0).then(|| Duration::from_millis(millis));
    }
}

/// New write options: the store's default durability. Never NULL.
#[no_mangle]
pub extern "C" fn cairn_writeoptions_create() -> *mut cairn_writeoptions_t {
    Box::into_raw(Box::new(cairn_writeoptions_t { durability: None }))
}

/// Frees write options (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_writeoptions_destroy(options: Option<Box<cairn_writeoptions_t>>) {
    drop(options);
}

/// Sets the durability of writes made with these options (see
/// `cairn_options_set_durability`).
#[no_mangle]
pub extern "C" fn cairn_writeoptions_set_durability(
    options: Option<&mut cairn_writeoptions_t>,
    mode: c_int,
    param: u64,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let o = options.ok_or_else(|| Failure::invalid("write options is NULL"))?;
        o.durability = Some(durability(mode, param)?);
        Ok(CAIRN_OK)
    })
}

/// New entry options: no tag, no metadata, no expiry, default durability. Never NULL.
#[no_mangle]
pub extern "C" fn cairn_entryoptions_create() -> *mut cairn_entryoptions_t {
    Box::into_raw(Box::new(cairn_entryoptions_t {
        options: engine::EntryOptions::new(),
    }))
}

/// Frees entry options (NULL is ignored).
#[no_mangle]
pub extern "C" fn cairn_entryoptions_destroy(options: Option<Box<cairn_entryoptions_t>>) {
    drop(options);
}

/// Sets the type tag (0: none) and the metadata (at most 4 KiB; checked by the write).
///
/// # Safety
/// `meta` must point to `meta_len` readable bytes (NULL if `meta_len` is 0).
#[no_mangle]
pub unsafe extern "C" fn cairn_entryoptions_set_meta(
    options: Option<&mut cairn_entryoptions_t>,
    tag: u32,
    meta: *const c_char,
    meta_len: usize,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let o = options.ok_or_else(|| Failure::invalid("entry options is NULL"))?;
        // SAFETY: the caller guarantees `meta_len` readable bytes at `meta`.
        let meta = unsafe { args::bytes(meta, meta_len, "meta") }?;
        o.options.meta = Some(engine::Meta::new(tag, meta));
        Ok(CAIRN_OK)
    })
}

/// The entry expires `millis` milliseconds after the write (clears an absolute expiry).
#[no_mangle]
pub extern "C" fn cairn_entryoptions_set_ttl_ms(
    options: Option<&mut cairn_entryoptions_t>,
    millis: u64,
) {
    if let Some(o) = options {
        o.options.ttl = Some(Duration::from_millis(millis));
        o.options.expires_at = None;
    }
}

/// The entry expires at `unix_millis` (milliseconds since the Unix epoch; clears a ttl).
#[no_mangle]
pub extern "C" fn cairn_entryoptions_set_expires_at_ms(
    options: Option<&mut cairn_entryoptions_t>,
    unix_millis: u64,
) {
    if let Some(o) = options {
        o.options.expires_at =
            SystemTime::UNIX_EPOCH.checked_add(Duration::from_millis(unix_millis));
        o.options.ttl = None;
    }
}

/// Sets the durability of a single-entry write (a batch uses its commit's).
#[no_mangle]
pub extern "C" fn cairn_entryoptions_set_durability(
    options: Option<&mut cairn_entryoptions_t>,
    mode: c_int,
    param: u64,
    errptr: Option<&mut *mut c_char>,
) -> cairn_status_t {
    run(errptr, || {
        let o = options.ok_or_else(|| Failure::invalid("entry options is NULL"))?;
        o.options.durability = Some(durability(mode, param)?);
        Ok(CAIRN_OK)
    })
}
