//! Helpers for the bad-input tests (`sparkey_bad_input.rs`, `sparkey_truncated_files.rs`,
//! `sparkey_flipped_bytes.rs`): reading the reference vectors, writing damaged copies into
//! a scratch directory, running every read path over a damaged pair, a per-case time bound,
//! and a small restatement of the header checks of `shared/spec/sparkey-format.md`
//! (§3.2, §4.3, plus Cairn's stricter checks) used as an oracle for header damage.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cairn::hash::{verify, LogEntry, LogReader, ReadOptions, Reader, VerifyReport};
use cairn::{Error, FileKind, Reason};

/// The reference vectors: `../shared/vectors/sparkey` from the repository root.
pub const VECTORS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../../shared/vectors/sparkey"
);

/// Every vector.
pub const ALL: [&str; 13] = [
    "empty",
    "single_put",
    "basic",
    "overwrite",
    "deletes",
    "binary_edge",
    "hash32_10k",
    "hash64_small",
    "multi_session",
    "snappy_bs16",
    "snappy_bs65536",
    "zstd_bs512",
    "addr64_hash32",
];

/// Whether this build reads vector `case`: the Zstandard ones need the `zstd` feature.
pub fn readable(case: &str) -> bool {
    cfg!(feature = "zstd") || !case.starts_with("zstd")
}

/// Vectors small enough to damage at every byte (covering none / snappy / zstd, 32- and
/// 64-bit hashes, deletes and binary keys).
pub const SMALL: [&str; 6] = [
    "basic",
    "deletes",
    "binary_edge",
    "snappy_bs16",
    "zstd_bs512",
    "hash64_small",
];

/// How long one damaged case may take before it counts as a hang.
pub const CASE_LIMIT: Duration = Duration::from_secs(5);

pub fn vector_path(case: &str, ext: &str) -> PathBuf {
    Path::new(VECTORS).join(format!("{case}.{ext}"))
}

pub fn vector(case: &str, ext: &str) -> Vec<u8> {
    std::fs::read(vector_path(case, ext)).unwrap_or_else(|e| panic!("read {case}.{ext}: {e}"))
}

pub fn u32_at(b: &[u8], off: usize) -> u32 {
    u32::from_le_bytes(b[off..off + 4].try_into().unwrap())
}

pub fn u64_at(b: &[u8], off: usize) -> u64 {
    u64::from_le_bytes(b[off..off + 8].try_into().unwrap())
}

pub fn set_u32(b: &mut [u8], off: usize, v: u32) {
    b[off..off + 4].copy_from_slice(&v.to_le_bytes());
}

pub fn set_u64(b: &mut [u8], off: usize, v: u64) {
    b[off..off + 8].copy_from_slice(&v.to_le_bytes());
}

pub fn vlq(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

pub fn vlq_len(v: u64) -> u64 {
    let mut out = Vec::new();
    vlq(&mut out, v);
    out.len() as u64
}

/// A deterministic pseudo-random sequence (no extra dependency; reproducible failures).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// A scratch directory holding one log/index pair that tests overwrite case after case.
pub struct Scratch {
    _dir: tempfile::TempDir,
    pub log: PathBuf,
    pub index: PathBuf,
}

impl Scratch {
    pub fn new(name: &str) -> Scratch {
        let base = if Path::new("/dev/shm").is_dir() {
            Some(Path::new("/dev/shm"))
        } else {
            None
        };
        let dir = match base {
            Some(b) => tempfile::Builder::new()
                .prefix("cairn-bad-input")
                .tempdir_in(b)
                .unwrap(),
            None => tempfile::tempdir().unwrap(),
        };
        let log = dir.path().join(format!("{name}.spl"));
        let index = dir.path().join(format!("{name}.spi"));
        Scratch {
            _dir: dir,
            log,
            index,
        }
    }

    /// Writes both files (whole-file replacement; no reader of the previous case is alive).
    pub fn write(&self, log: &[u8], index: &[u8]) {
        std::fs::write(&self.log, log).unwrap();
        std::fs::write(&self.index, index).unwrap();
    }
}

/// What the vector's log holds, for checking what damaged files return.
pub struct Truth {
    /// Every key of the log (live, dead, deleted), plus a few that were never written.
    pub keys: Vec<Vec<u8>>,
    /// Live key → value.
    pub live: HashMap<Vec<u8>, Vec<u8>>,
    /// Every value ever PUT for each key.
    pub history: HashMap<Vec<u8>, HashSet<Vec<u8>>>,
    /// The `.expected` lines (hash-iterator order).
    pub expected: Vec<(Vec<u8>, Vec<u8>)>,
    /// The `.log.expected` entries as (is_put, key, value).
    pub log: Vec<(bool, Vec<u8>, Vec<u8>)>,
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

impl Truth {
    pub fn load(case: &str) -> Truth {
        let expected: Vec<(Vec<u8>, Vec<u8>)> =
            std::fs::read_to_string(vector_path(case, "expected"))
                .unwrap()
                .lines()
                .map(|l| {
                    let (k, v) = l.split_once('\t').unwrap();
                    (unhex(k), unhex(v))
                })
                .collect();
        let log: Vec<(bool, Vec<u8>, Vec<u8>)> =
            std::fs::read_to_string(vector_path(case, "log.expected"))
                .unwrap()
                .lines()
                .map(|l| {
                    let f: Vec<&str> = l.split('\t').collect();
                    match f[0] {
                        "PUT" => (true, unhex(f[1]), unhex(f[2])),
                        "DELETE" => (false, unhex(f[1]), Vec::new()),
                        other => panic!("bad line {other}"),
                    }
                })
                .collect();
        let mut history: HashMap<Vec<u8>, HashSet<Vec<u8>>> = HashMap::new();
        let mut keys: Vec<Vec<u8>> = Vec::new();
        let mut seen = HashSet::new();
        for (is_put, k, v) in &log {
            if seen.insert(k.clone()) {
                keys.push(k.clone());
            }
            if *is_put {
                history.entry(k.clone()).or_default().insert(v.clone());
            }
        }
        for i in 0..4 {
            keys.push(format!("never-written-{i}").into_bytes());
        }
        let live = expected.iter().cloned().collect();
        Truth {
            keys,
            live,
            history,
            expected,
            log,
        }
    }

    /// Encoded size of each log entry (uncompressed stream), in log order.
    pub fn entry_sizes(&self) -> Vec<u64> {
        self.log
            .iter()
            .map(|(is_put, k, v)| {
                let k = k.len() as u64;
                if *is_put {
                    vlq_len(k + 1) + vlq_len(v.len() as u64) + k + v.len() as u64
                } else {
                    1 + vlq_len(k) + k
                }
            })
            .collect()
    }
}

/// Upper bound on entries any iterator may yield over a small damaged file: far more than
/// any vector holds, so exceeding it means an iterator does not terminate.
pub const MAX_ITEMS: usize = 10_000_000;

/// The result of one lookup.
pub type Lookup = (Vec<u8>, Result<Option<Vec<u8>>, Error>);
/// What an iterator yielded, and the error it ended with.
pub type Drained<T> = Option<(Vec<T>, Option<Error>)>;

/// Everything the read paths returned for one damaged pair.
pub struct Outcome {
    pub log_open: Result<(), Error>,
    /// Entries yielded before the iterator ended, and the error it ended with (if any).
    pub log_iter: Option<(Vec<LogEntry>, Option<Error>)>,
    pub pair_open: Result<(), Error>,
    /// `(key, result)` for every lookup.
    pub gets: Vec<Lookup>,
    pub hash_iter: Drained<(Vec<u8>, Vec<u8>)>,
    pub verify: Result<VerifyReport, Error>,
}

impl Outcome {
    /// Every error returned anywhere.
    pub fn errors(&self) -> Vec<&Error> {
        let mut out = Vec::new();
        if let Err(e) = &self.log_open {
            out.push(e);
        }
        if let Some((_, Some(e))) = &self.log_iter {
            out.push(e);
        }
        if let Err(e) = &self.pair_open {
            out.push(e);
        }
        for (_, r) in &self.gets {
            if let Err(e) = r {
                out.push(e);
            }
        }
        if let Some((_, Some(e))) = &self.hash_iter {
            out.push(e);
        }
        if let Err(e) = &self.verify {
            out.push(e);
        }
        out
    }

    /// True if every path succeeded and returned exactly what the vector holds.
    pub fn is_intact(&self, truth: &Truth) -> bool {
        self.errors().is_empty()
            && self
                .log_iter
                .as_ref()
                .is_some_and(|(v, _)| v.len() == truth.log.len())
            && self
                .hash_iter
                .as_ref()
                .is_some_and(|(v, _)| *v == truth.expected)
            && self
                .gets
                .iter()
                .all(|(k, r)| matches!(r, Ok(v) if v.as_ref() == truth.live.get(k)))
    }
}

/// Drains an iterator of results: the items before the first error, and that error. Fails
/// the test if an item follows an error or if the iterator never ends.
fn drain<T>(it: impl Iterator<Item = Result<T, Error>>, what: &str) -> (Vec<T>, Option<Error>) {
    let mut items = Vec::new();
    let mut it = it.fuse();
    while let Some(r) = it.next() {
        match r {
            Ok(x) => {
                items.push(x);
                assert!(
                    items.len() <= MAX_ITEMS,
                    "{what}: iterator does not terminate"
                );
            }
            Err(e) => {
                assert!(
                    it.next().is_none(),
                    "{what}: iterator yielded an item after an error ({e})"
                );
                return (items, Some(e));
            }
        }
    }
    (items, None)
}

/// Opens, iterates, looks up every key of `truth` and verifies the pair at `s`.
pub fn exercise(s: &Scratch, truth: &Truth) -> Outcome {
    let (log_open, log_iter) = match LogReader::open(&s.log) {
        Ok(log) => (Ok(()), Some(drain(log.iter(), "log iterator"))),
        Err(e) => (Err(e), None),
    };
    let options = ReadOptions::default().block_cache_bytes(1 << 20);
    let (pair_open, gets, hash_iter) = match Reader::open_with(&s.index, &s.log, &options) {
        Ok(reader) => {
            let gets = truth
                .keys
                .iter()
                .map(|k| (k.clone(), reader.get(k)))
                .collect();
            let iter = drain(reader.iter(), "hash iterator");
            (Ok(()), gets, Some(iter))
        }
        Err(e) => (Err(e), Vec::new(), None),
    };
    let verify = verify(&s.index, &s.log);
    Outcome {
        log_open,
        log_iter,
        pair_open,
        gets,
        hash_iter,
        verify,
    }
}

/// Asserts an error is typed as damage (not I/O, not a caller error) and names the file
/// it is about.
pub fn assert_typed(e: &Error, s: &Scratch, ctx: &str) {
    assert!(
        e.is_corruption(),
        "{ctx}: expected a corruption-class error, got {e:?}"
    );
    let text = e.to_string();
    let log = s.log.display().to_string();
    let index = s.index.display().to_string();
    match e {
        Error::IdentifierMismatch { .. } => {
            assert!(
                text.contains(&log) && text.contains(&index),
                "{ctx}: {text} must name both files"
            )
        }
        Error::Corruption(c) => {
            let named = match c.file {
                FileKind::SparkeyLog => &log,
                FileKind::SparkeyIndex => &index,
                _ => panic!("{ctx}: unexpected file kind {:?}", c.file),
            };
            assert!(
                text.contains(named.as_str()),
                "{ctx}: {text} must name {named}"
            );
            assert_eq!(
                c.path.display().to_string(),
                *named,
                "{ctx}: path matches the file kind"
            );
        }
        Error::UnsupportedVersion { file, path, .. } => {
            let named = if *file == FileKind::SparkeyLog {
                &s.log
            } else {
                &s.index
            };
            assert_eq!(path, named, "{ctx}");
            assert!(text.contains(&named.display().to_string()), "{ctx}: {text}");
        }
        other => panic!("{ctx}: unexpected error {other:?}"),
    }
}

/// A coarse description of an error, compared against the header oracle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    BadMagic(FileKind),
    Version(FileKind),
    Truncated(FileKind),
    TooSmall(FileKind),
    Field(FileKind, &'static str),
    Mismatch,
    Other(String),
}

pub fn kind_of(e: &Error) -> Kind {
    match e {
        Error::Corruption(c) => match &c.reason {
            Reason::BadMagic { .. } => Kind::BadMagic(c.file),
            Reason::Truncated => Kind::Truncated(c.file),
            Reason::FileTooSmall { .. } => Kind::TooSmall(c.file),
            Reason::HeaderField { field, .. } => Kind::Field(c.file, field),
            other => Kind::Other(format!("{:?} {other:?}", c.file)),
        },
        Error::UnsupportedVersion { file, .. } => Kind::Version(*file),
        Error::IdentifierMismatch { .. } => Kind::Mismatch,
        other => Kind::Other(format!("{other:?}")),
    }
}

fn bitlen(x: u64) -> u32 {
    64 - x.leading_zeros()
}

const LOG: FileKind = FileKind::SparkeyLog;
const INDEX: FileKind = FileKind::SparkeyIndex;

/// Every reason the log header in `b` (a file of `file_len` bytes) must be refused, per
/// the format spec §3.2 (magic, version, `data_end < 84`, counts above `data_end`, unknown
/// compression, file shorter than `data_end`) and Cairn's checks (block size 1..=2^30,
/// entry addresses fit in 64 bits). Empty: the header is acceptable.
pub fn log_header_faults(b: &[u8], file_len: u64) -> Vec<Kind> {
    if u32_at(b, 0) != 0x49B3_9C95 {
        return vec![Kind::BadMagic(LOG)];
    }
    if u32_at(b, 4) != 1 || u32_at(b, 8) > 0 {
        return vec![Kind::Version(LOG)];
    }
    let (num_puts, num_deletes, data_end) = (u64_at(b, 16), u64_at(b, 24), u64_at(b, 32));
    let (compression, block_size, mepb) = (u32_at(b, 64), u32_at(b, 68), u32_at(b, 80));
    let mut out = Vec::new();
    if data_end < 84 {
        out.push(Kind::Field(LOG, "data_end"));
    }
    if num_puts > data_end {
        out.push(Kind::Field(LOG, "num_puts"));
    }
    if num_deletes > data_end {
        out.push(Kind::Field(LOG, "num_deletes"));
    }
    if compression > 2 {
        out.push(Kind::Field(LOG, "compression_type"));
    }
    if !out.is_empty() {
        return out;
    }
    if file_len < data_end {
        return vec![Kind::TooSmall(LOG)];
    }
    if compression != 0 {
        if block_size == 0 || block_size > 1 << 30 {
            out.push(Kind::Field(LOG, "compression_block_size"));
        }
        if bitlen(u64::from(mepb)) + bitlen(data_end) > 64 {
            out.push(Kind::Field(LOG, "max_entries_per_block"));
        }
    }
    out
}

/// Every reason the index header in `b` (a file of `file_len` bytes) must be refused on its
/// own (spec §4.3 steps 1–2 and 6, plus Cairn's checks).
pub fn index_header_faults(b: &[u8], file_len: u64) -> Vec<Kind> {
    if u32_at(b, 0) != 0x9A11_318F {
        return vec![Kind::BadMagic(INDEX)];
    }
    if u32_at(b, 4) != 1 || u32_at(b, 8) > 1 {
        return vec![Kind::Version(INDEX)];
    }
    let data_end = u64_at(b, 20);
    let num_puts = u64_at(b, 44);
    let num_entries = u64_at(b, 60);
    let (address_size, hash_size) = (u32_at(b, 68), u32_at(b, 72));
    let capacity = u64_at(b, 76);
    let max_displacement = u64_at(b, 84);
    let bits = u32_at(b, 92);
    let collisions = u64_at(b, 96);
    let mut out = Vec::new();
    if hash_size != 4 && hash_size != 8 {
        out.push(Kind::Field(INDEX, "hash_size"));
    }
    if num_entries > num_puts {
        out.push(Kind::Field(INDEX, "num_entries"));
    }
    if max_displacement > num_entries {
        out.push(Kind::Field(INDEX, "max_displacement"));
    }
    if collisions > num_entries {
        out.push(Kind::Field(INDEX, "hash_collisions"));
    }
    if address_size != 4 && address_size != 8 {
        out.push(Kind::Field(INDEX, "address_size"));
    }
    if capacity == 0 {
        out.push(Kind::Field(INDEX, "hash_capacity"));
    }
    if num_entries > capacity {
        out.push(Kind::Field(INDEX, "num_entries"));
    }
    if bits >= 64 {
        out.push(Kind::Field(INDEX, "entry_block_bits"));
    }
    if data_end < 84 {
        out.push(Kind::Field(INDEX, "data_end"));
    }
    if !out.is_empty() {
        return out;
    }
    let slot = u64::from(hash_size) + u64::from(address_size);
    match capacity.checked_mul(slot).and_then(|n| n.checked_add(112)) {
        None => vec![Kind::Field(INDEX, "hash_capacity")],
        Some(need) if file_len < need => vec![Kind::TooSmall(INDEX)],
        Some(_) => Vec::new(),
    }
}

/// Every reason an acceptable index header `ib` cannot belong to the acceptable log header
/// `lb` (spec §4.3 steps 4–5, plus the 64-bit address check for compressed logs).
pub fn pair_faults(ib: &[u8], lb: &[u8]) -> Vec<Kind> {
    if u32_at(ib, 12) != u32_at(lb, 12) {
        return vec![Kind::Mismatch];
    }
    let mut out = Vec::new();
    if u64_at(ib, 20) > u64_at(lb, 32) {
        out.push(Kind::Field(INDEX, "data_end"));
    }
    if u64_at(ib, 28) > u64_at(lb, 40) {
        out.push(Kind::Field(INDEX, "max_key_len"));
    }
    if u64_at(ib, 36) > u64_at(lb, 48) {
        out.push(Kind::Field(INDEX, "max_value_len"));
    }
    if u32_at(lb, 64) != 0 && u32_at(ib, 92) + bitlen(u64_at(ib, 20)) > 64 {
        out.push(Kind::Field(INDEX, "entry_block_bits"));
    }
    out
}

/// What opening the pair must fail with (any of the returned kinds), or empty for success.
pub fn open_faults(ib: &[u8], index_len: u64, lb: &[u8], log_len: u64) -> Vec<Kind> {
    let f = index_header_faults(ib, index_len);
    if !f.is_empty() {
        return f;
    }
    let f = log_header_faults(lb, log_len);
    if !f.is_empty() {
        return f;
    }
    pair_faults(ib, lb)
}

/// Asserts `r` failed with one of `want` (or succeeded if `want` is empty).
pub fn assert_fault<T: std::fmt::Debug>(r: &Result<T, Error>, want: &[Kind], ctx: &str) {
    match (r, want.is_empty()) {
        (Ok(_), true) => {}
        (Ok(v), false) => panic!("{ctx}: succeeded ({v:?}) but must fail with one of {want:?}"),
        (Err(e), true) => panic!("{ctx}: must succeed, failed with {e}"),
        (Err(e), false) => assert!(
            want.contains(&kind_of(e)),
            "{ctx}: failed with {e} ({:?}), expected one of {want:?}",
            kind_of(e)
        ),
    }
}

/// Runs `f` on every case in a worker thread and fails the test if one case panics or
/// takes longer than [`CASE_LIMIT`] (a hang). The case's `Debug` form names it.
pub fn run_bounded<C, F>(label: &str, cases: Vec<C>, f: F)
where
    C: std::fmt::Debug + Send + Sync + 'static,
    F: Fn(&C) + Send + Sync + 'static,
{
    let cases = Arc::new(cases);
    let current = Arc::new(AtomicUsize::new(0));
    let started = Arc::new(Mutex::new(Instant::now()));
    let worker = {
        let (cases, current, started) = (
            Arc::clone(&cases),
            Arc::clone(&current),
            Arc::clone(&started),
        );
        std::thread::Builder::new()
            .name(format!("bounded-{label}"))
            .spawn(move || {
                for (i, case) in cases.iter().enumerate() {
                    *started.lock().unwrap() = Instant::now();
                    current.store(i, Ordering::SeqCst);
                    f(case);
                }
            })
            .unwrap()
    };
    loop {
        if worker.is_finished() {
            if let Err(panic) = worker.join() {
                let i = current.load(Ordering::SeqCst);
                let msg = panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                panic!("{label}: case {i} {:?} failed: {msg}", cases[i]);
            }
            return;
        }
        let i = current.load(Ordering::SeqCst);
        let elapsed = started.lock().unwrap().elapsed();
        assert!(
            elapsed <= CASE_LIMIT,
            "{label}: case {i} {:?} still running after {elapsed:?} (hang)",
            cases[i]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}
