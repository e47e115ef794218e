//! Constant (build-once, read-many) key-value stores under benchmark.
//!
//! Every store is built from the same data set as the reference Sparkey
//! `bench.c`: `n` entries `key_<i> -> value_<i>` for `i` in `0..n`, inserted
//! in order, keys and values formatted into a stack buffer inside the timed
//! loop (see [`StackBuf`]).

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use cairn_harness::scratch::{dir_size, Measure};

pub mod cairn;
pub mod cdb2;
pub mod sparkey_c;
pub mod tinycdb;

pub use self::cairn::Cairn;
pub use self::cdb2::Cdb2;
pub use sparkey_c::SparkeyC;
pub use tinycdb::TinyCdb;

/// One constant (build-once, read-many) key-value store under benchmark.
pub trait ConstantStore {
    /// Store name, e.g. `sparkey-c`.
    fn name(&self) -> String;
    /// Compression / layout variant, e.g. `snappy(1024)`; `-` when the store has none.
    fn variant(&self) -> String {
        "-".to_owned()
    }
    /// Build a store at `dir` from `n` entries key_<i> -> value_<i> (i in 0..n), in order.
    fn build(&mut self, dir: &Path, n: u64) -> anyhow::Result<()>;
    /// Open what build() wrote for reading.
    fn open(&mut self, dir: &Path) -> anyhow::Result<()>;
    /// Look up `key`, copy its value into `out`; return false if absent.
    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool>;
    /// Look up a batch of keys, calling `check(i, value)` for `keys[i]`. The default
    /// looks each key up in turn; stores with a batched lookup override it.
    fn get_many(
        &self,
        keys: &[&[u8]],
        check: &mut dyn FnMut(usize, Option<&[u8]>),
    ) -> anyhow::Result<()> {
        let mut out = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            let found = self.get(key, &mut out)?;
            check(i, found.then_some(out.as_slice()));
        }
        Ok(())
    }
    /// Bytes on disk of what build() wrote: the apparent size (`st_size`) of every file
    /// under `dir`, as the reference bench's `total_file_size`.
    fn disk_size(&self, dir: &Path) -> anyhow::Result<u64> {
        Ok(dir_size(dir, Measure::Apparent)?)
    }
}

/// Block compression of a Sparkey log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Compression {
    /// Uncompressed log (type 0).
    None,
    /// Snappy-compressed blocks (type 1).
    Snappy,
    /// Zstandard-compressed blocks (type 2, Sparkey >= 1.0).
    Zstd,
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Compression::None => "none",
            Compression::Snappy => "snappy",
            Compression::Zstd => "zstd",
        })
    }
}

impl FromStr for Compression {
    type Err = anyhow::Error;
    fn from_str(s: &str) -> anyhow::Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" | "uncompressed" => Ok(Compression::None),
            "snappy" => Ok(Compression::Snappy),
            "zstd" => Ok(Compression::Zstd),
            other => anyhow::bail!("unknown compression {other:?} (none, snappy, zstd)"),
        }
    }
}

/// Label of a compression setting as printed in reports: `none`, `snappy(1024)`.
pub fn compression_label(c: Compression, block_size: u32) -> String {
    match c {
        Compression::None => "none".to_owned(),
        c => format!("{c}({block_size})"),
    }
}

/// A fixed-size stack buffer written with `write!`, the Rust counterpart of
/// the reference bench's `char buf[100]; sprintf(buf, "key_%d", i)`: no heap
/// allocation per key.
pub struct StackBuf {
    buf: [u8; 48],
    len: usize,
}

impl StackBuf {
    /// An empty buffer.
    pub const fn new() -> Self {
        StackBuf {
            buf: [0; 48],
            len: 0,
        }
    }

    /// Clear, then format `prefix` followed by `i` in decimal.
    #[inline]
    pub fn format(&mut self, prefix: &str, i: u64) -> &[u8] {
        use fmt::Write as _;
        self.len = 0;
        let mut digits = itoa::Buffer::new();
        // Cannot fail: the longest prefix used plus 20 digits fits in 48 bytes.
        let _ = self.write_str(prefix);
        let _ = self.write_str(digits.format(i));
        self.as_bytes()
    }

    /// The bytes written so far.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

impl Default for StackBuf {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Write for StackBuf {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len + s.len();
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Key `key_<i>` of the benchmark data set, formatted into `buf`.
#[inline]
pub fn bench_key(buf: &mut StackBuf, i: u64) -> &[u8] {
    buf.format("key_", i)
}

/// Value `value_<i>` of the benchmark data set, formatted into `buf`.
#[inline]
pub fn bench_value(buf: &mut StackBuf, i: u64) -> &[u8] {
    buf.format("value_", i)
}

/// A path as a NUL-terminated C string, for the C peers.
pub(crate) fn c_path(path: &Path) -> anyhow::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt as _;
    Ok(std::ffi::CString::new(path.as_os_str().as_bytes())?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_sprintf() {
        let mut b = StackBuf::new();
        assert_eq!(bench_key(&mut b, 0), b"key_0");
        assert_eq!(
            bench_value(&mut b, 18_446_744_073_709_551_615),
            b"value_18446744073709551615"
        );
        assert_eq!(bench_key(&mut b, 42), b"key_42");
    }

    #[test]
    fn compression_parses() -> anyhow::Result<()> {
        assert_eq!("Snappy".parse::<Compression>()?, Compression::Snappy);
        assert_eq!(compression_label(Compression::Zstd, 4096), "zstd(4096)");
        assert_eq!(compression_label(Compression::None, 4096), "none");
        assert!("lz4".parse::<Compression>().is_err());
        Ok(())
    }

    /// Every store must round-trip the bench data set and report absent keys.
    pub(crate) fn round_trip(store: &mut dyn ConstantStore, n: u64) -> anyhow::Result<()> {
        let dir = std::env::temp_dir().join(format!(
            "cairn-bench-test-{}-{}-{}",
            std::process::id(),
            store.name(),
            store.variant()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        store.build(&dir, n)?;
        store.open(&dir)?;
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        let mut out = Vec::new();
        for i in 0..n {
            assert!(
                store.get(bench_key(&mut kb, i), &mut out)?,
                "key_{i} missing"
            );
            assert_eq!(out.as_slice(), bench_value(&mut vb, i));
        }
        assert!(!store.get(b"key_absent", &mut out)?);
        assert!(!store.get(bench_key(&mut kb, n), &mut out)?);
        assert!(store.disk_size(&dir)? > 0);
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
