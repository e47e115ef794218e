//! [`MemFs`]: an in-memory [`FileSystem`] that can crash and fail on purpose (reliability
//! plan, layer T2).
//!
//! Model: every file (an *inode*) keeps its current bytes, the bytes a crash would keep
//! (its *durable image*) and the list of appends made since its last sync. The namespace is
//! kept twice: the *live* entries every call sees, and the *durable* entries as of each
//! directory's last [`FileSystem::sync_dir`]. So a file that was created, written and
//! synced but whose directory was not synced disappears at a crash, and an unsynced rename
//! is undone.
//!
//! [`MemFs::crash`] returns a new `MemFs` holding only the durable state (a power loss);
//! [`MemFs::crash_with`] with [`CrashOptions::Random`] instead keeps, per file, a random
//! number of whole unsynced appends, tears the next one at a random byte and either ends
//! the file there or fills the rest of that append with zeros or random bytes; and per
//! directory it either keeps all unsynced entry changes or none (a directory's metadata
//! reaches the disk as a unit). The result is deterministic for a given seed. With
//! [`CrashOptions::KeepAll`] it keeps everything handed to the file system, the unsynced
//! part still unsynced: a process crash (the kernel still has those bytes, and a later power
//! loss may yet lose them).
//!
//! A handle from [`FileSystem::open_read_mapped`] stands for a memory map: its
//! [`ReadableFile::mapped`] bytes are a copy of the file taken at the open, and reads
//! through them are neither counted nor failed by faults (a real map has no error path).
//!
//! Hard links share the inode. A directory can be renamed (with everything in it); the
//! entries inside it belong to the directory, so they stay durable under the old name
//! until the directory holding the new name is synced, and then move with it.
//!
//! Faults: [`MemFs::inject`] arms a [`Fault`] that fails the n-th call (1-based, counting
//! every call of that [`Op`] since the `MemFs` was made) with EIO or ENOSPC, once or on every
//! later call too. [`FaultKind::FsyncLost`] on a sync models Linux after a failed
//! `fsync`: the call fails with EIO and the unsynced bytes never reach the disk (the
//! durable image gets zeros there) even though reads still return them. A failed append
//! writes nothing.
//!
//! Thread-safety: a `MemFs` is a cheap `Arc` handle over one mutex-protected state; clones
//! share the state. Handles from before a crash keep writing to the old state, never to the
//! `MemFs` returned by `crash`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{lock_held_error, parent_of, FileLock, FileSystem, ReadableFile, WritableFile};
use crate::error::{Error, Result};
use crate::mmap::Map;

/// A kind of call whose n-th occurrence a [`Fault`] can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    /// `create`, `create_dir` and `hard_link`.
    Create,
    /// `WritableFile::append`.
    Write,
    /// `WritableFile::sync_data` and `sync_all`.
    Sync,
    /// `FileSystem::sync_dir`.
    SyncDir,
    /// `FileSystem::rename`.
    Rename,
    /// `FileSystem::remove` and `remove_dir`.
    Remove,
    /// `ReadableFile::read_at`: counted only (no fault is injected into reads).
    Read,
}

/// How an injected fault fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(not(test), allow(dead_code))] // made only by tests, through `MemFs::inject`
pub(crate) enum FaultKind {
    /// `EIO`; nothing changes.
    Eio,
    /// `ENOSPC`; nothing changes.
    Enospc,
    /// On a sync: `EIO`, and the unsynced bytes are lost for good (see the module docs).
    /// On other operations: like [`FaultKind::Eio`].
    FsyncLost,
}

/// Fail the `nth` call of `op` (1-based) with `kind`; with `forever`, every later one too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fault {
    /// Which calls are counted.
    pub op: Op,
    /// The first call that fails (1 = the next call if none happened yet).
    pub nth: u64,
    /// The error.
    pub kind: FaultKind,
    /// Fail every call from the `nth` on, not only the `nth`.
    pub forever: bool,
}

/// How [`MemFs::crash_with`] damages unsynced state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg(test)]
pub(crate) enum CrashOptions {
    /// Keep exactly the durable state (what [`MemFs::crash`] does).
    DropUnsynced,
    /// Keep every byte and directory entry as the process last saw them, and which of
    /// them are synced: a process crash. Only what the process held in its own memory
    /// (buffers not yet appended) is lost; what was not synced is still at risk from a
    /// later power loss. Also makes an independent copy of a `MemFs`.
    KeepAll,
    /// Keep a random prefix of the unsynced appends and tear the next one; keep or drop
    /// each directory's unsynced entries as a whole. Deterministic in `seed`.
    Random {
        /// Seed of the random choices.
        seed: u64,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Entry {
    File(u64),
    Dir,
}

#[derive(Debug, Clone, Default)]
struct Inode {
    data: Vec<u8>,
    /// What a crash keeps. Invariant: `durable.len() <= data.len()`, and it equals the
    /// matching prefix of `data` except where a lost fsync zeroed it.
    durable: Vec<u8>,
    /// End offsets (in `data`) of the appends since the last sync, in order.
    pending: Vec<usize>,
}

#[derive(Debug, Default)]
struct State {
    inodes: HashMap<u64, Inode>,
    live: BTreeMap<PathBuf, Entry>,
    durable: BTreeMap<PathBuf, Entry>,
    next_inode: u64,
    faults: Vec<Fault>,
    counts: HashMap<Op, u64>,
    locks: BTreeSet<PathBuf>,
    /// Directory renames (from, to) whose new entry is not yet durable. The entries inside
    /// a renamed directory belong to the directory, not to its name: they stay durable
    /// under `from` until the directory holding `to` is synced, then move to `to`.
    dir_moves: Vec<(PathBuf, PathBuf)>,
}

/// splitmix64: a tiny deterministic generator, enough for choosing crash damage.
#[cfg(test)]
struct Rng(u64);

#[cfg(test)]
impl Rng {
    #[cfg(test)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A value in `0..=max`.
    #[cfg(test)]
    fn up_to(&mut self, max: usize) -> usize {
        (self.next() % (max as u64 + 1)) as usize
    }
}

fn is_root(path: &Path) -> bool {
    path.as_os_str().is_empty() || path == Path::new("/") || path == Path::new(".")
}

fn not_found(path: &Path, op: &'static str) -> Error {
    Error::io(path, op, io::Error::from(io::ErrorKind::NotFound))
}

impl State {
    fn dir_exists(&self, dir: &Path) -> bool {
        is_root(dir) || self.live.get(dir) == Some(&Entry::Dir)
    }

    fn live_file(&self, path: &Path, op: &'static str) -> Result<u64> {
        match self.live.get(path) {
            Some(Entry::File(ino)) => Ok(*ino),
            Some(Entry::Dir) => Err(Error::io(
                path,
                op,
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            )),
            None => Err(not_found(path, op)),
        }
    }

    /// Counts a call of `op` and returns the injected failure for it, if any.
    fn check(&mut self, op: Op, path: &Path, what: &'static str) -> Result<(), (Error, bool)> {
        let count = self.counts.entry(op).or_insert(0);
        *count += 1;
        let n = *count;
        let hit = self
            .faults
            .iter()
            .find(|f| f.op == op && (f.nth == n || (f.forever && n > f.nth)));
        match hit {
            None => Ok(()),
            Some(f) => {
                let (errno, lost) = match f.kind {
                    FaultKind::Eio => (libc::EIO, false),
                    FaultKind::Enospc => (libc::ENOSPC, false),
                    FaultKind::FsyncLost => (libc::EIO, true),
                };
                Err((
                    Error::io(path, what, io::Error::from_raw_os_error(errno)),
                    lost,
                ))
            }
        }
    }

    /// Checks the `op` counter, dropping the "lost" flag (only syncs use it).
    fn check_plain(&mut self, op: Op, path: &Path, what: &'static str) -> Result<()> {
        self.check(op, path, what).map_err(|(e, _)| e)
    }

    fn sync_inode(&mut self, ino: u64) {
        if let Some(node) = self.inodes.get_mut(&ino) {
            let start = node.durable.len();
            if let Some(tail) = node.data.get(start..) {
                node.durable.extend_from_slice(tail);
            }
            node.pending.clear();
        }
    }

    fn lose_unsynced(&mut self, ino: u64) {
        if let Some(node) = self.inodes.get_mut(&ino) {
            node.durable.resize(node.data.len(), 0);
            node.pending.clear();
        }
    }

    fn entries_of<'a>(
        map: &'a BTreeMap<PathBuf, Entry>,
        dir: &'a Path,
    ) -> impl Iterator<Item = (&'a PathBuf, &'a Entry)> + 'a {
        map.iter().filter(move |(p, _)| parent_of(p) == dir)
    }

    fn sync_directory(&mut self, dir: &Path) {
        self.durable.retain(|p, _| parent_of(p) != dir);
        let live: Vec<(PathBuf, Entry)> = Self::entries_of(&self.live, dir)
            .map(|(p, e)| (p.clone(), *e))
            .collect();
        self.durable.extend(live);
        let (done, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.dir_moves)
            .into_iter()
            .partition(|(_, to)| parent_of(to) == dir);
        self.dir_moves = waiting;
        for (from, to) in done {
            move_under(&mut self.durable, &from, &to, false);
        }
    }
}

/// Moves the entries strictly below `from` (and, with `with_self`, `from` itself) to the
/// same place below `to`.
fn move_under(map: &mut BTreeMap<PathBuf, Entry>, from: &Path, to: &Path, with_self: bool) {
    let moved: Vec<PathBuf> = map
        .keys()
        .filter(|p| p.starts_with(from) && (with_self || p.as_path() != from))
        .cloned()
        .collect();
    for p in moved {
        if let (Some(e), Ok(rel)) = (map.remove(&p), p.strip_prefix(from)) {
            let dest = if rel.as_os_str().is_empty() {
                to.to_path_buf()
            } else {
                to.join(rel)
            };
            map.insert(dest, e);
        }
    }
}

/// An in-memory file system; see the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct MemFs {
    state: Arc<Mutex<State>>,
}

impl MemFs {
    /// An empty file system; the root (`/`, or `.` for relative paths) always exists.
    pub(crate) fn new() -> MemFs {
        MemFs::default()
    }

    /// Arms `fault`; it stays armed until [`MemFs::clear_faults`].
    #[cfg(test)]
    pub(crate) fn inject(&self, fault: Fault) {
        self.state.lock().faults.push(fault);
    }

    /// Disarms every fault (call counts keep running).
    #[cfg(test)]
    pub(crate) fn clear_faults(&self) {
        self.state.lock().faults.clear();
    }

    /// How many calls of `op` were made so far.
    #[cfg(test)]
    pub(crate) fn op_count(&self, op: Op) -> u64 {
        self.state.lock().counts.get(&op).copied().unwrap_or(0)
    }

    /// Names in `dir` whose entry differs from its durable state (created, renamed to or
    /// from, or removed since the directory's last sync), sorted.
    #[cfg(test)]
    pub(crate) fn unsynced_entries(&self, dir: &Path) -> Vec<String> {
        let st = self.state.lock();
        let live: BTreeMap<_, _> = State::entries_of(&st.live, dir).collect();
        let durable: BTreeMap<_, _> = State::entries_of(&st.durable, dir).collect();
        let mut names: BTreeSet<String> = BTreeSet::new();
        for (p, e) in &live {
            if durable.get(p) != Some(e) {
                names.extend(p.file_name().map(|n| n.to_string_lossy().into_owned()));
            }
        }
        for p in durable.keys() {
            if !live.contains_key(p) {
                names.extend(p.file_name().map(|n| n.to_string_lossy().into_owned()));
            }
        }
        names.into_iter().collect()
    }

    /// XORs the byte at `offset` of file `path` with `mask`, in both the current and the
    /// durable contents (a bit flip on the medium). Out-of-range offsets change nothing.
    #[cfg(test)]
    pub(crate) fn corrupt(&self, path: &Path, offset: usize, mask: u8) -> Result<()> {
        let mut st = self.state.lock();
        let ino = st.live_file(path, "corrupt")?;
        if let Some(node) = st.inodes.get_mut(&ino) {
            if let Some(b) = node.data.get_mut(offset) {
                *b ^= mask;
            }
            if let Some(b) = node.durable.get_mut(offset) {
                *b ^= mask;
            }
        }
        Ok(())
    }

    /// A power loss: a new `MemFs` with only the durable state.
    #[cfg(test)]
    pub(crate) fn crash(&self) -> MemFs {
        self.crash_with(CrashOptions::DropUnsynced)
    }

    /// A crash (a power loss, or with [`CrashOptions::KeepAll`] a process crash) that keeps
    /// unsynced state as `options` says.
    #[cfg(test)]
    pub(crate) fn crash_with(&self, options: CrashOptions) -> MemFs {
        let st = self.state.lock();
        let mut rng = match options {
            CrashOptions::DropUnsynced => None,
            CrashOptions::KeepAll => {
                return MemFs {
                    state: Arc::new(Mutex::new(State {
                        inodes: st.inodes.clone(),
                        live: st.live.clone(),
                        durable: st.durable.clone(),
                        next_inode: st.next_inode,
                        dir_moves: st.dir_moves.clone(),
                        ..State::default()
                    })),
                }
            }
            CrashOptions::Random { seed } => Some(Rng(seed)),
        };

        // Namespace: durable entries, plus (Random) each dirty directory's live entries
        // as a whole.
        let mut names = st.durable.clone();
        if let Some(rng) = rng.as_mut() {
            let dirs: BTreeSet<PathBuf> = st
                .live
                .keys()
                .chain(st.durable.keys())
                .map(|p| parent_of(p))
                .collect();
            for dir in dirs {
                // A directory renamed away has no live entries under its old name; its
                // entries follow the rename (applied with its new parent's entries).
                if st.dir_moves.iter().any(|(from, _)| dir.starts_with(from)) {
                    continue;
                }
                if rng.next() % 2 == 0 {
                    names.retain(|p, _| parent_of(p) != dir);
                    names.extend(State::entries_of(&st.live, &dir).map(|(p, e)| (p.clone(), *e)));
                    for (from, to) in st.dir_moves.iter().filter(|(_, to)| parent_of(to) == dir) {
                        move_under(&mut names, from, to, false);
                    }
                }
            }
        }
        // An entry whose directory did not survive is gone too (repeat for nesting).
        loop {
            let orphans: Vec<PathBuf> = names
                .keys()
                .filter(|p| {
                    let dir = parent_of(p);
                    !is_root(&dir) && names.get(&dir) != Some(&Entry::Dir)
                })
                .cloned()
                .collect();
            if orphans.is_empty() {
                break;
            }
            for p in orphans {
                names.remove(&p);
            }
        }

        let mut inodes = HashMap::new();
        for entry in names.values() {
            let Entry::File(ino) = entry else { continue };
            if inodes.contains_key(ino) {
                continue;
            }
            let Some(node) = st.inodes.get(ino) else {
                continue;
            };
            let mut data = node.durable.clone();
            if let Some(rng) = rng.as_mut() {
                let mut start = node.durable.len();
                let keep_whole = rng.up_to(node.pending.len());
                for (i, &end) in node.pending.iter().enumerate() {
                    let Some(bytes) = node.data.get(start..end) else {
                        break;
                    };
                    if i < keep_whole {
                        data.extend_from_slice(bytes);
                    } else {
                        // Tear this append; later ones never reached the disk.
                        let kept = rng.up_to(bytes.len().saturating_sub(1));
                        data.extend_from_slice(bytes.get(..kept).unwrap_or_default());
                        let torn = bytes.len() - kept;
                        match rng.next() % 3 {
                            0 => {}
                            1 => data.resize(data.len() + torn, 0),
                            _ => data.extend((0..torn).map(|_| rng.next() as u8)),
                        }
                        break;
                    }
                    start = end;
                }
            }
            inodes.insert(
                *ino,
                Inode {
                    durable: data.clone(),
                    data,
                    pending: Vec::new(),
                },
            );
        }
        MemFs {
            state: Arc::new(Mutex::new(State {
                inodes,
                live: names.clone(),
                durable: names,
                next_inode: st.next_inode,
                ..State::default()
            })),
        }
    }
}

#[derive(Debug)]
struct MemWritable {
    state: Arc<Mutex<State>>,
    ino: u64,
    path: PathBuf,
}

#[derive(Debug)]
struct MemReadable {
    state: Arc<Mutex<State>>,
    ino: u64,
    path: PathBuf,
    /// For handles opened with `open_read_mapped`: the file's bytes when it was opened, as
    /// a real map would show them (reads through it are never counted or failed: a real
    /// map reports no errors).
    image: Option<Arc<Map>>,
}

#[derive(Debug)]
struct MemLock {
    state: Arc<Mutex<State>>,
    path: PathBuf,
}

impl FileSystem for MemFs {
    fn create(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let mut st = self.state.lock();
        st.check_plain(Op::Create, path, "create")?;
        if !st.dir_exists(&parent_of(path)) {
            return Err(not_found(path, "create"));
        }
        if st.live.contains_key(path) {
            return Err(Error::io(
                path,
                "create",
                io::Error::from(io::ErrorKind::AlreadyExists),
            ));
        }
        st.next_inode += 1;
        let ino = st.next_inode;
        st.inodes.insert(ino, Inode::default());
        st.live.insert(path.to_path_buf(), Entry::File(ino));
        Ok(Box::new(MemWritable {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_path_buf(),
        }))
    }

    fn open_append(&self, path: &Path) -> Result<Box<dyn WritableFile>> {
        let ino = self.state.lock().live_file(path, "open")?;
        Ok(Box::new(MemWritable {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_path_buf(),
        }))
    }

    fn open_read(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let ino = self.state.lock().live_file(path, "open")?;
        Ok(Box::new(MemReadable {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_path_buf(),
            image: None,
        }))
    }

    fn open_read_mapped(&self, path: &Path) -> Result<Box<dyn ReadableFile>> {
        let st = self.state.lock();
        let ino = st.live_file(path, "open")?;
        let image = st
            .inodes
            .get(&ino)
            .map_or_else(Vec::new, |n| n.data.clone());
        Ok(Box::new(MemReadable {
            state: Arc::clone(&self.state),
            ino,
            path: path.to_path_buf(),
            image: Some(Arc::new(Map::copy_of(image))),
        }))
    }

    fn file_len(&self, path: &Path) -> Result<u64> {
        let st = self.state.lock();
        let ino = st.live_file(path, "stat")?;
        Ok(st.inodes.get(&ino).map_or(0, |n| n.data.len() as u64))
    }

    fn exists(&self, path: &Path) -> Result<bool> {
        let st = self.state.lock();
        Ok(is_root(path) || st.live.contains_key(path))
    }

    fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Rename, from, "rename")?;
        if st.live.get(from) == Some(&Entry::Dir) {
            if st.live.contains_key(to) || is_root(to) {
                return Err(Error::io(
                    to,
                    "rename",
                    io::Error::from(io::ErrorKind::AlreadyExists),
                ));
            }
            if !st.dir_exists(&parent_of(to)) || to.starts_with(from) {
                return Err(not_found(to, "rename"));
            }
            move_under(&mut st.live, from, to, true);
            st.dir_moves.push((from.to_path_buf(), to.to_path_buf()));
            return Ok(());
        }
        let ino = st.live_file(from, "rename")?;
        if !st.dir_exists(&parent_of(to)) {
            return Err(not_found(to, "rename"));
        }
        if st.live.get(to) == Some(&Entry::Dir) {
            return Err(Error::io(
                to,
                "rename",
                io::Error::new(io::ErrorKind::IsADirectory, "is a directory"),
            ));
        }
        st.live.remove(from);
        st.live.insert(to.to_path_buf(), Entry::File(ino));
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Remove, path, "remove")?;
        st.live_file(path, "remove")?;
        // The inode stays: open handles keep working, as with an unlinked POSIX file.
        st.live.remove(path);
        Ok(())
    }

    fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Create, to, "link")?;
        let ino = st.live_file(from, "link")?;
        if !st.dir_exists(&parent_of(to)) {
            return Err(not_found(to, "link"));
        }
        if st.live.contains_key(to) {
            return Err(Error::io(
                to,
                "link",
                io::Error::from(io::ErrorKind::AlreadyExists),
            ));
        }
        st.live.insert(to.to_path_buf(), Entry::File(ino));
        Ok(())
    }

    fn remove_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Remove, dir, "remove directory")?;
        if st.live.get(dir) != Some(&Entry::Dir) {
            return Err(not_found(dir, "remove directory"));
        }
        if State::entries_of(&st.live, dir).next().is_some() {
            return Err(Error::io(
                dir,
                "remove directory",
                io::Error::new(io::ErrorKind::DirectoryNotEmpty, "directory not empty"),
            ));
        }
        st.live.remove(dir);
        Ok(())
    }

    fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let st = self.state.lock();
        if !st.dir_exists(dir) {
            return Err(not_found(dir, "list directory"));
        }
        let mut names: Vec<String> = State::entries_of(&st.live, dir)
            .filter_map(|(p, _)| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        names.sort();
        Ok(names)
    }

    fn create_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Create, dir, "create directory")?;
        match st.live.get(dir) {
            Some(Entry::Dir) => return Ok(()),
            Some(Entry::File(_)) => {
                return Err(Error::io(
                    dir,
                    "create directory",
                    io::Error::from(io::ErrorKind::AlreadyExists),
                ))
            }
            None if is_root(dir) => return Ok(()),
            None => {}
        }
        if !st.dir_exists(&parent_of(dir)) {
            return Err(not_found(dir, "create directory"));
        }
        st.live.insert(dir.to_path_buf(), Entry::Dir);
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::SyncDir, dir, "fsync directory")?;
        if !st.dir_exists(dir) {
            return Err(not_found(dir, "open directory"));
        }
        st.sync_directory(dir);
        Ok(())
    }

    fn lock(&self, path: &Path) -> Result<Box<dyn FileLock>> {
        let mut st = self.state.lock();
        if st.locks.contains(path) {
            return Err(lock_held_error(path));
        }
        if !st.live.contains_key(path) {
            if !st.dir_exists(&parent_of(path)) {
                return Err(not_found(path, "open lock file"));
            }
            st.next_inode += 1;
            let ino = st.next_inode;
            st.inodes.insert(ino, Inode::default());
            st.live.insert(path.to_path_buf(), Entry::File(ino));
        }
        st.locks.insert(path.to_path_buf());
        Ok(Box::new(MemLock {
            state: Arc::clone(&self.state),
            path: path.to_path_buf(),
        }))
    }
}

impl WritableFile for MemWritable {
    fn append(&mut self, data: &[u8]) -> Result<()> {
        let mut st = self.state.lock();
        st.check_plain(Op::Write, &self.path, "write")?;
        if let Some(node) = st.inodes.get_mut(&self.ino) {
            node.data.extend_from_slice(data);
            node.pending.push(node.data.len());
        }
        Ok(())
    }

    /// One write of the concatenation, as `writev` is one write call: a fault injected on
    /// the next write fails the whole of it.
    fn append_parts(&mut self, parts: &[&[u8]]) -> Result<()> {
        self.append(&parts.concat())
    }

    fn sync_data(&mut self) -> Result<()> {
        let mut st = self.state.lock();
        match st.check(Op::Sync, &self.path, "fsync") {
            Ok(()) => {
                st.sync_inode(self.ino);
                Ok(())
            }
            Err((e, lost)) => {
                if lost {
                    st.lose_unsynced(self.ino);
                }
                Err(e)
            }
        }
    }

    fn sync_all(&mut self) -> Result<()> {
        self.sync_data()
    }

    fn len(&self) -> u64 {
        let st = self.state.lock();
        st.inodes.get(&self.ino).map_or(0, |n| n.data.len() as u64)
    }

    fn path(&self) -> &Path {
        &self.path
    }
}

impl ReadableFile for MemReadable {
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let mut st = self.state.lock();
        *st.counts.entry(Op::Read).or_insert(0) += 1;
        let data = st.inodes.get(&self.ino).map_or(&[][..], |n| &n.data[..]);
        let start = usize::try_from(offset).unwrap_or(usize::MAX);
        let Some(avail) = data.get(start..) else {
            return Ok(0);
        };
        let n = avail.len().min(buf.len());
        if let (Some(dst), Some(src)) = (buf.get_mut(..n), avail.get(..n)) {
            dst.copy_from_slice(src);
        }
        Ok(n)
    }

    fn len(&self) -> Result<u64> {
        let st = self.state.lock();
        Ok(st.inodes.get(&self.ino).map_or(0, |n| n.data.len() as u64))
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn mapped(&self) -> Option<&Arc<Map>> {
        self.image.as_ref()
    }
}

impl FileLock for MemLock {}

impl Drop for MemLock {
    fn drop(&mut self) {
        self.state.lock().locks.remove(&self.path);
    }
}

#[cfg(test)]
#[path = "mem_fs_tests.rs"]
mod tests;
