//! SCAN cursors. Redis clients treat a cursor as a decimal number, and Cairn scans in key
//! order, so a cursor names the key a scan resumes after: the server keeps a bounded table
//! from cursor number to (database, last key returned).
//!
//! Invariants: cursor 0 means "start" (in a request) and "done" (in a reply); numbers are
//! never reused while the server runs; the table holds at most [`MAX_CURSORS`] entries and
//! forgets the oldest first, so an abandoned scan costs nothing forever. A forgotten or
//! unknown cursor is refused with `ERR invalid cursor`.

use std::collections::{HashMap, VecDeque};

use parking_lot::Mutex;

/// Most scans that can be resumed at once.
pub(crate) const MAX_CURSORS: usize = 16_384;

#[derive(Debug, Default)]
struct Table {
    next: u64,
    by_id: HashMap<u64, (usize, Vec<u8>)>,
    order: VecDeque<u64>,
}

/// The cursor table, shared by all connections.
#[derive(Debug, Default)]
pub(crate) struct Cursors {
    table: Mutex<Table>,
}

impl Cursors {
    /// A new cursor resuming after `key` in database `db`.
    pub(crate) fn save(&self, db: usize, key: Vec<u8>) -> u64 {
        let mut t = self.table.lock();
        t.next = t.next.wrapping_add(1).max(1);
        let id = t.next;
        t.by_id.insert(id, (db, key));
        t.order.push_back(id);
        while t.order.len() > MAX_CURSORS {
            if let Some(old) = t.order.pop_front() {
                t.by_id.remove(&old);
            }
        }
        id
    }

    /// The key a cursor resumes after, if the cursor is known and belongs to `db`.
    pub(crate) fn resume(&self, db: usize, id: u64) -> Option<Vec<u8>> {
        let t = self.table.lock();
        match t.by_id.get(&id) {
            Some((d, key)) if *d == db => Some(key.clone()),
            _ => None,
        }
    }
}
