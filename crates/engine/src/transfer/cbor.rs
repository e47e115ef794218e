//! The CBOR dump format (see `FORMAT.md` § CBOR): a CBOR sequence (RFC 8742) of maps, a
//! header record first, one record per entry, and a trailer record with the entry count
//! and a CRC32C of every byte before it.
//!
//! Owns encoding those records into a buffer and [`Reader`], which decodes them from any
//! `Read` one record at a time. The decoder reads only definite-length items of the types
//! `FORMAT.md` lists, checks every length against its limit before allocating, and refuses
//! unknown fields, a missing or wrong header, a missing trailer (a truncated dump), a
//! count or checksum mismatch, and anything after the trailer.

use std::io::{self, Read};
use std::path::Path;

use ciborium_ll::{Decoder, Encoder, Header};

use super::entry::{check, Entry, EntryRef, MAX_META_LEN, MAX_RECORD_BYTES};
use crate::checksum::Checksum;
use crate::db::MAX_KEYSPACE_NAME_LEN;
use crate::error::{Error, Result};
use crate::key::MAX_KEY_LEN;

/// The format's name in errors.
pub(crate) const NAME: &str = "cbor";
/// The `format` field of the header record.
pub const MAGIC: &str = "cairn-dump";
/// The `version` field of the header record this build writes and reads.
pub const VERSION: u64 = 1;

/// Longest field name the decoder reads.
const MAX_FIELD_NAME: usize = 16;
/// Most fields a record may have.
const MAX_FIELDS: usize = 8;

// Writing into a Vec<u8> cannot fail, so the encoders ignore the io::Result.

fn text(enc: &mut Encoder<&mut Vec<u8>>, s: &str) {
    let _ = enc.text(s, None);
}

fn uint_field(enc: &mut Encoder<&mut Vec<u8>>, name: &str, v: u64) {
    text(enc, name);
    let _ = enc.push(Header::Positive(v));
}

fn bytes_field(enc: &mut Encoder<&mut Vec<u8>>, name: &str, v: &[u8]) {
    text(enc, name);
    let _ = enc.bytes(v, None);
}

/// Appends the header record to `out`.
pub fn encode_header(out: &mut Vec<u8>) {
    let mut enc = Encoder::from(out);
    let _ = enc.push(Header::Map(Some(2)));
    text(&mut enc, "format");
    text(&mut enc, MAGIC);
    uint_field(&mut enc, "version", VERSION);
}

/// Appends the record of `entry` to `out`.
pub fn encode_entry(entry: &EntryRef<'_>, out: &mut Vec<u8>) {
    let fields = 1
        + usize::from(entry.keyspace.is_some())
        + usize::from(entry.value.is_some())
        + usize::from(entry.tag != 0)
        + usize::from(!entry.meta.is_empty())
        + usize::from(entry.expires_at.is_some());
    let mut enc = Encoder::from(out);
    let _ = enc.push(Header::Map(Some(fields)));
    if let Some(ks) = entry.keyspace {
        text(&mut enc, "keyspace");
        text(&mut enc, ks);
    }
    bytes_field(&mut enc, "key", entry.key);
    if let Some(value) = entry.value {
        bytes_field(&mut enc, "value", value);
    }
    if entry.tag != 0 {
        uint_field(&mut enc, "tag", u64::from(entry.tag));
    }
    if !entry.meta.is_empty() {
        bytes_field(&mut enc, "meta", entry.meta);
    }
    if let Some(at) = entry.expires_at {
        uint_field(&mut enc, "expires_at", at);
    }
}

/// Appends the trailer record: `entries` records were written and `crc` covers every
/// byte before the trailer (stored masked, see `checksum.rs`).
pub fn encode_trailer(entries: u64, crc: Checksum, out: &mut Vec<u8>) {
    let mut enc = Encoder::from(out);
    let _ = enc.push(Header::Map(Some(2)));
    uint_field(&mut enc, "entries", entries);
    uint_field(&mut enc, "crc32c", u64::from(crc.masked()));
}

/// Counts and checksums the bytes read through it.
struct Tally<R> {
    input: R,
    pos: u64,
    crc: Checksum,
}

impl<R: Read> Read for Tally<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.input.read(buf)?;
        if let Some(got) = buf.get(..n) {
            self.crc = self.crc.extend(got);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Why a record could not be read.
enum Fail {
    /// The input is malformed (the text says how).
    Bad(String),
    /// Reading failed.
    Io(io::Error),
}

impl From<String> for Fail {
    fn from(s: String) -> Fail {
        Fail::Bad(s)
    }
}

fn from_io(e: io::Error) -> Fail {
    if e.kind() == io::ErrorKind::UnexpectedEof {
        Fail::Bad("unexpected end of input inside a record".to_string())
    } else {
        Fail::Io(e)
    }
}

/// One decoded record.
enum Record {
    Header { format: String, version: u64 },
    Entry(Entry),
    Trailer { entries: u64, crc: u32 },
}

/// The fields a record may hold, as read.
#[derive(Default)]
struct Fields {
    format: Option<String>,
    version: Option<u64>,
    keyspace: Option<String>,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    tag: Option<u64>,
    meta: Option<Vec<u8>>,
    expires_at: Option<u64>,
    entries: Option<u64>,
    crc32c: Option<u64>,
}

/// Reads a CBOR dump one entry at a time.
pub struct Reader<R: Read> {
    input: Tally<R>,
    /// Number of the record read last (the header is record 1).
    record: u64,
    entries: u64,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Starts reading `input` (unbuffered reads are fine, but a `BufReader` is faster) and
    /// checks its header record.
    ///
    /// # Errors
    /// `BadInput` if the input does not start with this format's header (or is of a newer
    /// version); `Io` if reading fails.
    pub fn new(input: R) -> Result<Reader<R>> {
        let mut r = Reader {
            input: Tally {
                input,
                pos: 0,
                crc: Checksum::of(&[]),
            },
            record: 0,
            entries: 0,
            done: false,
        };
        match r.read_record()? {
            Some((Record::Header { format, version }, start)) => {
                if format != MAGIC {
                    return Err(r.bad(start, format!("format is {format:?}, not {MAGIC:?}")));
                }
                if version != VERSION {
                    return Err(r.bad(
                        start,
                        format!("unsupported version {version} (this build reads {VERSION})"),
                    ));
                }
                Ok(r)
            }
            Some((_, start)) => Err(r.bad(start, "the first record is not the header".into())),
            None => Err(r.bad(0, "empty input (no header record)".into())),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.input.pos
    }

    /// Number of the record read last (the header is record 1).
    pub fn record(&self) -> u64 {
        self.record
    }

    fn bad(&self, start: u64, detail: String) -> Error {
        Error::BadInput {
            format: NAME,
            record: self.record,
            offset: start,
            detail,
        }
    }

    /// The next entry; `None` after a valid trailer.
    ///
    /// # Errors
    /// `BadInput` naming the record for a malformed record, a missing trailer (the input
    /// ends without one: a truncated dump), a trailer whose count or checksum does not
    /// match, or data after the trailer; `Io` if reading fails.
    pub fn next_entry(&mut self) -> Result<Option<Entry>> {
        if self.done {
            return Ok(None);
        }
        let crc_before = self.input.crc;
        match self.read_record()? {
            Some((Record::Entry(entry), _)) => {
                self.entries += 1;
                Ok(Some(entry))
            }
            Some((Record::Trailer { entries, crc }, start)) => {
                if entries != self.entries {
                    return Err(self.bad(
                        start,
                        format!(
                            "trailer counts {entries} entries but {} were read",
                            self.entries
                        ),
                    ));
                }
                let stored = Checksum::unmask(crc);
                if stored != crc_before {
                    return Err(self.bad(
                        start,
                        format!(
                            "checksum mismatch (stored {:#010x}, computed {:#010x})",
                            stored.get(),
                            crc_before.get()
                        ),
                    ));
                }
                let mut probe = [0u8; 1];
                let extra = self
                    .input
                    .read(&mut probe)
                    .map_err(|e| Error::io(Path::new("<dump input>"), "read", e))?;
                if extra != 0 {
                    let at = self.input.pos - 1;
                    return Err(self.bad(at, "data after the trailer record".into()));
                }
                self.done = true;
                Ok(None)
            }
            Some((Record::Header { .. }, start)) => {
                Err(self.bad(start, "a second header record".into()))
            }
            None => Err(self.bad(
                self.input.pos,
                "input ends without a trailer record (truncated dump)".into(),
            )),
        }
    }

    /// Reads one record; `None` at a clean end of input (no byte of a new record).
    fn read_record(&mut self) -> Result<Option<(Record, u64)>> {
        let start = self.input.pos;
        match self.pull() {
            Err(Fail::Bad(_)) if self.input.pos == start => Ok(None),
            Err(Fail::Bad(detail)) => {
                self.record += 1;
                Err(self.bad(start, detail))
            }
            Err(Fail::Io(e)) => Err(Error::io(Path::new("<dump input>"), "read", e)),
            Ok(header) => {
                self.record += 1;
                match self.record_body(header) {
                    Ok(record) => Ok(Some((record, start))),
                    Err(Fail::Bad(detail)) => Err(self.bad(start, detail)),
                    Err(Fail::Io(e)) => Err(Error::io(Path::new("<dump input>"), "read", e)),
                }
            }
        }
    }

    fn pull(&mut self) -> Result<Header, Fail> {
        let start = self.input.pos;
        Decoder::from(&mut self.input).pull().map_err(|e| match e {
            ciborium_ll::Error::Io(e) => from_io(e),
            ciborium_ll::Error::Syntax(at) => {
                Fail::Bad(format!("invalid CBOR at byte {}", start + at as u64))
            }
        })
    }

    fn read_exact_vec(&mut self, len: usize) -> Result<Vec<u8>, Fail> {
        let mut buf = Vec::new();
        let got = (&mut self.input)
            .take(len as u64)
            .read_to_end(&mut buf)
            .map_err(from_io)?;
        if got != len {
            return Err(from_io(io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(buf)
    }

    /// A byte string (or text string, taken as its UTF-8 bytes) of at most `limit` bytes.
    fn bytes(&mut self, name: &str, limit: usize) -> Result<Vec<u8>, Fail> {
        match self.pull()? {
            Header::Bytes(Some(len)) | Header::Text(Some(len)) if len <= limit => {
                self.read_exact_vec(len)
            }
            Header::Bytes(Some(len)) | Header::Text(Some(len)) => Err(Fail::Bad(format!(
                "\"{name}\" is {len} bytes, more than the limit of {limit}"
            ))),
            other => Err(Fail::Bad(format!(
                "\"{name}\" must be a definite-length byte string, not {other:?}"
            ))),
        }
    }

    fn text(&mut self, name: &str, limit: usize) -> Result<String, Fail> {
        match self.pull()? {
            Header::Text(Some(len)) if len <= limit => String::from_utf8(self.read_exact_vec(len)?)
                .map_err(|_| Fail::Bad(format!("\"{name}\" is not valid UTF-8"))),
            Header::Text(Some(len)) => Err(Fail::Bad(format!(
                "\"{name}\" is {len} bytes, more than the limit of {limit}"
            ))),
            other => Err(Fail::Bad(format!(
                "\"{name}\" must be a definite-length text string, not {other:?}"
            ))),
        }
    }

    fn uint(&mut self, name: &str) -> Result<u64, Fail> {
        match self.pull()? {
            Header::Positive(n) => Ok(n),
            other => Err(Fail::Bad(format!(
                "\"{name}\" must be an unsigned integer, not {other:?}"
            ))),
        }
    }

    fn record_body(&mut self, header: Header) -> Result<Record, Fail> {
        let n = match header {
            Header::Map(Some(n)) if n <= MAX_FIELDS => n,
            Header::Map(Some(n)) => {
                return Err(Fail::Bad(format!(
                    "a record has at most {MAX_FIELDS} fields, not {n}"
                )))
            }
            other => {
                return Err(Fail::Bad(format!(
                    "a record must be a definite-length map, not {other:?}"
                )))
            }
        };
        let mut f = Fields::default();
        for _ in 0..n {
            let name = self.text("field name", MAX_FIELD_NAME)?;
            let fresh = match name.as_str() {
                "format" => f.format.replace(self.text("format", 64)?).is_none(),
                "version" => f.version.replace(self.uint("version")?).is_none(),
                "keyspace" => f
                    .keyspace
                    .replace(self.text("keyspace", MAX_KEYSPACE_NAME_LEN)?)
                    .is_none(),
                "key" => f.key.replace(self.bytes("key", MAX_KEY_LEN)?).is_none(),
                "value" => f
                    .value
                    .replace(self.bytes("value", MAX_RECORD_BYTES)?)
                    .is_none(),
                "tag" => f.tag.replace(self.uint("tag")?).is_none(),
                "meta" => f.meta.replace(self.bytes("meta", MAX_META_LEN)?).is_none(),
                "expires_at" => f.expires_at.replace(self.uint("expires_at")?).is_none(),
                "entries" => f.entries.replace(self.uint("entries")?).is_none(),
                "crc32c" => f.crc32c.replace(self.uint("crc32c")?).is_none(),
                other => return Err(Fail::Bad(format!("unknown field \"{other}\""))),
            };
            if !fresh {
                return Err(Fail::Bad(format!("field \"{name}\" given twice")));
            }
        }
        classify(f)
    }
}

/// Which record the fields make, checking that no field of another kind is mixed in.
fn classify(f: Fields) -> Result<Record, Fail> {
    let header = f.format.is_some() || f.version.is_some();
    let trailer = f.entries.is_some() || f.crc32c.is_some();
    let entry = f.key.is_some()
        || f.value.is_some()
        || f.keyspace.is_some()
        || f.tag.is_some()
        || f.meta.is_some()
        || f.expires_at.is_some();
    match (header, entry, trailer) {
        (true, false, false) => match (f.format, f.version) {
            (Some(format), Some(version)) => Ok(Record::Header { format, version }),
            _ => Err(Fail::Bad(
                "a header needs \"format\" and \"version\"".into(),
            )),
        },
        (false, false, true) => match (f.entries, f.crc32c) {
            (Some(entries), Some(crc)) => Ok(Record::Trailer {
                entries,
                crc: u32::try_from(crc)
                    .map_err(|_| Fail::Bad(format!("\"crc32c\" {crc} is not a u32")))?,
            }),
            _ => Err(Fail::Bad(
                "a trailer needs \"entries\" and \"crc32c\"".into(),
            )),
        },
        (false, true, false) => {
            let key = f.key.ok_or_else(|| Fail::Bad("missing \"key\"".into()))?;
            let value = f
                .value
                .ok_or_else(|| Fail::Bad("missing \"value\"".into()))?;
            let tag = f.tag.unwrap_or(0);
            let entry = Entry {
                keyspace: f.keyspace,
                key,
                value,
                tag: u32::try_from(tag)
                    .map_err(|_| Fail::Bad(format!("\"tag\" {tag} is larger than a u32")))?,
                meta: f.meta.unwrap_or_default(),
                expires_at: f.expires_at,
            };
            check(&entry)?;
            Ok(Record::Entry(entry))
        }
        _ => Err(Fail::Bad(
            "a record mixes header, entry and trailer fields, or has none".into(),
        )),
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    /// A complete dump of `entries`.
    fn dump(entries: &[Entry]) -> Vec<u8> {
        let mut out = Vec::new();
        encode_header(&mut out);
        for e in entries {
            encode_entry(&e.as_ref(), &mut out);
        }
        let crc = Checksum::of(&out);
        encode_trailer(entries.len() as u64, crc, &mut out);
        out
    }

    fn read_all(bytes: &[u8]) -> Result<Vec<Entry>> {
        let mut r = Reader::new(bytes)?;
        let mut out = Vec::new();
        while let Some(e) = r.next_entry()? {
            out.push(e);
        }
        Ok(out)
    }

    fn bad_input(r: Result<Vec<Entry>>) -> (u64, u64, String) {
        match r {
            Err(Error::BadInput {
                record,
                offset,
                detail,
                ..
            }) => (record, offset, detail),
            other => panic!("expected BadInput, got {other:?}"),
        }
    }

    fn sample() -> Vec<Entry> {
        vec![
            Entry::new("a", "1"),
            Entry {
                keyspace: Some("ks".into()),
                key: vec![0, 0xff],
                value: vec![],
                tag: 7,
                meta: vec![9; 10],
                expires_at: Some(u64::MAX),
            },
        ]
    }

    #[test]
    fn round_trip() {
        let entries = sample();
        assert_eq!(read_all(&dump(&entries)).unwrap(), entries);
        assert_eq!(read_all(&dump(&[])).unwrap(), vec![]);
    }

    #[test]
    fn header_bytes_are_stable() {
        let mut out = Vec::new();
        encode_header(&mut out);
        let mut want = vec![0xa2, 0x66];
        want.extend_from_slice(b"format");
        want.push(0x6a);
        want.extend_from_slice(b"cairn-dump");
        want.push(0x67);
        want.extend_from_slice(b"version");
        want.push(0x01);
        assert_eq!(out, want);
    }

    #[test]
    fn worked_example_of_format_md() {
        let mut out = Vec::new();
        encode_header(&mut out);
        encode_entry(&EntryRef::pair(b"k", &[0x80]), &mut out);
        let hex: String = out.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(
            hex,
            "a266666f726d61746a636169726e2d64756d706776657273696f6e01\
             a2636b6579416b6576616c75654180"
        );
        assert_eq!(out.len(), 43);
        let crc = Checksum::of(&out);
        encode_trailer(1, crc, &mut out);
        assert_eq!(out.get(43..53), Some(&b"\xa2\x67entries\x01"[..]));
    }

    #[test]
    fn every_truncation_is_an_error() {
        let bytes = dump(&sample());
        for cut in 0..bytes.len() {
            let got = read_all(&bytes[..cut]);
            assert!(
                matches!(got, Err(Error::BadInput { .. })),
                "cut at {cut}: {got:?}"
            );
        }
    }

    #[test]
    fn every_flipped_bit_is_caught_or_harmless() {
        // A flipped bit must never yield different entries with Ok: the checksum covers
        // every byte before the trailer, and the trailer's own fields are checked.
        let entries = sample();
        let bytes = dump(&entries);
        for i in 0..bytes.len() {
            for bit in 0..8 {
                let mut damaged = bytes.clone();
                damaged[i] ^= 1 << bit;
                if let Ok(got) = read_all(&damaged) {
                    assert_eq!(got, entries, "byte {i} bit {bit}");
                }
            }
        }
    }

    #[test]
    fn errors_name_the_record() {
        let mut bytes = dump(&sample());
        bytes.push(0);
        let (record, _, detail) = bad_input(read_all(&bytes));
        assert_eq!(record, 4);
        assert!(detail.contains("after the trailer"), "{detail}");

        let mut other = Vec::new();
        let mut enc = Encoder::from(&mut other);
        enc.push(Header::Map(Some(2))).unwrap();
        enc.text("format", None).unwrap();
        enc.text("other", None).unwrap();
        enc.text("version", None).unwrap();
        enc.push(Header::Positive(1)).unwrap();
        let (record, offset, detail) = bad_input(read_all(&other));
        assert_eq!((record, offset), (1, 0));
        assert!(detail.contains("not \"cairn-dump\""), "{detail}");

        // A second entry record with an unknown field.
        let mut bytes = Vec::new();
        encode_header(&mut bytes);
        encode_entry(&EntryRef::pair(b"k", b"v"), &mut bytes);
        let start = bytes.len() as u64;
        let mut enc = Encoder::from(&mut bytes);
        enc.push(Header::Map(Some(1))).unwrap();
        enc.text("colour", None).unwrap();
        enc.push(Header::Positive(1)).unwrap();
        let (record, offset, detail) = bad_input(read_all(&bytes));
        assert_eq!((record, offset), (3, start));
        assert!(detail.contains("unknown field \"colour\""), "{detail}");
    }

    #[test]
    fn huge_lengths_are_refused_before_allocating() {
        let mut bytes = Vec::new();
        encode_header(&mut bytes);
        let mut enc = Encoder::from(&mut bytes);
        enc.push(Header::Map(Some(2))).unwrap();
        enc.text("key", None).unwrap();
        enc.push(Header::Bytes(Some(usize::MAX))).unwrap();
        let (record, _, detail) = bad_input(read_all(&bytes));
        assert_eq!(record, 2);
        assert!(detail.contains("more than the limit"), "{detail}");
    }

    #[test]
    fn wrong_version_and_missing_header() {
        let mut bytes = Vec::new();
        let mut enc = Encoder::from(&mut bytes);
        enc.push(Header::Map(Some(2))).unwrap();
        enc.text("format", None).unwrap();
        enc.text(MAGIC, None).unwrap();
        enc.text("version", None).unwrap();
        enc.push(Header::Positive(2)).unwrap();
        let (_, _, detail) = bad_input(read_all(&bytes));
        assert!(detail.contains("unsupported version 2"), "{detail}");

        let mut bytes = Vec::new();
        encode_entry(&EntryRef::pair(b"k", b"v"), &mut bytes);
        let (_, _, detail) = bad_input(read_all(&bytes));
        assert!(detail.contains("not the header"), "{detail}");
        let (_, _, detail) = bad_input(read_all(&[]));
        assert!(detail.contains("empty input"), "{detail}");
    }
}
