//! [`OpenFiles`]: at most `capacity` open files (or readers of them) by id, the least
//! recently used closed first.
//!
//! Two uses: the ordered store's table readers (`db::table_cache`, values
//! `Arc<table::Reader>`) and its blob files (`vlog::reader`, values holding an
//! `Arc<dyn ReadableFile>`). A user clones the `Arc` out of the cache, so evicting an entry
//! only drops the cache's reference: a reader in use stays open until its user drops it.
//!
//! Structure: a map from key to a slot of a slab, and the slots linked in recency order (a
//! doubly linked list by slab index, most recent at the head). Lookups, inserts, evictions
//! and removals are O(1); only [`OpenFiles::retain`] visits every entry. Not synchronised:
//! each user keeps it behind its own lock, with whatever else that lock guards.
//!
//! Invariants:
//! 1. `len() <= capacity` after every call, and `capacity >= 1`.
//! 2. The list holds exactly the occupied slots, each once; the map names each of them.

use std::collections::HashMap;
use std::hash::Hash;

/// "No slot" in the links.
const NIL: usize = usize::MAX;

#[derive(Debug)]
struct Slot<K, V> {
    /// `None` for a free slot (on the free list).
    entry: Option<(K, V)>,
    /// Towards the most recently used.
    prev: usize,
    /// Towards the least recently used.
    next: usize,
}

/// A bounded map with least-recently-used eviction; see the module documentation.
#[derive(Debug)]
pub(crate) struct OpenFiles<K, V> {
    capacity: usize,
    map: HashMap<K, usize>,
    slots: Vec<Slot<K, V>>,
    free: Vec<usize>,
    /// The most recently used slot.
    head: usize,
    /// The least recently used slot: the next to close.
    tail: usize,
}

impl<K: Copy + Eq + Hash, V> OpenFiles<K, V> {
    /// An empty cache of at most `capacity` (at least 1) entries.
    pub(crate) fn new(capacity: usize) -> OpenFiles<K, V> {
        OpenFiles {
            capacity: capacity.max(1),
            map: HashMap::new(),
            slots: Vec::new(),
            free: Vec::new(),
            head: NIL,
            tail: NIL,
        }
    }

    /// Entries held.
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    /// The keys held, in no particular order.
    #[cfg(test)]
    pub(crate) fn keys(&self) -> impl Iterator<Item = K> + '_ {
        self.map.keys().copied()
    }

    fn links(&mut self, i: usize) -> Option<&mut Slot<K, V>> {
        self.slots.get_mut(i)
    }

    /// Takes slot `i` out of the list.
    fn unlink(&mut self, i: usize) {
        let (prev, next) = match self.slots.get(i) {
            Some(s) => (s.prev, s.next),
            None => return,
        };
        match self.links(prev) {
            Some(p) => p.next = next,
            None => self.head = next,
        }
        match self.links(next) {
            Some(n) => n.prev = prev,
            None => self.tail = prev,
        }
    }

    /// Puts slot `i` (not in the list) at its head.
    fn push_front(&mut self, i: usize) {
        let old = self.head;
        if let Some(s) = self.links(i) {
            s.prev = NIL;
            s.next = old;
        }
        match self.links(old) {
            Some(h) => h.prev = i,
            None => self.tail = i,
        }
        self.head = i;
    }

    /// The value of `key`, made the most recently used.
    pub(crate) fn get(&mut self, key: &K) -> Option<&mut V> {
        let i = *self.map.get(key)?;
        if self.head != i {
            self.unlink(i);
            self.push_front(i);
        }
        self.slots
            .get_mut(i)
            .and_then(|s| s.entry.as_mut())
            .map(|(_, v)| v)
    }

    /// The value of `key`, leaving the recency order as it is.
    pub(crate) fn peek(&mut self, key: &K) -> Option<&mut V> {
        let i = *self.map.get(key)?;
        self.slots
            .get_mut(i)
            .and_then(|s| s.entry.as_mut())
            .map(|(_, v)| v)
    }

    /// Whether `key` is held (the recency order is left as it is).
    pub(crate) fn contains(&self, key: &K) -> bool {
        self.map.contains_key(key)
    }

    /// Makes `value` the value of `key` and the most recently used. Returns what left the
    /// cache: the value `key` had, or else the least recently used entry if the cache was
    /// full. The caller drops it (closing its file unless a user still holds it) after
    /// releasing its lock.
    pub(crate) fn insert(&mut self, key: K, value: V) -> Option<(K, V)> {
        if let Some(&i) = self.map.get(&key) {
            let old = self
                .slots
                .get_mut(i)
                .and_then(|s| s.entry.replace((key, value)));
            if self.head != i {
                self.unlink(i);
                self.push_front(i);
            }
            return old;
        }
        let evicted = if self.map.len() >= self.capacity {
            self.pop_lru()
        } else {
            None
        };
        let slot = Slot {
            entry: Some((key, value)),
            prev: NIL,
            next: NIL,
        };
        let i = match self.free.pop() {
            Some(i) => {
                if let Some(s) = self.slots.get_mut(i) {
                    *s = slot;
                }
                i
            }
            None => {
                self.slots.push(slot);
                self.slots.len() - 1
            }
        };
        self.map.insert(key, i);
        self.push_front(i);
        evicted
    }

    /// Takes out the least recently used entry.
    pub(crate) fn pop_lru(&mut self) -> Option<(K, V)> {
        let i = self.tail;
        let (key, _) = self.slots.get(i)?.entry.as_ref()?;
        let key = *key;
        self.remove_slot(&key, i)
    }

    fn remove_slot(&mut self, key: &K, i: usize) -> Option<(K, V)> {
        self.unlink(i);
        self.map.remove(key);
        self.free.push(i);
        self.slots.get_mut(i).and_then(|s| s.entry.take())
    }

    /// Takes `key` out, returning its value.
    pub(crate) fn remove(&mut self, key: &K) -> Option<V> {
        let i = *self.map.get(key)?;
        self.remove_slot(key, i).map(|(_, v)| v)
    }

    /// Takes out every entry whose key `keep` refuses, returning them. Visits every entry.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(K) -> bool) -> Vec<(K, V)> {
        let gone: Vec<(K, usize)> = self
            .map
            .iter()
            .filter(|(k, _)| !keep(**k))
            .map(|(k, i)| (*k, *i))
            .collect();
        gone.into_iter()
            .filter_map(|(k, i)| self.remove_slot(&k, i))
            .collect()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// Keys from least to most recently used, walking the list both ways and checking
    /// the links and the map agree.
    fn order<V>(c: &OpenFiles<u64, V>) -> Vec<u64> {
        let mut forward = Vec::new();
        let mut i = c.head;
        let mut prev = NIL;
        while i != NIL {
            let s = &c.slots[i];
            assert_eq!(s.prev, prev);
            let (k, _) = s.entry.as_ref().unwrap();
            assert_eq!(c.map[k], i);
            forward.push(*k);
            prev = i;
            i = s.next;
        }
        assert_eq!(c.tail, prev);
        assert_eq!(forward.len(), c.len());
        forward.reverse();
        forward
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let mut c = OpenFiles::new(3);
        for k in 1..=3u64 {
            assert!(c.insert(k, k * 10).is_none());
        }
        assert_eq!(order(&c), [1, 2, 3]);
        assert_eq!(c.get(&1), Some(&mut 10));
        assert_eq!(order(&c), [2, 3, 1]);
        assert_eq!(c.insert(4, 40), Some((2, 20)));
        assert_eq!(order(&c), [3, 1, 4]);
        // Peeking does not count as a use.
        assert_eq!(c.peek(&3), Some(&mut 30));
        assert_eq!(c.insert(5, 50), Some((3, 30)));
        assert_eq!(order(&c), [1, 4, 5]);
        // Replacing a value returns the old one and makes the key the most recent.
        assert_eq!(c.insert(1, 11), Some((1, 10)));
        assert_eq!(order(&c), [4, 5, 1]);
        assert_eq!(c.remove(&5), Some(50));
        assert_eq!(order(&c), [4, 1]);
        assert!(c.insert(6, 60).is_none(), "room after a removal");
        assert_eq!(c.retain(|k| k != 4), vec![(4, 40)]);
        assert_eq!(order(&c), [1, 6]);
        assert_eq!(c.remove(&1), Some(11));
        assert_eq!(c.remove(&6), Some(60));
        assert_eq!(order(&c), Vec::<u64>::new());
        assert!(c.get(&6).is_none() && c.remove(&6).is_none());
        assert!(c.insert(7, 70).is_none());
        assert_eq!(order(&c), [7]);
        assert!(c.slots.len() <= 3, "slots are reused");
    }

    #[test]
    fn capacity_is_at_least_one_and_never_exceeded() {
        let mut c = OpenFiles::new(0);
        assert!(c.insert(1, ()).is_none());
        assert_eq!(c.insert(2, ()), Some((1, ())));
        assert_eq!(c.len(), 1);
        let mut c = OpenFiles::new(16);
        let mut x = 1u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = x % 40;
            match x % 5 {
                0 => drop(c.remove(&k)),
                1 | 2 => drop(c.get(&k)),
                _ => drop(c.insert(k, k)),
            }
            assert!(c.len() <= 16);
            assert_eq!(order(&c).len(), c.len());
        }
    }

    /// Eviction drops only the cache's reference: a user holding the value keeps using it.
    #[test]
    fn an_evicted_value_in_use_stays_valid() {
        let mut c = OpenFiles::new(2);
        let file = Arc::new(String::from("table 1"));
        c.insert(1, Arc::clone(&file));
        let in_use = Arc::clone(c.get(&1).unwrap());
        let (k, evicted) = {
            c.insert(2, Arc::new(String::from("table 2")));
            c.insert(3, Arc::new(String::from("table 3"))).unwrap()
        };
        assert_eq!(k, 1);
        drop(evicted);
        drop(file);
        assert!(!c.contains(&1));
        assert_eq!(in_use.as_str(), "table 1");
        assert_eq!(Arc::strong_count(&in_use), 1);
    }
}
