//! The CBOR dump format (see `FORMAT.md` § CBOR): a CBOR sequence (RFC 8742) of maps, a
//! header record first, one record per entry (and one per keyspace that separates
//! values), and a trailer record with the entry count and a CRC32C of every byte before
//! it.
//!
//! Owns encoding those records into a buffer and [`Reader`], which decodes them from any
//! `Read` one record at a time. The decoder reads only definite-length items of the types
//! `FORMAT.md` lists, checks every length against its limit before allocating, and refuses
//! unknown fields, a missing or wrong header, a missing trailer (a truncated dump), a
//! count or checksum mismatch, and anything after the trailer. A value is copied to the
//! caller's writer through one bounded buffer, so a value of up to
//! [`MAX_DUMP_VALUE_LEN`] bytes never sits in the decoder's memory whole. Errors describe
//! what was found in words ("the boolean true"), never as Rust values.

use std::io::{self, Read, Write};
use std::path::Path;

use ciborium_ll::{Decoder, Encoder, Header};

use super::entry::{
    check, check_keyspace_name, Entry, EntryRef, Item, Thresholds, MAX_DUMP_VALUE_LEN, MAX_META_LEN,
};
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
/// Bytes of a value copied at a time.
const COPY_CHUNK: usize = 64 << 10;

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

/// Appends a keyspace record: keyspace `keyspace` (left out: the restore's target)
/// separates values of at least `blob_threshold` bytes.
pub fn encode_keyspace(keyspace: Option<&str>, blob_threshold: u64, out: &mut Vec<u8>) {
    let mut enc = Encoder::from(out);
    let _ = enc.push(Header::Map(Some(1 + usize::from(keyspace.is_some()))));
    if let Some(ks) = keyspace {
        text(&mut enc, "keyspace");
        text(&mut enc, ks);
    }
    uint_field(&mut enc, "blob_threshold", blob_threshold);
}

/// Appends the trailer record: `entries` records were written and `crc` covers every
/// byte before the trailer (stored masked, see `checksum.rs`).
pub fn encode_trailer(entries: u64, crc: Checksum, out: &mut Vec<u8>) {
    let mut enc = Encoder::from(out);
    let _ = enc.push(Header::Map(Some(2)));
    uint_field(&mut enc, "entries", entries);
    uint_field(&mut enc, "crc32c", u64::from(crc.masked()));
}

/// A CBOR data item's head in words, for errors: "the boolean true", "a byte string of 3
/// bytes", "the unsigned integer 7".
fn describe(header: &Header) -> String {
    match *header {
        Header::Positive(n) => format!("the unsigned integer {n}"),
        Header::Negative(n) => format!("the negative integer {}", -1 - i128::from(n)),
        Header::Float(f) => format!("the floating-point number {f}"),
        Header::Simple(20) => "the boolean false".to_string(),
        Header::Simple(21) => "the boolean true".to_string(),
        Header::Simple(22) => "null".to_string(),
        Header::Simple(23) => "undefined".to_string(),
        Header::Simple(n) => format!("the simple value {n}"),
        Header::Tag(t) => format!("a tag ({t})"),
        Header::Break => "a \"break\" (the end of an indefinite-length item)".to_string(),
        Header::Bytes(Some(n)) => format!("a byte string of {}", count(n, "byte")),
        Header::Bytes(None) => "an indefinite-length byte string (not supported)".to_string(),
        Header::Text(Some(n)) => format!("a text string of {}", count(n, "byte")),
        Header::Text(None) => "an indefinite-length text string (not supported)".to_string(),
        Header::Array(Some(n)) => format!("an array of {}", count(n, "item")),
        Header::Array(None) => "an indefinite-length array".to_string(),
        Header::Map(Some(n)) => format!("a map of {}", count(n, "field")),
        Header::Map(None) => "an indefinite-length map (not supported)".to_string(),
    }
}

/// `n unit` or `n units`.
fn count(n: usize, unit: &str) -> String {
    if n == 1 {
        format!("1 {unit}")
    } else {
        format!("{n} {unit}s")
    }
}

/// `"name": expected WHAT, found FOUND`.
fn expected(name: &str, what: &str, found: &Header) -> Fail {
    Fail::Bad(format!(
        "\"{name}\": expected {what}, found {}",
        describe(found)
    ))
}

/// Counts and checksums the bytes read through it, and keeps the first byte (for the
/// hint that an input is JSON lines).
struct Tally<R> {
    input: R,
    pos: u64,
    crc: Checksum,
    first: Option<u8>,
}

impl<R: Read> Read for Tally<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.input.read(buf)?;
        if let Some(got) = buf.get(..n) {
            self.crc = self.crc.extend(got);
            if self.pos == 0 {
                self.first = got.first().copied();
            }
        }
        self.pos += n as u64;
        Ok(n)
    }
}

/// Why a record could not be read.
enum Fail {
    /// The input is malformed (the text says how).
    Bad(String),
    /// Reading the input failed.
    Io(io::Error),
    /// Writing a value to the caller's writer failed.
    Output(io::Error),
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
    Header {
        format: String,
        version: u64,
    },
    Entry {
        entry: Entry,
        value_len: u64,
    },
    Keyspace {
        keyspace: Option<String>,
        blob_threshold: u64,
    },
    Trailer {
        entries: u64,
        crc: u32,
    },
}

/// The fields a record may hold, as read (for `value`, its length: the bytes went to the
/// caller's writer).
#[derive(Default)]
struct Fields {
    format: Option<String>,
    version: Option<u64>,
    keyspace: Option<String>,
    key: Option<Vec<u8>>,
    value: Option<u64>,
    tag: Option<u64>,
    meta: Option<Vec<u8>>,
    expires_at: Option<u64>,
    blob_threshold: Option<u64>,
    entries: Option<u64>,
    crc32c: Option<u64>,
}

/// Reads a CBOR dump one record at a time.
pub struct Reader<R: Read> {
    input: Tally<R>,
    /// Number of the record read last (the header is record 1).
    record: u64,
    entries: u64,
    done: bool,
    thresholds: Thresholds,
    /// The buffer values are copied through ([`COPY_CHUNK`] bytes once a value is read).
    chunk: Vec<u8>,
}

impl<R: Read> Reader<R> {
    /// Starts reading `input` (unbuffered reads are fine, but a `BufReader` is faster) and
    /// checks its header record.
    ///
    /// # Errors
    /// `BadInput` if the input does not start with this format's header (or is of a newer
    /// version), with a hint when it looks like JSON lines; `Io` if reading fails.
    pub fn new(input: R) -> Result<Reader<R>> {
        let mut r = Reader {
            input: Tally {
                input,
                pos: 0,
                crc: Checksum::of(&[]),
                first: None,
            },
            record: 0,
            entries: 0,
            done: false,
            thresholds: Thresholds::default(),
            chunk: Vec::new(),
        };
        match r.read_record(&mut io::sink()) {
            Ok(Some((Record::Header { format, version }, start))) => {
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
            Ok(Some((_, start))) => {
                Err(r.hint(r.bad(start, "the first record is not the header".into())))
            }
            Ok(None) => Err(r.bad(0, "empty input (no header record)".into())),
            Err(e) => Err(r.hint(e)),
        }
    }

    /// Adds to a bad header the hint that the input looks like JSON lines.
    fn hint(&self, e: Error) -> Error {
        match e {
            Error::BadInput {
                format,
                record,
                offset,
                detail,
            } if matches!(self.input.first, Some(b'{' | b' ' | b'\t' | b'\r' | b'\n')) => {
                Error::BadInput {
                    format,
                    record,
                    offset,
                    detail: format!(
                        "{detail} (the input looks like JSON lines: restore it with --format jsonl)"
                    ),
                }
            }
            other => other,
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

    /// The keyspace records read so far.
    pub(crate) fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    fn bad(&self, start: u64, detail: String) -> Error {
        Error::BadInput {
            format: NAME,
            record: self.record,
            offset: start,
            detail,
        }
    }

    /// The next entry or keyspace record; `None` after a valid trailer. An entry's value
    /// bytes are written to `value_out` (the returned entry's `value` is empty).
    ///
    /// # Errors
    /// `BadInput` naming the record for a malformed record, a second keyspace record for
    /// one keyspace, a missing trailer (the input ends without one: a truncated dump), a
    /// trailer whose count or checksum does not match, or data after the trailer; `Io` if
    /// reading the input or writing to `value_out` fails.
    pub(crate) fn next_item(&mut self, value_out: &mut dyn Write) -> Result<Option<Item>> {
        if self.done {
            return Ok(None);
        }
        let crc_before = self.input.crc;
        match self.read_record(value_out)? {
            Some((Record::Entry { entry, value_len }, _)) => {
                self.entries += 1;
                Ok(Some(Item::Entry { entry, value_len }))
            }
            Some((
                Record::Keyspace {
                    keyspace,
                    blob_threshold,
                },
                start,
            )) => {
                self.thresholds
                    .note(keyspace.clone(), blob_threshold)
                    .map_err(|detail| self.bad(start, detail))?;
                Ok(Some(Item::Keyspace {
                    keyspace,
                    blob_threshold,
                }))
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
    fn read_record(&mut self, value_out: &mut dyn Write) -> Result<Option<(Record, u64)>> {
        let start = self.input.pos;
        let failed = |r: &Self, fail: Fail| match fail {
            Fail::Bad(detail) => r.bad(start, detail),
            Fail::Io(e) => Error::io(Path::new("<dump input>"), "read", e),
            Fail::Output(e) => Error::io(Path::new("<dump value output>"), "write", e),
        };
        match self.pull() {
            Err(Fail::Bad(_)) if self.input.pos == start => Ok(None),
            Err(fail) => {
                self.record += 1;
                Err(failed(self, fail))
            }
            Ok(header) => {
                self.record += 1;
                match self.record_body(header, value_out) {
                    Ok(record) => Ok(Some((record, start))),
                    Err(fail) => Err(failed(self, fail)),
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

    /// Copies the next `len` bytes of the input to `out`, [`COPY_CHUNK`] at a time.
    fn copy_to(&mut self, len: u64, out: &mut dyn Write) -> Result<(), Fail> {
        let Reader { input, chunk, .. } = self;
        if chunk.is_empty() {
            chunk.resize(COPY_CHUNK, 0);
        }
        let mut left = len;
        while left > 0 {
            let n = usize::try_from(left).map_or(COPY_CHUNK, |l| l.min(COPY_CHUNK));
            let piece = chunk.get_mut(..n).unwrap_or_default();
            input.read_exact(piece).map_err(from_io)?;
            out.write_all(piece).map_err(Fail::Output)?;
            left -= n as u64;
        }
        Ok(())
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
            other => Err(expected(name, "a byte string", &other)),
        }
    }

    /// The value: a byte string (or text string) of at most [`MAX_DUMP_VALUE_LEN`] bytes,
    /// copied to `out`; returns its length.
    fn value(&mut self, out: &mut dyn Write) -> Result<u64, Fail> {
        match self.pull()? {
            Header::Bytes(Some(len)) | Header::Text(Some(len))
                if len as u64 <= MAX_DUMP_VALUE_LEN =>
            {
                self.copy_to(len as u64, out)?;
                Ok(len as u64)
            }
            Header::Bytes(Some(len)) | Header::Text(Some(len)) => Err(Fail::Bad(format!(
                "\"value\" is {len} bytes, more than the limit of {MAX_DUMP_VALUE_LEN}"
            ))),
            other => Err(expected("value", "a byte string", &other)),
        }
    }

    fn text(&mut self, name: &str, limit: usize) -> Result<String, Fail> {
        match self.pull()? {
            Header::Text(Some(len)) if len <= limit => String::from_utf8(self.read_exact_vec(len)?)
                .map_err(|_| Fail::Bad(format!("\"{name}\" is not valid UTF-8"))),
            Header::Text(Some(len)) => Err(Fail::Bad(format!(
                "\"{name}\" is {len} bytes, more than the limit of {limit}"
            ))),
            other => Err(expected(name, "a text string", &other)),
        }
    }

    fn uint(&mut self, name: &str) -> Result<u64, Fail> {
        match self.pull()? {
            Header::Positive(n) => Ok(n),
            other => Err(expected(name, "an unsigned integer", &other)),
        }
    }

    fn field_name(&mut self) -> Result<String, Fail> {
        match self.pull()? {
            Header::Text(Some(len)) if len <= MAX_FIELD_NAME => {
                String::from_utf8(self.read_exact_vec(len)?)
                    .map_err(|_| Fail::Bad("a field name is not valid UTF-8".into()))
            }
            Header::Text(Some(len)) => Err(Fail::Bad(format!(
                "a field name of {len} bytes, longer than any known field ({MAX_FIELD_NAME} bytes)"
            ))),
            other => Err(Fail::Bad(format!(
                "expected a field name (a text string), found {}",
                describe(&other)
            ))),
        }
    }

    fn record_body(&mut self, header: Header, value_out: &mut dyn Write) -> Result<Record, Fail> {
        let n = match header {
            Header::Map(Some(n)) if n <= MAX_FIELDS => n,
            Header::Map(Some(n)) => {
                return Err(Fail::Bad(format!(
                    "a record has at most {MAX_FIELDS} fields, not {n}"
                )))
            }
            other => {
                return Err(Fail::Bad(format!(
                    "expected a record (a map of fields), found {}",
                    describe(&other)
                )))
            }
        };
        let mut f = Fields::default();
        for _ in 0..n {
            let name = self.field_name()?;
            let fresh = match name.as_str() {
                "format" => f.format.replace(self.text("format", 64)?).is_none(),
                "version" => f.version.replace(self.uint("version")?).is_none(),
                "keyspace" => f
                    .keyspace
                    .replace(self.text("keyspace", MAX_KEYSPACE_NAME_LEN)?)
                    .is_none(),
                "key" => f.key.replace(self.bytes("key", MAX_KEY_LEN)?).is_none(),
                // Checked before the copy: a second value must not reach `value_out`.
                "value" if f.value.is_some() => false,
                "value" => f.value.replace(self.value(value_out)?).is_none(),
                "tag" => f.tag.replace(self.uint("tag")?).is_none(),
                "meta" => f.meta.replace(self.bytes("meta", MAX_META_LEN)?).is_none(),
                "expires_at" => f.expires_at.replace(self.uint("expires_at")?).is_none(),
                "blob_threshold" => f
                    .blob_threshold
                    .replace(self.uint("blob_threshold")?)
                    .is_none(),
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
    let keyspace = f.blob_threshold.is_some();
    let entry = f.key.is_some()
        || f.value.is_some()
        || f.tag.is_some()
        || f.meta.is_some()
        || f.expires_at.is_some()
        || (f.keyspace.is_some() && !keyspace);
    match (header, entry, keyspace, trailer) {
        (true, false, false, false) => match (f.format, f.version) {
            (Some(format), Some(version)) => Ok(Record::Header { format, version }),
            _ => Err(Fail::Bad(
                "a header needs \"format\" and \"version\"".into(),
            )),
        },
        (false, false, false, true) => match (f.entries, f.crc32c) {
            (Some(entries), Some(crc)) => Ok(Record::Trailer {
                entries,
                crc: u32::try_from(crc)
                    .map_err(|_| Fail::Bad(format!("\"crc32c\" {crc} is not a u32")))?,
            }),
            _ => Err(Fail::Bad(
                "a trailer needs \"entries\" and \"crc32c\"".into(),
            )),
        },
        (false, false, true, false) => {
            if let Some(ks) = &f.keyspace {
                check_keyspace_name(ks)?;
            }
            Ok(Record::Keyspace {
                keyspace: f.keyspace,
                blob_threshold: f.blob_threshold.unwrap_or_default(),
            })
        }
        (false, true, false, false) => {
            let key = f.key.ok_or_else(|| Fail::Bad("missing \"key\"".into()))?;
            let value_len = f
                .value
                .ok_or_else(|| Fail::Bad("missing \"value\"".into()))?;
            let tag = f.tag.unwrap_or(0);
            let entry = Entry {
                keyspace: f.keyspace,
                key,
                value: Vec::new(),
                tag: u32::try_from(tag)
                    .map_err(|_| Fail::Bad(format!("\"tag\" {tag} is larger than a u32")))?,
                meta: f.meta.unwrap_or_default(),
                expires_at: f.expires_at,
            };
            check(&entry)?;
            Ok(Record::Entry { entry, value_len })
        }
        _ => Err(Fail::Bad(
            "a record mixes header, entry, keyspace and trailer fields, or has none".into(),
        )),
    }
}

#[cfg(test)]
#[path = "cbor_tests.rs"]
mod tests;
