//! Decoding a WAL file: [`Reader`] iterates its records; [`decode_all`] decodes a whole
//! file image at once (the entry point for the fuzz target).
//!
//! Classification of damage (FORMAT.md §6 and §7), at the first offset where a record does
//! not decode:
//!
//! * **Framing damage** (record header checksum wrong, header or payload cut off by the end
//!   of the file, payload length over the limit, record checksum wrong): the reader looks
//!   for any checksum-valid record after it. If the record header was itself valid, its
//!   length is trusted and the search starts at the record's end (so a valid record
//!   *embedded in a payload* is never mistaken for one that follows). Otherwise every later
//!   byte offset is tried.
//!   - Nothing valid follows: a **torn tail**. Iteration ends cleanly; [`Recovered::torn_tail`]
//!     reports where, and [`Recovered::valid_end`] is the end of the last good record.
//!   - A valid record follows: **corruption**. Without `salvage` this is
//!     `Error::Corruption` naming the file and offset; with `salvage` the damaged range is
//!     skipped and reported in [`Recovered::dropped`].
//! * **Invalid record** (checksums right but unknown kind, non-zero reserved bits, or a seqno
//!   that does not increase): always corruption, since no crash produces it; `salvage` skips
//!   the record.
//!
//! The file header follows the same rule: a header that is cut short or does not check out,
//! with no valid record after it, is a torn tail at offset 0 (the file is empty: a crash
//! inside `Writer::create`); with valid records after it, it is corruption. An unsupported
//! version or a file id that does not match the file name is always an error.
//!
//! Cost: one pass; the search after framing damage checks a 16-byte header checksum per
//! byte offset and a payload checksum only where that matches, so it is linear in the bytes
//! after the damage.
//!
//! Thread-safety: a `Reader` has one owner; `decode_all` is a pure function.

use std::path::{Path, PathBuf};

use super::{
    Kind, FILE_HEADER_LEN, MAGIC, MAX_PAYLOAD_LEN, MIN_READ_VERSION, RECORD_HEADER_LEN,
    SYNCED_PAYLOAD_LEN, SYNCED_SINCE, VERSION,
};
use crate::checksum::Checksum;
use crate::coding::{get_u32_le, get_u64_le};
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::{FileHeader, FileType};
use crate::fs::{read_all, FileSystem};

/// How to treat corruption that is followed by valid records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct ReadOptions {
    /// Skip damaged ranges and invalid records (reporting them) instead of failing.
    pub salvage: bool,
    /// The file id the header must carry (taken from the file name by [`Reader::open`]).
    pub expected_id: Option<u64>,
}

/// One decoded record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// The first seqno of the batch the payload encodes.
    pub seqno: u64,
    /// File offset of the record's first byte.
    pub offset: u64,
    /// The payload (an encoded write batch).
    pub payload: Vec<u8>,
}

/// An ignored tail: damage at `offset` with nothing valid after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TornTail {
    /// Where the tail starts (= the valid end).
    pub offset: u64,
    /// Bytes ignored, up to the end of the file.
    pub len: u64,
    /// What was wrong at `offset`.
    pub reason: Reason,
}

/// A range skipped by salvage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Dropped {
    /// First skipped byte.
    pub offset: u64,
    /// Bytes skipped.
    pub len: u64,
    /// What was wrong at `offset`.
    pub reason: Reason,
}

/// Everything [`decode_all`] found in a file image.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Recovered {
    /// The valid records, in file order.
    pub records: Vec<Record>,
    /// Offset just past the last valid record (the header's end if none; 0 if the header
    /// itself is torn).
    pub valid_end: u64,
    /// The ignored tail, if the file did not end exactly at `valid_end`.
    pub torn_tail: Option<TornTail>,
    /// Ranges skipped by salvage (always empty without it).
    pub dropped: Vec<Dropped>,
    /// The largest offset a `Synced` record vouches for: the file's bytes before it were
    /// fsynced (0 if the file holds no `Synced` record).
    pub synced_end: u64,
}

/// Why the bytes at an offset are not a usable record.
enum Damage {
    /// The record's extent cannot be trusted; search for the next valid record from
    /// `resume_at`.
    Framing { reason: Reason, resume_at: usize },
    /// A checksum-valid record that breaks a rule; it ends at `end`.
    Invalid { reason: Reason, end: usize },
}

/// A checksum-valid record at some offset.
struct Frame<'a> {
    kind: u8,
    flags: u8,
    reserved: u16,
    seqno: u64,
    payload: &'a [u8],
    end: usize,
}

/// Decodes the record frame at `pos`, checking only lengths and checksums.
fn frame_at(data: &[u8], pos: usize) -> std::result::Result<Frame<'_>, Damage> {
    let framing = |reason| Damage::Framing {
        reason,
        resume_at: pos.saturating_add(1),
    };
    let header_end = pos
        .checked_add(RECORD_HEADER_LEN)
        .ok_or_else(|| framing(Reason::Truncated))?;
    let (Some(stored_header_crc), Some(stored_record_crc), Some(fields)) = (
        get_u32_le(data, pos),
        get_u32_le(data, pos + 4),
        data.get(pos + 8..header_end),
    ) else {
        return Err(framing(Reason::Truncated));
    };
    let header_crc = Checksum::of(fields);
    if header_crc.masked() != stored_header_crc {
        return Err(framing(Reason::Checksum {
            stored: stored_header_crc,
            computed: header_crc.masked(),
        }));
    }
    // The header is intact, so its length is trusted from here on.
    let payload_len = get_u32_le(fields, 0).unwrap_or_default() as usize;
    if payload_len > MAX_PAYLOAD_LEN {
        return Err(framing(Reason::LengthOutOfRange));
    }
    let end = header_end + payload_len;
    let Some(payload) = data.get(header_end..end) else {
        return Err(Damage::Framing {
            reason: Reason::Truncated,
            resume_at: end,
        });
    };
    let record_crc = header_crc.extend(payload);
    if record_crc.masked() != stored_record_crc {
        return Err(Damage::Framing {
            reason: Reason::Checksum {
                stored: stored_record_crc,
                computed: record_crc.masked(),
            },
            resume_at: end,
        });
    }
    Ok(Frame {
        kind: fields.get(4).copied().unwrap_or_default(),
        flags: fields.get(5).copied().unwrap_or_default(),
        reserved: u16::from_le_bytes([
            fields.get(6).copied().unwrap_or_default(),
            fields.get(7).copied().unwrap_or_default(),
        ]),
        seqno: get_u64_le(fields, 8).unwrap_or_default(),
        payload,
        end,
    })
}

/// The reason given when the search after damage runs out of checksum budget.
const DENSE_DAMAGE: Reason =
    Reason::BadEntry("damage too dense to tell a torn tail from corruption");

/// The first offset at or after `from` holding a checksum-valid record.
///
/// `budget` bounds the payload bytes checksummed for candidates whose header checks out
/// but whose payload does not. Real files hit at most one such candidate per search;
/// crafted input can hold many overlapping ones, and without the bound the search would be
/// quadratic. Running out is reported as `Err(())`.
fn next_valid(data: &[u8], from: usize, budget: &mut usize) -> Result<Option<usize>, ()> {
    let Some(last_start) = data.len().checked_sub(RECORD_HEADER_LEN) else {
        return Ok(None);
    };
    for q in from..=last_start {
        match frame_at(data, q) {
            Ok(_) => return Ok(Some(q)),
            Err(Damage::Framing { resume_at, .. })
                if resume_at > q + 1 && resume_at <= data.len() =>
            {
                let spent = resume_at - q - RECORD_HEADER_LEN;
                *budget = budget.checked_sub(spent).ok_or(())?;
            }
            Err(_) => {}
        }
    }
    Ok(None)
}

/// The header check result: the file's format version, or why the header is unusable.
fn check_header(
    data: &[u8],
    path: &Path,
    expected_id: Option<u64>,
) -> Result<std::result::Result<u32, Reason>> {
    let FileHeader { version, id, .. } = match FileHeader::decode(data, MAGIC) {
        Ok(h) => h,
        Err((_, reason)) => return Ok(Err(reason)),
    };
    if !(MIN_READ_VERSION..=VERSION).contains(&version) {
        return Err(Error::UnsupportedVersion {
            file: FileKind::Wal,
            path: path.to_path_buf(),
            major: version,
            minor: 0,
        });
    }
    if let Some(want) = expected_id {
        if id != want {
            return Err(Error::corruption(
                FileKind::Wal,
                path,
                8,
                Reason::HeaderField {
                    field: "file_id",
                    detail: format!("{id} but the file name says {want}"),
                },
            ));
        }
    }
    Ok(Ok(version))
}

/// Iteration state over a file image; shared by [`Reader`] and [`decode_all`].
#[derive(Debug, Clone)]
struct Scan {
    path: PathBuf,
    options: ReadOptions,
    /// The header's format version (the newest one when the header is damaged).
    version: u32,
    /// See [`Recovered::synced_end`].
    synced_end: u64,
    pos: usize,
    last_seqno: Option<u64>,
    finished: bool,
    valid_end: u64,
    torn_tail: Option<TornTail>,
    dropped: Vec<Dropped>,
    /// Payload bytes the searches after damage may still checksum (see `next_valid`).
    budget: usize,
}

impl Scan {
    fn new(data: &[u8], path: &Path, options: ReadOptions) -> Result<Scan> {
        let mut scan = Scan {
            path: path.to_path_buf(),
            options,
            version: VERSION,
            synced_end: 0,
            pos: FILE_HEADER_LEN,
            last_seqno: None,
            finished: false,
            valid_end: FILE_HEADER_LEN as u64,
            torn_tail: None,
            dropped: Vec::new(),
            budget: data.len().saturating_mul(2).saturating_add(1 << 20),
        };
        match check_header(data, path, options.expected_id)? {
            Ok(version) => scan.version = version,
            Err(reason) => match next_valid(data, 1, &mut scan.budget) {
                Err(()) => return Err(Error::corruption(FileKind::Wal, path, 0, DENSE_DAMAGE)),
                Ok(None) => scan.end_torn(data, 0, reason),
                Ok(Some(_)) if !options.salvage => {
                    return Err(Error::corruption(FileKind::Wal, path, 0, reason));
                }
                Ok(Some(q)) => {
                    scan.valid_end = 0;
                    scan.drop_range(0, q, reason);
                }
            },
        }
        Ok(scan)
    }

    fn end_torn(&mut self, data: &[u8], at: usize, reason: Reason) {
        self.valid_end = at as u64;
        self.torn_tail = Some(TornTail {
            offset: at as u64,
            len: data.len().saturating_sub(at) as u64,
            reason,
        });
        self.finished = true;
    }

    fn drop_range(&mut self, from: usize, to: usize, reason: Reason) {
        self.dropped.push(Dropped {
            offset: from as u64,
            len: to.saturating_sub(from) as u64,
            reason,
        });
        self.pos = to;
    }

    fn corruption(&mut self, at: usize, reason: Reason) -> Error {
        self.finished = true;
        Error::corruption(FileKind::Wal, &self.path, at as u64, reason)
    }

    /// The next valid record, `None` at the end (clean or torn), or the corruption error.
    fn next<'a>(&mut self, data: &'a [u8]) -> Result<Option<(u64, usize, &'a [u8])>> {
        // Each pass either returns or moves `pos` forward, so the loop ends.
        while !self.finished {
            let pos = self.pos;
            if pos >= data.len() {
                self.finished = true;
                return Ok(None);
            }
            let damage = match frame_at(data, pos) {
                Ok(frame) => match self.validate(&frame, pos) {
                    Ok(Valid::Synced(end)) => {
                        self.pos = frame.end;
                        self.valid_end = frame.end as u64;
                        self.synced_end = self.synced_end.max(end);
                        continue;
                    }
                    Ok(Valid::Batch) => {
                        self.pos = frame.end;
                        self.valid_end = frame.end as u64;
                        self.last_seqno = Some(frame.seqno);
                        return Ok(Some((frame.seqno, pos, frame.payload)));
                    }
                    Err(reason) => Damage::Invalid {
                        reason,
                        end: frame.end,
                    },
                },
                Err(damage) => damage,
            };
            match damage {
                Damage::Invalid { reason, end } => {
                    if !self.options.salvage {
                        return Err(self.corruption(pos, reason));
                    }
                    self.drop_range(pos, end, reason);
                }
                Damage::Framing { reason, resume_at } => {
                    match next_valid(data, resume_at, &mut self.budget) {
                        Err(()) => return Err(self.corruption(pos, DENSE_DAMAGE)),
                        Ok(None) => self.end_torn(data, pos, reason),
                        Ok(Some(_)) if !self.options.salvage => {
                            return Err(self.corruption(pos, reason));
                        }
                        Ok(Some(q)) => self.drop_range(pos, q, reason),
                    }
                }
            }
        }
        Ok(None)
    }

    /// Checks the rules of a checksum-valid record at `pos`.
    fn validate(&self, frame: &Frame<'_>, pos: usize) -> std::result::Result<Valid, Reason> {
        if frame.flags != 0 || frame.reserved != 0 {
            return Err(Reason::BadEntry("reserved WAL record bits are set"));
        }
        if frame.kind == Kind::Synced as u8 && self.version >= SYNCED_SINCE {
            let end = match frame.payload.try_into() {
                Ok(bytes) if frame.payload.len() == SYNCED_PAYLOAD_LEN => u64::from_le_bytes(bytes),
                _ => return Err(Reason::BadEntry("WAL sync mark payload is not 8 bytes")),
            };
            if frame.seqno != 0 || end < FILE_HEADER_LEN as u64 || end > pos as u64 {
                return Err(Reason::BadEntry(
                    "WAL sync mark has a seqno or a synced end out of range",
                ));
            }
            return Ok(Valid::Synced(end));
        }
        if frame.kind != Kind::Batch as u8 {
            return Err(Reason::BadTag(frame.kind));
        }
        if self.last_seqno.is_some_and(|last| frame.seqno <= last) {
            return Err(Reason::BadEntry(
                "WAL record seqno does not increase over the previous record's",
            ));
        }
        Ok(Valid::Batch)
    }

    fn into_recovered(self, records: Vec<Record>) -> Recovered {
        Recovered {
            records,
            valid_end: self.valid_end,
            torn_tail: self.torn_tail,
            dropped: self.dropped,
            synced_end: self.synced_end,
        }
    }
}

/// What a record that passes [`Scan::validate`] is.
enum Valid {
    /// A batch, yielded to the caller.
    Batch,
    /// A sync mark vouching for the bytes before the offset it holds.
    Synced(u64),
}

/// Decodes a whole WAL file image. `path` only names the file in errors.
///
/// # Errors
/// `Error::Corruption` for damage followed by valid records (unless `options.salvage`) or
/// an invalid record (likewise); `Error::UnsupportedVersion`; a header file-id mismatch.
pub(crate) fn decode_all(data: &[u8], path: &Path, options: ReadOptions) -> Result<Recovered> {
    let mut scan = Scan::new(data, path, options)?;
    let mut records = Vec::new();
    while let Some((seqno, offset, payload)) = scan.next(data)? {
        records.push(Record {
            seqno,
            offset: offset as u64,
            payload: payload.to_vec(),
        });
    }
    Ok(scan.into_recovered(records))
}

/// Iterates the records of one WAL file, read whole into memory (a WAL file is bounded by
/// the `Db`'s rotation size). Yields `Result<Record>`; after an error it yields nothing.
#[derive(Debug)]
pub(crate) struct Reader {
    data: Vec<u8>,
    scan: Scan,
}

impl Reader {
    /// Opens the WAL file at `path`; the id in its name (if it is a WAL file name) must
    /// match the header's.
    ///
    /// # Errors
    /// `Error::Io` if the file cannot be read; header errors as for [`decode_all`].
    pub(crate) fn open(fs: &dyn FileSystem, path: &Path, salvage: bool) -> Result<Reader> {
        let data = read_all(fs, path)?;
        let expected_id = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| FileType::Wal.parse(n));
        let options = ReadOptions {
            salvage,
            expected_id,
        };
        let scan = Scan::new(&data, path, options)?;
        Ok(Reader { data, scan })
    }

    /// Opens the WAL file at `path` as [`Reader::open`] does, and goes on from byte `from`,
    /// the end of a record an earlier read of the file yielded (its `valid_end`): a reader
    /// that follows a file another process appends to reads only what is new.
    ///
    /// # Errors
    /// As [`Reader::open`]; `Corruption` if `from` is past the file's end or inside its
    /// header.
    pub(crate) fn open_from(
        fs: &dyn FileSystem,
        path: &Path,
        salvage: bool,
        from: u64,
    ) -> Result<Reader> {
        let mut reader = Reader::open(fs, path, salvage)?;
        if from < FILE_HEADER_LEN as u64 || from > reader.data.len() as u64 {
            return Err(Error::corruption(
                FileKind::Wal,
                path,
                from,
                Reason::BadEntry("the file is shorter than an earlier read of it"),
            ));
        }
        let at = usize::try_from(from).unwrap_or(usize::MAX);
        reader.scan.pos = at;
        reader.scan.valid_end = from;
        Ok(reader)
    }

    /// Offset just past the last record yielded so far; after the iterator ends, where a
    /// new writer could safely continue (and a follower reads on from).
    pub(crate) fn valid_end(&self) -> u64 {
        self.scan.valid_end
    }

    /// The torn tail found (known once iteration has ended).
    pub(crate) fn torn_tail(&self) -> Option<&TornTail> {
        self.scan.torn_tail.as_ref()
    }

    /// Ranges skipped so far under salvage.
    pub(crate) fn dropped(&self) -> &[Dropped] {
        &self.scan.dropped
    }

    /// The seqno of the last record yielded.
    #[cfg(test)]
    pub(crate) fn last_seqno(&self) -> Option<u64> {
        self.scan.last_seqno
    }

    /// Reads ahead of the iteration, on a copy of its state (O(rest of the file)), and
    /// returns the largest offset a `Synced` record anywhere in the file vouches for (0 if
    /// none; every record that starts below it was durable) and the seqno of the file's
    /// last record. Damage ahead ends the look-ahead there.
    pub(crate) fn look_ahead(&self) -> (u64, Option<u64>) {
        let mut ahead = self.scan.clone();
        while let Ok(Some(_)) = ahead.next(&self.data) {}
        (ahead.synced_end, ahead.last_seqno)
    }

    /// The file's length in bytes.
    pub(crate) fn file_len(&self) -> u64 {
        self.data.len() as u64
    }
}

impl Iterator for Reader {
    type Item = Result<Record>;

    fn next(&mut self) -> Option<Result<Record>> {
        match self.scan.next(&self.data) {
            Ok(Some((seqno, offset, payload))) => Some(Ok(Record {
                seqno,
                offset: offset as u64,
                payload: payload.to_vec(),
            })),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::super::{encode_file_header, encode_record};
    use super::*;

    const PATH: &str = "/db/00000000000000000007.wal";

    fn opts(salvage: bool) -> ReadOptions {
        ReadOptions {
            salvage,
            expected_id: Some(7),
        }
    }

    /// A file of records with seqnos 10, 20, 30, ... and payloads of growing length;
    /// returns the image and each record's start offset (plus the end).
    fn image(count: usize) -> (Vec<u8>, Vec<usize>) {
        let mut data = encode_file_header(7);
        let mut starts = Vec::new();
        for i in 0..count {
            starts.push(data.len());
            let payload: Vec<u8> = (0..i * 13 + 1).map(|j| (i * 31 + j) as u8).collect();
            encode_record(&mut data, (i as u64 + 1) * 10, &payload);
        }
        starts.push(data.len());
        (data, starts)
    }

    fn decode(data: &[u8], salvage: bool) -> Result<Recovered> {
        decode_all(data, Path::new(PATH), opts(salvage))
    }

    fn seqnos(r: &Recovered) -> Vec<u64> {
        r.records.iter().map(|r| r.seqno).collect()
    }

    fn corruption_at(res: Result<Recovered>) -> u64 {
        match res {
            Err(Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Wal);
                assert_eq!(c.path, Path::new(PATH));
                c.offset
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn round_trip() {
        let (data, starts) = image(5);
        let r = decode(&data, false).unwrap();
        assert_eq!(seqnos(&r), vec![10, 20, 30, 40, 50]);
        for (i, rec) in r.records.iter().enumerate() {
            assert_eq!(rec.offset, starts[i] as u64);
            assert_eq!(rec.payload.len(), i * 13 + 1);
        }
        assert_eq!(r.valid_end, data.len() as u64);
        assert_eq!(r.torn_tail, None);
        assert!(r.dropped.is_empty());
        let empty = decode(&encode_file_header(7), false).unwrap();
        assert!(empty.records.is_empty());
        assert_eq!(empty.valid_end, FILE_HEADER_LEN as u64);
    }

    #[test]
    fn torn_last_record_at_every_length_ends_cleanly() {
        let (data, starts) = image(3);
        let (prev_end, end) = (starts[2], starts[3]);
        for cut in prev_end..end {
            for fill in [None, Some(0u8), Some(0xa5)] {
                let mut torn = data[..cut].to_vec();
                if let Some(b) = fill {
                    torn.resize(end, b); // a torn write whose rest reads as zeros or noise
                }
                let r = decode(&torn, false).unwrap();
                assert_eq!(seqnos(&r), vec![10, 20], "cut {cut} fill {fill:?}");
                assert_eq!(r.valid_end, prev_end as u64);
                let tail = r.torn_tail.clone();
                if torn.len() > prev_end {
                    let tail = tail.unwrap();
                    assert_eq!(tail.offset, prev_end as u64);
                    assert_eq!(tail.len, (torn.len() - prev_end) as u64);
                } else {
                    assert_eq!(tail, None);
                }
            }
        }
    }

    #[test]
    fn any_flipped_byte_in_a_middle_record_is_corruption_and_salvage_skips_it() {
        let (data, starts) = image(3);
        for i in starts[1]..starts[2] {
            let mut bad = data.clone();
            bad[i] ^= 0x40;
            assert_eq!(
                corruption_at(decode(&bad, false)),
                starts[1] as u64,
                "byte {i}"
            );
            let r = decode(&bad, true).unwrap();
            assert_eq!(seqnos(&r), vec![10, 30], "byte {i}");
            assert_eq!(r.dropped.len(), 1);
            assert_eq!(r.dropped[0].offset, starts[1] as u64);
            assert_eq!(r.dropped[0].len, (starts[2] - starts[1]) as u64);
            assert_eq!(r.valid_end, data.len() as u64);
        }
    }

    #[test]
    fn any_flipped_byte_in_the_last_record_is_a_torn_tail() {
        let (data, starts) = image(3);
        for i in starts[2]..starts[3] {
            let mut bad = data.clone();
            bad[i] ^= 0x01;
            let r = decode(&bad, false).unwrap();
            assert_eq!(seqnos(&r), vec![10, 20], "byte {i}");
            assert_eq!(r.torn_tail.unwrap().offset, starts[2] as u64);
        }
    }

    /// A torn record whose payload happens to contain a complete, valid WAL record (a user
    /// value holding WAL bytes) must still read as a torn tail, not as corruption.
    #[test]
    fn valid_record_inside_a_torn_payload_is_not_a_follower() {
        let mut inner = Vec::new();
        encode_record(&mut inner, 99, b"embedded");
        let mut data = encode_file_header(7);
        encode_record(&mut data, 1, b"first");
        let torn_at = data.len();
        let mut payload = b"prefix".to_vec();
        payload.extend_from_slice(&inner);
        payload.extend_from_slice(b"suffix");
        encode_record(&mut data, 2, &payload);
        data.truncate(data.len() - 3);
        let r = decode(&data, false).unwrap();
        assert_eq!(seqnos(&r), vec![1]);
        assert_eq!(r.torn_tail.unwrap().offset, torn_at as u64);
    }

    #[test]
    fn seqnos_must_increase() {
        let mut data = encode_file_header(7);
        encode_record(&mut data, 5, b"a");
        let second = data.len();
        encode_record(&mut data, 5, b"b");
        encode_record(&mut data, 6, b"c");
        assert_eq!(corruption_at(decode(&data, false)), second as u64);
        let r = decode(&data, true).unwrap();
        assert_eq!(seqnos(&r), vec![5, 6]);
        assert_eq!(r.dropped[0].offset, second as u64);
        // Even as the very last record: a checksum-valid record is never a torn write.
        let mut last = encode_file_header(7);
        encode_record(&mut last, 5, b"a");
        encode_record(&mut last, 4, b"b");
        assert!(decode(&last, false).is_err());
    }

    /// Re-encodes the record at `at` with header byte `field` (8..24) set to `value` and
    /// both checksums recomputed.
    fn reforge(data: &mut [u8], at: usize, field: usize, value: u8) {
        let len = get_u32_le(data, at + 8).unwrap() as usize;
        data[at + field] = value;
        let fields = data[at + 8..at + 24].to_vec();
        let h = Checksum::of(&fields);
        let r = h.extend(&data[at + 24..at + 24 + len]);
        data[at..at + 4].copy_from_slice(&h.masked().to_le_bytes());
        data[at + 4..at + 8].copy_from_slice(&r.masked().to_le_bytes());
    }

    #[test]
    fn unknown_kind_and_reserved_bits_are_corruption() {
        let (data, starts) = image(3);
        for (field, value, reason) in [
            (12, 3u8, Reason::BadTag(3)),
            // A batch record relabelled as a sync mark: its payload is not one.
            (
                12,
                2,
                Reason::BadEntry("WAL sync mark payload is not 8 bytes"),
            ),
            (13, 1, Reason::BadEntry("reserved WAL record bits are set")),
            (15, 1, Reason::BadEntry("reserved WAL record bits are set")),
        ] {
            let mut bad = data.clone();
            reforge(&mut bad, starts[2], field, value);
            match decode(&bad, false) {
                Err(Error::Corruption(c)) => {
                    assert_eq!(c.offset, starts[2] as u64);
                    assert_eq!(c.reason, reason);
                }
                other => panic!("field {field}: {other:?}"),
            }
            assert_eq!(seqnos(&decode(&bad, true).unwrap()), vec![10, 20]);
        }
    }

    #[test]
    fn header_damage() {
        let (data, starts) = image(2);
        // Cut inside the header, or zeroed: an empty, torn log.
        for cut in 0..FILE_HEADER_LEN {
            let r = decode(&data[..cut], false).unwrap();
            assert!(r.records.is_empty());
            assert_eq!(r.valid_end, 0);
            assert_eq!(r.torn_tail.unwrap().len, cut as u64);
        }
        let zeroed = vec![0u8; 64];
        assert_eq!(decode(&zeroed, false).unwrap().valid_end, 0);
        // A damaged header followed by valid records is corruption; salvage keeps them.
        for i in 0..FILE_HEADER_LEN {
            let mut bad = data.clone();
            bad[i] ^= 0x10;
            assert_eq!(corruption_at(decode(&bad, false)), 0, "byte {i}");
            let r = decode(&bad, true).unwrap();
            assert_eq!(seqnos(&r), vec![10, 20]);
            assert_eq!(r.dropped[0].offset, 0);
            assert_eq!(r.dropped[0].len, starts[0] as u64);
        }
        let mut other_id = encode_file_header(8);
        other_id.extend_from_slice(&data[FILE_HEADER_LEN..]);
        assert_eq!(corruption_at(decode(&other_id, false)), 8);
        let with_version = |v: u8| {
            let mut img = data.clone();
            img[4] = v;
            let crc = Checksum::of(&img[..16]).masked();
            img[16..20].copy_from_slice(&crc.to_le_bytes());
            img
        };
        assert!(matches!(
            decode(&with_version(5), false),
            Err(Error::UnsupportedVersion { major: 5, .. })
        ));
        // A version-3 log (written before merge operands) still reads.
        assert_eq!(
            seqnos(&decode(&with_version(3), false).unwrap()),
            vec![10, 20]
        );
        assert!(matches!(
            decode(&with_version(0), false),
            Err(Error::UnsupportedVersion { major: 0, .. })
        ));
        // A version-1 log (written before version 2 added batch kinds) still reads.
        assert_eq!(
            seqnos(&decode(&with_version(1), false).unwrap()),
            vec![10, 20]
        );
    }

    #[test]
    fn truncation_and_flips_never_panic_and_yield_a_prefix() {
        let (data, _) = image(4);
        let all = seqnos(&decode(&data, false).unwrap());
        for cut in 0..=data.len() {
            let r = decode(&data[..cut], false).unwrap();
            let got = seqnos(&r);
            assert_eq!(got[..], all[..got.len()], "cut {cut}");
            assert!(r.valid_end <= cut as u64);
        }
        for i in 0..data.len() {
            for mask in [0x01, 0x80, 0xff] {
                let mut bad = data.clone();
                bad[i] ^= mask;
                for salvage in [false, true] {
                    if let Ok(r) = decode(&bad, salvage) {
                        assert!(seqnos(&r).iter().all(|s| all.contains(s)));
                    }
                }
            }
        }
    }

    #[test]
    fn garbage_never_panics() {
        let mut state = 0x1234_5678_u64;
        for len in [0usize, 1, 19, 20, 23, 24, 25, 100, 1000] {
            for _ in 0..50 {
                let mut data: Vec<u8> = (0..len)
                    .map(|_| {
                        state = state.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (state >> 33) as u8
                    })
                    .collect();
                let _ = decode(&data, false);
                let _ = decode(&data, true);
                // Also with a valid header in front.
                let mut framed = encode_file_header(7);
                framed.append(&mut data);
                let _ = decode(&framed, true);
            }
        }
    }

    /// Thousands of overlapping records whose headers check out but whose payloads do not
    /// would make the search after damage quadratic; the budget turns that into an error.
    #[test]
    fn dense_fake_headers_are_refused_quickly() {
        let count = 20_000usize;
        let mut data = encode_file_header(7);
        data.extend_from_slice(&[0xee; RECORD_HEADER_LEN]); // damage first
        let first = data.len();
        let end = first + count * RECORD_HEADER_LEN;
        for i in 0..count {
            let at = first + i * RECORD_HEADER_LEN;
            let payload_len = (end - at - RECORD_HEADER_LEN) as u32;
            let mut fields = Vec::new();
            fields.extend_from_slice(&payload_len.to_le_bytes());
            fields.extend_from_slice(&[1, 0, 0, 0]);
            fields.extend_from_slice(&(i as u64).to_le_bytes());
            let h = Checksum::of(&fields).masked();
            data.extend_from_slice(&h.to_le_bytes());
            data.extend_from_slice(&0u32.to_le_bytes()); // wrong record checksum
            data.extend_from_slice(&fields);
        }
        let started = std::time::Instant::now();
        for salvage in [false, true] {
            match decode(&data, salvage) {
                Err(Error::Corruption(c)) => assert_eq!(c.reason, DENSE_DAMAGE),
                other => panic!("{other:?}"),
            }
        }
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn reader_iterates_a_file_and_stops_after_an_error() {
        let fs = crate::fs::MemFs::new();
        let (data, starts) = image(3);
        fs.create_dir(Path::new("/db")).unwrap();
        let mut f = fs.create(Path::new(PATH)).unwrap();
        f.append(&data).unwrap();
        let got: Vec<u64> = Reader::open(&fs, Path::new(PATH), false)
            .unwrap()
            .map(|r| r.unwrap().seqno)
            .collect();
        assert_eq!(got, vec![10, 20, 30]);

        fs.corrupt(Path::new(PATH), starts[1] + 30, 0x04).unwrap();
        let mut reader = Reader::open(&fs, Path::new(PATH), false).unwrap();
        assert_eq!(reader.next().unwrap().unwrap().seqno, 10);
        assert!(matches!(reader.next(), Some(Err(Error::Corruption(_)))));
        assert!(reader.next().is_none(), "fused after an error");
        assert_eq!(reader.valid_end(), starts[1] as u64);

        let mut salvaging = Reader::open(&fs, Path::new(PATH), true).unwrap();
        let got: Vec<u64> = salvaging.by_ref().map(|r| r.unwrap().seqno).collect();
        assert_eq!(got, vec![10, 30]);
        assert_eq!(salvaging.dropped().len(), 1);
        assert_eq!(salvaging.last_seqno(), Some(30));
        assert_eq!(salvaging.torn_tail(), None);
    }

    #[test]
    fn sync_marks_are_read_as_evidence_and_checked() {
        let (mut data, starts) = image(3);
        let end = *starts.last().unwrap() as u64;
        super::super::encode_synced(&mut data, end);
        let r = decode(&data, false).unwrap();
        assert_eq!(seqnos(&r), vec![10, 20, 30]);
        assert_eq!(r.synced_end, end);
        assert_eq!(r.valid_end, data.len() as u64);

        // A mark vouching for bytes after itself is no crash's doing: corruption.
        let (mut bad, starts) = image(3);
        super::super::encode_synced(&mut bad, *starts.last().unwrap() as u64 + 1);
        assert_eq!(
            corruption_at(decode(&bad, false)),
            *starts.last().unwrap() as u64
        );

        // A torn mark at the end is a torn tail like any record.
        let torn = &data[..data.len() - 3];
        let r = decode(torn, false).unwrap();
        assert_eq!(seqnos(&r), vec![10, 20, 30]);
        assert_eq!(r.synced_end, 0);
        assert!(r.torn_tail.is_some());
    }

    #[test]
    fn a_sync_mark_in_a_version_2_file_is_an_unknown_kind() {
        let (mut data, starts) = image(2);
        data.splice(
            0..FILE_HEADER_LEN,
            FileHeader {
                magic: MAGIC,
                version: 2,
                id: 7,
            }
            .encode(),
        );
        super::super::encode_synced(&mut data, *starts.last().unwrap() as u64);
        assert_eq!(
            corruption_at(decode(&data, false)),
            *starts.last().unwrap() as u64
        );
    }

    #[test]
    fn look_ahead_sees_marks_after_the_current_record() {
        let fs = crate::fs::MemFs::new();
        fs.create_dir(Path::new("/db")).unwrap();
        let (mut data, starts) = image(4);
        super::super::encode_synced(&mut data, starts[2] as u64);
        super::super::encode_record(&mut data, 50, b"after the mark");
        let path = Path::new(PATH);
        fs.create(path).unwrap().append(&data).unwrap();
        let mut reader = Reader::open(&fs, path, false).unwrap();
        let first = reader.next().unwrap().unwrap();
        assert_eq!(reader.look_ahead(), (starts[2] as u64, Some(50)));
        assert!(first.offset < starts[2] as u64);
        let rest: Vec<u64> = reader.map(|r| r.unwrap().seqno).collect();
        assert_eq!(rest, vec![20, 30, 40, 50]);
    }
}
