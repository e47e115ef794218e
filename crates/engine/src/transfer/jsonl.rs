//! The JSON lines dump format (see `FORMAT.md` § JSON lines): one object per entry and
//! line, text fields as JSON strings, bytes that are not UTF-8 in standard base64; a
//! keyspace record (`{"keyspace":…,"blob_threshold":…}`) for a keyspace that separates
//! values.
//!
//! The encoder writes fields in a fixed order (`keyspace`, `key`, `value`, `tag`,
//! `meta_b64`, `expires_at`) and leaves out the ones at their default. The decoder accepts
//! fields in any order, refuses unknown and duplicate-meaning fields (`key` with
//! `key_b64`), and checks every limit of [`super::entry::check`]. A line is at most
//! [`MAX_RECORD_BYTES`], so a decoded entry (value included) is held in memory whole.

use std::io::{BufRead, Read};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::{Map, Value};

use super::entry::{
    check, check_keyspace_name, Entry, EntryRef, Item, Thresholds, MAX_RECORD_BYTES,
};
use crate::error::{Error, Result};

/// The format's name in errors.
pub(crate) const NAME: &str = "jsonl";

fn push_json_str(out: &mut Vec<u8>, s: &str) {
    // Serializing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// `,"name":` (the comma only after the first field).
fn push_name(out: &mut Vec<u8>, first: &mut bool, name: &str) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    push_json_str(out, name);
    out.push(b':');
}

/// Writes `bytes` as `"plain": "text"` if they are UTF-8, else `"b64": "base64"`.
fn push_bytes(out: &mut Vec<u8>, first: &mut bool, plain: &str, b64: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            push_name(out, first, plain);
            push_json_str(out, text);
        }
        Err(_) => {
            push_name(out, first, b64);
            push_json_str(out, &STANDARD.encode(bytes));
        }
    }
}

/// Appends the line of `entry` (with its final `\n`) to `out`.
pub fn encode(entry: &EntryRef<'_>, out: &mut Vec<u8>) {
    let mut first = true;
    out.push(b'{');
    if let Some(ks) = entry.keyspace {
        push_name(out, &mut first, "keyspace");
        push_json_str(out, ks);
    }
    push_bytes(out, &mut first, "key", "key_b64", entry.key);
    if let Some(value) = entry.value {
        push_bytes(out, &mut first, "value", "value_b64", value);
    }
    if entry.tag != 0 {
        push_name(out, &mut first, "tag");
        out.extend_from_slice(entry.tag.to_string().as_bytes());
    }
    if !entry.meta.is_empty() {
        push_name(out, &mut first, "meta_b64");
        push_json_str(out, &STANDARD.encode(entry.meta));
    }
    if let Some(at) = entry.expires_at {
        push_name(out, &mut first, "expires_at");
        out.extend_from_slice(at.to_string().as_bytes());
    }
    out.extend_from_slice(b"}\n");
}

/// Appends a keyspace record line: keyspace `keyspace` (left out: the restore's target)
/// separates values of at least `blob_threshold` bytes.
pub fn encode_keyspace(keyspace: Option<&str>, blob_threshold: u64, out: &mut Vec<u8>) {
    let mut first = true;
    out.push(b'{');
    if let Some(ks) = keyspace {
        push_name(out, &mut first, "keyspace");
        push_json_str(out, ks);
    }
    push_name(out, &mut first, "blob_threshold");
    out.extend_from_slice(blob_threshold.to_string().as_bytes());
    out.extend_from_slice(b"}\n");
}

/// The bytes of a field given as a JSON string (`plain`) or as standard base64 (`b64`).
fn bytes_field(
    map: &Map<String, Value>,
    plain: &str,
    b64: &str,
) -> Result<Option<Vec<u8>>, String> {
    match (map.get(plain), map.get(b64)) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(format!("both \"{plain}\" and \"{b64}\" given")),
        (Some(Value::String(s)), None) => Ok(Some(s.as_bytes().to_vec())),
        (Some(_), None) => Err(format!("\"{plain}\" must be a string")),
        (None, Some(Value::String(s))) => STANDARD
            .decode(s)
            .map(Some)
            .map_err(|e| format!("\"{b64}\" is not standard base64: {e}")),
        (None, Some(_)) => Err(format!("\"{b64}\" must be a string")),
    }
}

fn uint_field(map: &Map<String, Value>, name: &str, max: u64) -> Result<Option<u64>, String> {
    match map.get(name) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .filter(|n| *n <= max)
            .map(Some)
            .ok_or_else(|| format!("\"{name}\" must be an integer from 0 to {max}, not {v}")),
    }
}

const FIELDS: [&str; 9] = [
    "keyspace",
    "key",
    "key_b64",
    "value",
    "value_b64",
    "tag",
    "meta_b64",
    "expires_at",
    "blob_threshold",
];

/// Decodes one line (without its `\n`); `Ok(None)` for a blank line. Errors are the
/// problem's text; the caller adds the line number.
pub(crate) fn decode_line(line: &[u8]) -> Result<Option<Item>, String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(None);
    }
    let value: Value =
        serde_json::from_slice(line).map_err(|e| format!("not a JSON object: {e}"))?;
    let Value::Object(map) = value else {
        return Err("not a JSON object".to_string());
    };
    if let Some(field) = map.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "unknown field \"{field}\" (expected {})",
            FIELDS.join(", ")
        ));
    }
    let keyspace = match map.get("keyspace") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err("\"keyspace\" must be a string".to_string()),
    };
    if let Some(blob_threshold) = uint_field(&map, "blob_threshold", u64::MAX)? {
        if let Some(other) = map
            .keys()
            .find(|k| !matches!(k.as_str(), "keyspace" | "blob_threshold"))
        {
            return Err(format!(
                "a keyspace record (with \"blob_threshold\") holds only \"keyspace\" and \
                 \"blob_threshold\", not \"{other}\""
            ));
        }
        if let Some(ks) = &keyspace {
            check_keyspace_name(ks)?;
        }
        return Ok(Some(Item::Keyspace {
            keyspace,
            blob_threshold,
        }));
    }
    let key = bytes_field(&map, "key", "key_b64")?
        .ok_or_else(|| "missing \"key\" (or \"key_b64\")".to_string())?;
    let value = bytes_field(&map, "value", "value_b64")?
        .ok_or_else(|| "missing \"value\" (or \"value_b64\")".to_string())?;
    let tag = uint_field(&map, "tag", u64::from(u32::MAX))?.unwrap_or(0);
    let meta = match map.get("meta_b64") {
        None => Vec::new(),
        Some(Value::String(s)) => STANDARD
            .decode(s)
            .map_err(|e| format!("\"meta_b64\" is not standard base64: {e}"))?,
        Some(_) => return Err("\"meta_b64\" must be a string".to_string()),
    };
    let entry = Entry {
        keyspace,
        key,
        value,
        tag: u32::try_from(tag).map_err(|e| e.to_string())?,
        meta,
        expires_at: uint_field(&map, "expires_at", u64::MAX)?,
    };
    check(&entry)?;
    let value_len = entry.value.len() as u64;
    Ok(Some(Item::Entry { entry, value_len }))
}

/// True if `line` starts like a CBOR map (a byte no UTF-8 text starts with): the first
/// record of a CBOR dump.
fn looks_like_cbor(line: &[u8]) -> bool {
    line.first().is_some_and(|b| (0xa0..=0xbf).contains(b))
}

/// Reads JSON lines from a buffered input, one entry or keyspace record at a time.
pub struct Reader<R: BufRead> {
    input: R,
    line: Vec<u8>,
    /// Number of the line read last (1-based).
    line_no: u64,
    /// Offset of the start of the next line.
    offset: u64,
    thresholds: Thresholds,
}

impl<R: BufRead> Reader<R> {
    /// Reads from `input`.
    pub fn new(input: R) -> Reader<R> {
        Reader {
            input,
            line: Vec::new(),
            line_no: 0,
            offset: 0,
            thresholds: Thresholds::default(),
        }
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Number of the line read last (1-based; 0 before the first).
    pub fn record(&self) -> u64 {
        self.line_no
    }

    /// The keyspace records read so far.
    pub(crate) fn thresholds(&self) -> &Thresholds {
        &self.thresholds
    }

    fn bad(&self, start: u64, detail: String) -> Error {
        Error::BadInput {
            format: NAME,
            record: self.line_no,
            offset: start,
            detail,
        }
    }

    /// The next entry (its value in `entry.value`) or keyspace record, or `None` at the
    /// end of the input.
    ///
    /// # Errors
    /// `BadInput` naming the line for a malformed line (with a hint when the input looks
    /// like a CBOR dump), one longer than [`MAX_RECORD_BYTES`], or a second keyspace
    /// record for one keyspace; `Io` if reading fails.
    pub(crate) fn next_item(&mut self) -> Result<Option<Item>> {
        loop {
            let start = self.offset;
            self.line.clear();
            let limit = MAX_RECORD_BYTES as u64 + 1;
            let n = (&mut self.input)
                .take(limit)
                .read_until(b'\n', &mut self.line)
                .map_err(|e| Error::io(std::path::Path::new("<dump input>"), "read", e))?;
            if n == 0 {
                return Ok(None);
            }
            self.line_no += 1;
            self.offset += n as u64;
            let body = match self.line.strip_suffix(b"\n") {
                Some(body) => body,
                None if n as u64 >= limit => {
                    return Err(
                        self.bad(start, format!("line longer than {MAX_RECORD_BYTES} bytes"))
                    )
                }
                None => self.line.as_slice(),
            };
            match decode_line(body) {
                Ok(Some(Item::Keyspace {
                    keyspace,
                    blob_threshold,
                })) => {
                    self.thresholds
                        .note(keyspace.clone(), blob_threshold)
                        .map_err(|detail| self.bad(start, detail))?;
                    return Ok(Some(Item::Keyspace {
                        keyspace,
                        blob_threshold,
                    }));
                }
                Ok(Some(item)) => return Ok(Some(item)),
                Ok(None) => continue,
                Err(detail) if start == 0 && looks_like_cbor(body) => {
                    return Err(self.bad(
                        start,
                        format!(
                            "{detail} (the input looks like a CBOR dump: restore it with \
                             --format cbor)"
                        ),
                    ))
                }
                Err(detail) => return Err(self.bad(start, detail)),
            }
        }
    }

    /// The next entry, skipping keyspace records; `None` at the end of the input.
    ///
    /// # Errors
    /// As [`Reader::next_item`].
    #[cfg(test)]
    fn next_entry(&mut self) -> Result<Option<Entry>> {
        loop {
            match self.next_item()? {
                None => return Ok(None),
                Some(Item::Entry { entry, .. }) => return Ok(Some(entry)),
                Some(Item::Keyspace { .. }) => {}
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;

    fn line(e: &EntryRef<'_>) -> String {
        let mut out = Vec::new();
        encode(e, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn text_pairs_are_plain_json() {
        assert_eq!(
            line(&EntryRef::pair(b"k\"1", b"v\n")),
            "{\"key\":\"k\\\"1\",\"value\":\"v\\n\"}\n"
        );
    }

    #[test]
    fn binary_and_attributes_round_trip() {
        let e = Entry {
            keyspace: Some("users".into()),
            key: vec![0xff, 0, 1],
            value: vec![0x80],
            tag: u32::MAX,
            meta: vec![1, 2, 3],
            expires_at: Some(1_700_000_000_000),
        };
        let text = line(&e.as_ref());
        assert_eq!(
            text,
            "{\"keyspace\":\"users\",\"key_b64\":\"/wAB\",\"value_b64\":\"gA==\",\
             \"tag\":4294967295,\"meta_b64\":\"AQID\",\"expires_at\":1700000000000}\n"
        );
        let decoded = decode_line(text.trim_end().as_bytes());
        let value_len = e.value.len() as u64;
        assert_eq!(
            decoded,
            Ok(Some(Item::Entry {
                entry: e,
                value_len
            }))
        );
    }

    #[test]
    fn keys_only_leaves_the_value_out() {
        let e = EntryRef {
            key: b"a",
            value: None,
            ..EntryRef::default()
        };
        assert_eq!(line(&e), "{\"key\":\"a\"}\n");
    }

    #[test]
    fn bad_lines_say_what_is_wrong() {
        let cases: [(&str, &str); 10] = [
            ("[1]", "not a JSON object"),
            ("{\"key\":", "not a JSON object"),
            ("{\"value\":\"v\"}", "missing \"key\""),
            ("{\"key\":\"k\"}", "missing \"value\""),
            ("{\"key\":\"k\",\"key_b64\":\"\",\"value\":\"\"}", "both"),
            (
                "{\"key\":\"k\",\"value\":\"v\",\"x\":1}",
                "unknown field \"x\"",
            ),
            (
                "{\"key\":\"k\",\"value\":\"v\",\"tag\":4294967296}",
                "\"tag\"",
            ),
            ("{\"key\":\"k\",\"value\":\"v\",\"tag\":-1}", "\"tag\""),
            ("{\"key_b64\":\"!!\",\"value\":\"v\"}", "base64"),
            (
                "{\"keyspace\":\"\",\"key\":\"k\",\"value\":\"v\"}",
                "keyspace name",
            ),
        ];
        for (text, want) in cases {
            let got = decode_line(text.as_bytes());
            assert!(
                got.as_ref().is_err_and(|m| m.contains(want)),
                "{text}: {got:?}"
            );
        }
        assert_eq!(decode_line(b"  \r"), Ok(None));
    }

    #[test]
    fn reader_numbers_lines_and_skips_blank_ones() {
        let input = b"{\"key\":\"a\",\"value\":\"1\"}\n\n{\"key\":\"b\",\"value\":\"2\"}\n{oops}\n";
        let mut r = Reader::new(&input[..]);
        assert_eq!(r.next_entry().ok().flatten(), Some(Entry::new("a", "1")));
        assert_eq!(r.next_entry().ok().flatten(), Some(Entry::new("b", "2")));
        match r.next_entry() {
            Err(Error::BadInput { record, offset, .. }) => {
                let at = input.windows(6).position(|w| w == b"{oops}").unwrap() as u64;
                assert_eq!((record, offset), (4, at));
            }
            other => panic!("expected BadInput, got {other:?}"),
        }
    }

    #[test]
    fn final_line_without_newline_counts() {
        let mut r = Reader::new(&b"{\"key\":\"a\",\"value\":\"1\"}"[..]);
        assert_eq!(r.next_entry().ok().flatten(), Some(Entry::new("a", "1")));
        assert!(matches!(r.next_entry(), Ok(None)));
    }

    #[test]
    fn keyspace_records_round_trip_and_stand_alone() {
        let mut out = Vec::new();
        encode_keyspace(Some("media"), 4096, &mut out);
        encode_keyspace(None, 0, &mut out);
        assert_eq!(
            String::from_utf8_lossy(&out),
            "{\"keyspace\":\"media\",\"blob_threshold\":4096}\n{\"blob_threshold\":0}\n"
        );
        out.extend_from_slice(b"{\"key\":\"a\",\"value\":\"1\"}\n");
        let mut r = Reader::new(&out[..]);
        assert_eq!(r.next_entry().ok().flatten(), Some(Entry::new("a", "1")));
        assert_eq!(r.thresholds().get(Some("media")), Some(4096));
        assert_eq!(r.thresholds().get(None), Some(0));

        let got = decode_line(b"{\"key\":\"k\",\"value\":\"v\",\"blob_threshold\":1}");
        assert!(got.is_err_and(|m| m.contains("holds only")));
        let got = decode_line(b"{\"blob_threshold\":-1}");
        assert!(got.is_err_and(|m| m.contains("\"blob_threshold\"")));
        let twice = b"{\"blob_threshold\":1}\n{\"blob_threshold\":2}\n";
        match Reader::new(&twice[..]).next_entry() {
            Err(Error::BadInput { record, detail, .. }) => {
                assert_eq!(record, 2);
                assert!(detail.contains("a second keyspace record"), "{detail}");
            }
            other => panic!("expected BadInput, got {other:?}"),
        }
    }

    #[test]
    fn cbor_input_gets_a_hint() {
        let mut dump = Vec::new();
        super::super::cbor::encode_header(&mut dump);
        super::super::cbor::encode_entry(&EntryRef::pair(b"k", b"v"), &mut dump);
        match Reader::new(&dump[..]).next_entry() {
            Err(Error::BadInput { record, detail, .. }) => {
                assert_eq!(record, 1);
                assert!(detail.contains("--format cbor"), "{detail}");
            }
            other => panic!("expected BadInput, got {other:?}"),
        }
        // A bad JSON line gets no such hint.
        match Reader::new(&b"{oops}\n"[..]).next_entry() {
            Err(Error::BadInput { detail, .. }) => assert!(!detail.contains("cbor"), "{detail}"),
            other => panic!("expected BadInput, got {other:?}"),
        }
    }
}
