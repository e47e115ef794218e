//! Compressed blocks of a log: decoding one block, and a bounded cache of decoded blocks.
//!
//! A block on disk is `VLQ(compressed_len) compressed_bytes`; it decodes to at most the
//! log's `compression_block_size` bytes. The size a block claims is checked against that
//! bound *before* any buffer is allocated, so a hostile file cannot drive an allocation.
//!
//! The [`BlockCache`] holds decoded blocks keyed by their file offset, within a byte budget
//! (CLOCK eviction, 16 shards). Lookups fill it; full-log iterations bypass it so a scan does
//! not evict the working set. Thread-safety: `BlockCache` is `Send + Sync`.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::coding::get_vlq;
use crate::error::{Error, FileKind, Reason, Result};

use super::header::Compression;

/// A decoded block: its bytes and the file offset of the block after it.
#[derive(Debug, Clone)]
pub struct Block {
    /// Decompressed entry-stream bytes.
    pub data: Arc<[u8]>,
    /// File offset of the next block (may equal the log's `data_end`).
    pub next_offset: u64,
}

thread_local! {
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decodes the block starting at `offset` of `file` (the mapped log, `file.len()` =
/// `data_end`).
pub fn decode_block(
    path: &Path,
    file: &[u8],
    offset: u64,
    compression: Compression,
    block_size: u32,
) -> Result<Block> {
    let corrupt = |off: u64, reason| Error::corruption(FileKind::SparkeyLog, path, off, reason);
    let start = usize::try_from(offset).map_err(|_| corrupt(offset, Reason::LengthOutOfRange))?;
    let rest = file.get(start..).ok_or_else(|| corrupt(offset, Reason::LengthOutOfRange))?;
    let (clen, vlen) = get_vlq(rest).map_err(|e| match e {
        crate::coding::VlqError::Truncated => corrupt(offset, Reason::Truncated),
        crate::coding::VlqError::Overflow => corrupt(offset, Reason::BadVarint),
    })?;
    let body = usize::try_from(clen)
        .ok()
        .and_then(|c| rest.get(vlen..vlen.checked_add(c)?))
        .ok_or_else(|| corrupt(offset, Reason::LengthOutOfRange))?;
    let next_offset = offset + vlen as u64 + clen;
    let limit = block_size as usize;
    let data: Vec<u8> = match compression {
        Compression::None => return Err(corrupt(offset, Reason::BadEntry("uncompressed logs have no blocks"))),
        Compression::Snappy => {
            let n = snap::raw::decompress_len(body)
                .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string())))?;
            if n > limit {
                return Err(corrupt(
                    offset,
                    Reason::Decompress(format!("block decodes to {n} bytes, more than the block size {limit}")),
                ));
            }
            let mut out = vec![0u8; n];
            let got = snap::raw::Decoder::new()
                .decompress(body, &mut out)
                .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string())))?;
            out.truncate(got);
            out
        }
        Compression::Zstd => {
            let declared = zstd::zstd_safe::get_frame_content_size(body)
                .map_err(|_| corrupt(offset, Reason::Decompress("not a zstd frame".into())))?;
            let capacity = match declared {
                Some(n) if n > limit as u64 => {
                    return Err(corrupt(
                        offset,
                        Reason::Decompress(format!("block decodes to {n} bytes, more than the block size {limit}")),
                    ))
                }
                Some(n) => n as usize,
                None => limit,
            };
            let mut out = Vec::with_capacity(capacity);
            ZSTD.with(|cell| -> Result<()> {
                let mut slot = cell.borrow_mut();
                if slot.is_none() {
                    *slot = Some(zstd::bulk::Decompressor::new().map_err(|e| Error::io(path, "zstd init", e))?);
                }
                match slot.as_mut() {
                    Some(d) => d
                        .decompress_to_buffer(body, &mut out)
                        .map(|_| ())
                        .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string()))),
                    None => Err(corrupt(offset, Reason::Decompress("zstd unavailable".into()))),
                }
            })?;
            out
        }
    };
    Ok(Block { data: data.into(), next_offset })
}

const SHARDS: usize = 16;

#[derive(Default)]
struct Shard {
    map: HashMap<u64, (Arc<[u8]>, bool)>,
    clock: VecDeque<u64>,
    bytes: usize,
}

/// A bounded cache of decoded blocks, keyed by block file offset.
pub struct BlockCache {
    shards: Vec<Mutex<Shard>>,
    shard_budget: usize,
}

impl std::fmt::Debug for BlockCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockCache").field("budget", &(self.shard_budget * SHARDS)).finish()
    }
}

impl BlockCache {
    /// A cache holding at most about `budget` bytes of decoded blocks (0 disables it).
    pub fn new(budget: usize) -> BlockCache {
        BlockCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            shard_budget: budget / SHARDS,
        }
    }

    fn shard(&self, offset: u64) -> Option<&Mutex<Shard>> {
        let h = offset.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 60;
        self.shards.get(h as usize % SHARDS)
    }

    /// The cached block at `offset`, if present.
    pub fn get(&self, offset: u64) -> Option<Arc<[u8]>> {
        if self.shard_budget == 0 {
            return None;
        }
        let mut shard = self.shard(offset)?.lock();
        let entry = shard.map.get_mut(&offset)?;
        entry.1 = true;
        Some(Arc::clone(&entry.0))
    }

    /// Adds a block, evicting others (CLOCK order) to stay within the budget. A block
    /// larger than a shard's budget is not cached.
    pub fn insert(&self, offset: u64, data: Arc<[u8]>) {
        let len = data.len().max(1);
        if len > self.shard_budget {
            return;
        }
        let Some(shard) = self.shard(offset) else { return };
        let mut shard = shard.lock();
        if shard.map.contains_key(&offset) {
            return;
        }
        while shard.bytes + len > self.shard_budget {
            let Some(victim) = shard.clock.pop_front() else { break };
            let referenced = match shard.map.get_mut(&victim) {
                Some(e) if e.1 => {
                    e.1 = false;
                    true
                }
                _ => false,
            };
            if referenced {
                shard.clock.push_back(victim);
            } else if let Some((d, _)) = shard.map.remove(&victim) {
                shard.bytes -= d.len().max(1);
            }
        }
        shard.bytes += len;
        shard.map.insert(offset, (data, false));
        shard.clock.push_back(offset);
    }

    /// Bytes of decoded blocks currently held.
    pub fn used_bytes(&self) -> usize {
        self.shards.iter().map(|s| s.lock().bytes).sum()
    }
}
