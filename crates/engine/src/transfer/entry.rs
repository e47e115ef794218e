//! [`Entry`] and [`EntryRef`]: one key-value pair with its keyspace and attributes, as the
//! dump formats carry it, and the limits every decoder enforces on it.
//!
//! Invariant: an [`Entry`] returned by a decoder satisfies [`check`]: a keyspace name of
//! 1 ..= [`MAX_KEYSPACE_NAME_LEN`] bytes, a key of at most 65,535 bytes, metadata of at
//! most [`MAX_META_LEN`] bytes, a value of at most [`MAX_RECORD_BYTES`].

use crate::db::MAX_KEYSPACE_NAME_LEN;
use crate::key::MAX_KEY_LEN;

/// Largest metadata an entry may carry, in bytes (the attributes' limit).
pub const MAX_META_LEN: usize = crate::MAX_META_LEN;

/// Largest line (JSON lines) or byte string (CBOR) a decoder accepts: 256 MiB, the size
/// of the largest write-ahead log record, so no entry the store can hold is refused and
/// a damaged length never makes a decoder allocate more.
pub const MAX_RECORD_BYTES: usize = 256 << 20;

/// One entry of a dump, owned (what the readers return).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The keyspace the entry belongs to; `None`: the restore's target keyspace.
    pub keyspace: Option<String>,
    /// The key.
    pub key: Vec<u8>,
    /// The value.
    pub value: Vec<u8>,
    /// Application tag (0: none).
    pub tag: u32,
    /// Application metadata (empty: none).
    pub meta: Vec<u8>,
    /// Expiry, Unix milliseconds (`None`: never).
    pub expires_at: Option<u64>,
}

impl Entry {
    /// A plain entry: `key` → `value`, no keyspace field, no attributes.
    pub fn new(key: impl Into<Vec<u8>>, value: impl Into<Vec<u8>>) -> Entry {
        Entry {
            key: key.into(),
            value: value.into(),
            ..Entry::default()
        }
    }

    /// True if the entry carries a tag, metadata or an expiry.
    pub fn has_attrs(&self) -> bool {
        self.tag != 0 || !self.meta.is_empty() || self.expires_at.is_some()
    }

    /// A borrowed view, for the writers.
    pub fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            keyspace: self.keyspace.as_deref(),
            key: &self.key,
            value: Some(&self.value),
            tag: self.tag,
            meta: &self.meta,
            expires_at: self.expires_at,
        }
    }
}

/// One entry of a dump, borrowed (what the writers take).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EntryRef<'a> {
    /// The keyspace field; `None` leaves it out.
    pub keyspace: Option<&'a str>,
    /// The key.
    pub key: &'a [u8],
    /// The value; `None` leaves it out (a keys-only listing, which cannot be restored).
    pub value: Option<&'a [u8]>,
    /// Application tag (0: left out).
    pub tag: u32,
    /// Application metadata (empty: left out).
    pub meta: &'a [u8],
    /// Expiry, Unix milliseconds (`None`: left out).
    pub expires_at: Option<u64>,
}

impl<'a> EntryRef<'a> {
    /// A plain pair with no keyspace field and no attributes.
    pub fn pair(key: &'a [u8], value: &'a [u8]) -> EntryRef<'a> {
        EntryRef {
            key,
            value: Some(value),
            ..EntryRef::default()
        }
    }
}

/// Checks the limits of the module invariant; the text says which one failed.
pub(crate) fn check(entry: &Entry) -> Result<(), String> {
    if let Some(ks) = &entry.keyspace {
        if ks.is_empty() || ks.len() > MAX_KEYSPACE_NAME_LEN {
            return Err(format!(
                "keyspace name must be 1 to {MAX_KEYSPACE_NAME_LEN} bytes, not {}",
                ks.len()
            ));
        }
    }
    if entry.key.len() > MAX_KEY_LEN {
        return Err(format!(
            "key of {} bytes is longer than the largest key ({MAX_KEY_LEN} bytes)",
            entry.key.len()
        ));
    }
    if entry.meta.len() > MAX_META_LEN {
        return Err(format!(
            "metadata of {} bytes is longer than {MAX_META_LEN} bytes",
            entry.meta.len()
        ));
    }
    if entry.value.len() > MAX_RECORD_BYTES {
        return Err(format!(
            "value of {} bytes is longer than {MAX_RECORD_BYTES} bytes",
            entry.value.len()
        ));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(check(&Entry::new("k", "v")), Ok(()));
        let mut e = Entry::new(vec![0u8; MAX_KEY_LEN], "v");
        assert_eq!(check(&e), Ok(()));
        e.key.push(0);
        assert!(check(&e).is_err_and(|m| m.contains("key of 65536")));
        let mut e = Entry::new("k", "v");
        e.keyspace = Some(String::new());
        assert!(check(&e).is_err());
        e.keyspace = Some("x".repeat(MAX_KEYSPACE_NAME_LEN));
        assert_eq!(check(&e), Ok(()));
        e.meta = vec![1; MAX_META_LEN + 1];
        assert!(check(&e).is_err_and(|m| m.contains("metadata")));
    }

    #[test]
    fn attrs_are_detected() {
        let mut e = Entry::new("k", "v");
        assert!(!e.has_attrs());
        e.tag = 3;
        assert!(e.has_attrs());
        e.tag = 0;
        e.expires_at = Some(0);
        assert!(e.has_attrs());
        e.expires_at = None;
        e.meta = vec![0];
        assert!(e.has_attrs());
        assert_eq!(e.as_ref().meta, &[0][..]);
    }
}
