//! Compressed blocks of a log: decoding one block, and a bounded cache of decoded blocks.
//!
//! A block on disk is `VLQ(compressed_len) compressed_bytes`; it decodes to at most the
//! log's `compression_block_size` bytes. The size a block claims is checked against that
//! bound *before* any buffer is allocated, so a hostile file cannot drive an allocation.
//!
//! The [`BlockCache`] holds decoded blocks keyed by their file offset, within a byte budget:
//! it is the engine's one block cache (`crate::cache::BlockCache`, which the ordered
//! store's tables use too), with its CLOCK eviction and its admission rule (a full shard
//! keeps a block only when it is missed again soon). Lookups fill it; full-log iterations
//! bypass it so a scan does not evict the working set. Thread-safety: `BlockCache` is
//! `Send + Sync`.
//!
//! Allocation: a block that will not be cached is decompressed straight into its final
//! allocation, and when its last holder drops it, that allocation becomes the thread's
//! spare for the next such block (`SPARE`): a lookup that misses the cache allocates and
//! zeroes nothing. Invariant: only an unshared block without an entry table (so never one
//! the cache holds) becomes a spare, and readers never look past a block's `data_len`.

use std::cell::Cell;
#[cfg(feature = "zstd")]
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use crate::coding::{get_u32_le, get_u64_le, get_vlq};
use crate::error::{Error, FileKind, Reason, Result};

use super::header::Compression;

/// A decoded block, in one shared allocation: the file offset of the next block, the
/// decompressed bytes and, for blocks kept in the cache, where each entry that starts in
/// the block begins.
///
/// Layout of the allocation: `next_offset: u64 LE`, `data_len: u32 LE`, `count: u32 LE`
/// (`u32::MAX` when the entry table was not built), the data, then `count × u32 LE` entry
/// starts. One allocation means a cache hit touches the reference count, the metadata and
/// the data's first line together, and the data is decompressed in place.
#[derive(Debug, Clone)]
pub struct Block(Arc<[u8]>);

const PREFIX: usize = 16;
const NOT_INDEXED: u32 = u32::MAX;

impl Block {
    /// Completes a buffer holding `PREFIX` reserved bytes followed by the data.
    fn finish(next_offset: u64, mut buf: Vec<u8>, index_entries: bool) -> Block {
        let data_len = buf.len().saturating_sub(PREFIX);
        let starts = if index_entries {
            Some(entry_starts(buf.get(PREFIX..).unwrap_or(&[])))
        } else {
            None
        };
        let count = starts.as_ref().map_or(NOT_INDEXED, |s| s.len() as u32);
        let fields: [(usize, [u8; 4]); 3] = [
            (0, (next_offset as u32).to_le_bytes()),
            (4, ((next_offset >> 32) as u32).to_le_bytes()),
            (8, (data_len as u32).to_le_bytes()),
        ];
        for (at, bytes) in fields.into_iter().chain([(12, count.to_le_bytes())]) {
            if let Some(dst) = buf.get_mut(at..at + 4) {
                dst.copy_from_slice(&bytes);
            }
        }
        for s in starts.iter().flatten() {
            buf.extend_from_slice(&s.to_le_bytes());
        }
        Block(buf.into())
    }

    /// A block without an entry table, of `data_len` bytes that `fill` writes, built in
    /// its final allocation: no copy from a staging buffer, and on the reading thread's
    /// second and later uncached blocks no allocation and no zeroing either (the thread's
    /// spare, see [`SPARE`]). `block_size` is the log's bound on `data_len`.
    fn direct(
        next_offset: u64,
        data_len: usize,
        block_size: usize,
        fill: impl FnOnce(&mut [u8]) -> Result<()>,
    ) -> Result<Block> {
        let len32 =
            u32::try_from(data_len).map_err(|_| Error::invalid("a block of 4 GiB or more"))?;
        // Pooled blocks all have room for the largest block of their log, so any of its
        // blocks fits the spare; beyond `SPARE_MAX` the allocation is exact.
        let len = PREFIX
            + if block_size <= SPARE_MAX {
                block_size.max(data_len)
            } else {
                data_len
            };
        let spare = SPARE
            .try_with(Cell::take)
            .ok()
            .flatten()
            .filter(|s| s.len() == len);
        let mut all: Arc<[u8]> = spare.unwrap_or_else(|| std::iter::repeat_n(0u8, len).collect());
        let bytes = match Arc::get_mut(&mut all) {
            Some(bytes) => bytes,
            // Only unshared allocations become spares and a new one is unshared, so this is
            // not reached; a fresh allocation is still correct if it were.
            None => {
                all = std::iter::repeat_n(0u8, len).collect();
                Arc::get_mut(&mut all).ok_or_else(|| Error::invalid("a new block is shared"))?
            }
        };
        let (prefix, rest) = bytes.split_at_mut(PREFIX);
        let fields = next_offset
            .to_le_bytes()
            .into_iter()
            .chain(len32.to_le_bytes())
            .chain(NOT_INDEXED.to_le_bytes());
        for (dst, src) in prefix.iter_mut().zip(fields) {
            *dst = src;
        }
        // The bytes past `data_len` (a spare's earlier contents) are never read: every
        // accessor stops at `data_len`.
        fill(rest.get_mut(..data_len).unwrap_or(&mut []))?;
        Ok(Block(all))
    }

    fn data_len(&self) -> usize {
        get_u32_le(&self.0, 8).unwrap_or(0) as usize
    }

    /// File offset of the next block (may equal the log's `data_end`).
    #[inline]
    pub fn next_offset(&self) -> u64 {
        get_u64_le(&self.0, 0).unwrap_or(u64::MAX)
    }

    /// The decompressed entry-stream bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.0.get(PREFIX..PREFIX + self.data_len()).unwrap_or(&[])
    }

    /// Offset in [`Block::data`] of the `index`-th entry starting in this block, if any:
    /// from the entry table when the block has one, else by walking from the start.
    #[inline]
    pub fn entry_start(&self, index: u64) -> Option<usize> {
        let count = get_u32_le(&self.0, 12).unwrap_or(NOT_INDEXED);
        if count == NOT_INDEXED {
            return nth_entry_start(self.data(), index);
        }
        if index >= u64::from(count) {
            return None;
        }
        let at = PREFIX + self.data_len() + 4 * index as usize;
        get_u32_le(&self.0, at).map(|s| s as usize)
    }

    /// Bytes held by this block.
    pub fn footprint(&self) -> usize {
        self.0.len()
    }
}

/// The largest block allocation a thread keeps as its spare (see [`SPARE`]).
const SPARE_MAX: usize = 256 << 10;

thread_local! {
    /// One spare block allocation per thread: an uncached block (no entry table) that
    /// its last holder dropped, reused by the thread's next uncached block of the same
    /// log block size. A lookup that misses the cache (or runs without one) then
    /// decompresses into memory that is already allocated and initialised.
    static SPARE: Cell<Option<Arc<[u8]>>> = const { Cell::new(None) };
}

impl Drop for Block {
    fn drop(&mut self) {
        let len = self.0.len();
        // Blocks with an entry table may be in the cache; only the last holder of an
        // uncached one hands it on, so a spare is never shared.
        if len <= PREFIX
            || len > PREFIX + SPARE_MAX
            || get_u32_le(&self.0, 12) != Some(NOT_INDEXED)
            || Arc::get_mut(&mut self.0).is_none()
        {
            return;
        }
        let all = std::mem::take(&mut self.0);
        // During thread teardown the spare is gone: the block is then just freed.
        let _ = SPARE.try_with(|spare| spare.set(Some(all)));
    }
}

/// Offset of the `index`-th entry starting in `data` (see [`entry_starts`]).
fn nth_entry_start(data: &[u8], index: u64) -> Option<usize> {
    let mut pos = 0usize;
    let mut i = 0u64;
    while pos < data.len() {
        if i == index {
            return Some(pos);
        }
        let rest = data.get(pos..)?;
        let (a, n1) = get_vlq(rest).ok()?;
        let (b, n2) = get_vlq(rest.get(n1..)?).ok()?;
        let body = if a == 0 { b } else { (a - 1).saturating_add(b) };
        let len = ((n1 + n2) as u64).saturating_add(body);
        pos = usize::try_from(len).ok().and_then(|l| pos.checked_add(l))?;
        i += 1;
    }
    None
}

/// Start offsets of the entries that begin in `data`, found by walking from the start of
/// the block as the format defines in-block entry indexes: every byte position the walk
/// reaches before the end of the block starts an entry, even one whose header continues
/// into the next block (sequential reads decode it, so an index may name it). Stops after
/// an entry that continues past the block or whose header cannot be decoded here.
fn entry_starts(data: &[u8]) -> Vec<u32> {
    let mut starts = Vec::new();
    let mut pos = 0usize;
    while pos < data.len() {
        let Ok(start) = u32::try_from(pos) else { break };
        starts.push(start);
        let rest = data.get(pos..).unwrap_or(&[]);
        let Ok((a, n1)) = get_vlq(rest) else { break };
        let Ok((b, n2)) = get_vlq(rest.get(n1..).unwrap_or(&[])) else {
            break;
        };
        let body = if a == 0 { b } else { (a - 1).saturating_add(b) };
        let len = ((n1 + n2) as u64).saturating_add(body);
        match usize::try_from(len).ok().and_then(|l| pos.checked_add(l)) {
            Some(next) => pos = next,
            None => break,
        }
    }
    starts
}

/// Raw Snappy decodes to under 22 bytes per compressed byte (its densest element, a
/// 3-byte copy, yields 64); 32 leaves a margin.
const SNAPPY_MAX_EXPANSION: usize = 32;

/// libzstd's message for "destination buffer too small" (the `zstd` crate reports errors
/// by name), derived from the error code rather than spelled out.
#[cfg(feature = "zstd")]
fn zstd_too_small() -> &'static str {
    use zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode;
    zstd::zstd_safe::get_error_name(
        0usize.wrapping_sub(ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize),
    )
}

#[cfg(feature = "zstd")]
thread_local! {
    static ZSTD: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
}

/// Decodes the block starting at `offset` of `file` (the mapped log, `file.len()` =
/// `data_end`); `index_entries` also records where each entry starts (for lookups).
pub fn decode_block(
    path: &Path,
    file: &[u8],
    offset: u64,
    compression: Compression,
    block_size: u32,
    index_entries: bool,
) -> Result<Block> {
    let corrupt = |off: u64, reason| Error::corruption(FileKind::SparkeyLog, path, off, reason);
    let start = usize::try_from(offset).map_err(|_| corrupt(offset, Reason::LengthOutOfRange))?;
    let rest = file
        .get(start..)
        .ok_or_else(|| corrupt(offset, Reason::LengthOutOfRange))?;
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
        Compression::None => {
            return Err(corrupt(
                offset,
                Reason::BadEntry("uncompressed logs have no blocks"),
            ))
        }
        Compression::Snappy => {
            let n = snap::raw::decompress_len(body)
                .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string())))?;
            if n > limit {
                return Err(corrupt(
                    offset,
                    Reason::Decompress(format!(
                        "block decodes to {n} bytes, more than the block size {limit}"
                    )),
                ));
            }
            // The length preamble is only a claim, and it sizes the buffer below: refuse
            // claims the compressed bytes cannot back, so a few bytes cannot make us
            // allocate up to the block size (1 GiB).
            if n > body.len().saturating_mul(SNAPPY_MAX_EXPANSION) {
                return Err(corrupt(
                    offset,
                    Reason::Decompress(format!(
                        "block claims {n} bytes, more than its {} compressed bytes can hold",
                        body.len()
                    )),
                ));
            }
            if !index_entries {
                // Kept by no cache: decompressed straight into the block's one allocation,
                // which a lookup reads once and drops (no entry table to append, so the
                // final size is known before the data).
                return Block::direct(next_offset, n, limit, |data| {
                    let got = snap::raw::Decoder::new()
                        .decompress(body, data)
                        .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string())))?;
                    if got == n {
                        Ok(())
                    } else {
                        Err(corrupt(
                            offset,
                            Reason::Decompress(format!(
                                "block decodes to {got} bytes, not the {n} it claims"
                            )),
                        ))
                    }
                });
            }
            let mut out = vec![0u8; PREFIX + n];
            let got = snap::raw::Decoder::new()
                .decompress(body, out.get_mut(PREFIX..).unwrap_or(&mut []))
                .map_err(|e| corrupt(offset, Reason::Decompress(e.to_string())))?;
            out.truncate(PREFIX + got);
            out
        }
        // `LogReader` refuses a Zstandard log without the feature, so this is not reached.
        #[cfg(not(feature = "zstd"))]
        Compression::Zstd => {
            return Err(Error::zstd_disabled(format!(
                "reading the Zstandard-compressed block at byte {offset} of log file {}",
                path.display()
            )))
        }
        #[cfg(feature = "zstd")]
        Compression::Zstd => {
            let declared = zstd::zstd_safe::get_frame_content_size(body)
                .map_err(|_| corrupt(offset, Reason::Decompress("not a zstd frame".into())))?;
            let max = match declared {
                Some(n) if n > limit as u64 => {
                    return Err(corrupt(
                        offset,
                        Reason::Decompress(format!(
                            "block decodes to {n} bytes, more than the block size {limit}"
                        )),
                    ))
                }
                Some(n) => n as usize,
                None => limit,
            };
            // `max` is the frame's own claim (or the block size): do not let it size the
            // buffer. Start with room for a generous ratio and grow while libzstd reports
            // the buffer too small, so the buffer follows the real output. A false claim
            // fails as corruption at the first size; a 4-byte RLE block may legitimately
            // expand to 2 MiB, so no fixed ratio can reject claims up front.
            let mut capacity = max.min(body.len().saturating_mul(64).max(64 << 10));
            loop {
                let mut out = Vec::with_capacity(capacity);
                let result = ZSTD.with(|cell| -> Result<std::io::Result<usize>> {
                    let mut slot = cell.borrow_mut();
                    if slot.is_none() {
                        *slot = Some(
                            zstd::bulk::Decompressor::new()
                                .map_err(|e| Error::io(path, "zstd init", e))?,
                        );
                    }
                    Ok(match slot.as_mut() {
                        Some(d) => d.decompress_to_buffer(body, &mut out),
                        None => Err(std::io::Error::other("zstd unavailable")),
                    })
                })?;
                match result {
                    Ok(_) => {
                        let mut buf = Vec::with_capacity(PREFIX + out.len());
                        buf.resize(PREFIX, 0);
                        buf.extend_from_slice(&out);
                        break buf;
                    }
                    Err(e) if capacity < max && e.to_string() == zstd_too_small() => {
                        capacity = max.min(capacity.saturating_mul(4));
                    }
                    Err(e) => return Err(corrupt(offset, Reason::Decompress(e.to_string()))),
                }
            }
        }
    };
    Ok(Block::finish(next_offset, data, index_entries))
}

/// The decoded-block cache of one opened log (see the module documentation).
pub(crate) type BlockCache = crate::cache::BlockCache<u64, Block>;

pub(crate) use crate::cache::Lookup;

impl crate::cache::Weigh for Block {
    fn weight(&self) -> usize {
        self.footprint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entry starts found by the table and by the walk agree, including an entry whose
    /// header the block cuts (it starts here; sequential reads decode it across blocks).
    #[test]
    fn entry_starts_count_an_entry_whose_header_the_block_cuts() {
        // PUT "ab" -> "c" (5 bytes), PUT "x" -> "" (3 bytes), then the first byte of a
        // two-byte A VLQ (0x83 0x01 would follow in the next block).
        let data = [3u8, 1, b'a', b'b', b'c', 2, 0, b'x', 0x83];
        assert_eq!(entry_starts(&data), vec![0, 5, 8]);
        for (i, want) in [Some(0), Some(5), Some(8), None].into_iter().enumerate() {
            assert_eq!(nth_entry_start(&data, i as u64), want, "entry {i}");
        }
        // An entry whose body runs past the block is the last one starting in it.
        let data = [3u8, 9, b'a', b'b', b'c'];
        assert_eq!(entry_starts(&data), vec![0]);
        assert_eq!(nth_entry_start(&data, 1), None);
        assert_eq!(entry_starts(&[]), Vec::<u32>::new());
        assert_eq!(nth_entry_start(&[], 0), None);
    }

    /// `VLQ(len) snappy(data)`: one block as a log stores it.
    fn stored(data: &[u8]) -> Vec<u8> {
        let body = snap::raw::Encoder::new()
            .compress_vec(data)
            .unwrap_or_default();
        let mut out = Vec::new();
        crate::coding::put_vlq(&mut out, body.len() as u64);
        out.extend_from_slice(&body);
        out
    }

    /// A thread's spare allocation is reused for its next uncached block: a smaller block
    /// decoded into it reads back exactly (the larger block's bytes past its end never
    /// show), and a block another holder still reads never becomes the spare.
    #[test]
    fn a_reused_spare_holds_exactly_the_new_block() -> Result<()> {
        let path = Path::new("spare.spl");
        let big: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
        let small = [3u8, 1, b'a', b'b', b'c', 2, 0, b'x'];
        let mut file = stored(&big);
        let small_at = file.len() as u64;
        file.extend_from_slice(&stored(&small));

        let first = decode_block(path, &file, 0, Compression::Snappy, 4096, false)?;
        assert_eq!(first.data(), big.as_slice());
        let first_ptr = first.data().as_ptr();
        drop(first);
        let second = decode_block(path, &file, small_at, Compression::Snappy, 4096, false)?;
        assert_eq!(
            second.data().as_ptr(),
            first_ptr,
            "the spare was not reused"
        );
        assert_eq!(second.data(), small.as_slice());
        assert_eq!(second.next_offset(), file.len() as u64);
        assert_eq!(second.entry_start(1), Some(5));
        assert_eq!(second.entry_start(2), None);
        drop(second);

        // A block still held elsewhere (a clone) is not handed on when one holder drops it.
        let third = decode_block(path, &file, 0, Compression::Snappy, 4096, false)?;
        let fourth_holder = third.clone();
        drop(third);
        let fifth = decode_block(path, &file, small_at, Compression::Snappy, 4096, false)?;
        assert_ne!(fifth.data().as_ptr(), fourth_holder.data().as_ptr());
        assert_eq!(fourth_holder.data(), big.as_slice());
        assert_eq!(fifth.data(), small.as_slice());
        Ok(())
    }
}
