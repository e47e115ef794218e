//! [`Recorder`]: a [`FileSystem`] over a [`MemFs`] that, after every call that changes
//! anything, keeps the images a crash at that instant would leave, each stamped with how
//! far the workload had got ([`Marks`]) and the store's `durable_seqno()` read just before.
//!
//! Ordering: the marks and the file-system image are read under one lock, and the driver
//! updates the marks under the same lock, so an image never holds bytes of a write the
//! marks do not count as started. `durable_seqno` is read before the image is taken, so
//! it never covers a write the image could not hold.

use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::Marks;
use crate::db::inner::Inner;
use crate::db::Db;
use crate::error::Result;
use crate::fs::{CrashOptions, FileLock, FileSystem, MemFs, ReadableFile, WritableFile};

/// Which crash an image models.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Crash {
    /// Power loss: only synced bytes and directory entries survive.
    Power,
    /// Process crash: everything handed to the file system survives.
    Process,
    /// Power loss that keeps a random part of the unsynced appends and tears the next one
    /// (`CrashOptions::Random` with this seed).
    Torn(u64),
}

/// One crash image.
#[derive(Debug)]
pub(super) struct Image {
    pub(super) fs: MemFs,
    pub(super) crash: Crash,
    pub(super) marks: Marks,
    /// `durable_seqno()` of the store just before the image was taken.
    pub(super) durable: u64,
    /// The number of the call after which the image was taken.
    pub(super) call: usize,
}

#[derive(Default)]
struct Log {
    marks: Marks,
    durable: u64,
    probe: Option<Weak<Inner>>,
    recording: bool,
    calls: usize,
    images: Vec<Image>,
}

/// See the module documentation. Clones share the log.
#[derive(Clone)]
pub(super) struct Recorder {
    pub(super) fs: MemFs,
    /// Torn images per call, besides one power-loss and one process-crash image.
    torn: u64,
    log: Arc<Mutex<Log>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").field("fs", &self.fs).finish()
    }
}

impl Recorder {
    pub(super) fn new(fs: MemFs, torn: u64) -> Recorder {
        Recorder {
            fs,
            torn,
            log: Arc::default(),
        }
    }

    pub(super) fn shared(&self) -> Arc<dyn FileSystem> {
        Arc::new(self.clone())
    }

    /// Starts or stops taking images.
    pub(super) fn recording(&self, on: bool) {
        self.log.lock().recording = on;
    }

    pub(super) fn set_marks(&self, marks: Marks) {
        self.log.lock().marks = marks;
    }

    /// Reads `durable_seqno` from `db` at every call from now on.
    pub(super) fn set_probe(&self, db: &Db) {
        self.log.lock().probe = Some(Arc::downgrade(&db.inner));
    }

    /// A durable seqno known by other means (after a close).
    pub(super) fn note_durable(&self, seqno: u64) {
        let mut log = self.log.lock();
        log.durable = log.durable.max(seqno);
    }

    pub(super) fn take_images(&self) -> Vec<Image> {
        std::mem::take(&mut self.log.lock().images)
    }

    fn after_call(&self) {
        let mut log = self.log.lock();
        if !log.recording {
            return;
        }
        log.calls += 1;
        // Within one run `durable_seqno` only grows (no crash happens in it), so the
        // largest value seen is a valid lower bound even after the store is gone.
        if let Some(inner) = log.probe.as_ref().and_then(Weak::upgrade) {
            let d = inner.durable_seqno.load(Ordering::Acquire);
            log.durable = log.durable.max(d);
        }
        let (marks, durable, call) = (log.marks, log.durable, log.calls);
        let mut crashes = vec![Crash::Power, Crash::Process];
        crashes.extend((0..self.torn).map(|i| Crash::Torn(call as u64 * 7919 + i)));
        for crash in crashes {
            let options = match crash {
                Crash::Power => CrashOptions::DropUnsynced,
                Crash::Process => CrashOptions::KeepAll,
                Crash::Torn(seed) => CrashOptions::Random { seed },
            };
            log.images.push(Image {
                fs: self.fs.crash_with(options),
                crash,
                marks,
                durable,
                call,
            });
        }
    }
}

#[derive(Debug)]
struct RecordedFile {
    inner: Box<dyn WritableFile>,
    rec: Recorder,
}

impl WritableFile for RecordedFile {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let r = self.inner.append(data);
        self.rec.after_call();
        r
    }
    fn sync_data(&mut self) -> Result<()> {
        let r = self.inner.sync_data();
        self.rec.after_call();
        r
    }
    fn sync_all(&mut self) -> Result<()> {
        let r = self.inner.sync_all();
        self.rec.after_call();
        r
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn path(&self) -> &Path {
        self.inner.path()
    }
}

impl FileSystem for Recorder {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let r = self.fs.create(path);
        self.after_call();
        Ok(Box::new(RecordedFile {
            inner: r?,
            rec: self.clone(),
        }))
    }
    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        Ok(Box::new(RecordedFile {
            inner: self.fs.open_append(path)?,
            rec: self.clone(),
        }))
    }
    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        self.fs.open_read(path)
    }
    fn file_len(&self, path: &Path) -> Result<u64> {
        self.fs.file_len(path)
    }
    fn exists(&self, path: &Path) -> Result<bool> {
        self.fs.exists(path)
    }
    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let r = self.fs.rename(from, to);
        self.after_call();
        r
    }
    fn remove(&self, path: &Path) -> Result<()> {
        let r = self.fs.remove(path);
        self.after_call();
        r
    }
    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        self.fs.list_dir(dir)
    }
    fn create_dir(&self, dir: &Path) -> Result<()> {
        let r = self.fs.create_dir(dir);
        self.after_call();
        r
    }
    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let r = self.fs.sync_dir(dir);
        self.after_call();
        r
    }
    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        self.fs.lock(path)
    }
}
