//! Helpers shared by Cairn's fuzz targets.
//!
//! The constant store reads files (it memory-maps them), so every target writes its input
//! into a per-process scratch directory (on `/dev/shm` when it exists, so no disk I/O) and
//! reuses the same paths for every input. The rule every target enforces: any input gives
//! `Ok` or a typed `Err` (`Corruption`, `UnsupportedVersion`, `IdentifierMismatch`), never a
//! panic, a hang, or an allocation sized by an unchecked length (libFuzzer's `-rss_limit_mb`
//! and `-malloc_limit_mb` catch those).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use cairn::hash::raw::LogHeader;
use cairn::hash::Compression;
use cairn::Error;

/// This process's scratch directory, created on first use.
pub fn scratch() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!("cairn-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("create the fuzz scratch directory");
        dir
    })
}

/// `scratch()/name`.
pub fn path(name: &str) -> PathBuf {
    scratch().join(name)
}

/// Replaces the file at `path` with `bytes`. No mapping of the old contents is alive.
pub fn write(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write a fuzz input file");
}

/// Fails (panics, so libFuzzer reports a crash) unless `e` is typed as damage, and checks
/// its message can be formatted.
pub fn check_error(e: &Error) {
    let text = e.to_string();
    assert!(!text.is_empty());
    assert!(
        e.is_corruption(),
        "bad input must give a typed damage error, got {e:?}: {text}"
    );
}

/// Entries any iterator may yield for one fuzz input before it counts as not terminating
/// (inputs are at most a few KiB; a block decodes to at most 1 MiB here).
pub const MAX_ITEMS: usize = 50_000_000;

/// Drains a result iterator: the items, and the error it ended with. Panics if an item
/// follows an error or the iterator does not end.
pub fn drain<T>(it: impl Iterator<Item = cairn::Result<T>>) -> (Vec<T>, Option<Error>) {
    let mut it = it.fuse();
    let mut items = Vec::new();
    while let Some(r) = it.next() {
        match r {
            Ok(x) => {
                items.push(x);
                assert!(items.len() <= MAX_ITEMS, "iterator does not terminate");
            }
            Err(e) => {
                check_error(&e);
                assert!(
                    it.next().is_none(),
                    "an iterator yielded an item after an error"
                );
                return (items, Some(e));
            }
        }
    }
    (items, None)
}

/// Block sizes the entry-stream target chooses from: the vectors' sizes, the writer's
/// minimum and default, and sizes around small entries. At most 1 MiB, so a block of
/// genuinely compressible data stays well inside the fuzzer's memory limit.
pub const BLOCK_SIZES: [u32; 16] = [
    10,
    16,
    17,
    32,
    64,
    100,
    128,
    255,
    512,
    1000,
    1024,
    4096,
    16384,
    65536,
    1 << 18,
    1 << 20,
];

/// The selector byte of the entry-stream target: compression in the low 2 bits (3 means
/// none as well), block size index in the high 4 bits.
pub fn decode_selector(b: u8) -> (Compression, u32) {
    let compression = match b & 3 {
        1 => Compression::Snappy,
        2 => Compression::Zstd,
        _ => Compression::None,
    };
    (compression, BLOCK_SIZES[usize::from(b >> 4)])
}

/// A log file holding `stream` after a header that is consistent with it: `data_end`
/// covers it, the counters are `stats`, and compressed logs allow as many entries per block
/// as can fit (so addresses are well formed whatever the stream holds).
pub fn log_file(
    id: u32,
    compression: Compression,
    block_size: u32,
    stream: &[u8],
    stats: &Stats,
) -> Vec<u8> {
    let mut h = LogHeader::new(id, compression, block_size);
    h.data_end = 84 + stream.len() as u64;
    h.num_puts = stats.puts.min(h.data_end);
    h.num_deletes = stats.deletes.min(h.data_end);
    h.put_size = stats.put_size;
    h.delete_size = stats.delete_size;
    h.max_key_len = stats.max_key_len;
    h.max_value_len = stats.max_value_len;
    if compression != Compression::None {
        h.max_entries_per_block = block_size / 2 + 1;
    }
    let mut out = h.encode().to_vec();
    out.extend_from_slice(stream);
    out
}

/// Header counters of a log, as computed from its entries.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    pub puts: u64,
    pub deletes: u64,
    pub put_size: u64,
    pub delete_size: u64,
    pub max_key_len: u64,
    pub max_value_len: u64,
}

fn vlq_len(v: u64) -> u64 {
    u64::from((64 - (v | 1).leading_zeros()).div_ceil(7))
}

impl Stats {
    /// Adds a PUT of `key` → `value`.
    pub fn put(&mut self, key: &[u8], value: &[u8]) {
        let (k, v) = (key.len() as u64, value.len() as u64);
        self.puts += 1;
        self.put_size += vlq_len(k + 1) + vlq_len(v) + k + v;
        self.max_key_len = self.max_key_len.max(k);
        self.max_value_len = self.max_value_len.max(v);
    }

    /// Adds a DELETE of `key`.
    pub fn delete(&mut self, key: &[u8]) {
        let k = key.len() as u64;
        self.deletes += 1;
        self.delete_size += 1 + vlq_len(k) + k;
    }
}
