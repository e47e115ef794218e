//! ACL LOG: the server's record of refused authentications, commands and keys, newest
//! first, as Redis keeps it.
//!
//! * An entry is a refusal's reason (`auth`, `command`, `key`), context (`toplevel`, or
//!   `multi` for a command refused as EXEC runs it), object (`AUTH`, the command as a
//!   refusal names it, `config|get`, or the key), the user name and the connection's
//!   CLIENT INFO line.
//! * A refusal like one of the [`GROUP_SCAN`] newest entries (same reason, context,
//!   object and user) updated within [`GROUPING_WINDOW`] counts on that entry instead of
//!   adding one, so a client retrying a wrong password fills no more than one entry.
//! * At most [`MAX_ENTRIES`] are kept (Redis's default `acllog-max-len`); the oldest go.
//!   Objects and user names are cut to [`MAX_FIELD_LEN`] bytes, so the log's size is
//!   bounded whatever names clients send.
//!
//! Nothing here holds a password: an `auth` entry names only the user tried.
//!
//! Thread-safety: one mutex around the entries, taken only on a refusal and by ACL LOG.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// Most entries kept.
pub(crate) const MAX_ENTRIES: usize = 128;
/// A refusal counts on an equal entry updated at most this long ago.
pub(crate) const GROUPING_WINDOW: Duration = Duration::from_secs(60);
/// How many of the newest entries a refusal is compared with.
pub(crate) const GROUP_SCAN: usize = 10;
/// Most bytes kept of an entry's object and user name: a client may send a name as long
/// as a bulk string, and the log must stay small whatever it sends.
pub(crate) const MAX_FIELD_LEN: usize = 128;

/// `text` cut to at most [`MAX_FIELD_LEN`] bytes, on a character boundary.
fn bounded(text: &str) -> &str {
    let mut end = text.len().min(MAX_FIELD_LEN);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

/// Why a request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reason {
    /// AUTH (or HELLO's AUTH) with a wrong user or password.
    Auth,
    /// A command the user may not run.
    Command,
    /// A key the user may not access.
    Key,
}

impl Reason {
    /// Redis's name for it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Reason::Auth => "auth",
            Reason::Command => "command",
            Reason::Key => "key",
        }
    }
}

/// One entry of the log.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    /// Increasing over the server's life; never reused.
    pub(crate) id: u64,
    /// Refusals counted on this entry.
    pub(crate) count: u64,
    pub(crate) reason: Reason,
    pub(crate) context: &'static str,
    pub(crate) object: String,
    pub(crate) username: String,
    /// The CLIENT INFO line of the connection last refused.
    pub(crate) client_info: String,
    /// Milliseconds since the Unix epoch of the first and the last refusal.
    pub(crate) created_ms: u64,
    pub(crate) updated_ms: u64,
    /// When the last refusal was counted.
    pub(crate) updated: Instant,
}

#[derive(Debug, Default)]
struct Inner {
    /// Newest first.
    entries: VecDeque<Entry>,
    next_id: u64,
}

/// The log; see the module documentation.
#[derive(Debug, Default)]
pub(crate) struct AclLog {
    inner: Mutex<Inner>,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl AclLog {
    /// Records a refusal (module documentation). `client_info` is asked for only once
    /// the entry is known.
    pub(crate) fn record(
        &self,
        reason: Reason,
        context: &'static str,
        object: &str,
        username: &str,
        client_info: String,
    ) {
        let (object, username) = (bounded(object), bounded(username));
        let now = Instant::now();
        let ms = now_ms();
        let mut inner = self.inner.lock();
        let similar = inner.entries.iter_mut().take(GROUP_SCAN).position(|e| {
            e.reason == reason
                && e.context == context
                && e.object == object
                && e.username == username
                && now.duration_since(e.updated) <= GROUPING_WINDOW
        });
        if let Some(i) = similar {
            if let Some(mut entry) = inner.entries.remove(i) {
                entry.count = entry.count.saturating_add(1);
                entry.updated = now;
                entry.updated_ms = ms;
                entry.client_info = client_info;
                inner.entries.push_front(entry);
            }
            return;
        }
        let id = inner.next_id;
        inner.next_id += 1;
        inner.entries.push_front(Entry {
            id,
            count: 1,
            reason,
            context,
            object: object.to_string(),
            username: username.to_string(),
            client_info,
            created_ms: ms,
            updated_ms: ms,
            updated: now,
        });
        inner.entries.truncate(MAX_ENTRIES);
    }

    /// The `count` newest entries, newest first.
    pub(crate) fn newest(&self, count: usize) -> Vec<Entry> {
        self.inner
            .lock()
            .entries
            .iter()
            .take(count)
            .cloned()
            .collect()
    }

    /// Forgets every entry (ACL LOG RESET); entry ids keep increasing.
    pub(crate) fn reset(&self) {
        self.inner.lock().entries.clear();
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn record(log: &AclLog, reason: Reason, object: &str, user: &str) {
        log.record(
            reason,
            "toplevel",
            object,
            user,
            format!("id=1 user={user}"),
        );
    }

    #[test]
    fn equal_refusals_count_on_one_entry_and_others_add_entries_newest_first() {
        let log = AclLog::default();
        record(&log, Reason::Auth, "AUTH", "bob");
        record(&log, Reason::Command, "set", "bob");
        record(&log, Reason::Auth, "AUTH", "bob");
        record(&log, Reason::Auth, "AUTH", "carol");
        let entries = log.newest(10);
        let shape: Vec<_> = entries
            .iter()
            .map(|e| {
                (
                    e.reason,
                    e.object.as_str(),
                    e.username.as_str(),
                    e.count,
                    e.id,
                )
            })
            .collect();
        assert_eq!(
            shape,
            [
                (Reason::Auth, "AUTH", "carol", 1, 2),
                (Reason::Auth, "AUTH", "bob", 2, 0),
                (Reason::Command, "set", "bob", 1, 1),
            ]
        );
        assert_eq!(log.newest(1).len(), 1);
        log.reset();
        assert!(log.newest(10).is_empty());
        record(&log, Reason::Key, "k", "bob");
        assert_eq!(log.newest(10).first().map(|e| e.id), Some(3));
    }

    #[test]
    fn long_names_are_cut_on_a_character_boundary() {
        let log = AclLog::default();
        let long = "é".repeat(1000);
        record(&log, Reason::Auth, "AUTH", &long);
        record(&log, Reason::Key, &"k".repeat(1 << 20), "bob");
        let entries = log.newest(2);
        assert_eq!(entries[1].username, "é".repeat(MAX_FIELD_LEN / 2));
        assert_eq!(entries[0].object.len(), MAX_FIELD_LEN);
    }

    #[test]
    fn the_log_keeps_its_newest_entries_only() {
        let log = AclLog::default();
        for i in 0..MAX_ENTRIES + 5 {
            record(&log, Reason::Key, &format!("key{i}"), "bob");
        }
        let entries = log.newest(usize::MAX);
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(
            entries.first().map(|e| e.object.clone()),
            Some(format!("key{}", MAX_ENTRIES + 4))
        );
        assert_eq!(
            entries.last().map(|e| e.object.clone()),
            Some("key5".to_string())
        );
    }
}
