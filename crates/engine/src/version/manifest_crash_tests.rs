//! Crash-safety tests of [`super::Manifest`]: a power loss after every file-system call
//! of a store's life (first manifest, appends, rotations), and an I/O error at every call,
//! must each recover a state the store had acknowledged (or the one in flight), never an
//! error.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;

use super::*;
use crate::fs::{CrashOptions, Fault, FaultKind, FileLock, MemFs, Op, ReadableFile, WritableFile};
use crate::version::workload::{bump, dir, new_fs, shared, Workload};

/// What the test had acknowledged when an image was taken: recovery must yield one of
/// `states[lo..=hi]`.
#[derive(Debug, Default)]
struct Progress {
    lo: usize,
    hi: usize,
}

#[derive(Debug)]
struct Image {
    lo: usize,
    hi: usize,
    call: usize,
    fs: MemFs,
}

#[derive(Debug, Default)]
struct Log {
    progress: Progress,
    calls: usize,
    images: Vec<Image>,
}

/// A [`FileSystem`] over a [`MemFs`] that, after every call that changes anything, stores
/// the state a power loss at that instant would leave (once as `DropUnsynced`, and
/// `random` times as `Random` with different seeds).
#[derive(Debug, Clone)]
struct Recorder {
    fs: MemFs,
    random: u64,
    log: Arc<Mutex<Log>>,
}

impl Recorder {
    fn after_call(&self) {
        let mut log = self.log.lock();
        log.calls += 1;
        let (lo, hi, call) = (log.progress.lo, log.progress.hi, log.calls);
        let mut options = vec![CrashOptions::DropUnsynced];
        options.extend((0..self.random).map(|i| CrashOptions::Random {
            seed: call as u64 * 1000 + i,
        }));
        for o in options {
            let fs = self.fs.crash_with(o);
            log.images.push(Image { lo, hi, call, fs });
        }
    }

    fn progress(&self, lo: usize, hi: usize) {
        self.log.lock().progress = Progress { lo, hi };
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

/// The store's life as the `Db` would drive it: create the first manifest, append edits,
/// rotate twice (bumping `next_file_id` for the new manifest's id first), append more.
/// `states[k]` is the k-th state the store may be in (`None`: no store yet); `step`
/// is told, before each call, which states a crash during it may leave. Stops at the
/// first error and returns it.
fn drive(
    fs: Arc<dyn FileSystem>,
    seed: u64,
    edits: usize,
    states: &mut Vec<Option<Version>>,
    step: &dyn Fn(usize, usize),
) -> Result<()> {
    let mut w = Workload::new(seed);
    let mut v = w.start();
    states.clear();
    states.push(None);
    states.push(Some(v.clone()));
    step(0, 1);
    let mut m = Manifest::create(Arc::clone(&fs), &dir(), 1, &v)?;
    for i in 0..edits {
        let acked = states.len() - 1;
        if i == edits / 3 || i == 2 * edits / 3 {
            v = bump(&v);
            states.push(Some(v.clone()));
            step(acked, acked + 1);
            m = Manifest::create(Arc::clone(&fs), &dir(), v.next_file_id() - 1, &v)?;
            continue;
        }
        let e = w.next_edit(&v);
        v = v.apply(&e, &m.path(), m.len())?;
        states.push(Some(v.clone()));
        step(acked, acked + 1);
        m.append(&e)?;
    }
    step(states.len() - 1, states.len() - 1);
    Ok(())
}

/// Recovers `fs` and checks the result is one of `states[lo..=hi]`; then continues as
/// the `Db` would (a new manifest with a fresh id, one more edit) and checks that too.
fn check_recovery(fs: &MemFs, states: &[Option<Version>], lo: usize, hi: usize, what: &str) {
    let got = Manifest::recover(fs, &dir())
        .unwrap_or_else(|e| panic!("{what}: recovery failed: {e}"))
        .map(|r| r.version);
    assert!(
        states[lo..=hi].contains(&got),
        "{what}: recovered a state outside {lo}..={hi}"
    );
    let v = bump(&got.unwrap_or_else(|| Workload::new(0).start()));
    let id = v.next_file_id() - 1;
    let mut m = Manifest::create(shared(fs), &dir(), id, &v)
        .unwrap_or_else(|e| panic!("{what}: restart failed: {e}"));
    let e = Edit {
        next_file_id: Some(v.next_file_id() + 10),
        ..Edit::default()
    };
    m.append(&e).unwrap();
    let after = Manifest::recover(&fs.crash(), &dir()).unwrap().unwrap();
    assert_eq!(
        after.version.next_file_id(),
        v.next_file_id() + 10,
        "{what}"
    );
    assert_eq!(after.manifest_id, id);
    for name in obsolete_files(fs, &dir(), id).unwrap() {
        fs.remove(&dir().join(name)).unwrap();
    }
    assert_eq!(
        Manifest::recover(&fs.crash(), &dir())
            .unwrap()
            .unwrap()
            .version,
        after.version
    );
}

#[test]
fn a_crash_after_any_call_recovers_an_acknowledged_prefix() {
    let mut checked = 0;
    for seed in 0..3 {
        let rec = Recorder {
            fs: new_fs(),
            random: 4,
            log: Arc::default(),
        };
        let mut states = Vec::new();
        let step = |lo, hi| rec.progress(lo, hi);
        drive(Arc::new(rec.clone()), seed, 24, &mut states, &step).unwrap();
        let images = std::mem::take(&mut rec.log.lock().images);
        assert!(images.len() > 100);
        for img in images {
            let what = format!("seed {seed}, call {}", img.call);
            check_recovery(&img.fs, &states, img.lo, img.hi, &what);
            checked += 1;
        }
    }
    assert!(checked > 600, "{checked} crash states");
}

#[test]
fn an_io_error_at_any_call_keeps_every_acknowledged_edit() {
    // Count the calls of each kind in a clean run, then fail each one in turn.
    let clean = new_fs();
    let mut states = Vec::new();
    drive(shared(&clean), 9, 12, &mut states, &|_, _| {}).unwrap();
    let mut checked = 0;
    for op in [
        Op::Create,
        Op::Write,
        Op::Sync,
        Op::SyncDir,
        Op::Rename,
        Op::Remove,
    ] {
        let base = new_fs().op_count(op);
        for nth in base + 1..=clean.op_count(op) {
            for kind in [FaultKind::Eio, FaultKind::FsyncLost] {
                let fs = new_fs();
                fs.inject(Fault {
                    op,
                    nth,
                    kind,
                    forever: false,
                });
                let range = Mutex::new((0, 0));
                let step = |lo, hi| *range.lock() = (lo, hi);
                let res = drive(shared(&fs), 9, 12, &mut states, &step);
                assert!(
                    matches!(res, Err(Error::Io { .. })),
                    "{op:?} #{nth}: {res:?}"
                );
                let (lo, hi) = *range.lock();
                let what = format!("{op:?} #{nth} {kind:?}");
                for seed in 0..3 {
                    let crashed = fs.crash_with(CrashOptions::Random { seed });
                    check_recovery(&crashed, &states, lo, hi, &format!("{what}, seed {seed}"));
                }
                check_recovery(&fs.crash(), &states, lo, hi, &what);
                // Last, as it writes to `fs`: a reopen without a crash.
                check_recovery(&fs, &states, lo, hi, &format!("{what}, no crash"));
                checked += 1;
            }
        }
    }
    assert!(checked > 50, "{checked} fault points");
}
