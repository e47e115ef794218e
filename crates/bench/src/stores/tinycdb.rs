//! tinycdb (Michael Tokarev's C cdb, Debian `libcdb-dev`), through a small FFI.
//!
//! The struct layouts below mirror `/usr/include/cdb.h` of tinycdb 0.78
//! (`struct cdb` is 40 bytes, `struct cdb_make` 6168 bytes on x86_64/LP64);
//! the size checks at the bottom guard them.

use std::cell::UnsafeCell;
use std::fs::File;
use std::os::fd::AsRawFd as _;
use std::os::raw::{c_int, c_uint, c_void};
use std::path::Path;

use anyhow::{bail, Context as _};

use super::{bench_key, bench_value, ConstantStore, StackBuf};

const CDB_FILE: &str = "bench.cdb";

/// `struct cdb` (reader state; `cdb_vpos`/`cdb_vlen` hold the last match).
#[repr(C)]
struct Cdb {
    cdb_fd: c_int,
    cdb_fsize: c_uint,
    cdb_dend: c_uint,
    cdb_mem: *const u8,
    cdb_vpos: c_uint,
    cdb_vlen: c_uint,
    cdb_kpos: c_uint,
    cdb_klen: c_uint,
}

/// `struct cdb_make` (writer state, with its 4 KiB write buffer).
#[repr(C)]
struct CdbMake {
    cdb_fd: c_int,
    cdb_dpos: c_uint,
    cdb_rcnt: c_uint,
    cdb_buf: [u8; 4096],
    cdb_bpos: *mut u8,
    cdb_rec: [*mut c_void; 256],
}

#[link(name = "cdb")]
extern "C" {
    fn cdb_init(cdbp: *mut Cdb, fd: c_int) -> c_int;
    fn cdb_free(cdbp: *mut Cdb);
    fn cdb_find(cdbp: *mut Cdb, key: *const c_void, klen: c_uint) -> c_int;
    fn cdb_get(cdbp: *const Cdb, len: c_uint, pos: c_uint) -> *const c_void;
    fn cdb_make_start(cdbmp: *mut CdbMake, fd: c_int) -> c_int;
    fn cdb_make_add(
        cdbmp: *mut CdbMake,
        key: *const c_void,
        klen: c_uint,
        val: *const c_void,
        vlen: c_uint,
    ) -> c_int;
    fn cdb_make_finish(cdbmp: *mut CdbMake) -> c_int;
}

/// An open cdb: the mapped file and the descriptor `cdb_init` mapped.
struct Reader {
    // Boxed so the C struct never moves; UnsafeCell because cdb_find records
    // the match position inside it while `get` only has `&self`.
    cdb: Box<UnsafeCell<Cdb>>,
    _file: File,
}

impl Drop for Reader {
    fn drop(&mut self) {
        // SAFETY: the struct was initialised by a successful cdb_init and is
        // freed once, before `_file` closes the descriptor.
        unsafe { cdb_free(self.cdb.get()) }
    }
}

/// tinycdb, the C constant database (Debian `libcdb-dev`, linked as `-lcdb`).
#[derive(Default)]
pub struct TinyCdb {
    reader: Option<Reader>,
}

impl TinyCdb {
    /// A tinycdb store.
    pub fn new() -> Self {
        TinyCdb::default()
    }
}

fn c_len(b: &[u8]) -> anyhow::Result<c_uint> {
    c_uint::try_from(b.len()).context("cdb: record longer than 4 GiB")
}

fn os_err(what: &str) -> anyhow::Error {
    anyhow::Error::new(std::io::Error::last_os_error()).context(format!("tinycdb: {what}"))
}

impl ConstantStore for TinyCdb {
    fn name(&self) -> String {
        "tinycdb".to_owned()
    }

    fn build(&mut self, dir: &Path, n: u64) -> anyhow::Result<()> {
        self.reader = None;
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(dir.join(CDB_FILE))?;
        // SAFETY: an all-zero cdb_make is a valid "not started" value; cdb_make_start initialises it.
        let mut mk: Box<CdbMake> = Box::new(unsafe { std::mem::zeroed() });
        // SAFETY: `mk` is writable and outlives the make session; the fd is open read-write.
        if unsafe { cdb_make_start(&mut *mk, file.as_raw_fd()) } < 0 {
            return Err(os_err("cdb_make_start"));
        }
        let (mut kb, mut vb) = (StackBuf::new(), StackBuf::new());
        for i in 0..n {
            let k = bench_key(&mut kb, i);
            let v = bench_value(&mut vb, i);
            // SAFETY: `mk` is started; key and value point to `len` readable bytes.
            let rc = unsafe {
                cdb_make_add(
                    &mut *mk,
                    k.as_ptr().cast(),
                    c_len(k)?,
                    v.as_ptr().cast(),
                    c_len(v)?,
                )
            };
            if rc < 0 {
                // Frees the record lists; the error that matters is the add's.
                // SAFETY: `mk` is started and finished exactly once.
                unsafe { cdb_make_finish(&mut *mk) };
                return Err(os_err("cdb_make_add"));
            }
        }
        // SAFETY: `mk` is started and finished exactly once.
        if unsafe { cdb_make_finish(&mut *mk) } < 0 {
            return Err(os_err("cdb_make_finish"));
        }
        Ok(())
    }

    fn open(&mut self, dir: &Path) -> anyhow::Result<()> {
        self.reader = None;
        let file = File::open(dir.join(CDB_FILE))?;
        // SAFETY: an all-zero `struct cdb` equals CDB_STATIC_INIT.
        let cdb: Box<UnsafeCell<Cdb>> = Box::new(UnsafeCell::new(unsafe { std::mem::zeroed() }));
        // SAFETY: `cdb` is writable and boxed (stable address); the fd stays open in `Reader`.
        if unsafe { cdb_init(cdb.get(), file.as_raw_fd()) } != 0 {
            return Err(os_err("cdb_init"));
        }
        self.reader = Some(Reader { cdb, _file: file });
        Ok(())
    }

    fn get(&self, key: &[u8], out: &mut Vec<u8>) -> anyhow::Result<bool> {
        let Some(r) = &self.reader else {
            bail!("tinycdb: get before open")
        };
        let c = r.cdb.get();
        // SAFETY: `c` is an initialised cdb; TinyCdb is !Sync (UnsafeCell) and
        // `get` is not reentrant, so this is the only access to the struct.
        // cdb_get returns a pointer to `vlen` bytes inside the mapping (or NULL).
        unsafe {
            match cdb_find(c, key.as_ptr().cast(), c_len(key)?) {
                0 => return Ok(false),
                rc if rc < 0 => return Err(os_err("cdb_find")),
                _ => {}
            }
            let (pos, len) = ((*c).cdb_vpos, (*c).cdb_vlen);
            let p = cdb_get(c, len, pos);
            if p.is_null() {
                return Err(os_err("cdb_get"));
            }
            out.clear();
            out.extend_from_slice(std::slice::from_raw_parts(p.cast::<u8>(), len as usize));
        }
        Ok(true)
    }
}

#[cfg(all(target_arch = "x86_64", target_os = "linux"))]
const _: () = {
    // Checked against tinycdb 0.78's cdb.h with sizeof/offsetof in C.
    assert!(std::mem::size_of::<Cdb>() == 40);
    assert!(std::mem::offset_of!(Cdb, cdb_vpos) == 24);
    assert!(std::mem::size_of::<CdbMake>() == 6168);
    assert!(std::mem::offset_of!(CdbMake, cdb_bpos) == 4112);
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() -> anyhow::Result<()> {
        crate::stores::tests::round_trip(&mut TinyCdb::new(), 5000)
    }
}
