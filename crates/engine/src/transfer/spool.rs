//! [`Spool`]: a restore's checked copy of its input, in two temporary files, replayed into
//! the store only after the whole input has been accepted.
//!
//! A restore reads its input once (it may be standard input) and cannot hold it in memory
//! (a CBOR dump's values reach 4 GiB each). So [`Spool::fill`] decodes every record,
//! checks it as the decoders and `entry::entry_options` do, and appends the entry to
//! the spool: its value bytes to the `values` file, everything else to the `index` file.
//! Only a spool whose input was accepted to its end (for CBOR: the trailer's count and
//! checksum) is returned, and only then does the restore write to the store
//! ([`Spool::replay`]).
//!
//! Invariants:
//! 1. [`Spool::fill`] returns a spool only for an input every record of which was
//!    accepted; on any error the files are dropped and nothing else exists.
//! 2. The `values` file holds the values back to back, in the order of the `index`
//!    records; [`Replay`] reads both files front to back, once.
//! 3. The files come from `tempfile::tempfile_in`: unnamed (or unlinked at once), so they
//!    vanish when dropped, even if the process dies.
//!
//! An index record (never leaves the process; no checksum): a little-endian `u32` length,
//! then flags (`u8`: bit 0 keyspace, bit 1 expiry), the VLQ record number, the keyspace
//! (VLQ length + bytes, if flagged), the key (VLQ length + bytes), the VLQ tag, the
//! metadata (VLQ length + bytes), the VLQ expiry (if flagged) and the VLQ value length.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::Path;

use super::entry::{Entry, Item, MAX_META_LEN};
use super::{DumpReader, Format, Progress, PROGRESS_EVERY};
use crate::coding::{put_vlq, Cursor};
use crate::db::MAX_KEYSPACE_NAME_LEN;
use crate::error::{Error, Result};
use crate::key::MAX_KEY_LEN;

/// Buffer of each spool file.
const BUFFER: usize = 64 << 10;

/// Longest index record: the largest keyspace name, key and metadata, and room for the
/// flags and six VLQs.
const MAX_INDEX_RECORD: usize = MAX_KEYSPACE_NAME_LEN + MAX_KEY_LEN + MAX_META_LEN + 1 + 6 * 10;

const HAS_KEYSPACE: u8 = 1;
const HAS_EXPIRY: u8 = 2;

fn spool_io(op: &'static str) -> impl Fn(io::Error) -> Error {
    move |e| Error::io(Path::new("<restore spool>"), op, e)
}

fn damaged() -> Error {
    spool_io("read")(io::Error::new(
        io::ErrorKind::InvalidData,
        "the restore spool does not read back as written",
    ))
}

/// What one keyspace named by a dump (by its `keyspace` field, or `None`) needs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Needs {
    /// The blob threshold of the dump's keyspace record, if it has one.
    pub(crate) blob_threshold: Option<u64>,
    /// The smallest of its values too long to keep in the tree (these must be
    /// separated), if it has any.
    pub(crate) smallest_large: Option<u64>,
}

impl Needs {
    /// Both needs at once (two dump names may restore into one keyspace): the smaller
    /// threshold and the smaller large value.
    pub(crate) fn merge(&mut self, other: &Needs) {
        let min = |a: Option<u64>, b: Option<u64>| match (a, b) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        self.blob_threshold = min(self.blob_threshold, other.blob_threshold);
        self.smallest_large = min(self.smallest_large, other.smallest_large);
    }
}

/// A checked input, spooled; see the module documentation.
pub(crate) struct Spool {
    index: BufWriter<File>,
    values: BufWriter<File>,
    /// Entries spooled.
    pub(crate) entries: u64,
    /// Bytes of input consumed.
    pub(crate) input_len: u64,
    /// Every keyspace the dump names (in an entry or a keyspace record; `None`: no
    /// `keyspace` field) and what it needs.
    pub(crate) keyspaces: BTreeMap<Option<String>, Needs>,
}

impl Spool {
    /// Reads and checks all of `input`, spooling it into two temporary files in `dir`.
    /// Calls `progress` (entries 0, bytes: input read) every few thousand entries.
    ///
    /// # Errors
    /// As the decoders (`BadInput` naming the line or record) and `InvalidArgument` for
    /// an entry the store would refuse; `Io` if reading the input or writing the spool
    /// fails. The store is not touched.
    pub(crate) fn fill<R: BufRead>(
        input: R,
        format: Format,
        dir: &Path,
        progress: &mut dyn FnMut(Progress),
    ) -> Result<Spool> {
        let mut reader = DumpReader::new(input, format)?;
        let create = || {
            tempfile::tempfile_in(dir)
                .map(|f| BufWriter::with_capacity(BUFFER, f))
                .map_err(|e| Error::io(dir, "create restore spool", e))
        };
        let mut spool = Spool {
            index: create()?,
            values: create()?,
            entries: 0,
            input_len: 0,
            keyspaces: BTreeMap::new(),
        };
        let mut record = Vec::new();
        while let Some(item) = reader.next_spooled(&mut spool.values)? {
            let Item::Entry { entry, value_len } = item else {
                continue;
            };
            let number = reader.record();
            super::entry::entry_options(&entry, number)?;
            encode(&entry, value_len, number, &mut record);
            spool.index.write_all(&record).map_err(spool_io("write"))?;
            let needs = spool.keyspaces.entry(entry.keyspace).or_default();
            if value_len > crate::table::MAX_INLINE_VALUE_LEN as u64 {
                needs.merge(&Needs {
                    blob_threshold: None,
                    smallest_large: Some(value_len),
                });
            }
            spool.entries += 1;
            if spool.entries.is_multiple_of(PROGRESS_EVERY) {
                progress(Progress {
                    entries: 0,
                    bytes: reader.offset(),
                });
            }
        }
        for (keyspace, threshold) in reader.thresholds().iter() {
            let needs = spool
                .keyspaces
                .entry(keyspace.map(str::to_string))
                .or_default();
            needs.blob_threshold = Some(threshold);
        }
        spool.input_len = reader.offset();
        Ok(spool)
    }

    /// Rewinds the spool for reading.
    ///
    /// # Errors
    /// `Io` if the spool cannot be flushed or rewound.
    pub(crate) fn replay(self) -> Result<Replay> {
        let rewind = |w: BufWriter<File>| -> Result<BufReader<File>> {
            let mut file = w
                .into_inner()
                .map_err(|e| spool_io("write")(e.into_error()))?;
            file.seek(SeekFrom::Start(0)).map_err(spool_io("seek"))?;
            Ok(BufReader::with_capacity(BUFFER, file))
        };
        Ok(Replay {
            index: rewind(self.index)?,
            values: rewind(self.values)?,
            left: self.entries,
            record: Vec::new(),
        })
    }
}

/// Appends the index record of `entry` (record `number` of the input) to `out`, which
/// it clears first.
fn encode(entry: &Entry, value_len: u64, number: u64, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&[0; 4]);
    let flags = if entry.keyspace.is_some() {
        HAS_KEYSPACE
    } else {
        0
    } | if entry.expires_at.is_some() {
        HAS_EXPIRY
    } else {
        0
    };
    out.push(flags);
    put_vlq(out, number);
    if let Some(ks) = &entry.keyspace {
        put_vlq(out, ks.len() as u64);
        out.extend_from_slice(ks.as_bytes());
    }
    put_vlq(out, entry.key.len() as u64);
    out.extend_from_slice(&entry.key);
    put_vlq(out, u64::from(entry.tag));
    put_vlq(out, entry.meta.len() as u64);
    out.extend_from_slice(&entry.meta);
    if let Some(at) = entry.expires_at {
        put_vlq(out, at);
    }
    put_vlq(out, value_len);
    let len = u32::try_from(out.len() - 4).unwrap_or(u32::MAX);
    if let Some(head) = out.get_mut(..4) {
        head.copy_from_slice(&len.to_le_bytes());
    }
}

/// One spooled entry: its value (empty) is read with [`Replay::read_value`] or
/// [`Replay::value`].
pub(crate) struct Spooled {
    pub(crate) entry: Entry,
    pub(crate) value_len: u64,
    /// Its record (CBOR) or line (JSON lines) number in the input.
    pub(crate) record: u64,
}

/// Reads a spool back, entry by entry; see the module documentation.
pub(crate) struct Replay {
    index: BufReader<File>,
    values: BufReader<File>,
    left: u64,
    record: Vec<u8>,
}

impl Replay {
    /// The next entry, `None` after the last. Its value must be read (or streamed)
    /// before the next call.
    ///
    /// # Errors
    /// `Io` if the spool cannot be read or does not read back as written.
    pub(crate) fn next(&mut self) -> Result<Option<Spooled>> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        let mut len = [0u8; 4];
        self.index.read_exact(&mut len).map_err(spool_io("read"))?;
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_INDEX_RECORD {
            return Err(damaged());
        }
        self.record.resize(len, 0);
        self.index
            .read_exact(&mut self.record)
            .map_err(spool_io("read"))?;
        decode(&self.record).ok_or_else(damaged).map(Some)
    }

    /// Reads the current entry's value (`len` bytes) into `out`.
    ///
    /// # Errors
    /// `Io` if the spool cannot be read.
    pub(crate) fn read_value(&mut self, len: u64, out: &mut Vec<u8>) -> Result<()> {
        out.clear();
        let got = (&mut self.values)
            .take(len)
            .read_to_end(out)
            .map_err(spool_io("read"))?;
        if got as u64 != len {
            return Err(damaged());
        }
        Ok(())
    }

    /// The current entry's value (`len` bytes) as a stream; the caller must read it to
    /// its end (check with [`io::Take::limit`]).
    pub(crate) fn value(&mut self, len: u64) -> io::Take<&mut BufReader<File>> {
        (&mut self.values).take(len)
    }
}

/// The entry of an index record's payload; `None` if it is not one [`encode`] wrote.
fn decode(payload: &[u8]) -> Option<Spooled> {
    let mut cur = Cursor::new(payload);
    let flags = cur.u8().ok()?;
    let record = cur.vlq().ok()?;
    let bytes = |cur: &mut Cursor<'_>| -> Option<Vec<u8>> {
        let len = usize::try_from(cur.vlq().ok()?).ok()?;
        cur.take(len).ok().map(<[u8]>::to_vec)
    };
    let keyspace = if flags & HAS_KEYSPACE != 0 {
        Some(String::from_utf8(bytes(&mut cur)?).ok()?)
    } else {
        None
    };
    let key = bytes(&mut cur)?;
    let tag = u32::try_from(cur.vlq().ok()?).ok()?;
    let meta = bytes(&mut cur)?;
    let expires_at = if flags & HAS_EXPIRY != 0 {
        Some(cur.vlq().ok()?)
    } else {
        None
    };
    let value_len = cur.vlq().ok()?;
    if !cur.is_empty() {
        return None;
    }
    Some(Spooled {
        entry: Entry {
            keyspace,
            key,
            value: Vec::new(),
            tag,
            meta,
            expires_at,
        },
        value_len,
        record,
    })
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn index_records_round_trip() {
        let entries = [
            Entry::new("k", "v"),
            Entry {
                keyspace: Some("ks".repeat(100)),
                key: vec![0xff; MAX_KEY_LEN],
                value: Vec::new(),
                tag: u32::MAX,
                meta: vec![1; MAX_META_LEN],
                expires_at: Some(u64::MAX),
            },
        ];
        for (i, e) in entries.iter().enumerate() {
            let mut out = Vec::new();
            encode(e, u64::from(u32::MAX), i as u64 + 7, &mut out);
            let len = u32::from_le_bytes(out[..4].try_into().unwrap()) as usize;
            assert_eq!(len, out.len() - 4);
            assert!(len <= MAX_INDEX_RECORD);
            let got = decode(&out[4..]).unwrap();
            let want = Entry {
                value: Vec::new(),
                ..e.clone()
            };
            assert_eq!(got.entry, want);
            assert_eq!(
                (got.value_len, got.record),
                (u64::from(u32::MAX), i as u64 + 7)
            );
            for cut in 0..out.len() - 4 {
                assert!(decode(&out[4..4 + cut]).is_none(), "cut at {cut}");
            }
        }
    }

    #[test]
    fn fill_spools_values_and_replays_them_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let input = b"{\"blob_threshold\":9}\n{\"key\":\"a\",\"value\":\"1\"}\n{\"keyspace\":\"x\",\"key\":\"b\",\"value\":\"22\",\"tag\":3}\n";
        let spool = Spool::fill(&input[..], Format::Jsonl, dir.path(), &mut |_| {}).unwrap();
        assert_eq!((spool.entries, spool.input_len), (2, input.len() as u64));
        assert_eq!(
            spool.keyspaces.get(&None),
            Some(&Needs {
                blob_threshold: Some(9),
                smallest_large: None
            })
        );
        assert!(spool.keyspaces.contains_key(&Some("x".to_string())));
        // The files are unnamed: nothing appears in the directory.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        let mut replay = spool.replay().unwrap();
        let mut got = Vec::new();
        while let Some(mut s) = replay.next().unwrap() {
            replay.read_value(s.value_len, &mut s.entry.value).unwrap();
            got.push((s.record, s.entry));
        }
        let mut b = Entry::new("b", "22");
        b.keyspace = Some("x".into());
        b.tag = 3;
        assert_eq!(got, vec![(2, Entry::new("a", "1")), (3, b)]);
    }
}
