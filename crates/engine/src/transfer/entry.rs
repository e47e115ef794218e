//! [`Entry`] and [`EntryRef`]: one key-value pair with its keyspace and attributes, as the
//! dump formats carry it, and the limits every decoder enforces on it.
//!
//! Also [`Item`], what the decoders yield (an entry or a keyspace record), and
//! [`Thresholds`], the keyspace records a decoder has read.
//!
//! Invariant: an [`Entry`] returned by a decoder satisfies [`check`]: a keyspace name of
//! 1 ..= [`MAX_KEYSPACE_NAME_LEN`] bytes, a key of at most 65,535 bytes, metadata of at
//! most [`MAX_META_LEN`] bytes, a value of at most [`MAX_DUMP_VALUE_LEN`] bytes.

use std::collections::BTreeMap;

use crate::attrs::{EntryOptions, Meta};
use crate::db::MAX_KEYSPACE_NAME_LEN;
use crate::error::{Error, Result};
use crate::key::MAX_KEY_LEN;

/// Largest metadata an entry may carry, in bytes (the attributes' limit).
pub const MAX_META_LEN: usize = crate::MAX_META_LEN;

/// Largest line a JSON-lines decoder accepts (and so the largest line a JSON-lines dump
/// writes): 256 MiB, so a damaged or hostile input never makes a decoder buffer more.
/// A value whose line would be longer is dumped in CBOR only.
pub const MAX_RECORD_BYTES: usize = 256 << 20;

/// Largest value a dump carries: `u32::MAX` bytes, the largest value a keyspace that
/// separates values may hold. A CBOR decoder copies a value through a bounded buffer, so
/// a length up to this allocates nothing in advance.
pub const MAX_DUMP_VALUE_LEN: u64 = u32::MAX as u64;

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
        check_keyspace_name(ks)?;
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
    if entry.value.len() as u64 > MAX_DUMP_VALUE_LEN {
        return Err(format!(
            "value of {} bytes is longer than {MAX_DUMP_VALUE_LEN} bytes",
            entry.value.len()
        ));
    }
    Ok(())
}

/// Checks a keyspace name's length (1 ..= [`MAX_KEYSPACE_NAME_LEN`] bytes).
pub(crate) fn check_keyspace_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > MAX_KEYSPACE_NAME_LEN {
        return Err(format!(
            "keyspace name must be 1 to {MAX_KEYSPACE_NAME_LEN} bytes, not {}",
            name.len()
        ));
    }
    Ok(())
}

/// What a decoder reads from a dump: an entry, or a keyspace record (the options of a
/// keyspace, see `FORMAT.md` § The keyspace record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// An entry of `value_len` value bytes. Where the value's bytes are (in `entry.value`
    /// or already written elsewhere) is up to the decoder's method that returned it.
    Entry { entry: Entry, value_len: u64 },
    /// Keyspace `keyspace` (`None`: the restore's target keyspace) separates values of at
    /// least `blob_threshold` bytes.
    Keyspace {
        keyspace: Option<String>,
        blob_threshold: u64,
    },
}

/// The keyspace records read so far: the blob threshold of each keyspace named in one
/// (`None`: the records without a `keyspace` field).
///
/// Invariant: at most one record per keyspace ([`Thresholds::note`] refuses a second).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Thresholds(BTreeMap<Option<String>, u64>);

impl Thresholds {
    /// Records a keyspace record; the text says why it is refused.
    pub(crate) fn note(
        &mut self,
        keyspace: Option<String>,
        blob_threshold: u64,
    ) -> Result<(), String> {
        if self.0.contains_key(&keyspace) {
            return Err(match keyspace {
                Some(name) => format!("a second keyspace record for keyspace {name:?}"),
                None => "a second keyspace record without a \"keyspace\" field".to_string(),
            });
        }
        self.0.insert(keyspace, blob_threshold);
        Ok(())
    }

    /// The blob threshold given for `keyspace`, if a record gave one.
    pub(crate) fn get(&self, keyspace: Option<&str>) -> Option<u64> {
        self.0.get(&keyspace.map(str::to_string)).copied()
    }

    /// Every record: keyspace (or `None`) and threshold.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (Option<&str>, u64)> {
        self.0.iter().map(|(k, t)| (k.as_deref(), *t))
    }
}

/// The write options carrying `entry`'s tag, metadata and expiry (line or record `record`
/// of the input); `None` for an entry without attributes.
///
/// # Errors
/// `InvalidArgument` naming the record for an expiry the system clock cannot represent.
pub(crate) fn entry_options(entry: &Entry, record: u64) -> Result<Option<EntryOptions>> {
    if !entry.has_attrs() {
        return Ok(None);
    }
    let mut options = EntryOptions::new();
    if entry.tag != 0 || !entry.meta.is_empty() {
        options = options.meta(Meta::new(entry.tag, entry.meta.clone()));
    }
    if let Some(ms) = entry.expires_at {
        let at = std::time::UNIX_EPOCH
            .checked_add(std::time::Duration::from_millis(ms))
            .ok_or_else(|| {
                Error::invalid(format!("record {record}: expires_at {ms} is out of range"))
            })?;
        options = options.expires_at(at);
    }
    Ok(Some(options))
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
