//! The reference Sparkey C library, through `sparkey-sys` 0.1.1.
//!
//! `sparkey-sys` bundles the Sparkey C sources and compiles them into the
//! binary with its build script (links the system `libsnappy`). The bundled C
//! predates Sparkey 1.0: it knows compression types 0 (none) and 1 (snappy)
//! only, so [`Compression::Zstd`] is refused here.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::ptr;

use anyhow::{bail, Context as _};
use sparkey_sys as sk;

use super::{
    bench_key, bench_value, c_path, compression_label, Compression, ConstantStore, StackBuf,
};

const LOG_FILE: &str = "bench.spl";
const INDEX_FILE: &str = "bench.spi";

/// Turn a Sparkey return code into a `Result`.
fn check(rc: sk::returncode, what: &str) -> anyhow::Result<()> {
    if let sk::returncode::SUCCESS = rc {
        return Ok(());
    }
    // SAFETY: sparkey_errstring returns a pointer to a static NUL-terminated string.
    let msg = unsafe {
        let p = sk::errstring(rc);
        if p.is_null() {
            "?".into()
        } else {
            CStr::from_ptr(p).to_string_lossy()
        }
    };
    bail!("sparkey C: {what}: {msg} ({rc:?})")
}

/// An open Sparkey hash reader with one log iterator.
struct Reader {
    hash: *mut sk::hashreader,
    log: *mut sk::logreader,
    iter: *mut sk::logiter,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: the pointers were produced by hash_open / logiter_create and
        // are closed exactly once here; the close functions accept NULL.
        unsafe {
            sk::logiter_close(&mut self.iter);
            sk::hash_close(&mut self.hash);
        }
    }
}

/// The reference Sparkey C library (log + hash index), as the reference bench uses it.
pub struct SparkeyC {
    /// Block compression of the log.
    pub compression: Compression,
    /// Maximum uncompressed block size in bytes (ignored for `None`).
    pub block_size: u32,
    reader: Option<Reader>,
}

impl SparkeyC {
    /// A store writing logs with `compression` in blocks of `block_size` bytes.
    pub fn new(compression: Compression, block_size: u32) -> Self {
        SparkeyC {
            compression,
            block_size,
            reader: None,
        }
    }

    fn paths(dir: &Path) -> (PathBuf, PathBuf) {
        (dir.join(LOG_FILE), dir.join(INDEX_FILE))
    }
}

impl ConstantStore for SparkeyC {
    fn name(&self) -> String {
        "sparkey-c".to_owned()
    }

    fn variant(&self) -> String {
        compression_label(self.compression, self.block_size)
    }

    fn build(&mut self, dir: &Path, n: u64) -> anyhow::Result<()> {
        let (ctype, block) = match self.compression {
            Compression::None => (sk::compression_type::COMPRESSION_NONE, 0),
            Compression::Snappy => (
                sk::compression_type::COMPRESSION_SNAPPY,
                i32::try_from(self.block_size).context("block size")?,
            ),
            Compression::Zstd => bail!(
                "sparkey C (sparkey-sys 0.1.1) has no zstd: its bundled C predates Sparkey 1.0"
            ),
        };
        self.reader = None;
        let (log, index) = Self::paths(dir);
        let (log, index) = (c_path(&log)?, c_path(&index)?);
        let mut w: *mut sk::logwriter = ptr::null_mut();
        // SAFETY: `w` is a valid out-pointer, `log` a NUL-terminated path.
        let rc = unsafe { sk::logwriter_create(&mut w, log.as_ptr(), ctype, block) };
        check(rc, "logwriter_create")?;
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        let mut put_result = Ok(());
        for i in 0..n {
            let k = bench_key(&mut kb, i);
            let v = bench_value(&mut vb, i);
            // SAFETY: `w` is an open writer; key and value point to `len` readable bytes.
            let rc = unsafe {
                sk::logwriter_put(w, k.len() as u64, k.as_ptr(), v.len() as u64, v.as_ptr())
            };
            put_result = check(rc, "logwriter_put");
            if put_result.is_err() {
                break;
            }
        }
        // SAFETY: `w` is an open writer, closed (and set to NULL) exactly once.
        let close_result = check(unsafe { sk::logwriter_close(&mut w) }, "logwriter_close");
        put_result?;
        close_result?;
        // hash_size 0: let Sparkey pick 4- or 8-byte hashes, as the reference bench does.
        // SAFETY: both arguments are NUL-terminated paths.
        check(
            unsafe { sk::hash_write(index.as_ptr(), log.as_ptr(), 0) },
            "hash_write",
        )
    }

    fn open(&mut self, dir: &Path) -> anyhow::Result<()> {
        self.reader = None;
        let (log, index) = Self::paths(dir);
        let (log, index) = (c_path(&log)?, c_path(&index)?);
        let mut r = Reader {
            hash: ptr::null_mut(),
            log: ptr::null_mut(),
            iter: ptr::null_mut(),
        };
        // SAFETY: out-pointer is valid; paths are NUL-terminated. On failure
        // `r` is dropped with NULL members, which the close functions accept.
        let rc = unsafe { sk::hash_open(&mut r.hash, index.as_ptr(), log.as_ptr()) };
        check(rc, "hash_open")?;
        // SAFETY: `r.hash` is an open hash reader; the log reader it returns lives as long.
        r.log = unsafe { sk::hash_getreader(r.hash) };
        // SAFETY: `r.log` is an open log reader; out-pointer is valid.
        let rc = unsafe { sk::logiter_create(&mut r.iter, r.log) };
        check(rc, "logiter_create")?;
        self.reader = Some(r);
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        let Some(r) = &self.reader else {
            bail!("sparkey C: get before open")
        };
        // SAFETY: reader and iterator are open (owned by `r`); `SparkeyC` is
        // !Sync (raw pointers), so no other thread uses the iterator meanwhile.
        // `out` is resized to the value length before fill_value writes into it.
        unsafe {
            check(
                sk::hash_get(r.hash, key.as_ptr(), key.len() as u64, r.iter),
                "hash_get",
            )?;
            if !matches!(sk::logiter_state(r.iter), sk::iter_state::ITER_ACTIVE) {
                return Ok(false);
            }
            let wanted = sk::logiter_valuelen(r.iter);
            out.clear();
            out.resize(usize::try_from(wanted)?, 0);
            let mut got = 0u64;
            check(
                sk::logiter_fill_value(r.iter, r.log, wanted, out.as_mut_ptr(), &mut got),
                "logiter_fill_value",
            )?;
            out.truncate(usize::try_from(got)?);
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_none() -> anyhow::Result<()> {
        crate::stores::tests::round_trip(&mut SparkeyC::new(Compression::None, 0), 5000)
    }

    #[test]
    fn round_trip_snappy() -> anyhow::Result<()> {
        crate::stores::tests::round_trip(&mut SparkeyC::new(Compression::Snappy, 1024), 5000)
    }

    #[test]
    fn zstd_refused() {
        let dir = std::env::temp_dir();
        assert!(SparkeyC::new(Compression::Zstd, 1024)
            .build(&dir, 1)
            .is_err());
    }
}
