//! Bad input to the constant store gives a precise typed error naming the file, and never
//! an allocation sized by an unchecked length.
//!
//! Covered: a log and an index that do not belong together (`IdentifierMismatch` naming
//! both files), wrong magic numbers (`Reason::BadMagic`), unsupported versions
//! (`UnsupportedVersion`), absurd header counts and sizes (`Reason::HeaderField` naming the
//! field, `Reason::FileTooSmall`), entry lengths of 2^62 in plain and compressed logs, a
//! compressed block that claims to decode to 1 GiB, and index slots whose address points
//! past the log's `data_end`, past the index's `data_end`, or at a DELETE (`Corruption` of
//! the index from both `get` and `verify`).
//!
//! Allocation is measured with a counting global allocator that tracks, per thread, the
//! largest single request and the peak of live bytes while an operation runs (tests in this
//! binary run on parallel threads, so the counters are thread-local). The limits are a few
//! MiB: far below what the hostile lengths ask for (up to 2^62 bytes), far above what
//! reading these tiny files needs.
#![allow(
    unsafe_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod damage;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::Path;

use cairn::hash::raw::{self, build_index, murmur3_x86_32, IndexHeader, LogHeader};
use cairn::hash::{
    verify, write_index, Compression, IndexOptions, LogOptions, LogReader, LogWriter, ReadOptions,
    Reader,
};
use cairn::{Error, FileKind, Reason};
use damage::*;

// ---------------------------------------------------------------------------------------
// Counting allocator.

struct Counting;

thread_local! {
    static LIVE: Cell<usize> = const { Cell::new(0) };
    static PEAK: Cell<usize> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_alloc(size: usize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get().saturating_add(size);
        live.set(now);
        let _ = PEAK.try_with(|p| p.set(p.get().max(now)));
    });
    let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
}

fn note_free(size: usize) {
    let _ = LIVE.try_with(|live| live.set(live.get().saturating_sub(size)));
}

// SAFETY: every call is forwarded unchanged to the system allocator; the bookkeeping only
// touches const-initialised thread-locals of `Cell<usize>`, which never allocate.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_alloc(layout.size());
        // SAFETY: forwarded with the caller's layout.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_free(layout.size());
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_free(layout.size());
        note_alloc(new_size);
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Largest single allocation any step may make on these tiny files.
const MAX_ONE_ALLOCATION: usize = 4 << 20;
/// Largest growth of live heap bytes any step may cause.
const MAX_PEAK_GROWTH: usize = 16 << 20;

/// Runs `f` and fails if it made an allocation larger than [`MAX_ONE_ALLOCATION`] or grew
/// the thread's live heap by more than [`MAX_PEAK_GROWTH`].
fn small_alloc<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    let out = f();
    let largest = LARGEST.with(Cell::get);
    let growth = PEAK.with(Cell::get).saturating_sub(base);
    assert!(
        largest <= MAX_ONE_ALLOCATION,
        "{what}: allocated {largest} bytes at once"
    );
    assert!(
        growth <= MAX_PEAK_GROWTH,
        "{what}: live heap grew by {growth} bytes"
    );
    out
}

#[test]
fn the_counting_allocator_sees_big_allocations() {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    LARGEST.with(|l| l.set(0));
    let v = vec![1u8; 8 << 20];
    assert!(LARGEST.with(Cell::get) >= 8 << 20);
    assert!(PEAK.with(Cell::get) - base >= 8 << 20);
    drop(v);
    let r = std::panic::catch_unwind(|| {
        small_alloc("probe", || vec![0u8; MAX_ONE_ALLOCATION + 1].len())
    });
    assert!(r.is_err(), "small_alloc must reject a big allocation");
}

// ---------------------------------------------------------------------------------------
// Building files by hand.

const SEED: u32 = 0x5EED;

/// A log file: `header` (its `data_end` set to cover `body`) followed by `body`.
fn log_file(mut header: LogHeader, body: &[u8]) -> Vec<u8> {
    header.data_end = 84 + body.len() as u64;
    let mut out = header.encode().to_vec();
    out.extend_from_slice(body);
    out
}

fn log_header(compression: Compression, block_size: u32, id: u32) -> LogHeader {
    LogHeader::new(id, compression, block_size)
}

/// An index for `log` with 32-bit hashes, 4-byte addresses and one slot per entry of
/// `slots` (`(key, address)`, placed at their home slot; capacity = slots + 1 so each
/// lands alone when hashes differ).
fn index_file(log: &LogHeader, slots: &[(&[u8], u64)]) -> Vec<u8> {
    index_file_with(log, slots, 4)
}

/// As [`index_file`], with addresses of `address_size` bytes (4 or 8): with 8, an
/// address can be any 64-bit value.
fn index_file_with(log: &LogHeader, slots: &[(&[u8], u64)], address_size: usize) -> Vec<u8> {
    let capacity = slots.len() as u64 + 1;
    let slot_len = 4 + address_size;
    let mut table = vec![0u8; capacity as usize * slot_len];
    for (key, addr) in slots {
        let h = murmur3_x86_32(key, SEED);
        let mut s = (u64::from(h) % capacity) as usize;
        let address = |s: usize| s * slot_len + 4..(s + 1) * slot_len;
        while table[address(s)].iter().any(|&b| b != 0) {
            s = (s + 1) % capacity as usize;
        }
        table[s * slot_len..s * slot_len + 4].copy_from_slice(&h.to_le_bytes());
        table[address(s)].copy_from_slice(&addr.to_le_bytes()[..address_size]);
    }
    let h = IndexHeader {
        major: 1,
        minor: 1,
        file_identifier: log.file_identifier,
        hash_seed: SEED,
        data_end: log.data_end,
        max_key_len: log.max_key_len,
        max_value_len: log.max_value_len,
        num_puts: log.num_puts.max(slots.len() as u64),
        garbage_size: 0,
        num_entries: slots.len() as u64,
        address_size: address_size as u32,
        hash_size: 4,
        hash_capacity: capacity,
        max_displacement: 0,
        entry_block_bits: log.entry_block_bits(),
        hash_collisions: 0,
        total_displacement: 0,
    };
    let mut out = h.encode().to_vec();
    out.extend_from_slice(&table);
    out
}

fn corruption(
    r: Result<impl std::fmt::Debug, Error>,
    path: &Path,
    file: FileKind,
    ctx: &str,
) -> cairn::Corruption {
    let e = r.expect_err(ctx);
    let text = e.to_string();
    assert!(
        text.contains(&path.display().to_string()),
        "{ctx}: `{text}` names {}",
        path.display()
    );
    match e {
        Error::Corruption(c) => {
            assert_eq!(c.file, file, "{ctx}: {c}");
            assert_eq!(c.path, path, "{ctx}");
            *c
        }
        other => panic!("{ctx}: expected corruption, got {other:?}"),
    }
}

fn header_field(
    r: Result<impl std::fmt::Debug, Error>,
    path: &Path,
    file: FileKind,
    field: &str,
    ctx: &str,
) {
    let c = corruption(r, path, file, ctx);
    assert!(
        matches!(&c.reason, Reason::HeaderField { field: f, .. } if *f == field),
        "{ctx}: {c}"
    );
}

/// Every way to read the pair, each bounded in allocation, collected as results.
fn read_all(s: &Scratch, keys: &[&[u8]]) -> Vec<Result<(), Error>> {
    let mut out = Vec::new();
    small_alloc("open log + iterate", || {
        out.push(LogReader::open(&s.log).and_then(|l| l.iter().try_for_each(|e| e.map(drop))));
    });
    small_alloc("open pair + get + iterate", || {
        out.push(
            Reader::open_with(&s.index, &s.log, &ReadOptions::default()).and_then(|r| {
                for k in keys {
                    r.get(k)?;
                }
                r.iter().try_for_each(|e| e.map(drop))
            }),
        );
    });
    small_alloc("verify", || out.push(verify(&s.index, &s.log).map(drop)));
    small_alloc("build_index", || {
        out.push(
            LogReader::open(&s.log)
                .and_then(|l| build_index(&l, &s.index, &IndexOptions::default().seed(1), None))
                .map(drop),
        );
    });
    out
}

// ---------------------------------------------------------------------------------------
// Files that do not belong together, magic, version.

#[test]
fn an_index_paired_with_another_log_is_an_identifier_mismatch_naming_both() {
    let s = Scratch::new("pair");
    s.write(&vector("deletes", "spl"), &vector("basic", "spi"));
    let (log_id, index_id) = (
        u32_at(&vector("deletes", "spl"), 12),
        u32_at(&vector("basic", "spi"), 12),
    );
    assert_ne!(log_id, index_id);
    for (what, r) in [
        ("open", Reader::open(&s.index, &s.log).map(drop)),
        ("verify", verify(&s.index, &s.log).map(drop)),
    ] {
        let e = r.expect_err(what);
        let text = e.to_string();
        match e {
            Error::IdentifierMismatch {
                log,
                index,
                log_id: l,
                index_id: i,
            } => {
                assert_eq!(
                    (log, index, l, i),
                    (s.log.clone(), s.index.clone(), log_id, index_id),
                    "{what}"
                );
            }
            other => panic!("{what}: {other:?}"),
        }
        assert!(
            text.contains(&s.log.display().to_string())
                && text.contains(&s.index.display().to_string()),
            "{text}"
        );
        assert!(
            text.contains(&format!("{log_id:08x}")) && text.contains(&format!("{index_id:08x}")),
            "{text}"
        );
    }
    // Each file on its own is fine.
    assert!(LogReader::open(&s.log).is_ok());
}

#[test]
fn wrong_magic_is_bad_magic_for_the_right_file() {
    let s = Scratch::new("magic");
    let (log, index) = (vector("basic", "spl"), vector("basic", "spi"));
    let mut bad_log = log.clone();
    set_u32(&mut bad_log, 0, 0xDEAD_BEEF);
    s.write(&bad_log, &index);
    for r in [
        LogReader::open(&s.log).map(drop),
        Reader::open(&s.index, &s.log).map(drop),
        verify(&s.index, &s.log).map(drop),
    ] {
        let c = corruption(r, &s.log, FileKind::SparkeyLog, "log magic");
        assert_eq!(
            (c.offset, c.reason),
            (0, Reason::BadMagic { found: 0xDEAD_BEEF })
        );
    }
    let mut bad_index = index.clone();
    set_u32(&mut bad_index, 0, 0x1234_5678);
    s.write(&log, &bad_index);
    let c = corruption(
        Reader::open(&s.index, &s.log),
        &s.index,
        FileKind::SparkeyIndex,
        "index magic",
    );
    assert_eq!(
        (c.offset, c.reason),
        (0, Reason::BadMagic { found: 0x1234_5678 })
    );
    // The two files swapped: each magic is the other kind's.
    s.write(&index, &log);
    let c = corruption(
        Reader::open(&s.index, &s.log),
        &s.index,
        FileKind::SparkeyIndex,
        "swapped",
    );
    assert_eq!(c.reason, Reason::BadMagic { found: 0x49B3_9C95 });
    let c = corruption(
        LogReader::open(&s.log),
        &s.log,
        FileKind::SparkeyLog,
        "swapped",
    );
    assert_eq!(c.reason, Reason::BadMagic { found: 0x9A11_318F });
    // Not a Sparkey file at all, and an empty file.
    s.write(b"hello, world, this is not a log", &index);
    let c = corruption(
        LogReader::open(&s.log),
        &s.log,
        FileKind::SparkeyLog,
        "text",
    );
    assert_eq!(
        c.reason,
        Reason::BadMagic {
            found: u32::from_le_bytes(*b"hell")
        }
    );
    s.write(b"", &index);
    let c = corruption(
        LogReader::open(&s.log),
        &s.log,
        FileKind::SparkeyLog,
        "empty",
    );
    assert_eq!((c.offset, c.reason), (0, Reason::Truncated));
}

#[test]
fn unsupported_versions_name_the_file_and_version() {
    let s = Scratch::new("version");
    let (log, index) = (vector("basic", "spl"), vector("basic", "spi"));
    let version = |r: Result<(), Error>| match r {
        Err(Error::UnsupportedVersion {
            file,
            path,
            major,
            minor,
        }) => (file, path, major, minor),
        other => panic!("expected UnsupportedVersion, got {other:?}"),
    };
    for (major, minor) in [(2, 0), (0, 0), (1, 1), (u32::MAX, 7)] {
        let mut bad = log.clone();
        set_u32(&mut bad, 4, major);
        set_u32(&mut bad, 8, minor);
        s.write(&bad, &index);
        let want = (FileKind::SparkeyLog, s.log.clone(), major, minor);
        assert_eq!(version(LogReader::open(&s.log).map(drop)), want);
        assert_eq!(version(Reader::open(&s.index, &s.log).map(drop)), want);
        let text = verify(&s.index, &s.log).unwrap_err().to_string();
        assert!(
            text.contains(&format!("{major}.{minor}"))
                && text.contains(&s.log.display().to_string()),
            "{text}"
        );
    }
    for (major, minor) in [(2, 1), (0, 1), (1, 2)] {
        let mut bad = index.clone();
        set_u32(&mut bad, 4, major);
        set_u32(&mut bad, 8, minor);
        s.write(&log, &bad);
        assert_eq!(
            version(Reader::open(&s.index, &s.log).map(drop)),
            (FileKind::SparkeyIndex, s.index.clone(), major, minor)
        );
    }
    // Index minor version 0 has the same layout and is accepted (spec §4.1).
    let mut v10 = index.clone();
    set_u32(&mut v10, 8, 0);
    s.write(&log, &v10);
    verify(&s.index, &s.log).unwrap();
}

// ---------------------------------------------------------------------------------------
// Absurd header values.

#[test]
fn absurd_log_header_values_are_refused_by_field_without_allocating() {
    let s = Scratch::new("log-header");
    let index = vector("basic", "spi");
    let base = vector("basic", "spl");
    let data_end = u64_at(&base, 32);
    let cases: Vec<(&str, usize, u64, bool, &str)> = vec![
        // (what, offset, value, is_u64, field)
        ("num_puts > data_end", 16, data_end + 1, true, "num_puts"),
        ("num_puts = u64::MAX", 16, u64::MAX, true, "num_puts"),
        (
            "num_deletes > data_end",
            24,
            data_end + 1,
            true,
            "num_deletes",
        ),
        ("data_end < 84", 32, 83, true, "data_end"),
        ("data_end = 0", 32, 0, true, "data_end"),
        ("compression type 3", 64, 3, false, "compression_type"),
        (
            "compression type u32::MAX",
            64,
            u64::from(u32::MAX),
            false,
            "compression_type",
        ),
    ];
    for (what, off, value, wide, field) in cases {
        let mut bad = base.clone();
        if wide {
            set_u64(&mut bad, off, value);
        } else {
            set_u32(&mut bad, off, value as u32);
        }
        s.write(&bad, &index);
        for r in read_all(&s, &[b"a"]) {
            header_field(r, &s.log, FileKind::SparkeyLog, field, what);
        }
    }
    // data_end beyond the file: FileTooSmall with both sizes, even for 2^63 and u64::MAX.
    for claimed in [data_end + 1, 1 << 40, i64::MAX as u64, u64::MAX] {
        let mut bad = base.clone();
        set_u64(&mut bad, 32, claimed);
        s.write(&bad, &index);
        for r in read_all(&s, &[b"a"]) {
            let c = corruption(r, &s.log, FileKind::SparkeyLog, "data_end past the file");
            assert_eq!(
                c.reason,
                Reason::FileTooSmall {
                    expected: claimed,
                    actual: base.len() as u64
                }
            );
        }
    }
    // Compressed logs: block size 0 or above 2^30, and an in-block index width that would
    // push addresses past 64 bits.
    let snappy = vector("snappy_bs16", "spl");
    let snappy_index = vector("snappy_bs16", "spi");
    for (what, off, value, field) in [
        ("block size 0", 68, 0u32, "compression_block_size"),
        (
            "block size 2^30 + 1",
            68,
            (1 << 30) + 1,
            "compression_block_size",
        ),
        (
            "block size u32::MAX",
            68,
            u32::MAX,
            "compression_block_size",
        ),
        (
            "max_entries_per_block u32::MAX",
            80,
            u32::MAX,
            "max_entries_per_block",
        ),
    ] {
        let mut bad = snappy.clone();
        set_u32(&mut bad, off, value);
        let sparse_len = (1u64 << 32) + 100;
        if off == 80 {
            // data_end needs 33 bits, so 32 + 33 > 64; the file is extended sparsely to
            // hold it (no 4 GiB write).
            set_u64(&mut bad, 32, sparse_len);
        }
        s.write(&bad, &snappy_index);
        if off == 80 {
            std::fs::OpenOptions::new()
                .write(true)
                .open(&s.log)
                .unwrap()
                .set_len(sparse_len)
                .unwrap();
        }
        for r in read_all(&s, &[b"a"]) {
            header_field(r, &s.log, FileKind::SparkeyLog, field, what);
        }
    }
    // (The 4 GiB sparse file above is released with the scratch directory.)
    s.write(b"", b"");
}

#[test]
fn absurd_index_header_values_are_refused_by_field_without_allocating() {
    let s = Scratch::new("index-header");
    let log = vector("basic", "spl");
    let base = vector("basic", "spi");
    // (what, offset, value, width, expected field or None for FileTooSmall)
    let cases: Vec<(&str, usize, u64, usize, Option<&str>)> = vec![
        (
            "capacity u64::MAX/2",
            76,
            u64::MAX / 2,
            8,
            Some("hash_capacity"),
        ),
        ("capacity u64::MAX", 76, u64::MAX, 8, Some("hash_capacity")),
        ("capacity 0", 76, 0, 8, Some("hash_capacity")),
        ("capacity 2^40", 76, 1 << 40, 8, None),
        (
            "capacity 2^60 (no overflow, huge file)",
            76,
            1 << 59,
            8,
            None,
        ),
        ("hash_size 0", 72, 0, 4, Some("hash_size")),
        ("hash_size 16", 72, 16, 4, Some("hash_size")),
        ("address_size 2", 68, 2, 4, Some("address_size")),
        (
            "address_size u32::MAX",
            68,
            u64::from(u32::MAX),
            4,
            Some("address_size"),
        ),
        (
            "num_entries > num_puts",
            60,
            1 << 50,
            8,
            Some("num_entries"),
        ),
        (
            "max_displacement > num_entries",
            84,
            7,
            8,
            Some("max_displacement"),
        ),
        (
            "hash_collisions > num_entries",
            96,
            u64::MAX,
            8,
            Some("hash_collisions"),
        ),
        ("entry_block_bits 64", 92, 64, 4, Some("entry_block_bits")),
        ("data_end < 84", 20, 12, 8, Some("data_end")),
        (
            "data_end past the log",
            20,
            log.len() as u64 + 1,
            8,
            Some("data_end"),
        ),
        ("data_end u64::MAX", 20, u64::MAX, 8, Some("data_end")),
        (
            "max_key_len above the log's",
            28,
            1 << 40,
            8,
            Some("max_key_len"),
        ),
        (
            "max_value_len above the log's",
            36,
            u64::MAX,
            8,
            Some("max_value_len"),
        ),
    ];
    for (what, off, value, width, field) in cases {
        let mut bad = base.clone();
        if width == 8 {
            set_u64(&mut bad, off, value);
        } else {
            set_u32(&mut bad, off, value as u32);
        }
        s.write(&log, &bad);
        let results = read_all(&s, &[b"a"]);
        // The log alone reads, and indexes, fine.
        assert!(
            results[0].is_ok() && results[3].is_ok(),
            "{what}: {:?}",
            results[0]
        );
        for r in results.into_iter().skip(1).take(2) {
            match field {
                Some(field) => header_field(r, &s.index, FileKind::SparkeyIndex, field, what),
                None => {
                    let c = corruption(r, &s.index, FileKind::SparkeyIndex, what);
                    let need = value.checked_mul(8).unwrap() + 112;
                    assert_eq!(
                        c.reason,
                        Reason::FileTooSmall {
                            expected: need,
                            actual: base.len() as u64
                        },
                        "{what}"
                    );
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Absurd entry lengths.

/// An uncompressed log holding one entry whose key or value length is 2^62 (followed by a
/// few bytes), and an index slot pointing at it.
#[test]
fn an_entry_length_of_2_pow_62_is_truncation_not_an_allocation() {
    let s = Scratch::new("vlq");
    for (what, a, b) in [
        ("key", (1u64 << 62) + 1, 3u64),
        ("value", 2, 1 << 62),
        ("delete key", 0, 1 << 62),
        ("both", u64::MAX, u64::MAX),
    ] {
        let mut body = Vec::new();
        vlq(&mut body, a);
        vlq(&mut body, b);
        body.extend_from_slice(b"kvalue-bytes");
        let mut h = log_header(Compression::None, 0, 0xAB);
        h.num_puts = 1;
        let log = log_file(h.clone(), &body);
        let h = LogHeader {
            data_end: log.len() as u64,
            ..h
        };
        s.write(&log, &index_file(&h, &[(b"k", 84)]));
        let results = read_all(&s, &[b"k", b"x"]);
        for (i, r) in results.into_iter().enumerate() {
            let file = if i == 1 || i == 2 { "either" } else { "log" };
            let e = r.expect_err(what);
            let c = e
                .as_corruption()
                .unwrap_or_else(|| panic!("{what} step {i}: {e:?}"));
            assert!(
                file == "either" || c.file == FileKind::SparkeyLog,
                "{what} step {i}: {e}"
            );
            // The entry claims more bytes than the log holds: Truncated at its offset
            // (verify reports the slot that points at it as an unreadable entry).
            let slot_report = matches!(c.reason, Reason::BadEntry(_))
                && c.file == FileKind::SparkeyIndex
                && i == 2;
            assert!(
                slot_report || (c.reason == Reason::Truncated && c.offset == 84),
                "{what} step {i}: {e}"
            );
        }
    }
    // A VLQ longer than 10 bytes, or one overflowing 64 bits.
    for (what, bytes) in [
        ("11-byte vlq", vec![0xFF; 11]),
        ("65-bit vlq", [vec![0xFF; 9], vec![0x02]].concat()),
    ] {
        let mut body = bytes.clone();
        body.extend_from_slice(&[0, 0]);
        let log = log_file(log_header(Compression::None, 0, 1), &body);
        s.write(&log, &index_file(&log_header(Compression::None, 0, 1), &[]));
        let e = small_alloc(what, || {
            LogReader::open(&s.log)
                .unwrap()
                .iter()
                .find_map(Result::err)
        })
        .expect(what);
        assert_eq!(
            e.as_corruption().map(|c| (c.offset, &c.reason)),
            Some((84, &Reason::BadVarint)),
            "{what}: {e}"
        );
    }
}

/// The block compressions this build reads: Snappy, and Zstandard with the `zstd` feature.
const COMPRESSED: &[Compression] = &[
    Compression::Snappy,
    #[cfg(feature = "zstd")]
    Compression::Zstd,
];

/// Compresses `stream` as one block of `compression` (one of [`COMPRESSED`]).
fn block(compression: Compression, stream: &[u8]) -> Vec<u8> {
    let body = match compression {
        Compression::Snappy => snap::raw::Encoder::new().compress_vec(stream).unwrap(),
        #[cfg(feature = "zstd")]
        Compression::Zstd => zstd::bulk::compress(stream, 3).unwrap(),
        other => panic!("{other:?} is not a block compression of this build"),
    };
    let mut out = Vec::new();
    vlq(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out
}

#[test]
fn an_entry_length_of_2_pow_62_in_a_compressed_block_is_truncation() {
    let s = Scratch::new("vlq-block");
    for &compression in COMPRESSED {
        for (a, b) in [((1u64 << 62) + 1, 0u64), (2, 1 << 62)] {
            let mut stream = Vec::new();
            vlq(&mut stream, a);
            vlq(&mut stream, b);
            stream.extend_from_slice(b"xyz");
            let mut h = log_header(compression, 64, 9);
            h.num_puts = 1;
            h.max_entries_per_block = 1;
            let log = log_file(
                h.clone(),
                &[block(compression, &stream), block(compression, b"abc")].concat(),
            );
            let h = LogHeader {
                data_end: log.len() as u64,
                ..h
            };
            s.write(&log, &index_file(&h, &[(b"x", 84 << 1)]));
            for (i, r) in read_all(&s, &[b"x"]).into_iter().enumerate() {
                let e = r.expect_err("huge entry");
                let c = e
                    .as_corruption()
                    .unwrap_or_else(|| panic!("{compression:?} step {i}: {e:?}"));
                let slot_report =
                    c.file == FileKind::SparkeyIndex && matches!(c.reason, Reason::BadEntry(_));
                assert!(
                    slot_report
                        || (c.file == FileKind::SparkeyLog && c.reason == Reason::Truncated),
                    "{compression:?} step {i}: {e}"
                );
            }
        }
    }
}

/// A raw Snappy block whose length preamble claims `claimed` bytes, followed by a short
/// literal.
fn snappy_claiming(claimed: u64) -> Vec<u8> {
    let mut body = Vec::new();
    vlq(&mut body, claimed); // Snappy's preamble is the same varint
    body.extend_from_slice(&[0x08, 1, 0, 3]); // literal of 3 bytes: PUT "" -> "\0"... (never reached)
    let mut out = Vec::new();
    vlq(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out
}

/// A zstd frame holding one raw block of `payload`, with a declared content size of
/// `claimed` (`None`: no content size in the frame header).
#[cfg(feature = "zstd")]
fn zstd_claiming(claimed: Option<u64>, payload: &[u8]) -> Vec<u8> {
    let mut body = vec![0x28, 0xB5, 0x2F, 0xFD];
    match claimed {
        Some(n) => {
            body.push(0xE0); // 8-byte content size, single segment
            body.extend_from_slice(&n.to_le_bytes());
        }
        None => body.extend_from_slice(&[0x00, 0x00]), // no content size; 1 KiB window
    }
    let header = ((payload.len() as u32) << 3) | 1; // raw block, last
    body.extend_from_slice(&header.to_le_bytes()[..3]);
    body.extend_from_slice(payload);
    let mut out = Vec::new();
    vlq(&mut out, body.len() as u64);
    out.extend_from_slice(&body);
    out
}

#[test]
fn a_block_claiming_1_gib_is_refused_without_allocating_it() {
    let s = Scratch::new("gib");
    let gib = 1u64 << 30;
    for block_size in [16u32, 512, 1 << 20, 1 << 30] {
        for (what, compression, blk) in [
            (
                "snappy claiming 1 GiB",
                Compression::Snappy,
                snappy_claiming(gib),
            ),
            (
                "snappy claiming block size",
                Compression::Snappy,
                snappy_claiming(u64::from(block_size)),
            ),
            #[cfg(feature = "zstd")]
            (
                "zstd declaring 1 GiB",
                Compression::Zstd,
                zstd_claiming(Some(gib), b"\x02\x00ab"),
            ),
            #[cfg(feature = "zstd")]
            (
                "zstd declaring block size",
                Compression::Zstd,
                zstd_claiming(Some(u64::from(block_size)), b"\x02\x00ab"),
            ),
        ] {
            let ctx = format!("{what}, block size {block_size}");
            let mut h = log_header(compression, block_size, 5);
            h.num_puts = 1;
            h.max_entries_per_block = 1;
            let log = log_file(h.clone(), &blk);
            let h = LogHeader {
                data_end: log.len() as u64,
                ..h
            };
            s.write(&log, &index_file(&h, &[(b"\x00", 84 << 1)]));
            for (i, r) in read_all(&s, &[b"\x00"]).into_iter().enumerate() {
                let e = r.expect_err(&ctx);
                let c = e
                    .as_corruption()
                    .unwrap_or_else(|| panic!("{ctx} step {i}: {e:?}"));
                let slot_report =
                    c.file == FileKind::SparkeyIndex && matches!(c.reason, Reason::BadEntry(_));
                assert!(
                    slot_report
                        || (c.file == FileKind::SparkeyLog
                            && matches!(c.reason, Reason::Decompress(_))
                            && c.offset == 84),
                    "{ctx} step {i}: {e}"
                );
            }
        }
        #[cfg(feature = "zstd")]
        zstd_frame_without_size(&s, block_size);
    }
}

/// A frame without a declared size is decoded into a buffer that grows with its real
/// output, not one of the block size: this one holds a valid PUT "" -> "ab".
#[cfg(feature = "zstd")]
fn zstd_frame_without_size(s: &Scratch, block_size: u32) {
    let mut h = log_header(Compression::Zstd, block_size.max(16), 6);
    h.num_puts = 1;
    h.max_entries_per_block = 1;
    h.max_value_len = 2;
    h.put_size = 4;
    let log = log_file(h.clone(), &zstd_claiming(None, b"\x01\x02ab"));
    let h = LogHeader {
        data_end: log.len() as u64,
        ..h
    };
    s.write(&log, &index_file(&h, &[(b"", 84 << 1)]));
    for (i, r) in read_all(s, &[b""]).into_iter().enumerate() {
        r.unwrap_or_else(|e| panic!("frame without size, block size {block_size}, step {i}: {e}"));
    }
    let reader = Reader::open(&s.index, &s.log).unwrap();
    assert_eq!(reader.get(b"").unwrap(), Some(b"ab".to_vec()));
}

// ---------------------------------------------------------------------------------------
// Slot addresses that point where they must not.

/// The slot of `key` in the pair at `s` and its byte offset in the index file.
fn slot_of(s: &Scratch, key: &[u8]) -> (u64, usize) {
    let reader = Reader::open(&s.index, &s.log).unwrap();
    let h = reader.header().clone();
    let want = reader.get(key).unwrap().expect("key present");
    for i in 0..h.hash_capacity {
        let (_, addr) = raw::slot(&reader, i).unwrap();
        if addr != 0
            && raw::entry_at(&reader, addr)
                .map(|(k, v)| k == key && v == want)
                .unwrap_or(false)
        {
            return (
                i,
                (112 + i * h.slot_len() + u64::from(h.hash_size)) as usize,
            );
        }
    }
    panic!("no slot for {key:?}")
}

/// Points the slot of `key` at `addr` (4-byte addresses) and checks that `get(key)` and
/// `verify` report corruption of the index, `verify` at that slot.
fn check_bad_address(s: &Scratch, log: &[u8], index: &[u8], key: &[u8], addr: u64, ctx: &str) {
    let blame = Some(FileKind::SparkeyIndex);
    check_bad_address_blaming(s, log, index, key, addr, blame, ctx);
}

/// Like [`check_bad_address`]; `get_blames` is the file `get` must name (`None`: either,
/// for an address inside the covered range that leads into undecodable log bytes, which
/// the reader reports where decoding failed).
fn check_bad_address_blaming(
    s: &Scratch,
    log: &[u8],
    index: &[u8],
    key: &[u8],
    addr: u64,
    get_blames: Option<FileKind>,
    ctx: &str,
) {
    s.write(log, index);
    let (slot, addr_off) = slot_of(s, key);
    let mut bad = index.to_vec();
    set_u32(&mut bad, addr_off, u32::try_from(addr).unwrap());
    s.write(log, &bad);
    let reader = Reader::open(&s.index, &s.log).unwrap();
    match get_blames {
        Some(kind) => {
            let c = corruption(reader.get(key), &s.index, kind, ctx);
            assert!(matches!(c.reason, Reason::BadEntry(_)), "{ctx}: {c}");
        }
        None => {
            let e = reader.get(key).expect_err(ctx);
            assert!(e.as_corruption().is_some(), "{ctx}: {e:?}");
        }
    }
    let c = corruption(
        verify(&s.index, &s.log),
        &s.index,
        FileKind::SparkeyIndex,
        ctx,
    );
    let slot_len = reader.header().slot_len();
    assert_eq!(
        c.offset,
        112 + slot * slot_len,
        "{ctx}: verify names the slot: {c}"
    );
    assert!(matches!(c.reason, Reason::BadEntry(_)), "{ctx}: {c}");
}

#[test]
fn slot_addresses_past_data_end_or_at_a_delete_are_index_corruption() {
    let s = Scratch::new("slots");
    // Uncompressed: past the log's data_end, far past it, before the header, at a DELETE.
    let (log, index) = (vector("deletes", "spl"), vector("deletes", "spi"));
    let truth = Truth::load("deletes");
    let key = truth.expected[0].0.clone();
    let data_end = u64_at(&log, 32);
    check_bad_address(&s, &log, &index, &key, data_end, "address = data_end");
    check_bad_address(
        &s,
        &log,
        &index,
        &key,
        data_end + 1000,
        "address past data_end",
    );
    check_bad_address(
        &s,
        &log,
        &index,
        &key,
        u64::from(u32::MAX),
        "address u32::MAX",
    );
    check_bad_address(&s, &log, &index, &key, 3, "address inside the header");
    let mut at = 84;
    let mut delete_at = None;
    for ((is_put, _, _), size) in truth.log.iter().zip(truth.entry_sizes()) {
        if !is_put && delete_at.is_none() {
            delete_at = Some(at);
        }
        at += size;
    }
    check_bad_address(
        &s,
        &log,
        &index,
        &key,
        delete_at.unwrap(),
        "address of a DELETE",
    );

    // Compressed (bits of in-block index): block past data_end, entry index past the
    // block's entries, a DELETE.
    let s = Scratch::new("slots-snappy");
    let mut w = LogWriter::create(
        &s.log,
        &LogOptions::default().compression(Compression::Snappy, 64),
    )
    .unwrap();
    w.put(b"alpha", b"1").unwrap();
    w.delete(b"beta").unwrap();
    w.put(b"gamma", b"3").unwrap();
    w.close().unwrap();
    write_index(&s.index, &s.log, &IndexOptions::default()).unwrap();
    let (log, index) = (
        std::fs::read(&s.log).unwrap(),
        std::fs::read(&s.index).unwrap(),
    );
    assert_eq!(u32_at(&index, 92), 2, "3 entries in one block: 2 bits");
    let data_end = u64_at(&log, 32);
    check_bad_address(
        &s,
        &log,
        &index,
        b"alpha",
        data_end << 2,
        "block at data_end",
    );
    let past = (84 << 2) | 3;
    check_bad_address_blaming(&s, &log, &index, b"alpha", past, None, "4th of 3 entries");
    check_bad_address(
        &s,
        &log,
        &index,
        b"alpha",
        (84 << 2) | 1,
        "compressed DELETE",
    );
    check_bad_address_blaming(
        &s,
        &log,
        &index,
        b"alpha",
        85 << 2,
        None,
        "not a block start",
    );
}

#[test]
fn a_slot_past_the_index_data_end_is_corruption_even_if_the_log_grew() {
    // The index was built, then the log was appended to: the new entries are in the log
    // but outside what the index covers, so a slot pointing there is damage.
    let s = Scratch::new("grown");
    let mut w = LogWriter::create(&s.log, &LogOptions::default()).unwrap();
    w.put(b"one", b"1").unwrap();
    w.put(b"two", b"2").unwrap();
    w.close().unwrap();
    write_index(&s.index, &s.log, &IndexOptions::default()).unwrap();
    let index_end = u64_at(&std::fs::read(&s.index).unwrap(), 20);
    let mut w = LogWriter::append(&s.log).unwrap();
    w.put(b"one", b"new").unwrap();
    w.close().unwrap();
    let (log, index) = (
        std::fs::read(&s.log).unwrap(),
        std::fs::read(&s.index).unwrap(),
    );
    assert!(u64_at(&log, 32) > index_end);
    // Unchanged, the stale index still answers from what it covers.
    assert_eq!(
        Reader::open(&s.index, &s.log).unwrap().get(b"one").unwrap(),
        Some(b"1".to_vec())
    );
    verify(&s.index, &s.log).unwrap();
    check_bad_address(
        &s,
        &log,
        &index,
        b"one",
        index_end,
        "address of an entry appended after indexing",
    );
}

// ---------------------------------------------------------------------------------------
// Block packing.

/// Regression (found by the `sparkey_index` fuzz target): `get_many` prefetches the log
/// entry that the slot of a key 16 places ahead points at, and computed the second cache
/// line of an address near 2^64 from a damaged index as `address + 64`, which overflowed (a
/// panic where overflow is checked). The prefetch is now a hint that saturates; the lookup
/// itself refuses the address as corruption.
#[test]
fn get_many_over_an_address_near_2_pow_64_is_corruption_not_overflow() {
    let s = Scratch::new("far-address");
    let mut body = Vec::new();
    vlq(&mut body, 2);
    vlq(&mut body, 1);
    body.extend_from_slice(b"kv");
    let mut h = log_header(Compression::None, 0, 0x5A);
    h.num_puts = 1;
    let log = log_file(h.clone(), &body);
    let h = LogHeader {
        data_end: log.len() as u64,
        ..h
    };
    s.write(&log, &index_file_with(&h, &[(b"k", u64::MAX - 10)], 8));
    let reader = Reader::open_with(&s.index, &s.log, &ReadOptions::default())
        .expect("the header is valid; slots are checked when read");
    let keys = vec![b"k".to_vec(); 40];
    let mut answered = 0;
    let e = reader
        .get_many(&keys, |_, _| answered += 1)
        .expect_err("the slot's address lies past the log");
    assert!(e.as_corruption().is_some(), "{e:?}");
    assert_eq!(answered, 0, "nothing is answered before the bad slot");
}

/// Regression (found by the `sparkey_log_entries` fuzz target): a compressed log in which
/// an entry starts inside the block that holds the tail of the previous, block-spanning
/// entry. Writers never produce this (spec §3.5, rule 3: the tail's block is closed right
/// after the entry), and Sparkey addresses (`block << bits | i`) count entries from the
/// start of the block, where the tail is. Cairn iterated such a log, indexed it with `i`
/// counted after the tail, and lookups then decoded the tail as an entry: a present key
/// silently read as absent. The log is now refused as corrupt where the misplaced entry
/// starts, so no index can be built from it.
#[test]
fn an_entry_starting_after_the_tail_of_a_spanning_entry_is_corruption() {
    let s = Scratch::new("packing");
    for &compression in COMPRESSED {
        // PUT "spanning" -> 12 bytes (22 bytes: spans two 16-byte blocks), then PUT "k" -> "v"
        // starting in the second block, after the tail.
        let mut stream = Vec::new();
        vlq(&mut stream, 9);
        vlq(&mut stream, 12);
        stream.extend_from_slice(b"spanning");
        stream.extend_from_slice(b"twelve bytes");
        stream.extend_from_slice(&[2, 1, b'k', b'v']);
        let (first, second) = stream.split_at(16);
        let body = [block(compression, first), block(compression, second)].concat();
        let mut h = log_header(compression, 16, 77);
        h.num_puts = 2;
        h.max_entries_per_block = 2;
        h.max_key_len = 8;
        h.max_value_len = 12;
        h.put_size = 26;
        let log = log_file(h.clone(), &body);
        let second_block = 84 + block(compression, first).len() as u64;
        s.write(&log, &[]);
        let reader = LogReader::open(&s.log).unwrap();
        let mut it = reader.iter();
        let first_entry = it.next().unwrap().unwrap();
        assert_eq!(
            (first_entry.key.as_slice(), first_entry.value.as_slice()),
            (&b"spanning"[..], &b"twelve bytes"[..])
        );
        let e = it
            .next()
            .expect("an error, not the misplaced entry")
            .unwrap_err();
        let c = e
            .as_corruption()
            .unwrap_or_else(|| panic!("{compression:?}: {e:?}"));
        assert_eq!(
            (c.file, c.offset),
            (FileKind::SparkeyLog, second_block),
            "{compression:?}: {e}"
        );
        assert!(
            matches!(c.reason, Reason::BadEntry(_)),
            "{compression:?}: {e}"
        );
        assert!(it.next().is_none());
        // Indexing refuses it too, rather than writing an index that misses "k".
        let built = build_index(&reader, &s.index, &IndexOptions::default(), None);
        let e = built.expect_err("indexing a misplaced entry");
        assert!(
            e.as_corruption().is_some_and(|c| c.offset == second_block),
            "{compression:?}: {e}"
        );
    }
}

/// No writer splits an entry header between two blocks, but such a log decodes when read in
/// order, so an index built from it must serve every key. The entry is addressed by the
/// block holding its first byte. Lookups once derived a block's entry starts only from
/// headers wholly inside it, missed the split entry, and reported a freshly built pair as
/// corrupt.
#[test]
fn an_entry_header_split_between_blocks_is_found_by_lookups() {
    let s = Scratch::new("split-head");
    let long_key = vec![b'k'; 130]; // A = 131: a two-byte VLQ
    let mut entries: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for (key, value) in [
        (b"abc".to_vec(), b"de".to_vec()),
        (long_key.clone(), b"v".to_vec()),
        (b"z".to_vec(), b"y".to_vec()),
    ] {
        let mut e = Vec::new();
        vlq(&mut e, key.len() as u64 + 1);
        vlq(&mut e, value.len() as u64);
        e.extend_from_slice(&key);
        e.extend_from_slice(&value);
        entries.push((key, e));
    }
    let (first, second, third) = (&entries[0].1, &entries[1].1, &entries[2].1);
    // Split inside the A VLQ (cut 1) and between the A and B VLQs (cut 2).
    for cut in [1usize, 2] {
        for &compression in COMPRESSED {
            let ctx = format!("{compression:?}, header cut after {cut} byte(s)");
            let mut head = first.clone();
            head.extend_from_slice(&second[..cut]);
            let body = [
                block(compression, &head),
                block(compression, &second[cut..]),
                block(compression, third),
            ]
            .concat();
            let mut h = log_header(compression, 256, 31);
            h.num_puts = 3;
            h.max_entries_per_block = 2;
            h.max_key_len = 130;
            h.max_value_len = 2;
            h.put_size = (first.len() + second.len() + third.len()) as u64;
            let log = log_file(h, &body);
            s.write(&log, &[]);
            write_index(&s.index, &s.log, &IndexOptions::default().fresh(true))
                .unwrap_or_else(|e| panic!("{ctx}: index: {e}"));
            let reader = Reader::open(&s.index, &s.log).unwrap();
            for (key, _) in &entries {
                let got = reader
                    .get(key)
                    .unwrap_or_else(|e| panic!("{ctx}: get {key:?}: {e}"));
                assert!(got.is_some(), "{ctx}: {key:?} missing");
            }
            assert_eq!(reader.get(&long_key).unwrap().as_deref(), Some(&b"v"[..]));
            assert_eq!(reader.get(b"abc").unwrap().as_deref(), Some(&b"de"[..]));
            assert_eq!(reader.get(b"z").unwrap().as_deref(), Some(&b"y"[..]));
            assert_eq!(reader.get(b"absent").unwrap(), None, "{ctx}");
            drop(reader);
            verify(&s.index, &s.log).unwrap_or_else(|e| panic!("{ctx}: verify: {e}"));
        }
    }
}

/// The other side of `a_block_claiming_1_gib_is_refused_without_allocating_it`: a genuinely
/// compressible block far larger than the first buffer guess (a 900 KB run compresses to a
/// few dozen bytes) still decodes, with and without a declared frame size.
#[cfg(feature = "zstd")]
#[test]
fn a_highly_compressible_zstd_block_still_decodes() {
    let s = Scratch::new("zstd-run");
    let value = vec![b'z'; 900_000];
    let mut w = LogWriter::create(
        &s.log,
        &LogOptions::default().compression(Compression::Zstd, 1 << 20),
    )
    .unwrap();
    w.put(b"run", &value).unwrap();
    w.put(b"after", b"x").unwrap();
    w.close().unwrap();
    write_index(&s.index, &s.log, &IndexOptions::default()).unwrap();
    assert!(
        std::fs::metadata(&s.log).unwrap().len() < 1000,
        "one tiny frame"
    );
    let reader = Reader::open(&s.index, &s.log).unwrap();
    assert_eq!(reader.get(b"run").unwrap().as_deref(), Some(&value[..]));
    assert_eq!(reader.get(b"after").unwrap().as_deref(), Some(&b"x"[..]));
    verify(&s.index, &s.log).unwrap();

    // The same entries in a frame that does not declare its size (a streaming encoder).
    let mut stream = Vec::new();
    for (k, v) in [(&b"run"[..], &value[..]), (b"after", b"x")] {
        vlq(&mut stream, k.len() as u64 + 1);
        vlq(&mut stream, v.len() as u64);
        stream.extend_from_slice(k);
        stream.extend_from_slice(v);
    }
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    enc.include_contentsize(false).unwrap();
    std::io::Write::write_all(&mut enc, &stream).unwrap();
    let frame = enc.finish().unwrap();
    assert_eq!(
        zstd::zstd_safe::get_frame_content_size(&frame).unwrap(),
        None
    );
    let mut body = Vec::new();
    vlq(&mut body, frame.len() as u64);
    body.extend_from_slice(&frame);
    let mut h = log_header(Compression::Zstd, 1 << 20, 8);
    h.num_puts = 2;
    h.max_entries_per_block = 2;
    h.max_key_len = 5;
    h.max_value_len = value.len() as u64;
    h.put_size = stream.len() as u64;
    s.write(&log_file(h, &body), b"");
    write_index(&s.index, &s.log, &IndexOptions::default()).unwrap();
    let reader = Reader::open(&s.index, &s.log).unwrap();
    assert_eq!(reader.get(b"run").unwrap().as_deref(), Some(&value[..]));
    assert_eq!(reader.get(b"after").unwrap().as_deref(), Some(&b"x"[..]));
    verify(&s.index, &s.log).unwrap();
}

/// Without the `zstd` feature a Zstandard log is refused with a typed error naming the
/// feature, not as damage: the writer creates nothing, and reading, indexing or appending to
/// an existing one is refused before any block is read.
#[cfg(not(feature = "zstd"))]
#[test]
fn zstd_logs_need_the_zstd_feature() {
    let s = Scratch::new("no-zstd");
    let options = LogOptions::default().compression(Compression::Zstd, 4096);
    let err = LogWriter::create(&s.log, &options).unwrap_err();
    assert!(
        matches!(
            err,
            Error::FeatureDisabled {
                feature: "zstd",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(!s.log.exists(), "nothing is created");

    let mut h = log_header(Compression::Zstd, 4096, 3);
    h.num_puts = 1;
    h.max_entries_per_block = 1;
    s.write(
        &log_file(h, &block(Compression::Snappy, b"\x02\x01kv")),
        &[],
    );
    let errors = [
        LogReader::open(&s.log).unwrap_err(),
        write_index(&s.index, &s.log, &IndexOptions::default()).unwrap_err(),
        LogWriter::append(&s.log).unwrap_err(),
    ];
    for e in errors {
        assert!(
            matches!(&e, Error::FeatureDisabled { feature: "zstd", what } if what.contains("log file")),
            "{e:?}"
        );
        assert!(!e.is_corruption());
        assert!(e.to_string().contains("\"zstd\" feature"), "{e}");
    }
}
