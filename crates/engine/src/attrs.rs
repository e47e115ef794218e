//! The public face of entry attributes: [`Meta`] (a type tag and a metadata blob),
//! [`EntryOptions`] (what a write may attach: metadata, an expiry, a durability) and
//! [`Head`] (what a HEAD request returns: everything about an entry but its value).
//!
//! Owns: validating user-supplied attributes (metadata limit, expiry arithmetic) and
//! turning them into the stored form ([`crate::entry::Attrs`]). The byte layout lives in
//! `entry.rs`.
//!
//! Plain data; all types are `Send + Sync`.

use std::time::{Duration, SystemTime};

use crate::clock::to_unix_ms;
use crate::entry::{Attrs, EntryView};
use crate::error::{Error, Result};
use crate::iter::visible::Extract;
use crate::key::SeqNo;
use crate::options::Durability;

/// Largest metadata blob an entry may carry, in bytes (4 KiB).
pub const MAX_META_LEN: usize = crate::entry::MAX_META_LEN;

/// Application metadata stored with an entry: a type tag (0 means none) and a small blob
/// of at most [`MAX_META_LEN`] bytes. Returned by [`crate::Keyspace::head`] without
/// reading the value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Meta {
    /// Application-defined type tag (e.g. a content type id); 0 means none.
    pub tag: u32,
    /// Application-defined bytes (e.g. a content hash), at most 4 KiB.
    pub bytes: Vec<u8>,
}

impl Meta {
    /// Metadata with a tag and bytes.
    pub fn new(tag: u32, bytes: impl Into<Vec<u8>>) -> Meta {
        Meta {
            tag,
            bytes: bytes.into(),
        }
    }
}

/// What a write attaches to an entry, for [`crate::Keyspace::insert_entry`] and
/// [`crate::Batch::insert_entry`].
///
/// At most one of `ttl` and `expires_at` may be set. An expiry at or before the current
/// time is allowed: the entry is then invisible from the start. An expired entry reads
/// like a removed one: it hides every older version of its key, in snapshots too.
///
/// ```
/// use std::time::Duration;
/// use cairn::{Durability, EntryOptions, Meta};
///
/// let opts = EntryOptions::new()
///     .meta(Meta::new(7, "sha256:..."))
///     .ttl(Duration::from_secs(3600))
///     .durability(Durability::Buffered);
/// assert_eq!(opts.meta.as_ref().map(|m| m.tag), Some(7));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryOptions {
    /// Tag and metadata to store with the entry.
    pub meta: Option<Meta>,
    /// The entry expires this long after the write (by the store's [`crate::Clock`]).
    pub ttl: Option<Duration>,
    /// The entry expires at this instant.
    pub expires_at: Option<SystemTime>,
    /// Durability of a single-entry write (`None`: the store's default). A batch uses the
    /// durability given to its commit and ignores this.
    pub durability: Option<Durability>,
}

impl EntryOptions {
    /// No attributes, default durability.
    pub fn new() -> EntryOptions {
        EntryOptions::default()
    }

    /// Sets the metadata.
    #[must_use]
    pub fn meta(mut self, meta: Meta) -> EntryOptions {
        self.meta = Some(meta);
        self
    }

    /// Sets a time to live, counted from the write.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> EntryOptions {
        self.ttl = Some(ttl);
        self
    }

    /// Sets an absolute expiry.
    #[must_use]
    pub fn expires_at(mut self, at: SystemTime) -> EntryOptions {
        self.expires_at = Some(at);
        self
    }

    /// Sets the durability of a single-entry write.
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> EntryOptions {
        self.durability = Some(durability);
        self
    }

    /// The stored attributes for a write at `now_ms` (Unix milliseconds).
    ///
    /// # Errors
    /// `InvalidArgument` for metadata over 4 KiB or both `ttl` and `expires_at` set.
    pub(crate) fn attrs(&self, now_ms: u64) -> Result<Attrs<'_>> {
        let (tag, meta) = match &self.meta {
            Some(m) => (m.tag, m.bytes.as_slice()),
            None => (0, &[][..]),
        };
        if meta.len() > MAX_META_LEN {
            return Err(Error::invalid(format!(
                "metadata of {} bytes exceeds the limit of {MAX_META_LEN} bytes",
                meta.len()
            )));
        }
        let expires_at = match (self.ttl, self.expires_at) {
            (Some(_), Some(_)) => {
                return Err(Error::invalid(
                    "EntryOptions: set at most one of ttl and expires_at",
                ))
            }
            (Some(ttl), None) => {
                Some(now_ms.saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)))
            }
            (None, Some(at)) => Some(to_unix_ms(at)),
            (None, None) => None,
        };
        Ok(Attrs {
            tag,
            meta,
            expires_at,
        })
    }
}

/// Everything about an entry except its value: the answer to a HEAD request
/// ([`crate::Keyspace::head`], [`crate::Keyspace::range_heads`]). Reading it never copies
/// the value.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Head {
    /// Length of the value in bytes.
    pub value_len: u64,
    /// The type tag (0 if none was set).
    pub tag: u32,
    /// The metadata bytes (empty if none were set).
    pub meta: Vec<u8>,
    /// The sequence number of the write that produced the entry.
    pub seqno: u64,
    /// When the entry expires, in Unix milliseconds, if it has an expiry.
    pub expires_at: Option<u64>,
    /// True if the value is stored apart from the tree (always false for now).
    pub separated: bool,
}

impl Extract for Head {
    fn extract(seqno: SeqNo, view: &EntryView<'_>) -> Head {
        Head {
            value_len: view.body.len(),
            tag: view.attrs.tag,
            meta: view.attrs.meta.to_vec(),
            seqno: seqno.0,
            expires_at: view.attrs.expires_at,
            separated: false,
        }
    }
}

/// A whole entry: its value and its [`Head`].
impl Extract for (Vec<u8>, Head) {
    fn extract(seqno: SeqNo, view: &EntryView<'_>) -> (Vec<u8>, Head) {
        (Vec::<u8>::extract(seqno, view), Head::extract(seqno, view))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::time::UNIX_EPOCH;

    #[test]
    fn options_become_attrs() {
        assert!(EntryOptions::new().attrs(5).unwrap().is_empty());
        let o = EntryOptions::new()
            .meta(Meta::new(3, "m"))
            .ttl(Duration::from_millis(10));
        let a = o.attrs(1000).unwrap();
        assert_eq!((a.tag, a.meta, a.expires_at), (3, &b"m"[..], Some(1010)));
        let at = EntryOptions::new().expires_at(UNIX_EPOCH + Duration::from_millis(77));
        assert_eq!(at.attrs(1000).unwrap().expires_at, Some(77));
        let past = EntryOptions::new().expires_at(UNIX_EPOCH - Duration::from_secs(1));
        assert_eq!(past.attrs(1000).unwrap().expires_at, Some(0));
        let huge = EntryOptions::new().ttl(Duration::MAX);
        assert_eq!(huge.attrs(1000).unwrap().expires_at, Some(u64::MAX));
    }

    #[test]
    fn bad_options_are_invalid_arguments() {
        let both = EntryOptions::new()
            .ttl(Duration::from_secs(1))
            .expires_at(SystemTime::now());
        assert!(matches!(both.attrs(0), Err(Error::InvalidArgument(_))));
        let big = EntryOptions::new().meta(Meta::new(0, vec![0u8; MAX_META_LEN + 1]));
        assert!(matches!(big.attrs(0), Err(Error::InvalidArgument(_))));
        let at_limit = EntryOptions::new().meta(Meta::new(0, vec![0u8; MAX_META_LEN]));
        assert!(at_limit.attrs(0).is_ok());
    }
}
