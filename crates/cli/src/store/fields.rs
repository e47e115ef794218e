//! Keys, values and metadata in the JSON the ordered-store commands print.
//!
//! One rule for every command, the one of the dump's JSON lines (`cairn::transfer`, what
//! `scan` and `dump --format jsonl` write), so a key reads the same in `head`, `get
//! --json`, `scan`, `dump` and the `--json` of the commands that write:
//! - bytes that are valid UTF-8 are a JSON string under the field's plain name (`"key"`,
//!   `"value"`); any other bytes are standard base64 (RFC 4648, padded) under
//!   `<name>_b64` (`"key_b64"`, `"value_b64"`);
//! - metadata is always base64, `"meta_b64"`, and is left out when empty.
//!
//! The unit tests check the rule against the dump writer's own lines.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use cairn::Head;
use serde_json::{Map, Value};

/// A JSON object being built.
pub type Object = Map<String, Value>;

/// Adds `bytes` as `"name": "text"` if they are UTF-8, else as `"name_b64": "base64"`.
pub fn insert_bytes(obj: &mut Object, name: &str, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            obj.insert(name.to_string(), Value::from(text));
        }
        Err(_) => {
            obj.insert(format!("{name}_b64"), Value::from(STANDARD.encode(bytes)));
        }
    }
}

/// Adds `"meta_b64"` unless `meta` is empty.
pub fn insert_meta(obj: &mut Object, meta: &[u8]) {
    if !meta.is_empty() {
        obj.insert("meta_b64".to_string(), Value::from(STANDARD.encode(meta)));
    }
}

/// What `head` prints for `key`: the key, `value_len`, `tag` (0: none), `meta_b64` (left
/// out when empty), `seqno`, `expires_at` (Unix ms, null: never) and `separated`.
pub fn head(key: &[u8], head: &Head) -> Object {
    let mut obj = Object::new();
    insert_bytes(&mut obj, "key", key);
    obj.insert("value_len".to_string(), Value::from(head.value_len));
    obj.insert("tag".to_string(), Value::from(head.tag));
    insert_meta(&mut obj, &head.meta);
    obj.insert("seqno".to_string(), Value::from(head.seqno));
    obj.insert("expires_at".to_string(), Value::from(head.expires_at));
    obj.insert("separated".to_string(), Value::from(head.separated));
    obj
}

/// The start of the object the `--json` of a command that writes one thing prints: the
/// keyspace and the write's seqno.
pub fn written(keyspace: &str, seqno: u64) -> Object {
    let mut obj = Object::new();
    obj.insert("keyspace".to_string(), Value::from(keyspace));
    obj.insert("seqno".to_string(), Value::from(seqno));
    obj
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cairn::transfer::{DumpWriter, EntryRef, Format};

    /// The object the dump writer writes for `key`, `value` and `meta`.
    fn dumped(key: &[u8], value: &[u8], meta: &[u8]) -> Object {
        let mut writer = DumpWriter::new(Vec::new(), Format::Jsonl).unwrap();
        let entry = EntryRef {
            meta,
            ..EntryRef::pair(key, value)
        };
        writer.write(&entry).unwrap();
        let (line, _) = writer.finish().unwrap();
        match serde_json::from_slice(&line).unwrap() {
            Value::Object(obj) => obj,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn bytes_and_metadata_are_encoded_as_the_dump_encodes_them() {
        let samples: [(&[u8], &[u8], &[u8]); 6] = [
            (b"plain", b"text value", b""),
            (b"\xff\x00key", b"\x80\x81", b"\x0a\xff"),
            (b"", b"", b"m"),
            ("✓ unicode".as_bytes(), b"tab\tand \"quotes\"", b"\x00"),
            (b"nul\x00inside", b"\xc3", b"\xff\xfe\xfd"),
            (b"k", "é".as_bytes(), b""),
        ];
        for (key, value, meta) in samples {
            let mut ours = Object::new();
            insert_bytes(&mut ours, "key", key);
            insert_bytes(&mut ours, "value", value);
            insert_meta(&mut ours, meta);
            assert_eq!(ours, dumped(key, value, meta), "{key:?} {value:?} {meta:?}");
        }
    }
}
