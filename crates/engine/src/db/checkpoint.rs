//! Checkpoints: the exact set of files (and the bytes of each) that make up one consistent
//! state of a store, captured while writers keep going. A backup writes a checkpoint into
//! a directory (`backup.rs`), a pack into one file (`crate::pack`); verification reads
//! the same set (`verify.rs`).
//!
//! What a checkpoint of an open store holds, captured under the state lock (so no flush,
//! compaction or log switch is half-done) and with the log written to the OS:
//!
//! 1. every immutable file the current version lists ([`live_files`]: tables and blob
//!    files), pinned against deletion by registering a super version, and linked or
//!    copied whole; plus the blob files the memtables point into that no flush has
//!    recorded yet (the active blob file is sealed first, so all of them are immutable);
//! 2. every WAL file from the version's `wal_min_id` through the current one, through
//!    read handles opened under the lock (an open handle keeps a file's bytes even if a
//!    flush deletes its name meanwhile); sealed files whole, the current one up to the
//!    record boundary where the log ended at capture ([`super::write::log_end`]);
//! 3. a fresh manifest holding one snapshot record of the pinned version, named with the
//!    id of the live manifest (an id from the file counter that no table or WAL file
//!    has), never the live manifest itself, which grows meanwhile;
//! 4. `CURRENT` naming it, always the last member, so a reader that sees `CURRENT` sees a
//!    complete set.
//!
//! Opening such a set replays the copied WAL above the version's flushed seqno, exactly as
//! recovery after a crash at the capture point would: the result is the store as of seqno
//! [`Checkpoint::seqno`], which includes every write acknowledged before the capture began.
//!
//! Invariant: the list of a version's immutable files comes from [`live_files`] alone, so
//! a new kind of immutable file (the value log's blob files) is added there once and every
//! backup, pack and verification picks it up.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::inner::Inner;
use super::super_version::SuperVersion;
use super::write;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{self, BlobId, FileType};
use crate::fs::{FileLock, FileSystem, ReadableFile};
use crate::table::TableMeta;
use crate::version::{self, Manifest, Version};
use crate::vlog::BlobFileMeta;

/// One immutable file a version needs.
#[derive(Debug, Clone)]
pub(crate) struct LiveFile {
    /// Its name in the store directory.
    pub(crate) name: String,
    /// What it is.
    pub(crate) kind: FileKind,
    /// Its length as the version records it.
    pub(crate) len: u64,
    /// For tables: the metadata the manifest holds (checked against the file by verify).
    pub(crate) table: Option<Arc<TableMeta>>,
    /// For blob files: the metadata the manifest holds (checked against the file by
    /// verify).
    pub(crate) blob: Option<BlobFileMeta>,
}

/// Every immutable file `version` references, in a stable order: tables by keyspace and
/// level. The one place that lists them (see the module invariant).
pub(crate) fn live_files(version: &Version) -> Vec<LiveFile> {
    let mut out = Vec::new();
    for (_, ks) in version.keyspaces() {
        for t in ks.levels.iter().flatten() {
            out.push(LiveFile {
                name: t.id.file_name(),
                kind: FileKind::Table,
                len: t.file_size,
                table: Some(Arc::clone(t)),
                blob: None,
            });
        }
    }
    for b in version.blob_files().values() {
        out.push(LiveFile {
            name: b.id.file_name(),
            kind: FileKind::Blob,
            len: b.file_size,
            table: None,
            blob: Some(*b),
        });
    }
    out
}

/// The blob files the memtables of `sv` point into that its version does not list yet
/// (finished files attached to the memtables; see `write::seal_blobs`): a copy's WAL
/// replay needs them.
fn unflushed_blob_files(sv: &SuperVersion) -> Vec<BlobFileMeta> {
    // A file attached more than once (a follower's memtables, read as the file grew) is
    // taken at its largest size: it covers every record the smaller ones do.
    let mut by_id: std::collections::BTreeMap<BlobId, BlobFileMeta> = Default::default();
    for b in sv.memtables().flat_map(|m| m.blob_files()) {
        if sv.version.blob_files().contains_key(&b.id) {
            continue;
        }
        let slot = by_id.entry(b.id).or_insert(b);
        if b.file_size > slot.file_size {
            *slot = b;
        }
    }
    by_id.into_values().collect()
}

/// Where a member's bytes come from.
pub(crate) enum Source {
    /// An immutable file of the store directory, pinned for the checkpoint's lifetime:
    /// hard-linked where the file system allows, copied otherwise.
    Immutable(PathBuf),
    /// The first `Member::len` bytes of an open file (a WAL file; for a read-only view,
    /// every file it holds).
    Prefix(Arc<dyn ReadableFile>),
    /// Bytes made for the checkpoint (its manifest and `CURRENT`).
    Bytes(Vec<u8>),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Immutable(p) => write!(f, "Immutable({})", p.display()),
            Source::Prefix(h) => write!(f, "Prefix({})", h.path().display()),
            Source::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
        }
    }
}

/// One file of a checkpoint.
#[derive(Debug)]
pub(crate) struct Member {
    /// Its name in the store directory.
    pub(crate) name: String,
    /// What it is.
    pub(crate) kind: FileKind,
    /// Its length in the checkpoint.
    pub(crate) len: u64,
    pub(crate) source: Source,
}

/// What keeps a checkpoint's files alive.
enum Pin {
    /// An open store: a registered super version keeps its tables from deletion.
    Open(#[allow(dead_code)] Arc<SuperVersion>),
    /// A closed store: its lock, if it could be taken, keeps it from being opened.
    Closed(#[allow(dead_code)] Option<Box<dyn FileLock>>),
}

/// A consistent set of files; see the module documentation.
pub(crate) struct Checkpoint {
    /// Every write with a seqno up to this is in the checkpoint, and no later one (for a
    /// closed store: the version's flushed seqno, a lower bound, since the WAL is copied
    /// without being replayed).
    pub(crate) seqno: u64,
    /// Members in the order they must be written; `CURRENT` is last.
    pub(crate) members: Vec<Member>,
    _pin: Pin,
}

impl std::fmt::Debug for Checkpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checkpoint")
            .field("seqno", &self.seqno)
            .field("members", &self.members)
            .finish()
    }
}

/// The manifest and `CURRENT` of a checkpoint of `version`: one snapshot record in
/// manifest file `id`.
fn manifest_members(version: &Version, id: u64) -> Result<[Member; 2]> {
    if id >= version.next_file_id() {
        return Err(Error::invalid(format!(
            "manifest id {id} is not below next_file_id {}",
            version.next_file_id()
        )));
    }
    let payload = version.snapshot_edit().encode();
    if payload.len() > version::MAX_RECORD_LEN {
        return Err(Error::invalid(format!(
            "version snapshot of {} bytes exceeds the manifest record limit",
            payload.len()
        )));
    }
    let mut manifest = version::encode_file_header(id);
    version::encode_record(&mut manifest, &payload);
    let current = version::encode_current(id);
    Ok([
        Member {
            name: FileType::Manifest.name(id),
            kind: FileKind::Manifest,
            len: manifest.len() as u64,
            source: Source::Bytes(manifest),
        },
        Member {
            name: files::CURRENT.to_string(),
            kind: FileKind::Manifest,
            len: current.len() as u64,
            source: Source::Bytes(current),
        },
    ])
}

/// Read handles of the WAL files `version` needs in `dir` (ids from `wal_min_id` through
/// `last_id`, in id order), as (name, handle, length): `current` is (id, captured length)
/// of the file still being written, whose length is taken from the capture instead of
/// the file.
fn wal_members(
    fs: &dyn FileSystem,
    dir: &Path,
    names: &[String],
    version: &Version,
    current: Option<(u64, u64)>,
) -> Result<Vec<Member>> {
    let mut ids: Vec<u64> = names
        .iter()
        .filter_map(|n| FileType::Wal.parse(n))
        .filter(|&id| id >= version.wal_min_id())
        .filter(|&id| current.is_none_or(|(last, _)| id <= last))
        .collect();
    ids.sort_unstable();
    let wal_min = version.wal_min_id();
    if wal_min > 0 && ids.first() != Some(&wal_min) {
        return Err(missing(dir, FileKind::Wal, &FileType::Wal.name(wal_min)));
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let name = FileType::Wal.name(id);
        let handle = fs.open_read(&dir.join(&name))?;
        let len = match current {
            Some((cur, len)) if cur == id => len,
            _ => handle.len()?,
        };
        out.push(Member {
            name,
            kind: FileKind::Wal,
            len,
            source: Source::Prefix(Arc::from(handle)),
        });
    }
    Ok(out)
}

/// The error for a file the version needs that is not in the directory.
pub(crate) fn missing(dir: &Path, kind: FileKind, name: &str) -> Error {
    Error::corruption(
        kind,
        &dir.join(name),
        0,
        Reason::BadEntry("the manifest needs this file but it does not exist"),
    )
}

/// Captures a checkpoint of the open store `inner`; see the module documentation.
///
/// # Errors
/// `Poisoned` or the log's error if the log cannot be written to the OS; `Error::Io`
/// listing the directory or opening a WAL file; `Corruption` if a file the version needs
/// is missing; `InvalidArgument` after `close`.
pub(crate) fn capture(inner: &Inner) -> Result<Checkpoint> {
    if inner.closed.load(std::sync::atomic::Ordering::Acquire) {
        return Err(Error::invalid("the store is closed"));
    }
    if inner.read_only {
        return capture_view(inner);
    }
    let st = inner.state.lock();
    let pin = inner.pin(&st);
    let version = &pin.version;
    // Every blob record the copied WAL references must be in a finished file.
    write::seal_blobs(inner, &st)?;
    let (wal_id, wal_len, seqno) = write::log_end(inner)?;
    let names = inner.fs.list_dir(&inner.dir)?;
    let wals = wal_members(
        inner.fs.as_ref(),
        &inner.dir,
        &names,
        version,
        Some((wal_id, wal_len)),
    )?;
    let manifest_id = st.manifest.as_ref().ok_or(Error::ReadOnly)?.id();
    drop(st);

    let mut members = immutable_members(&inner.dir, &names, version)?;
    for b in unflushed_blob_files(&pin) {
        let name = b.id.file_name();
        if !names.contains(&name) {
            return Err(missing(&inner.dir, FileKind::Blob, &name));
        }
        members.push(Member {
            source: Source::Immutable(inner.dir.join(&name)),
            name,
            kind: FileKind::Blob,
            len: b.file_size,
        });
    }
    members.extend(wals);
    members.extend(manifest_members(version, manifest_id)?);
    Ok(Checkpoint {
        seqno,
        members,
        _pin: Pin::Open(pin),
    })
}

/// Captures the view of a read-only store: the tables and blob files of its version, the
/// blob files its memtables point into and each log file it replayed, every one copied
/// (never linked: a writer may still append to some) from the handle the view opened, up
/// to the length the view knows; and a fresh manifest of its version. A writer elsewhere
/// deleting those files meanwhile changes nothing. The result opens to exactly the view.
///
/// # Errors
/// As [`capture`].
fn capture_view(inner: &Inner) -> Result<Checkpoint> {
    // The view and its files, taken together (a follower's refresh swaps both at once).
    let (pin, point) = {
        let st = inner.state.lock();
        let point = st
            .read_point
            .clone()
            .ok_or_else(|| Error::invalid("a read-only store without a view"))?;
        (inner.pin(&st), point)
    };
    let version = &pin.version;
    let held = |name: &str, kind: FileKind| {
        point
            .files
            .get(name)
            .cloned()
            .ok_or_else(|| missing(&inner.dir, kind, name))
    };
    let mut members = Vec::new();
    for f in live_files(version) {
        let source = Source::Prefix(held(&f.name, f.kind)?);
        members.push(Member {
            source,
            name: f.name,
            kind: f.kind,
            len: f.len,
        });
    }
    for b in unflushed_blob_files(&pin) {
        let name = b.id.file_name();
        members.push(Member {
            source: Source::Prefix(held(&name, FileKind::Blob)?),
            name,
            kind: FileKind::Blob,
            len: b.file_size,
        });
    }
    for &(id, len) in &point.wal_lens {
        let name = FileType::Wal.name(id);
        members.push(Member {
            source: Source::Prefix(held(&name, FileKind::Wal)?),
            name,
            kind: FileKind::Wal,
            len,
        });
    }
    members.extend(manifest_members(version, point.manifest_id)?);
    Ok(Checkpoint {
        seqno: inner
            .reads
            .visible_seqno
            .load(std::sync::atomic::Ordering::Acquire),
        members,
        _pin: Pin::Open(pin),
    })
}

/// The members for the immutable files of `version`, refusing a missing one.
fn immutable_members(dir: &Path, names: &[String], version: &Version) -> Result<Vec<Member>> {
    live_files(version)
        .into_iter()
        .map(|f| {
            if !names.contains(&f.name) {
                return Err(missing(dir, f.kind, &f.name));
            }
            Ok(Member {
                source: Source::Immutable(dir.join(&f.name)),
                name: f.name,
                kind: f.kind,
                len: f.len,
            })
        })
        .collect()
}

/// Takes the lock of the closed store (or backup) in `dir` without creating anything: only
/// if a `LOCK` file exists (a backup has none), and only where it can be taken. A store
/// open elsewhere is refused; a lock file that cannot be opened for locking (a read-only
/// medium) is passed over, since nothing can then write the store either.
///
/// # Errors
/// `Error::Io` of kind `WouldBlock` if the store is open.
pub(crate) fn lock_closed(fs: &dyn FileSystem, dir: &Path) -> Result<Option<Box<dyn FileLock>>> {
    let path = dir.join(files::LOCK);
    if !fs.exists(&path)? {
        return Ok(None);
    }
    match fs.lock(&path) {
        Ok(lock) => Ok(Some(lock)),
        Err(Error::Io { source, .. }) if source.kind() != std::io::ErrorKind::WouldBlock => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Captures a checkpoint of the closed store or backup in `dir` without writing to it:
/// the version its manifest holds, its tables and every WAL file from the version's
/// `wal_min_id` on (whole: recovery of the copy treats a torn tail as the original would).
///
/// # Errors
/// `InvalidArgument` if `dir` holds no store; `Error::Io` (kind `WouldBlock` if the store
/// is open); `Corruption` if `CURRENT` or the manifest is damaged or a needed file is
/// missing.
pub(crate) fn capture_closed(fs: &dyn FileSystem, dir: &Path) -> Result<Checkpoint> {
    let lock = lock_closed(fs, dir)?;
    let Some(recovered) = Manifest::recover(fs, dir)? else {
        return Err(Error::invalid(format!("no store at {}", dir.display())));
    };
    let version = recovered.version;
    let names = fs.list_dir(dir)?;
    let mut members = immutable_members(dir, &names, &version)?;
    // Blob files no flush recorded yet: the WAL may reference them (recovery of the copy
    // deletes those it does not).
    for name in &names {
        let Some(id) = BlobId::parse(name) else {
            continue;
        };
        if version.blob_files().contains_key(&id) {
            continue;
        }
        let path = dir.join(name);
        members.push(Member {
            len: fs.file_len(&path)?,
            source: Source::Immutable(path),
            name: name.clone(),
            kind: FileKind::Blob,
        });
    }
    members.extend(wal_members(fs, dir, &names, &version, None)?);
    members.extend(manifest_members(&version, recovered.manifest_id)?);
    Ok(Checkpoint {
        seqno: version.flushed_seqno().0,
        members,
        _pin: Pin::Closed(lock),
    })
}

/// Copies `len` bytes of `src` from `offset` to the end of `dst`, in pieces of at most
/// 1 MiB, calling `observe` on each piece (to checksum it).
///
/// # Errors
/// `Error::Io` (`UnexpectedEof` if `src` ends before `offset + len`).
pub(crate) fn copy_range(
    src: &dyn ReadableFile,
    offset: u64,
    len: u64,
    dst: &mut dyn crate::fs::WritableFile,
    mut observe: impl FnMut(&[u8]),
) -> Result<()> {
    for_each_piece(src, offset, len, |piece| {
        observe(piece);
        dst.append(piece)
    })
}

/// Reads `len` bytes of `src` from `offset` in pieces of at most 1 MiB, handing each to
/// `f`.
///
/// # Errors
/// `Error::Io` (`UnexpectedEof` if `src` ends before `offset + len`); `f`'s error.
pub(crate) fn for_each_piece(
    src: &dyn ReadableFile,
    offset: u64,
    len: u64,
    mut f: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    const PIECE: u64 = 1 << 20;
    let mut buf = Vec::new();
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(PIECE);
        buf.resize(n as usize, 0);
        crate::fs::read_exact_at(src, offset.saturating_add(done), &mut buf)?;
        f(&buf)?;
        done += n;
    }
    Ok(())
}
