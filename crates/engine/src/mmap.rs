//! Read-only memory maps of immutable file ranges, and a cache-prefetch hint.
//!
//! One of the two modules of the engine that use `unsafe` (with `memtable/skiplist.rs`; both
//! listed in `UNSAFE.md`).
//!
//! Invariant: the bytes a [`Map`] is read through are never modified while mapped. The
//! constant store's index files are replaced by rename (never rewritten in place); log
//! files are appended to past the mapped `data_end`, and the only bytes a writer rewrites
//! inside a mapped range are the log header's first 84 bytes, which readers decode from a
//! separate `read` at open and never read through the map. Ordered-store tables mapped for
//! `Options::mmap_reads` are complete and synced before any version lists them (readers
//! open only listed tables), never modified afterwards, and only ever unlinked.
//! Another process truncating or
//! rewriting a mapped file would make reads fault (SIGBUS) or change under the reader; the
//! Sparkey format has always carried that assumption, and `hash/FORMAT.md` states it.
//!
//! Thread-safety: a `Map` is immutable and `Send + Sync`.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use memmap2::{Advice, Mmap, MmapOptions};

/// A read-only mapping of the first `len` bytes of a file (or an empty slice for `len` 0),
/// or, for file systems that have no maps (`MemFs`), bytes copied into memory.
#[derive(Debug)]
pub struct Map {
    bytes: Backing,
}

/// What a [`Map`]'s bytes are.
#[derive(Debug)]
enum Backing {
    /// A read-only memory map (of a file, or of anonymous memory made read-only).
    Mapped(Mmap),
    /// Bytes in the heap ([`Map::copy_of`], and the empty map of a 0-byte file).
    Copy(Box<[u8]>),
}

/// How an index was made resident (see `hash::ReadOptions::pin_index`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Residency {
    /// Pages are loaded on first touch (default).
    OnDemand,
    /// Every page is locked in memory with `mlock`.
    Locked,
    /// `mlock` was refused (e.g. `RLIMIT_MEMLOCK`); the bytes were read into memory
    /// instead, so they are resident unless the kernel must swap them out.
    Prefaulted,
}

impl Map {
    /// Maps `len` bytes of `file` from offset 0.
    pub fn new(file: &File, len: u64) -> io::Result<Map> {
        if len == 0 {
            return Ok(Map::copy_of(Vec::new()));
        }
        let len = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to map"))?;
        // SAFETY: the mapping is read-only and covers a range that Cairn never modifies
        // while mapped (see the module invariant); the caller checked that the file is at
        // least `len` bytes long.
        let map = unsafe { MmapOptions::new().len(len).map(file)? };
        Ok(Map {
            bytes: Backing::Mapped(map),
        })
    }

    /// A `Map` over `bytes` held in memory: what a file system without memory maps hands
    /// out in their place.
    pub fn copy_of(bytes: Vec<u8>) -> Map {
        Map {
            bytes: Backing::Copy(bytes.into_boxed_slice()),
        }
    }

    /// Loads the first `len` bytes of `file` into private anonymous memory (backed by
    /// transparent huge pages where the kernel allows, so random accesses miss the TLB
    /// far less), then locks it with `mlock` if permitted. The result is read-only.
    pub fn load(file: &File, len: u64) -> io::Result<(Map, Residency)> {
        use std::os::unix::fs::FileExt;
        if len == 0 {
            return Ok((Map::copy_of(Vec::new()), Residency::Locked));
        }
        let n = usize::try_from(len)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "file too large to load"))?;
        let mut anon = MmapOptions::new().len(n).map_anon()?;
        let _ = anon.advise(Advice::HugePage);
        file.read_exact_at(&mut anon, 0)?;
        let map = anon.make_read_only()?;
        let residency = if map.lock().is_ok() {
            Residency::Locked
        } else {
            Residency::Prefaulted
        };
        Ok((
            Map {
                bytes: Backing::Mapped(map),
            },
            residency,
        ))
    }

    /// The mapped bytes.
    #[inline]
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Backing::Mapped(m) => m,
            Backing::Copy(bytes) => bytes,
        }
    }

    /// Tells the kernel accesses will be random (no read-ahead), as for hash lookups.
    pub fn advise_random(&self) {
        if let Backing::Mapped(m) = &self.bytes {
            // Advice is a hint: failure changes nothing observable.
            let _ = m.advise(Advice::Random);
        }
    }
}

/// Asks the kernel to back the not-yet-touched memory `region` with transparent huge
/// pages (a hint, Linux only: call it before the memory is first written). Large tables
/// probed at random then miss the TLB far less often.
pub fn advise_huge_pages<T>(region: &mut [std::mem::MaybeUninit<T>]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = region.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(region);
        let aligned_start = start.div_ceil(PAGE) * PAGE;
        let aligned_end = end / PAGE * PAGE;
        if aligned_end > aligned_start {
            // SAFETY: the range lies inside `region`, memory this process owns, and is
            // page-aligned; MADV_HUGEPAGE only changes how the kernel backs the pages,
            // never their contents or validity. Failure is harmless and ignored.
            unsafe {
                libc::madvise(
                    aligned_start as *mut libc::c_void,
                    aligned_end - aligned_start,
                    libc::MADV_HUGEPAGE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = region;
    }
}

/// Hints the CPU to fetch the cache line holding the byte at `address`, which need not be
/// valid: a prefetch never faults and reads nothing architecturally.
#[inline(always)]
pub fn prefetch_address(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching is a hint that never faults or reads memory
        // architecturally, whatever the address.
        unsafe { _mm_prefetch::<_MM_HINT_T0>(address.cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = address;
    }
}

/// Hints the CPU to fetch every cache line holding a byte of `bytes[start..end]` (clamped
/// to `bytes`): one bounds check for the range rather than one per line.
#[inline]
pub fn prefetch_lines(bytes: &[u8], start: usize, end: usize) {
    let end = end.min(bytes.len());
    if start >= end {
        return;
    }
    let base = bytes.as_ptr();
    let last = base.wrapping_add(end - 1);
    // From the start of the line holding `start` (up to 63 bytes before it, perhaps before
    // `bytes`: an address is only a hint, `prefetch_address`) to the line holding `end - 1`.
    let first = base.wrapping_add(start);
    let mut line = first.wrapping_sub(first.addr() & 63);
    while line <= last {
        prefetch_address(line);
        line = line.wrapping_add(64);
    }
}

/// Hints the CPU to fetch the cache line holding `items[index]` (no effect if out of range).
#[inline(always)]
pub fn prefetch<T>(items: &[T], index: usize) {
    if let Some(item) = items.get(index) {
        prefetch_address(std::ptr::from_ref(item).cast::<u8>());
    }
}
