//! Verification: every checksum of every file a store (or a backup) consists of, read
//! back in full, without changing anything.
//!
//! What is checked, in order (each failure names the file and the byte offset):
//! 1. `CURRENT`: its checksum and that it names a manifest file;
//! 2. the manifest it names: the file header and every record (checksums, decoding, and
//!    applying each edit, as recovery does); a torn tail (an edit that was being written
//!    when the store stopped, never acknowledged) is a note, not a problem;
//! 3. every table the manifest lists ([`super::checkpoint::live_files`]): footer,
//!    properties, index and filter blocks (when the table opens), then every data block
//!    and entry (`table::Reader::verify`), and that the file's size and key range match
//!    the manifest;
//! 4. every blob file the manifest does not list yet (values of writes not yet flushed):
//!    every record up to a torn tail;
//! 5. every WAL file recovery would read (ids from the version's `wal_min_id` on): the
//!    header and every record (checksums, batch decoding), that seqnos continue without a
//!    gap above the flushed seqno, and that every separated value a replayed write points
//!    to is intact, as recovery requires. A torn tail is a note; so is a log that ends at a
//!    write whose value never became durable (recovery drops it and everything after). A
//!    lost value of a durable write is a problem, as it refuses the open;
//! 6. tables nothing lists that hold writes newer than the log's last write (the output
//!    of manifest edits that are missing: a cut or damaged manifest) are problems, as they
//!    refuse the open; other files nothing references (obsolete files not yet deleted,
//!    leftovers of an interrupted flush, foreign files) are listed, not counted as
//!    problems; files the manifest needs but that are missing are problems.
//!
//! So `verify` finds a problem exactly where `Db::open` (without salvage) refuses.
//!
//! Read-only: [`verify`] of a closed store takes the store's lock only if a `LOCK` file
//! exists (a backup has none), so a store open elsewhere is refused instead of read while
//! it changes, and never creates or writes a file. [`Db::verify`] checks a running store
//! at one point: under the state lock it pins the current tables, writes the log to the
//! OS and opens the manifest and WAL files, then reads each up to its length at that
//! point while writes continue.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::checkpoint::{live_files, lock_closed, missing};
use super::inner::Inner;
use super::view_fs::ViewFs;
use super::{write, Db};
use crate::batch::WriteBatch;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{self, BlobId, FileType};
use crate::fs::{read_exact_at, FileLock, FileSystem, ReadableFile, StdFs};
use crate::key::{compare_encoded, SeqNo};
use crate::table::{self, BlockCache};
use crate::version::{self, Version};
use crate::vlog::ValueHandle;
use crate::wal;

/// One file that was read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct VerifiedFile {
    /// Its name in the store directory.
    pub name: String,
    /// What it is (`CURRENT` counts as a manifest file).
    pub kind: FileKind,
    /// Bytes read and checked.
    pub bytes: u64,
    /// Records (WAL), entries (table) or edits (manifest) checked.
    pub items: u64,
}

/// What [`verify`] found.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct VerifyReport {
    /// Files checked without a problem, in the order they were checked.
    pub files: Vec<VerifiedFile>,
    /// Names in the directory that nothing references (not a problem).
    pub unreferenced: Vec<String>,
    /// Observations that are not problems (a torn tail left by a crash).
    pub notes: Vec<String>,
    /// Every damaged or missing file found: `Error::Corruption` (naming the file and the
    /// byte offset) or `Error::UnsupportedVersion`.
    pub problems: Vec<Error>,
}

impl VerifyReport {
    /// Files of `kind` checked without a problem.
    pub fn count(&self, kind: FileKind) -> usize {
        self.files.iter().filter(|f| f.kind == kind).count()
    }

    /// Bytes of the files of `kind` checked without a problem.
    pub fn bytes(&self, kind: FileKind) -> u64 {
        self.files
            .iter()
            .filter(|f| f.kind == kind)
            .map(|f| f.bytes)
            .sum()
    }

    /// True if no problem was found.
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report if it is clean, else its first problem.
    ///
    /// # Errors
    /// The first problem (`Error::Corruption` naming the file and offset).
    pub fn into_result(mut self) -> Result<VerifyReport> {
        if self.problems.is_empty() {
            Ok(self)
        } else {
            Err(self.problems.swap_remove(0))
        }
    }
}

/// Checks every file of the closed store or backup in `dir`; see the module documentation
/// of `verify.rs`. Never writes.
///
/// # Errors
/// The first problem found, as `Error::Corruption` naming the file and byte offset (or
/// `UnsupportedVersion`); `Error::Io` if a file cannot be read, or of kind `WouldBlock` if
/// the store is open (use [`Db::verify`] then). [`verify_report`] lists every problem
/// instead.
pub fn verify(dir: impl AsRef<Path>) -> Result<VerifyReport> {
    verify_report(dir)?.into_result()
}

/// Like [`verify`], but goes on past damage and lists every problem in the report.
///
/// # Errors
/// `Error::Io` as for [`verify`]; `InvalidArgument` if `dir` is not a directory.
pub fn verify_report(dir: impl AsRef<Path>) -> Result<VerifyReport> {
    verify_closed(&StdFs, dir.as_ref())
}

impl Db {
    /// Checks every checksum of every file of this open store at one point while writes
    /// continue; see [`verify`].
    ///
    /// # Errors
    /// As [`verify`]; `Poisoned` if the log cannot be written to the OS.
    pub fn verify(&self) -> Result<VerifyReport> {
        self.verify_report()?.into_result()
    }

    /// Like [`Db::verify`], listing every problem in the report.
    ///
    /// # Errors
    /// `Error::Io`; `Poisoned` if the log cannot be written to the OS.
    pub fn verify_report(&self) -> Result<VerifyReport> {
        let inner = &self.inner;
        if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(Error::invalid("the store is closed"));
        }
        if inner.read_only {
            return verify_view(inner);
        }
        let fs = inner.fs.as_ref();
        let st = inner.state.lock();
        let pin = inner.pin(&st);
        let (wal_id, wal_len, _) = write::log_end(inner)?;
        let names = fs.list_dir(&inner.dir)?;
        let mut held = BTreeMap::new();
        let open = st.manifest.as_ref().ok_or(Error::ReadOnly)?;
        let manifest = FileType::Manifest.name(open.id());
        let handle = fs.open_read(&inner.dir.join(&manifest))?;
        held.insert(manifest, (handle, open.len()));
        for name in &names {
            let Some(id) = FileType::Wal.parse(name) else {
                continue;
            };
            if id < st.version.wal_min_id() || id > wal_id {
                continue;
            }
            let handle = fs.open_read(&inner.dir.join(name))?;
            let len = if id == wal_id { wal_len } else { handle.len()? };
            held.insert(name.clone(), (handle, len));
        }
        let current = read_current(fs, &inner.dir, &names)?;
        drop(st);
        let files = Files {
            dir: inner.dir.clone(),
            names: names.into_iter().filter(|n| n != files::LOCK).collect(),
            current,
            held,
            _lock: None,
        };
        let report = check(fs, &files);
        drop(pin);
        report
    }
}

/// Checks the view of a read-only handle (a read-only open, a follower, a pack opened in
/// place): every file the view holds, read through its handle up to the length the view
/// knows ([`ViewFs`]), so a writer in another process changing the directory meanwhile
/// changes nothing for the check.
fn verify_view(inner: &Inner) -> Result<VerifyReport> {
    let (pin, point) = {
        let st = inner.state.lock();
        let point = st
            .read_point
            .clone()
            .ok_or_else(|| Error::invalid("a read-only store without a view"))?;
        (inner.pin(&st), point)
    };
    let view = ViewFs::new(&inner.dir, &point)?;
    let names = view.names();
    let current = read_current(&view, &inner.dir, &names)?;
    let files = Files {
        dir: inner.dir.clone(),
        names,
        current,
        held: BTreeMap::new(),
        _lock: None,
    };
    let report = check(&view, &files);
    drop(pin);
    report
}

/// The files to check: the directory listing, `CURRENT`'s bytes, and handles opened at
/// the capture point with the length to check (the others are read whole by path).
struct Files {
    dir: PathBuf,
    names: Vec<String>,
    current: Option<std::result::Result<Vec<u8>, Error>>,
    held: BTreeMap<String, (Box<dyn ReadableFile>, u64)>,
    _lock: Option<Box<dyn FileLock>>,
}

impl Files {
    /// The bytes of `name` to check, or `None` if it is not in the directory.
    fn read(&self, fs: &dyn FileSystem, name: &str) -> Result<Option<Vec<u8>>> {
        if let Some((handle, len)) = self.held.get(name) {
            return read_prefix(handle.as_ref(), *len).map(Some);
        }
        if !self.names.iter().any(|n| n == name) {
            return Ok(None);
        }
        let handle = fs.open_read(&self.dir.join(name))?;
        let len = handle.len()?;
        read_prefix(handle.as_ref(), len).map(Some)
    }
}

fn read_prefix(handle: &dyn ReadableFile, len: u64) -> Result<Vec<u8>> {
    let n = usize::try_from(len).map_err(|_| {
        Error::io(
            handle.path(),
            "read",
            std::io::Error::new(std::io::ErrorKind::OutOfMemory, "file too large"),
        )
    })?;
    let mut buf = vec![0u8; n];
    read_exact_at(handle, 0, &mut buf)?;
    Ok(buf)
}

/// `CURRENT`'s bytes, `Some(Err)` if it is too long to be one, `None` if missing.
fn read_current(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
) -> Result<Option<std::result::Result<Vec<u8>, Error>>> {
    if !names.iter().any(|n| n == files::CURRENT) {
        return Ok(None);
    }
    let path = dir.join(files::CURRENT);
    let handle = fs.open_read(&path)?;
    let len = handle.len()?;
    if len > version::MAX_CURRENT_LEN {
        let e = Error::corruption(FileKind::Manifest, &path, 0, Reason::LengthOutOfRange);
        return Ok(Some(Err(e)));
    }
    Ok(Some(Ok(read_prefix(handle.as_ref(), len)?)))
}

fn verify_closed(fs: &dyn FileSystem, dir: &Path) -> Result<VerifyReport> {
    let lock = lock_closed(fs, dir)?;
    let names: Vec<String> = fs
        .list_dir(dir)?
        .into_iter()
        .filter(|n| n != files::LOCK)
        .collect();
    let current = read_current(fs, dir, &names)?;
    let files = Files {
        dir: dir.to_path_buf(),
        names,
        current,
        held: BTreeMap::new(),
        _lock: lock,
    };
    check(fs, &files)
}

/// Sorts a failed check into the report: damage is a problem, anything else ends the run.
fn problem(report: &mut VerifyReport, e: Error) -> Result<()> {
    if e.is_corruption() {
        report.problems.push(e);
        Ok(())
    } else {
        Err(e)
    }
}

fn check(fs: &dyn FileSystem, files: &Files) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let dir = &files.dir;
    let mut referenced = vec![files::CURRENT.to_string()];

    // 1. CURRENT.
    let current_path = dir.join(files::CURRENT);
    let manifest_id = match &files.current {
        None => {
            problem(
                &mut report,
                missing(dir, FileKind::Manifest, files::CURRENT),
            )?;
            return finish(report, files, &referenced);
        }
        Some(Err(e)) => {
            problem(&mut report, e.duplicate())?;
            return finish(report, files, &referenced);
        }
        Some(Ok(bytes)) => match version::decode_current(bytes, &current_path) {
            Ok(id) => {
                report.files.push(VerifiedFile {
                    name: files::CURRENT.to_string(),
                    kind: FileKind::Manifest,
                    bytes: bytes.len() as u64,
                    items: 1,
                });
                id
            }
            Err(e) => {
                problem(&mut report, e)?;
                return finish(report, files, &referenced);
            }
        },
    };

    // 2. The manifest.
    let name = FileType::Manifest.name(manifest_id);
    let path = dir.join(&name);
    referenced.push(name.clone());
    let Some(bytes) = files.read(fs, &name)? else {
        problem(&mut report, missing(dir, FileKind::Manifest, &name))?;
        return finish(report, files, &referenced);
    };
    let version: Version = match version::decode_image(&bytes, &path, Some(manifest_id)) {
        Ok(replayed) => {
            if let Some((offset, reason)) = &replayed.torn_tail {
                report.notes.push(format!(
                    "{name}: torn tail of {} bytes at byte {offset} ({reason}), an edit that \
                     was never acknowledged; ignored as recovery ignores it",
                    bytes.len() as u64 - replayed.valid_end
                ));
            }
            report.files.push(VerifiedFile {
                name,
                kind: FileKind::Manifest,
                bytes: bytes.len() as u64,
                items: replayed.edits as u64,
            });
            replayed.version
        }
        Err(e) => {
            problem(&mut report, e)?;
            return finish(report, files, &referenced);
        }
    };

    // 3. Tables (and every other immutable file the version lists).
    let cache = Arc::new(BlockCache::new(0));
    let mut values = HashSet::new();
    for file in live_files(&version) {
        referenced.push(file.name.clone());
        if !files.names.contains(&file.name) {
            problem(&mut report, missing(dir, file.kind, &file.name))?;
            continue;
        }
        let path = dir.join(&file.name);
        let checked = match (&file.table, &file.blob) {
            (Some(meta), _) => check_table(fs, &path, meta, &cache),
            (None, Some(meta)) => check_blob(fs, &path, Some(meta), &mut values),
            (None, None) => Ok(0),
        };
        match checked {
            Ok(items) => report.files.push(VerifiedFile {
                name: file.name,
                kind: file.kind,
                bytes: file.len,
                items,
            }),
            Err(e) => problem(&mut report, e)?,
        }
    }

    // 4. Blob files no flush has recorded yet (the WAL's separated values point into
    // them): checked whole like listed ones.
    for name in &files.names {
        let Some(id) = BlobId::parse(name) else {
            continue;
        };
        if version.blob_files().contains_key(&id) {
            continue;
        }
        referenced.push(name.clone());
        let path = dir.join(name);
        match check_blob(fs, &path, None, &mut values) {
            Ok(items) => {
                report.notes.push(format!(
                    "{name}: blob file not yet recorded in the manifest (values of the log \
                     not flushed yet), {items} records"
                ));
                report.files.push(VerifiedFile {
                    name: name.clone(),
                    kind: FileKind::Blob,
                    bytes: fs.file_len(&path)?,
                    items,
                });
            }
            Err(e) => problem(&mut report, e)?,
        }
    }
    // 5. WAL files, and the separated values their writes point to.
    let mut wal_ids: Vec<u64> = files
        .names
        .iter()
        .filter_map(|n| FileType::Wal.parse(n))
        .filter(|&id| id >= version.wal_min_id())
        .collect();
    wal_ids.sort_unstable();
    if version.wal_min_id() > 0 && wal_ids.first() != Some(&version.wal_min_id()) {
        let name = FileType::Wal.name(version.wal_min_id());
        problem(&mut report, missing(dir, FileKind::Wal, &name))?;
    }
    let mut last = version.flushed_seqno();
    let mut cut = false;
    for id in wal_ids {
        let name = FileType::Wal.name(id);
        referenced.push(name.clone());
        if cut {
            report.notes.push(format!(
                "{name}: not read, as recovery does not read it: the log ends in an earlier file"
            ));
            continue;
        }
        let Some(bytes) = files.read(fs, &name)? else {
            continue;
        };
        let mut wal = WalCheck {
            version: &version,
            values: &values,
            last: &mut last,
            cut: None,
        };
        match wal.check(&bytes, &dir.join(&name), id) {
            Ok((records, torn)) => {
                if let Some(note) = wal.cut.take() {
                    report.notes.push(note);
                    cut = true;
                }
                if let Some(t) = torn {
                    report.notes.push(format!(
                        "{name}: torn tail of {} bytes at byte {} ({}), writes that never \
                         became durable; ignored as recovery ignores it",
                        t.len, t.offset, t.reason
                    ));
                }
                report.files.push(VerifiedFile {
                    name,
                    kind: FileKind::Wal,
                    bytes: bytes.len() as u64,
                    items: records,
                });
            }
            Err(e) => problem(&mut report, e)?,
        }
    }
    // 6. Tables no version lists that hold writes newer than the log's last: the output
    // of manifest edits that are missing (a cut manifest), which open refuses.
    if let Err(e) = super::recover::check_unlisted_tables(
        fs,
        dir,
        &files.names,
        &version,
        last,
        &dir.join(FileType::Manifest.name(manifest_id)),
    ) {
        problem(&mut report, e)?;
    }
    finish(report, files, &referenced)
}

/// Reads every record of the blob file at `path`, verifying every chunk of every value,
/// and, for a file the manifest lists, that it is sealed and agrees with `meta`; returns
/// its record count, and adds the handle of every intact record to `values`.
fn check_blob(
    fs: &dyn FileSystem,
    path: &Path,
    meta: Option<&crate::vlog::BlobFileMeta>,
    values: &mut HashSet<ValueHandle>,
) -> Result<u64> {
    let scanned = crate::vlog::scan_path(fs, path, true)?;
    let count = scanned.records.len() as u64;
    if let Some(id) = scanned.file_id {
        values.extend(scanned.records.iter().map(|r| r.handle(BlobId(id))));
    }
    let Some(meta) = meta else {
        return Ok(count);
    };
    let disagree = |detail: String| {
        Error::corruption(
            FileKind::Blob,
            path,
            0,
            Reason::HeaderField {
                field: "blob file",
                detail,
            },
        )
    };
    // A file recovered after a crash is listed with its valid prefix; the torn bytes
    // after it are never read (no handle points there), so only the prefix is compared.
    let file_size = scanned.valid_end
        + if scanned.footer.is_some() {
            crate::vlog::FOOTER_LEN
        } else {
            0
        };
    if (file_size, count, scanned.value_bytes)
        != (meta.file_size, meta.record_count, meta.value_bytes)
    {
        return Err(disagree(format!(
            "holds {file_size} bytes, {count} records, {} value bytes; the manifest says {}, \
             {}, {}",
            scanned.value_bytes, meta.file_size, meta.record_count, meta.value_bytes
        )));
    }
    Ok(count)
}

/// Lists the unreferenced names and returns the report.
fn finish(mut report: VerifyReport, files: &Files, referenced: &[String]) -> Result<VerifyReport> {
    report.unreferenced = files
        .names
        .iter()
        .filter(|n| !referenced.contains(n))
        .cloned()
        .collect();
    Ok(report)
}

/// Opens the table at `path` (footer, properties, index, filter), reads every data block,
/// and compares it with what the manifest says; returns its entry count.
fn check_table(
    fs: &dyn FileSystem,
    path: &Path,
    meta: &table::TableMeta,
    cache: &Arc<BlockCache>,
) -> Result<u64> {
    let actual = fs.file_len(path)?;
    if actual != meta.file_size {
        let reason = Reason::HeaderField {
            field: "file_size",
            detail: format!(
                "the manifest says {} bytes but the file has {actual}",
                meta.file_size
            ),
        };
        return Err(Error::corruption(FileKind::Table, path, 0, reason));
    }
    let reader = table::Reader::open(fs, path, meta.id, Arc::clone(cache))?;
    let entries = reader.verify()?;
    let found = reader.meta();
    let same_range = compare_encoded(&found.smallest, &meta.smallest).is_eq()
        && compare_encoded(&found.largest, &meta.largest).is_eq();
    if !same_range {
        let reason = Reason::HeaderField {
            field: "smallest/largest",
            detail: "the table's key range differs from the manifest's".to_string(),
        };
        return Err(Error::corruption(FileKind::Table, path, 0, reason));
    }
    Ok(entries)
}

/// The check of the WAL files, which carries state from one file to the next.
struct WalCheck<'a> {
    version: &'a Version,
    /// Handles of every intact blob record.
    values: &'a HashSet<ValueHandle>,
    /// The last seqno so far (the flushed seqno before the first record).
    last: &'a mut SeqNo,
    /// Set when the log ends at a write whose value never became durable, as recovery
    /// ends it: a note saying so.
    cut: Option<String>,
}

impl WalCheck<'_> {
    /// Checks one WAL file image: framing and checksums, batch decoding, seqno continuity
    /// above the flushed seqno, and that the separated value of every write recovery
    /// would replay is intact; a lost value of a durable write (before a sync mark, or
    /// in a blob file the manifest lists) is corruption, as for `Db::open`. Returns the
    /// record count and the torn tail, if any.
    fn check(
        &mut self,
        bytes: &[u8],
        path: &Path,
        id: u64,
    ) -> Result<(u64, Option<wal::TornTail>)> {
        let options = wal::ReadOptions {
            salvage: false,
            expected_id: Some(id),
        };
        let flushed = self.version.flushed_seqno();
        let recovered = wal::decode_all(bytes, path, options)?;
        for record in &recovered.records {
            let batch = WriteBatch::decode(&record.payload, path, record.offset)?;
            let bad = |detail: String| {
                Error::corruption(
                    FileKind::Wal,
                    path,
                    record.offset,
                    Reason::HeaderField {
                        field: "seqno",
                        detail,
                    },
                )
            };
            let batch_last = batch
                .last_seqno(SeqNo(record.seqno))
                .map_err(|e| bad(e.to_string()))?;
            let Some(batch_last) = batch_last else {
                continue;
            };
            if batch_last <= flushed {
                continue;
            }
            if record.seqno != self.last.0 + 1 {
                return Err(bad(format!(
                    "record starts at seqno {} but {} was expected: writes before it are missing",
                    record.seqno,
                    self.last.0 + 1
                )));
            }
            if let Some(lost) = self.lost_value(&batch) {
                let listed = self.version.blob_files().contains_key(&lost.file_id);
                if listed || recovered.synced_end > record.offset {
                    return Err(Error::corruption(
                        FileKind::Wal,
                        path,
                        record.offset,
                        Reason::HeaderField {
                            field: "value handle",
                            detail: format!(
                                "the write at seqno {} was durable but its value at byte {} of \
                                 blob file {} is damaged or missing",
                                record.seqno,
                                lost.offset,
                                lost.file_id.file_name()
                            ),
                        },
                    ));
                }
                self.cut = Some(format!(
                    "{}: the log ends at byte {} (seqno {}), a write whose value never became \
                     durable; recovery drops it and every later write, which were never \
                     durable either",
                    FileType::Wal.name(id),
                    record.offset,
                    record.seqno
                ));
                return Ok((recovered.records.len() as u64, recovered.torn_tail));
            }
            *self.last = batch_last;
        }
        Ok((recovered.records.len() as u64, recovered.torn_tail))
    }

    /// The first value handle of a live keyspace in `batch` that leads to no intact blob
    /// record.
    fn lost_value(&self, batch: &WriteBatch) -> Option<ValueHandle> {
        batch
            .ops()
            .filter(|op| self.version.keyspace(op.keyspace()).is_some())
            .filter_map(|op| super::recover::handle_of(&op))
            .find(|h| !self.values.contains(h))
    }
}
