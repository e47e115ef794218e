//! [`Manifest`]: the append-only log of [`Edit`]s in `MANIFEST-<id:020>` files, the
//! `CURRENT` pointer that names the live one, and recovery ([`Manifest::recover`]).
//!
//! Grammar of a manifest file (FORMAT.md §3):
//!
//! ```text
//! file    := header record+                    the first record is a snapshot edit
//! header  := magic:u32 version:u32 file_id:u64 header_crc:u32
//! record  := len_crc:u32 record_crc:u32 payload_len:u32 payload[payload_len]
//! ```
//!
//! Writing ([`Manifest::create`], [`Manifest::append`]): every record is written with one
//! append and synced before the call returns, so an acknowledged edit is durable. A
//! failed write or sync poisons the manifest (`Error::Poisoned` from then on): the tail of
//! the file is unknown, and retrying a failed fsync could claim durability that the
//! kernel already gave up. The `Db` then reopens the store.
//!
//! Reading ([`Manifest::recover`], [`decode_image`]) replays every record into a
//! [`Version`]. Damage at the first bad record is classified as in the WAL: with nothing
//! valid after it, it is a **torn tail** (a record that was being written when the
//! process or machine stopped; its edit was never acknowledged) and is ignored; with a
//! checksum-valid record after it, it is **corruption**. A record whose checksums are right
//! but whose edit does not decode or apply is always corruption, as is damage to the file
//! header or the first record: `create` syncs both before `CURRENT` may name the file.
//!
//! Thread-safety: a `Manifest` has one owner (`&mut self`); decoding is a pure function.

use std::fmt;
use std::path::Path;
#[cfg(test)]
use std::path::PathBuf;
use std::sync::Arc;

use super::current::{decode_current, encode_current, MAX_CURRENT_LEN};
use super::{Edit, Version};
use crate::checksum::Checksum;
use crate::coding::get_u32_le;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{FileHeader, FileType};
use crate::files::{CURRENT, CURRENT_TMP};
use crate::fs::{read_all, FileSystem, WritableFile};

/// The file magic: the bytes `C M A N` read as a little-endian `u32`.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"CMAN");

/// The format version this build writes (FORMAT.md §10).
pub(crate) const VERSION: u32 = 2;

/// The oldest format version this build reads (version 1 never holds tag 12).
pub(crate) const MIN_READ_VERSION: u32 = 1;

/// Bytes of the file header: magic, version, file id, header checksum.
pub(crate) const FILE_HEADER_LEN: usize = crate::files::FILE_HEADER_LEN;

/// Bytes of a record header: length checksum, record checksum, payload length.
pub(crate) const RECORD_HEADER_LEN: usize = 12;

/// Largest edit payload a record may carry (64 MiB, room for a snapshot of some 250,000
/// tables with 100-byte keys); larger edits are refused by the writer and larger lengths
/// are damage to the reader.
pub(crate) const MAX_RECORD_LEN: usize = 64 << 20;

/// The name prefix of manifest files.
/// The 20-byte file header of manifest file `id`.
pub(crate) fn encode_file_header(id: u64) -> Vec<u8> {
    FileHeader {
        magic: MAGIC,
        version: VERSION,
        id,
    }
    .encode()
}

/// Appends one record carrying `payload` to `out`.
///
/// Requires: `payload.len() <= MAX_RECORD_LEN` (checked by the writer before calling).
pub(crate) fn encode_record(out: &mut Vec<u8>, payload: &[u8]) {
    debug_assert!(payload.len() <= MAX_RECORD_LEN);
    let len = (payload.len() as u32).to_le_bytes();
    let len_crc = Checksum::of(&len);
    let record_crc = len_crc.extend(payload);
    out.reserve(RECORD_HEADER_LEN + payload.len());
    out.extend_from_slice(&len_crc.masked().to_le_bytes());
    out.extend_from_slice(&record_crc.masked().to_le_bytes());
    out.extend_from_slice(&len);
    out.extend_from_slice(payload);
}

/// The live manifest file, open for appending; see the module documentation.
pub(crate) struct Manifest {
    file: Box<dyn WritableFile>,
    id: u64,
    len: u64,
    poisoned: bool,
}

impl fmt::Debug for Manifest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Manifest")
            .field("path", &self.file.path())
            .field("len", &self.len)
            .field("poisoned", &self.poisoned)
            .finish()
    }
}

/// What [`Manifest::recover`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Recovered {
    /// The version after every complete record.
    pub(crate) version: Version,
    /// The id of the manifest file `CURRENT` names.
    pub(crate) manifest_id: u64,
    /// Records replayed, the snapshot included.
    pub(crate) edits: usize,
    /// Bytes of the ignored torn tail (0 if the file ended after a complete record).
    pub(crate) torn_tail_bytes: u64,
    /// Offset just past the last complete record: the version is that of the file's
    /// first `valid_end` bytes.
    pub(crate) valid_end: u64,
}

/// What [`decode_image`] found in a manifest file image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Replayed {
    /// The version after every complete record.
    pub(crate) version: Version,
    /// The file id in the header.
    pub(crate) file_id: u64,
    /// Records replayed.
    pub(crate) edits: usize,
    /// Offset just past the last complete record.
    pub(crate) valid_end: u64,
    /// The torn tail, if the image does not end at `valid_end`: its offset and why the
    /// record there does not decode.
    pub(crate) torn_tail: Option<(u64, Reason)>,
}

impl Manifest {
    /// Starts manifest file `id` in `dir` holding `version.snapshot_edit()`, syncs it and
    /// its directory entry, then points `CURRENT` at it: writes `CURRENT.tmp`, syncs it,
    /// renames it over `CURRENT` and syncs `dir`. Old manifest files are left for the
    /// caller to delete ([`obsolete_files`]).
    ///
    /// `id` must come from the file-id counter: it must be below `version.next_file_id()`,
    /// so no later file can be given the same id. A file already named like the new
    /// manifest is a leftover of a `create` that failed or crashed before `CURRENT` named
    /// it, and is replaced.
    ///
    /// # Errors
    /// `InvalidArgument` if `id >= version.next_file_id()`, if `CURRENT` already names
    /// manifest `id`, or if the snapshot exceeds [`MAX_RECORD_LEN`]; `Error::Io` if a step
    /// fails. After an error the previous manifest may or may not still be the live one
    /// (the rename may have reached the disk), so the `Db` must not append to it either:
    /// it stops writing and recovers on reopen, which finds the same version either way.
    pub(crate) fn create(
        fs: Arc<dyn FileSystem>,
        dir: &Path,
        id: u64,
        version: &Version,
    ) -> Result<Manifest> {
        let fs = fs.as_ref();
        if id >= version.next_file_id() {
            return Err(Error::invalid(format!(
                "manifest id {id} is not below next_file_id {}; take it from the counter first",
                version.next_file_id()
            )));
        }
        // A version holds only what `Version::apply` accepted, so its snapshot decodes.
        let payload = version.snapshot_edit().encode();
        if payload.len() > MAX_RECORD_LEN {
            return Err(Error::invalid(format!(
                "version snapshot of {} bytes exceeds the manifest record limit of {MAX_RECORD_LEN} bytes",
                payload.len()
            )));
        }
        let path = dir.join(FileType::Manifest.name(id));
        if fs.exists(&path)? {
            if read_current(fs, dir)? == Some(id) {
                return Err(Error::invalid(format!(
                    "manifest {id} is the live manifest; a new one needs a fresh id"
                )));
            }
            fs.remove(&path)?;
        }
        let mut bytes = encode_file_header(id);
        encode_record(&mut bytes, &payload);
        let mut file = fs.create(&path)?;
        file.append(&bytes)?;
        file.sync_data()?;
        fs.sync_dir(dir)?;
        write_current(fs, dir, id)?;
        Ok(Manifest {
            file,
            id,
            len: bytes.len() as u64,
            poisoned: false,
        })
    }

    /// Appends one edit record and syncs it; the edit is durable when this returns `Ok`.
    ///
    /// Requires: `edit` applies to the version this manifest holds so far (the `Db`
    /// computes `Version::apply` first).
    ///
    /// # Errors
    /// `Error::Poisoned` after an earlier failure. `InvalidArgument` (nothing written, not
    /// poisoned) if the encoded edit exceeds [`MAX_RECORD_LEN`] or would not decode
    /// (a keyspace name or table out of range), so the manifest never holds a record it
    /// cannot read back. `Error::Io` if the write or the sync fails; the manifest is then
    /// poisoned.
    pub(crate) fn append(&mut self, edit: &Edit) -> Result<()> {
        if self.poisoned {
            return Err(Error::Poisoned);
        }
        let payload = edit.encode();
        if payload.len() > MAX_RECORD_LEN {
            return Err(Error::invalid(format!(
                "edit of {} bytes exceeds the manifest record limit of {MAX_RECORD_LEN} bytes",
                payload.len()
            )));
        }
        if let Err(e) = Edit::decode(&payload, self.file.path(), 0) {
            return Err(Error::invalid(format!(
                "edit would not read back from the manifest: {e}"
            )));
        }
        let mut record = Vec::new();
        encode_record(&mut record, &payload);
        if let Err(e) = self.file.append(&record) {
            self.poisoned = true;
            return Err(e);
        }
        if let Err(e) = self.file.sync_data() {
            self.poisoned = true;
            return Err(e);
        }
        self.len += record.len() as u64;
        Ok(())
    }

    /// Bytes in the file (every record acknowledged so far); the `Db` rotates past a limit.
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// The file's id.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The file's path (for errors from [`Version::apply`]).
    #[cfg(test)]
    pub(crate) fn path(&self) -> PathBuf {
        self.file.path().to_path_buf()
    }

    /// True after a failed write or sync.
    #[cfg(test)]
    pub(crate) fn is_poisoned(&self) -> bool {
        self.poisoned
    }

    /// Reads `CURRENT` and replays the manifest it names. Writes nothing, so it may run
    /// any number of times; the `Db` then starts a new manifest with [`Manifest::create`]
    /// and a fresh id rather than appending to the recovered one.
    ///
    /// Without `CURRENT` (FORMAT.md §7): `Ok(None)`, a new store, if `dir` does not exist or
    /// holds no WAL file (`<id:020>.wal`), no table file (`*.sst`) and at most one
    /// manifest file (a first `create` that crashed before `CURRENT` was durable, so
    /// nothing was acknowledged); otherwise corruption, since the store's data would be
    /// silently ignored. This relies on the `Db` writing its first manifest before any WAL
    /// or table file.
    ///
    /// # Errors
    /// `Error::Corruption` (`FileKind::Manifest`) if `CURRENT` is missing from a directory
    /// holding store files, is damaged, or names a missing file; if the manifest's header
    /// or first record is damaged, a damaged record is followed by a valid one, a
    /// checksum-valid record does not decode or apply, or the recovered `next_file_id` is
    /// not above the manifest's own id. `Error::UnsupportedVersion` for a newer format;
    /// `Error::Io` if reading fails.
    pub(crate) fn recover(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Recovered>> {
        let Some(id) = read_current(fs, dir)? else {
            if !fs.exists(dir)? {
                return Ok(None);
            }
            let names = fs.list_dir(dir)?;
            let manifests = names
                .iter()
                .filter(|n| FileType::Manifest.parse(n).is_some())
                .count();
            let data_files = names
                .iter()
                .any(|n| matches!(FileType::of(n), Some((FileType::Wal | FileType::Table, _))));
            if data_files || manifests > 1 {
                return Err(Error::corruption(
                    FileKind::Manifest,
                    &dir.join(CURRENT),
                    0,
                    Reason::BadEntry("CURRENT is missing but the directory holds store files"),
                ));
            }
            return Ok(None);
        };
        let path = dir.join(FileType::Manifest.name(id));
        if !fs.exists(&path)? {
            return Err(Error::corruption(
                FileKind::Manifest,
                &path,
                0,
                Reason::BadEntry("CURRENT names a manifest file that does not exist"),
            ));
        }
        let data = read_all(fs, &path)?;
        let replayed = decode_image(&data, &path, Some(id))?;
        Ok(Some(Recovered {
            version: replayed.version,
            manifest_id: id,
            edits: replayed.edits,
            torn_tail_bytes: (data.len() as u64).saturating_sub(replayed.valid_end),
            valid_end: replayed.valid_end,
        }))
    }
}

/// The manifest id `CURRENT` in `dir` names, or `None` if there is no `CURRENT`.
fn read_current(fs: &dyn FileSystem, dir: &Path) -> Result<Option<u64>> {
    let path = dir.join(CURRENT);
    if !fs.exists(dir)? || !fs.exists(&path)? {
        return Ok(None);
    }
    if fs.file_len(&path)? > MAX_CURRENT_LEN {
        return Err(Error::corruption(
            FileKind::Manifest,
            &path,
            0,
            Reason::LengthOutOfRange,
        ));
    }
    decode_current(&read_all(fs, &path)?, &path).map(Some)
}

/// Points `CURRENT` in `dir` at manifest `id`: write `CURRENT.tmp`, sync, rename, sync
/// the directory.
fn write_current(fs: &dyn FileSystem, dir: &Path, id: u64) -> Result<()> {
    let tmp = dir.join(CURRENT_TMP);
    if fs.exists(&tmp)? {
        // A leftover of an interrupted `create`; never read.
        fs.remove(&tmp)?;
    }
    let mut file = fs.create(&tmp)?;
    file.append(&encode_current(id))?;
    file.sync_data()?;
    drop(file);
    fs.rename(&tmp, &dir.join(CURRENT))?;
    fs.sync_dir(dir)
}

/// Names in `dir` the `Db` may delete once manifest `live_id` is live: every other
/// manifest file (older ones, and leftovers of a `create` that did not finish) and a
/// leftover `CURRENT.tmp`. Sorted.
///
/// # Errors
/// `Error::Io` if `dir` cannot be listed.
#[cfg(test)]
pub(crate) fn obsolete_files(fs: &dyn FileSystem, dir: &Path, live_id: u64) -> Result<Vec<String>> {
    Ok(fs
        .list_dir(dir)?
        .into_iter()
        .filter(|n| n == CURRENT_TMP || FileType::Manifest.parse(n).is_some_and(|id| id != live_id))
        .collect())
}

/// What is wrong at the start of a record.
struct Damage {
    reason: Reason,
    /// Where the search for a following valid record starts.
    resume_at: usize,
}

/// A checksum-valid record's payload and end, or why there is none at `pos`.
fn frame_at(data: &[u8], pos: usize) -> std::result::Result<(&[u8], usize), Damage> {
    let damage = |reason, resume_at| Damage { reason, resume_at };
    let header_end = pos.saturating_add(RECORD_HEADER_LEN);
    let (Some(stored_len_crc), Some(stored_crc), Some(len_bytes)) = (
        get_u32_le(data, pos),
        get_u32_le(data, pos.saturating_add(4)),
        data.get(pos.saturating_add(8)..header_end),
    ) else {
        return Err(damage(Reason::Truncated, pos.saturating_add(1)));
    };
    let len_crc = Checksum::of(len_bytes);
    if len_crc.masked() != stored_len_crc {
        let reason = Reason::Checksum {
            stored: stored_len_crc,
            computed: len_crc.masked(),
        };
        return Err(damage(reason, pos.saturating_add(1)));
    }
    // The length is intact from here on, so a search resumes past this record's payload:
    // a valid record embedded in a torn payload is never taken for one that follows.
    let len = get_u32_le(len_bytes, 0).unwrap_or_default() as usize;
    if len > MAX_RECORD_LEN {
        return Err(damage(Reason::LengthOutOfRange, pos.saturating_add(1)));
    }
    let end = header_end.saturating_add(len);
    let Some(payload) = data.get(header_end..end) else {
        return Err(damage(Reason::Truncated, end));
    };
    let crc = len_crc.extend(payload);
    if crc.masked() != stored_crc {
        let reason = Reason::Checksum {
            stored: stored_crc,
            computed: crc.masked(),
        };
        return Err(damage(reason, end));
    }
    Ok((payload, end))
}

const DENSE_DAMAGE: Reason =
    Reason::BadEntry("damage too dense to tell a torn tail from corruption");

/// True if a checksum-valid record starts at or after `from`.
///
/// `budget` bounds the payload bytes checksummed for candidates whose length checks out
/// but whose payload does not; crafted input with many such candidates would otherwise
/// make the search quadratic. Running out is `Err(())`.
fn valid_record_after(
    data: &[u8],
    from: usize,
    budget: &mut usize,
) -> std::result::Result<bool, ()> {
    let Some(last_start) = data.len().checked_sub(RECORD_HEADER_LEN) else {
        return Ok(false);
    };
    for q in from..=last_start {
        match frame_at(data, q) {
            Ok(_) => return Ok(true),
            Err(Damage { resume_at, .. }) if resume_at > q + 1 && resume_at <= data.len() => {
                let spent = resume_at - q - RECORD_HEADER_LEN;
                *budget = budget.checked_sub(spent).ok_or(())?;
            }
            Err(_) => {}
        }
    }
    Ok(false)
}

/// Checks the file header; `expected_id` is the id `CURRENT` (or the file name) gives.
fn check_header(data: &[u8], path: &Path, expected_id: Option<u64>) -> Result<u64> {
    let corrupt = |at, reason| Error::corruption(FileKind::Manifest, path, at, reason);
    let FileHeader { version, id, .. } =
        FileHeader::decode(data, MAGIC).map_err(|(at, reason)| corrupt(at, reason))?;
    if !(MIN_READ_VERSION..=VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: FileKind::Manifest,
            path: path.to_path_buf(),
            major: version,
            minor: 0,
        });
    }
    if let Some(want) = expected_id {
        if id != want {
            let detail = format!("{id} but CURRENT and the file name say {want}");
            return Err(corrupt(
                8,
                Reason::HeaderField {
                    field: "file_id",
                    detail,
                },
            ));
        }
    }
    Ok(id)
}

/// Decodes a whole manifest file image and replays its records into a [`Version`], as
/// recovery does. `path` names the file in errors; `expected_id`, if given, must match
/// the header's file id.
///
/// # Errors
/// As [`Manifest::recover`] for the file's contents.
pub(crate) fn decode_image(data: &[u8], path: &Path, expected_id: Option<u64>) -> Result<Replayed> {
    let corrupt =
        |at: usize, reason| Error::corruption(FileKind::Manifest, path, at as u64, reason);
    let file_id = check_header(data, path, expected_id)?;
    let mut budget = data.len().saturating_mul(2).saturating_add(1 << 20);
    let mut version = Version::empty();
    let mut edits = 0usize;
    let mut pos = FILE_HEADER_LEN;
    let mut torn_tail = None;
    // Each pass consumes a record or ends the loop, so it terminates.
    while pos < data.len() {
        match frame_at(data, pos) {
            Ok((payload, end)) => {
                let payload_offset = (pos + RECORD_HEADER_LEN) as u64;
                let edit = Edit::decode(payload, path, payload_offset)?;
                version = version.apply(&edit, path, pos as u64)?;
                edits += 1;
                pos = end;
            }
            Err(Damage { reason, resume_at }) => {
                match valid_record_after(data, resume_at, &mut budget) {
                    Err(()) => return Err(corrupt(pos, DENSE_DAMAGE)),
                    Ok(true) => return Err(corrupt(pos, reason)),
                    Ok(false) => {
                        torn_tail = Some((pos as u64, reason));
                        break;
                    }
                }
            }
        }
    }
    if edits == 0 {
        // `create` syncs the first record before CURRENT may name the file.
        let reason = torn_tail.map_or(
            Reason::BadEntry("manifest holds no snapshot record"),
            |(_, r)| r,
        );
        return Err(corrupt(FILE_HEADER_LEN, reason));
    }
    if version.next_file_id() <= file_id {
        return Err(corrupt(
            0,
            Reason::BadEntry("next_file_id is not above the manifest's own id"),
        ));
    }
    Ok(Replayed {
        version,
        file_id,
        edits,
        valid_end: pos as u64,
        torn_tail,
    })
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "manifest_crash_tests.rs"]
mod crash_tests;
