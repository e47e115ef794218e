//! The memtable's ordered index: an insert-only skip list whose nodes live in an arena the
//! list owns.
//!
//! A node is one bump allocation in a chunk of memory: a fixed header, a tower of forward
//! links (one per level the node is on), the encoded key (user key, then the 8-byte
//! little-endian trailer), then the value. Inserting copies key and value into the node, so
//! an insert costs no allocator call except when a chunk fills (every [`CHUNK_SIZE`] bytes),
//! and dropping the list frees its chunks, not its entries one by one. With
//! `Options::memtable_huge_pages`, shared chunks are aligned to their 2 MiB and advised for
//! transparent huge pages, so each can be one huge page and the random node visits of a
//! search miss the TLB far less often. Nodes sort by
//! keyspace, then user key ascending, then trailer descending (the memtable's order).
//!
//! This module contains the memtable's `unsafe` code (listed in `UNSAFE.md`); everything it
//! exports is safe to use.
//!
//! Invariants:
//! 1. One writer at a time: an insert (`SkipList::insert_locked`) runs under the `arena`
//!    lock from its search to its last link, so links change only under that lock and
//!    the splice an insert found is still the splice when it links the node.
//! 2. A node is written in full (header, key, value and its own links) before the
//!    `Release` store that links it at level 0 publishes it; readers load links with
//!    `Acquire`, so every node a reader reaches is initialised. Once published, a node's
//!    header, key and value never change; only its links do, and only atomically.
//! 3. Level 0 is linked both ways. A node's `prev` is its predecessor, except while an
//!    insert is linking a new node right before it: then `prev` still names the node
//!    before the new one, for as long as that insert holds the lock. A backward step may
//!    therefore skip a node whose insert has not returned, as a forward step that loaded
//!    the link earlier would; the memtable publishes an entry's seqno only after its
//!    insert returns, so no reader needs such a node (memtable invariant 3).
//! 4. Chunks are freed only when the list is dropped. An [`Entry`] borrows the list and a
//!    [`Position`] holds an `Arc` of it, so no reference into a node outlives the node.
//! 5. Nodes are 8-byte aligned, and so is every header field and link inside one.
//! 6. The point index (`point.rs`) holds only pointers to nodes of this list, entered by
//!    `SkipList::insert_locked` after the node is linked and before it returns, under
//!    the arena lock; so every pointer [`SkipList::newest`] reads from it is a published
//!    node of a list that is alive.
//! 7. An insert of a key already in the list, newer than its newest version, whose node
//!    drew a height of 1 (three inserts in four), needs no search: under the arena lock
//!    the point index names the newest version if it names any (an index that could not
//!    enter a version names none, `point.rs` invariant 4) and its `prev` is exact
//!    (invariant 3), so the node is linked between the two. Heights stay as random as
//!    ever, so searches cost what they did; a counter bumped on every write of a key skips
//!    the descent's cache misses on most of its writes.
//! 8. A finger (the per-level hints of [`SkipList::insert_group`]'s inserts) holds only
//!    nodes of its list: for each level, none or a node on that level (one an insert
//!    linked there, or the place on that level a search stopped at). Nodes never leave a
//!    level, so every hint stays a node of its level; a search takes one only if it sorts
//!    before the probe and after the node the search stands on, so a hint from any
//!    earlier insert, in any order, never changes where a node is linked.
//! 9. A place found for an entry on a level (a node on that level that sorted before the
//!    entry, or the head) stays a valid start for that level while the lock is held:
//!    nodes never leave a level and never move, so the entry's place on it is reached by
//!    walking right from there. An insert that starts from such places links the node
//!    exactly where a descent would.
//!
//! Thread-safety: `Send + Sync`; inserts serialize on the arena lock, reads take no lock.

#![allow(unsafe_code)]

use std::alloc::{self, Layout};
use std::cmp::Ordering;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering as Mo};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::point::PointIndex;
use crate::key::{split_encoded, TRAILER_LEN};

mod group;
pub(crate) use group::NewEntry;

/// Most levels a node can be on. With [`BRANCHING`] 4, twelve levels index 4^12 (16M)
/// entries at full speed; a memtable holds far fewer.
pub(crate) const MAX_HEIGHT: usize = 12;

/// One node in `BRANCHING` on a level is also on the level above.
const BRANCHING: u64 = 4;

/// Bytes per arena chunk: one huge page, so that a chunk can be backed by one when huge
/// pages are asked for (see [`Arena::chunk`]).
pub(crate) const CHUNK_SIZE: usize = 2 << 20;

/// Nodes larger than this get a chunk of their own, so a large value never wastes the
/// rest of a shared chunk.
const OWN_CHUNK_ABOVE: usize = CHUNK_SIZE / 4;

/// Alignment of chunks and nodes.
const ALIGN: usize = 8;

// The node layout: byte offsets from a node's start.
/// `AtomicPtr`: the level-0 predecessor (null for the first node).
const PREV: usize = 0;
/// `u32`: the keyspace id.
const KEYSPACE: usize = 8;
/// `u32`: the number of levels the node is on, `1..=MAX_HEIGHT`.
const HEIGHT: usize = 12;
/// `u64`: bytes of the encoded key (user key and trailer); at least [`TRAILER_LEN`].
const KEY_LEN: usize = 16;
/// `u64`: bytes of the value.
const VALUE_LEN: usize = 24;
/// `height` × `AtomicPtr`: the forward links, level 0 first; then the key and the value.
const TOWER: usize = 32;

const LINK: usize = std::mem::size_of::<Link>();

/// Bytes of a cache line, for prefetching a node's lines.
const CACHE_LINE: usize = 64;

/// Lines of a node a scan fetches ahead ([`Position::next`]): a one-level node with a
/// 16-byte key and a 100-byte value spans 164 bytes, which three lines hold whole or but
/// for its last bytes.
const PREFETCH_LINES: usize = 3;

type Link = AtomicPtr<u8>;

/// A position in the order: the node with these fields, or the place one would go. A probe
/// shorter than a trailer is a user key with trailer 0, as [`crate::key::compare_encoded`]
/// reads it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Probe<'a> {
    pub(crate) keyspace: u32,
    pub(crate) user: &'a [u8],
    pub(crate) trailer: u64,
}

/// A pointer to a node's first byte, derived from its chunk's allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Node(NonNull<u8>);

impl Node {
    /// The node a link points to, if any.
    fn from_link(p: *mut u8) -> Option<Node> {
        NonNull::new(p).map(Node)
    }

    fn as_link(node: Option<Node>) -> *mut u8 {
        node.map_or(ptr::null_mut(), |n| n.0.as_ptr())
    }

    /// Hints the CPU to fetch the node's first [`PREFETCH_LINES`] lines: the header, the
    /// key and, for a small entry, the value.
    fn prefetch(self) {
        for line in 0..PREFETCH_LINES {
            crate::mmap::prefetch_address(self.0.as_ptr().wrapping_add(line * CACHE_LINE));
        }
    }

    // SAFETY (all accessors below): `self` points to a node that `SkipList::insert`
    // initialised in a chunk of a list that is still alive (invariants 2 and 4), so the
    // header, tower, key and value lie inside that chunk, aligned (invariant 5), and the
    // header, key and value are not written again. Callers bound the returned references
    // by a borrow of the list.

    fn keyspace(self) -> u32 {
        // SAFETY: see above; a u32 at an aligned offset of the header.
        unsafe { self.0.as_ptr().add(KEYSPACE).cast::<u32>().read() }
    }

    fn height(self) -> usize {
        // SAFETY: see above.
        unsafe { self.0.as_ptr().add(HEIGHT).cast::<u32>().read() as usize }
    }

    fn key_len(self) -> usize {
        // SAFETY: see above.
        unsafe { self.0.as_ptr().add(KEY_LEN).cast::<u64>().read() as usize }
    }

    fn value_len(self) -> usize {
        // SAFETY: see above.
        unsafe { self.0.as_ptr().add(VALUE_LEN).cast::<u64>().read() as usize }
    }

    /// The forward link on `level`, if the node is on that level.
    fn link<'a>(self, level: usize) -> Option<&'a Link> {
        (level < self.height()).then(|| {
            // SAFETY: see above; the tower holds `height` initialised links and `level` is
            // below it. An `AtomicPtr` may be shared across threads.
            unsafe { &*self.0.as_ptr().add(TOWER + level * LINK).cast::<Link>() }
        })
    }

    fn prev_link<'a>(self) -> &'a Link {
        // SAFETY: see above.
        unsafe { &*self.0.as_ptr().add(PREV).cast::<Link>() }
    }

    fn key<'a>(self) -> &'a [u8] {
        // SAFETY: see above; `key_len` initialised bytes follow the tower.
        unsafe {
            std::slice::from_raw_parts(
                self.0.as_ptr().add(TOWER + self.height() * LINK),
                self.key_len(),
            )
        }
    }

    fn value<'a>(self) -> &'a [u8] {
        // SAFETY: see above; `value_len` initialised bytes follow the key.
        unsafe {
            std::slice::from_raw_parts(
                self.0
                    .as_ptr()
                    .add(TOWER + self.height() * LINK + self.key_len()),
                self.value_len(),
            )
        }
    }

    /// The node as a probe: its own place in the order.
    fn probe<'a>(self) -> Probe<'a> {
        let (user, trailer) = split(self.key());
        Probe {
            keyspace: self.keyspace(),
            user,
            trailer,
        }
    }

    /// How this node sorts against `probe`.
    fn cmp(self, probe: &Probe<'_>) -> Ordering {
        self.keyspace().cmp(&probe.keyspace).then_with(|| {
            let (user, trailer) = split(self.key());
            user.cmp(probe.user)
                .then_with(|| probe.trailer.cmp(&trailer))
        })
    }
}

/// A node's key as `(user key, trailer)`. Every node's key holds a trailer (`insert`
/// writes one), so the fallback never applies.
fn split(key: &[u8]) -> (&[u8], u64) {
    split_encoded(key).unwrap_or((key, 0))
}

/// Bytes of a node with `height` links, a user key of `user_len` bytes and a value of
/// `value_len` bytes, rounded up to [`ALIGN`]; `None` if that overflows. A node never comes
/// near that (keys are at most 64 KiB and values 4 GiB); an overflow is treated as a failed
/// allocation.
fn node_size(height: usize, user_len: usize, value_len: usize) -> Option<usize> {
    (TOWER + height * LINK + TRAILER_LEN)
        .checked_add(user_len)?
        .checked_add(value_len)?
        .checked_next_multiple_of(ALIGN)
}

/// A chunk of node memory: allocated with `layout`, freed when the list drops.
#[derive(Debug)]
struct Chunk {
    ptr: NonNull<u8>,
    layout: Layout,
}

/// The writer's side of the list: the chunks, where the next node goes, and the source of
/// node heights. Behind the lock that serializes inserts (invariant 1).
#[derive(Debug)]
struct Arena {
    chunks: Vec<Chunk>,
    /// The chunk nodes are carved from and how many of its bytes are used.
    current: Option<NonNull<u8>>,
    used: usize,
    rng: u64,
    /// Align shared chunks to their size and advise them for transparent huge pages.
    huge_pages: bool,
}

// SAFETY: the arena owns its chunks exclusively (nothing else frees them), and the raw
// pointers it holds are only addresses of that memory; moving it to another thread moves
// that ownership.
unsafe impl Send for Arena {}

impl Arena {
    /// A chunk of `size` bytes (`size > 0`), recorded for freeing. With `huge_pages`, a
    /// shared chunk ([`CHUNK_SIZE`]) is aligned to its size and the kernel is asked to back
    /// it with a transparent huge page: lookups and inserts visit nodes spread over the
    /// whole memtable, and with 4 KiB pages most of those visits also miss the TLB.
    fn chunk(&mut self, size: usize) -> NonNull<u8> {
        let huge = self.huge_pages && size == CHUNK_SIZE;
        let align = if huge { CHUNK_SIZE } else { ALIGN };
        // A size `Layout` refuses (above `isize::MAX`) fails as a failed allocation does
        // (see `node_size`).
        let layout = match Layout::from_size_align(size, align) {
            Ok(layout) => layout,
            Err(_) => alloc::handle_alloc_error(Layout::new::<u64>()),
        };
        // SAFETY: `layout` has a non-zero size (callers pass `size > 0`).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        // Miri cannot run the `madvise` call; the hint changes nothing it checks.
        #[cfg(not(miri))]
        if huge {
            // SAFETY: `ptr` starts `size` bytes this arena owns and has not written yet.
            let region = unsafe {
                std::slice::from_raw_parts_mut(
                    ptr.as_ptr().cast::<std::mem::MaybeUninit<u8>>(),
                    size,
                )
            };
            crate::mmap::advise_huge_pages(region);
        }
        self.chunks.push(Chunk { ptr, layout });
        ptr
    }

    /// `size` bytes (a multiple of [`ALIGN`]) that nothing else uses, aligned to [`ALIGN`].
    fn alloc(&mut self, size: usize) -> NonNull<u8> {
        if size > OWN_CHUNK_ABOVE {
            return self.chunk(size);
        }
        let base = match self.current {
            Some(base) if self.used + size <= CHUNK_SIZE => base,
            _ => {
                let base = self.chunk(CHUNK_SIZE);
                self.current = Some(base);
                self.used = 0;
                base
            }
        };
        // SAFETY: `used + size <= CHUNK_SIZE`, so the result and the `size` bytes after it
        // lie inside the chunk; `used` is a multiple of ALIGN, as every size is.
        let ptr = unsafe { base.add(self.used) };
        self.used += size;
        ptr
    }

    /// A random height: level `i + 1` with probability `BRANCHING^-i`.
    fn height(&mut self) -> usize {
        let mut h = 1;
        while h < MAX_HEIGHT {
            // xorshift64
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            if !self.rng.is_multiple_of(BRANCHING) {
                break;
            }
            h += 1;
        }
        h
    }
}

/// An insert-only, sorted skip list of `(keyspace, encoded key) → value`.
#[derive(Debug)]
pub(crate) struct SkipList {
    /// The first node of each level.
    head: [Link; MAX_HEIGHT],
    /// Levels in use (at least 1); may lag behind a taller node being linked, which only
    /// makes a search start lower.
    height: AtomicUsize,
    len: AtomicUsize,
    arena: Mutex<Arena>,
    /// The newest node of each `(keyspace, user key)`, as far as it has room (invariant
    /// 6); made by the first insert, so an empty list holds none.
    point: OnceLock<PointIndex>,
    /// Keys the point index is sized for.
    point_keys: usize,
    /// Inserts linked by invariant 7's shortcut.
    #[cfg(test)]
    shortcuts: AtomicUsize,
}

/// What the point index knows of a key's newest version ([`SkipList::newest`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Newest<'a> {
    /// The newest version inserted.
    Found(Entry<'a>),
    /// The list holds no version of the key.
    Absent,
    /// The index is incomplete and lacks the key: search the list.
    Unknown,
}

/// The point index's hash of `(keyspace, user key)`, from the user key's `key_hash`.
fn point_hash(keyspace: u32, user_hash: u64) -> u64 {
    user_hash ^ u64::from(keyspace).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// True if `p` (a node pointer from the point index) is a node of `(keyspace, user)`.
fn node_is(p: *mut u8, keyspace: u32, user: &[u8]) -> bool {
    Node::from_link(p).is_some_and(|n| n.keyspace() == keyspace && split(n.key()).0 == user)
}

impl Drop for SkipList {
    fn drop(&mut self) {
        for chunk in self.arena.get_mut().chunks.drain(..) {
            // SAFETY: the chunk was allocated by `Arena::chunk` with this layout and is
            // freed once; `&mut self` means no `Entry` or `Position` refers into it.
            unsafe { alloc::dealloc(chunk.ptr.as_ptr(), chunk.layout) };
        }
    }
}

impl SkipList {
    /// An empty list on ordinary pages, with a point index for 1,024 keys.
    #[cfg(test)]
    pub(crate) fn new() -> SkipList {
        SkipList::with_options(false, 1 << 10)
    }

    /// An empty list whose shared chunks ask for transparent huge pages if `huge_pages`,
    /// with a point index for up to `point_keys` keys (0: none).
    pub(crate) fn with_options(huge_pages: bool, point_keys: usize) -> SkipList {
        SkipList {
            point: OnceLock::new(),
            point_keys,
            #[cfg(test)]
            shortcuts: AtomicUsize::new(0),
            head: std::array::from_fn(|_| Link::new(ptr::null_mut())),
            height: AtomicUsize::new(1),
            len: AtomicUsize::new(0),
            arena: Mutex::new(Arena {
                chunks: Vec::new(),
                current: None,
                used: 0,
                rng: 0x2545_f491_4f6c_dd1d,
                huge_pages,
            }),
        }
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len.load(Mo::Acquire)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of memory the arena holds.
    #[cfg(test)]
    fn allocated(&self) -> usize {
        self.arena
            .lock()
            .chunks
            .iter()
            .map(|c| c.layout.size())
            .sum()
    }

    /// The link on `level` after `at` (the head if `None`), if `at` is on that level.
    fn link_after(&self, at: Option<Node>, level: usize) -> Option<&Link> {
        match at {
            Some(node) => node.link(level),
            None => self.head.get(level),
        }
    }

    fn next(&self, at: Option<Node>, level: usize) -> Option<Node> {
        self.link_after(at, level)
            .and_then(|link| Node::from_link(link.load(Mo::Acquire)))
    }

    /// Descends from the top level to level 0, moving right past every node that is
    /// `before` the probe; `splice[level]` records where it left each level. Returns the
    /// last node it moved to on level 0 (`None`: the head) and the node after it that
    /// stopped it (`None`: the end), as read during this descent.
    ///
    /// The two are returned together because a concurrent insert may link a new node
    /// between them right after the descent read the link: reading `after` again could
    /// return that node, which may also be `before` the probe.
    ///
    /// `hint[level]`, if given, names a node on `level` (invariant 8); on entering a level
    /// the descent jumps to it if it is `before` the probe and past where the descent
    /// stands, which only skips nodes it would have moved past.
    fn descend(
        &self,
        mut before: impl FnMut(Node) -> bool,
        hint: Option<&[Option<Node>; MAX_HEIGHT]>,
        mut splice: Option<&mut [Option<Node>; MAX_HEIGHT]>,
    ) -> (Option<Node>, Option<Node>) {
        let mut at: Option<Node> = None;
        let mut level = self.height.load(Mo::Relaxed).clamp(1, MAX_HEIGHT) - 1;
        let mut hinted = usize::MAX;
        loop {
            if hinted != level {
                hinted = level;
                if let Some(h) = hint.and_then(|h| h.get(level).copied().flatten()) {
                    debug_assert!(h.height() > level);
                    if at.is_none_or(|a| a.cmp(&h.probe()) == Ordering::Less) && before(h) {
                        at = Some(h);
                    }
                }
            }
            let next = self.next(at, level);
            // The descent's loads depend on each other: each compares the node the last
            // one found. Two fetches that do not wait for the comparison are started
            // first: the line after `next`'s first (where its key usually ends), and the
            // node this descent compares next if it stops here, one level down.
            if let Some(n) = next {
                crate::mmap::prefetch_address(n.0.as_ptr().wrapping_add(CACHE_LINE));
            }
            if let Some(down) = level.checked_sub(1).and_then(|l| self.next(at, l)) {
                crate::mmap::prefetch_address(down.0.as_ptr());
            }
            match next {
                Some(n) if before(n) => at = Some(n),
                _ => {
                    if let Some(slot) = splice.as_deref_mut().and_then(|s| s.get_mut(level)) {
                        *slot = at;
                    }
                    if level == 0 {
                        return (at, next);
                    }
                    level -= 1;
                }
            }
        }
    }

    /// The first entry at or after `probe`.
    pub(crate) fn seek_ge(&self, probe: &Probe<'_>) -> Option<Entry<'_>> {
        self.entry(
            self.descend(|n| n.cmp(probe) == Ordering::Less, None, None)
                .1,
        )
    }

    /// The last entry at or before `probe`.
    pub(crate) fn seek_le(&self, probe: &Probe<'_>) -> Option<Entry<'_>> {
        self.entry(
            self.descend(|n| n.cmp(probe) != Ordering::Greater, None, None)
                .0,
        )
    }

    /// The last entry before `probe`.
    pub(crate) fn seek_lt(&self, probe: &Probe<'_>) -> Option<Entry<'_>> {
        self.entry(
            self.descend(|n| n.cmp(probe) == Ordering::Less, None, None)
                .0,
        )
    }

    /// The first entry.
    pub(crate) fn first(&self) -> Option<Entry<'_>> {
        self.entry(self.next(None, 0))
    }

    /// The last entry.
    pub(crate) fn last(&self) -> Option<Entry<'_>> {
        self.entry(self.descend(|_| true, None, None).0)
    }

    fn entry(&self, node: Option<Node>) -> Option<Entry<'_>> {
        Entry::at(node)
    }

    /// Bytes the point index holds (none before the first insert).
    pub(crate) fn point_index_bytes(&self) -> usize {
        self.point.get().map_or(0, PointIndex::heap_bytes)
    }

    /// Hints the CPU to fetch the point-index slot [`SkipList::newest`] reads first for
    /// `(keyspace, user)`, whose `filter::key_hash` is `user_hash`.
    pub(crate) fn prefetch_point_slot(&self, keyspace: u32, user_hash: u64) {
        if let Some(point) = self.point.get() {
            point.prefetch_slot(point_hash(keyspace, user_hash));
        }
    }

    /// Hints the CPU to fetch the header, and the key and value of a short entry, of the
    /// node the point index names for `(keyspace, user)`: best after
    /// [`SkipList::prefetch_point_slot`] has had time to bring the slot in.
    pub(crate) fn prefetch_newest(&self, keyspace: u32, user_hash: u64) {
        if let Some(point) = self.point.get() {
            point.prefetch_node(point_hash(keyspace, user_hash), 2);
        }
    }

    /// The newest version of `(keyspace, user)` as the point index knows it; `user_hash`
    /// is the user key's `filter::key_hash`.
    pub(crate) fn newest(&self, keyspace: u32, user: &[u8], user_hash: u64) -> Newest<'_> {
        let hash = point_hash(keyspace, user_hash);
        // No index yet: nothing was inserted, or the first insert is under way.
        let Some(point) = self.point.get() else {
            return Newest::Unknown;
        };
        match point
            .find(hash, |p| node_is(p, keyspace, user))
            .and_then(Node::from_link)
        {
            Some(node) => Newest::Found(Entry {
                node,
                _list: PhantomData,
            }),
            None if point.complete() => Newest::Absent,
            None => Newest::Unknown,
        }
    }

    /// Inserts `(keyspace, user ++ trailer) → value`. An equal key already present stays,
    /// after the new one; the memtable never inserts one (its invariant 2).
    #[cfg(test)]
    pub(crate) fn insert(&self, keyspace: u32, user: &[u8], trailer: u64, value: &[u8]) {
        let user_hash = super::filter::key_hash(user);
        self.insert_hashed(keyspace, user, trailer, value, user_hash);
    }

    /// As [`SkipList::insert`], given the user key's `filter::key_hash`, and enters the
    /// node in the point index. (The memtable inserts through
    /// [`SkipList::insert_group`], which takes this path for a group of one.)
    #[cfg(test)]
    pub(crate) fn insert_hashed(
        &self,
        keyspace: u32,
        user: &[u8],
        trailer: u64,
        value: &[u8],
        user_hash: u64,
    ) {
        let mut arena = self.arena.lock();
        let height = arena.height();
        let entry = NewEntry {
            keyspace,
            user,
            trailer,
            value,
            user_hash,
        };
        self.insert_locked(&mut arena, None, None, height, &entry);
        drop(arena);
    }

    /// Inserts `entry` in a node of `height` levels, the arena lock held (`arena`).
    ///
    /// The node's place on each level is found, in this order of preference: by
    /// invariant 7's shortcut; from `found` (invariant 9: for each level below `height`,
    /// a node on it, or `None` for the head, that sorts before `entry`), walking right
    /// from it, or from `finger`'s node there if that lies between it and `entry`; or by
    /// a descent from the top that takes `finger`'s nodes as hints. `finger` is left
    /// holding the new node on its levels and, after a descent, the places the descent
    /// stopped at above them (invariant 8).
    fn insert_locked(
        &self,
        arena: &mut Arena,
        finger: Option<&mut [Option<Node>; MAX_HEIGHT]>,
        found: Option<&[Option<Node>]>,
        height: usize,
        entry: &NewEntry<'_>,
    ) {
        let &NewEntry {
            keyspace,
            user,
            trailer,
            value,
            user_hash,
        } = entry;
        let probe = Probe {
            keyspace,
            user,
            trailer,
        };
        let mut splice = [None; MAX_HEIGHT];
        let mut searched = false;
        let (prev, succ) = match self.newest_older_than(height, keyspace, user, trailer, user_hash)
        {
            // Invariant 7: a one-level node newer than the key's newest goes right before
            // it, and level 0 is all it is linked on.
            Some(newest) => {
                let before = Node::from_link(newest.prev_link().load(Mo::Acquire));
                debug_assert!(before.is_none_or(|b| b.cmp(&probe) == Ordering::Less));
                if let Some(slot) = splice.first_mut() {
                    *slot = before;
                }
                #[cfg(test)]
                self.shortcuts.fetch_add(1, Mo::Relaxed);
                (before, Some(newest))
            }
            None => match found.filter(|f| f.len() >= height) {
                Some(found) => {
                    let hint = finger.as_deref();
                    for (level, slot) in splice.iter_mut().enumerate().take(height) {
                        let mut at = found.get(level).copied().flatten();
                        // Invariant 9 for the finger: its node here, if it sorts before
                        // the entry, is a start at least as good when it lies past `at`.
                        if let Some(f) = hint.and_then(|h| h.get(level).copied().flatten()) {
                            if Some(f) != at
                                && f.cmp(&probe) == Ordering::Less
                                && at.is_none_or(|a| a.cmp(&f.probe()) == Ordering::Less)
                            {
                                at = Some(f);
                            }
                        }
                        while let Some(n) = self.next(at, level) {
                            if n.cmp(&probe) != Ordering::Less {
                                break;
                            }
                            at = Some(n);
                        }
                        *slot = at;
                    }
                    let prev = splice.first().copied().flatten();
                    (prev, self.next(prev, 0))
                }
                None => {
                    searched = true;
                    self.descend(
                        |n| n.cmp(&probe) == Ordering::Less,
                        finger.as_deref(),
                        Some(&mut splice),
                    )
                }
            },
        };

        let key_len = user.len() + TRAILER_LEN;
        let size = node_size(height, user.len(), value.len())
            .unwrap_or_else(|| alloc::handle_alloc_error(Layout::new::<u64>()));
        let node = Node(arena.alloc(size));
        let base = node.0.as_ptr();
        // SAFETY: `base` starts `size` bytes of fresh, aligned arena memory that nothing
        // else can reach until it is linked below (invariant 2): the header fields, the
        // `height` links and the key and value bytes written here lie inside those bytes
        // (`node_size`), at aligned offsets for the typed writes.
        unsafe {
            base.add(PREV)
                .cast::<Link>()
                .write(Link::new(Node::as_link(prev)));
            base.add(KEYSPACE).cast::<u32>().write(keyspace);
            base.add(HEIGHT).cast::<u32>().write(height as u32);
            base.add(KEY_LEN).cast::<u64>().write(key_len as u64);
            base.add(VALUE_LEN).cast::<u64>().write(value.len() as u64);
            for (level, at) in splice.iter().enumerate().take(height) {
                let next = Node::as_link(self.next(*at, level));
                base.add(TOWER + level * LINK)
                    .cast::<Link>()
                    .write(Link::new(next));
            }
            let key = base.add(TOWER + height * LINK);
            ptr::copy_nonoverlapping(user.as_ptr(), key, user.len());
            ptr::copy_nonoverlapping(
                trailer.to_le_bytes().as_ptr(),
                key.add(user.len()),
                TRAILER_LEN,
            );
            ptr::copy_nonoverlapping(value.as_ptr(), key.add(key_len), value.len());
        }
        if height > self.height.load(Mo::Relaxed) {
            self.height.store(height, Mo::Relaxed);
        }
        // Publish bottom-up: a reader that finds the node on a level finds it on level 0.
        for (level, at) in splice.iter().enumerate().take(height) {
            if let Some(link) = self.link_after(*at, level) {
                link.store(node.0.as_ptr(), Mo::Release);
            }
        }
        if let Some(succ) = succ {
            succ.prev_link().store(node.0.as_ptr(), Mo::Release);
        }
        if let Some(finger) = finger {
            // Invariant 8: the new node on its levels; above them, the places a descent
            // found (a shortcut or a walk from `found` looked at none, so the earlier
            // ones stay).
            for (level, slot) in finger.iter_mut().enumerate() {
                if level < height {
                    *slot = Some(node);
                } else if searched {
                    *slot = splice.get(level).copied().flatten();
                }
            }
        }
        let point = self.point.get_or_init(|| PointIndex::new(self.point_keys));
        point.enter(
            point_hash(keyspace, user_hash),
            node.0.as_ptr(),
            |p| node_is(p, keyspace, user),
            |old| Node::from_link(old).is_some_and(|o| split(o.key()).1 < trailer),
        );
        self.len.fetch_add(1, Mo::Release);
    }

    /// For a node of `height` 1 with `trailer`: the newest version of `(keyspace, user)`
    /// in the list, if the point index has it and it is older than `trailer` (so the new
    /// node goes right before it). The caller holds the arena lock, so that version is
    /// still the newest and its `prev` link is exact (invariant 3).
    fn newest_older_than(
        &self,
        height: usize,
        keyspace: u32,
        user: &[u8],
        trailer: u64,
        user_hash: u64,
    ) -> Option<Node> {
        if height != 1 {
            return None;
        }
        match self.newest(keyspace, user, user_hash) {
            Newest::Found(newest) if newest.trailer() < trailer => Some(newest.node),
            Newest::Found(_) | Newest::Absent | Newest::Unknown => None,
        }
    }
}

/// An entry of a [`SkipList`], borrowed from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    node: Node,
    _list: PhantomData<&'a SkipList>,
}

impl<'a> Entry<'a> {
    pub(crate) fn keyspace(&self) -> u32 {
        self.node.keyspace()
    }

    /// The encoded key: user key, then the trailer (little-endian).
    pub(crate) fn key(&self) -> &'a [u8] {
        self.node.key()
    }

    pub(crate) fn user_key(&self) -> &'a [u8] {
        split(self.node.key()).0
    }

    pub(crate) fn trailer(&self) -> u64 {
        split(self.node.key()).1
    }

    pub(crate) fn value(&self) -> &'a [u8] {
        self.node.value()
    }

    /// The entry on `node`, a node of a list borrowed for `'a`.
    fn at(node: Option<Node>) -> Option<Entry<'a>> {
        node.map(|node| Entry {
            node,
            _list: PhantomData,
        })
    }

    /// The entry after this one.
    pub(crate) fn next(&self) -> Option<Entry<'a>> {
        let next = self.node.link(0).map(|l| l.load(Mo::Acquire));
        Entry::at(next.and_then(Node::from_link))
    }

    /// The entry before this one (invariant 3).
    pub(crate) fn prev(&self) -> Option<Entry<'a>> {
        Entry::at(Node::from_link(self.node.prev_link().load(Mo::Acquire)))
    }
}

/// A place in a list that owns a share of it: an [`Entry`] that can be kept in a struct.
#[derive(Debug)]
pub(crate) struct Position {
    list: Arc<SkipList>,
    /// A node of `list`, or none (not on an entry).
    node: Option<Node>,
}

// SAFETY: `node` only ever points into `list`, which the `Arc` keeps alive, and is only read
// through (invariants 2 and 4); a `SkipList` is `Send + Sync`.
unsafe impl Send for Position {}
// SAFETY: as above; `&Position` gives only reads of published nodes.
unsafe impl Sync for Position {}

impl Position {
    /// A position on no entry of `list`.
    pub(crate) fn new(list: Arc<SkipList>) -> Position {
        Position { list, node: None }
    }

    /// The entry the position is on.
    pub(crate) fn entry(&self) -> Option<Entry<'_>> {
        self.list.entry(self.node)
    }

    fn set(&mut self, to: impl FnOnce(&SkipList) -> Option<Entry<'_>>) {
        self.node = to(&self.list).map(|e| e.node);
    }

    pub(crate) fn seek_ge(&mut self, probe: &Probe<'_>) {
        self.set(|l| l.seek_ge(probe));
    }

    pub(crate) fn seek_le(&mut self, probe: &Probe<'_>) {
        self.set(|l| l.seek_le(probe));
    }

    pub(crate) fn seek_lt(&mut self, probe: &Probe<'_>) {
        self.set(|l| l.seek_lt(probe));
    }

    pub(crate) fn seek_last(&mut self) {
        self.set(SkipList::last);
    }

    /// Moves to the next entry (off every entry after the last), and starts fetching the
    /// one after it: nodes lie in the arena in insert order, not key order, so each step of
    /// a scan would otherwise wait for a cache miss after the caller is done with the
    /// entry; now the miss overlaps the caller's work on this entry. The link is read
    /// again at the next step, so an entry linked meanwhile is not skipped.
    pub(crate) fn next(&mut self) {
        let node = self.node;
        self.set(|l| l.entry(node).and_then(|e| e.next()));
        if let Some(after) = self.entry().and_then(|e| e.next()) {
            after.node.prefetch();
        }
    }

    /// Moves to the previous entry (off every entry before the first), and starts fetching
    /// the one before it, as [`Position::next`] does.
    pub(crate) fn prev(&mut self) {
        let node = self.node;
        self.set(|l| l.entry(node).and_then(|e| e.prev()));
        if let Some(before) = self.entry().and_then(|e| e.prev()) {
            before.node.prefetch();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests;
