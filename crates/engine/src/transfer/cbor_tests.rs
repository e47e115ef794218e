//! Tests of the CBOR dump codec: round trips, every truncation and flipped bit, keyspace
//! records, and errors that say what was expected and found.

#![allow(clippy::panic, clippy::unwrap_used, clippy::indexing_slicing)]

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

/// Every entry of a dump, values filled in (keyspace records skipped).
fn read_all(bytes: &[u8]) -> Result<Vec<Entry>> {
    let mut r = Reader::new(bytes)?;
    let mut out = Vec::new();
    loop {
        let mut value = Vec::new();
        match r.next_item(&mut value)? {
            None => return Ok(out),
            Some(Item::Entry {
                mut entry,
                value_len,
            }) => {
                assert_eq!(value.len() as u64, value_len);
                entry.value = value;
                out.push(entry);
            }
            Some(Item::Keyspace { .. }) => {}
        }
    }
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

/// A dump of `entries` with keyspace records for `keyspaces` after the header.
fn dump_with_keyspaces(keyspaces: &[(Option<&str>, u64)], entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_header(&mut out);
    for (ks, t) in keyspaces {
        encode_keyspace(*ks, *t, &mut out);
    }
    for e in entries {
        encode_entry(&e.as_ref(), &mut out);
    }
    let crc = Checksum::of(&out);
    encode_trailer(entries.len() as u64, crc, &mut out);
    out
}

#[test]
fn keyspace_records_round_trip_and_are_checked() {
    let bytes = dump_with_keyspaces(&[(Some("media"), 4096), (None, 0)], &sample());
    let mut r = Reader::new(&bytes[..]).unwrap();
    let mut items = Vec::new();
    while let Some(item) = r.next_item(&mut io::sink()).unwrap() {
        items.push(item);
    }
    assert_eq!(
        items.first(),
        Some(&Item::Keyspace {
            keyspace: Some("media".into()),
            blob_threshold: 4096
        })
    );
    assert_eq!(items.len(), 4);
    assert_eq!(r.thresholds().get(Some("media")), Some(4096));
    assert_eq!(r.thresholds().get(None), Some(0));
    assert_eq!(r.thresholds().get(Some("other")), None);
    // The trailer counts entries only.
    assert_eq!(read_all(&bytes).unwrap(), sample());

    let twice = dump_with_keyspaces(&[(Some("m"), 1), (Some("m"), 2)], &[]);
    let (record, _, detail) = bad_input(read_all(&twice));
    assert_eq!(record, 3);
    assert!(detail.contains("a second keyspace record"), "{detail}");

    let mut mixed = Vec::new();
    encode_header(&mut mixed);
    let mut enc = Encoder::from(&mut mixed);
    enc.push(Header::Map(Some(2))).unwrap();
    enc.text("key", None).unwrap();
    enc.bytes(b"k", None).unwrap();
    enc.text("blob_threshold", None).unwrap();
    enc.push(Header::Positive(1)).unwrap();
    let (_, _, detail) = bad_input(read_all(&mixed));
    assert!(detail.contains("mixes"), "{detail}");
}

/// Regression: type errors printed ciborium's Rust values (`not Simple(21)`). They
/// now say what was expected and what was found, in words.
#[test]
fn type_errors_say_what_was_expected_and_found() {
    let record = |build: &dyn Fn(&mut Encoder<&mut Vec<u8>>)| {
        let mut bytes = Vec::new();
        encode_header(&mut bytes);
        build(&mut Encoder::from(&mut bytes));
        bad_input(read_all(&bytes)).2
    };
    let cases: Vec<(String, &str)> = vec![
        (
            record(&|e| {
                e.push(Header::Map(Some(2))).unwrap();
                e.text("key", None).unwrap();
                e.push(Header::Simple(21)).unwrap();
            }),
            "\"key\": expected a byte string, found the boolean true",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(2))).unwrap();
                e.text("key", None).unwrap();
                e.bytes(b"k", None).unwrap();
                e.text("value", None).unwrap();
                e.push(Header::Negative(4)).unwrap();
            }),
            "\"value\": expected a byte string, found the negative integer -5",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(3))).unwrap();
                e.text("key", None).unwrap();
                e.bytes(b"k", None).unwrap();
                e.text("value", None).unwrap();
                e.bytes(b"v", None).unwrap();
                e.text("tag", None).unwrap();
                e.text("x", None).unwrap();
            }),
            "\"tag\": expected an unsigned integer, found a text string of 1 byte",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(1))).unwrap();
                e.text("keyspace", None).unwrap();
                e.push(Header::Simple(22)).unwrap();
            }),
            "\"keyspace\": expected a text string, found null",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(1))).unwrap();
                e.push(Header::Positive(3)).unwrap();
            }),
            "expected a field name (a text string), found the unsigned integer 3",
        ),
        (
            record(&|e| {
                e.push(Header::Array(Some(2))).unwrap();
            }),
            "expected a record (a map of fields), found an array of 2 items",
        ),
        (
            record(&|e| {
                e.push(Header::Map(None)).unwrap();
            }),
            "expected a record (a map of fields), found an indefinite-length map",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(2))).unwrap();
                e.text("key", None).unwrap();
                e.push(Header::Float(1.5)).unwrap();
            }),
            "found the floating-point number 1.5",
        ),
        (
            record(&|e| {
                e.push(Header::Map(Some(2))).unwrap();
                e.text("key", None).unwrap();
                e.push(Header::Tag(24)).unwrap();
            }),
            "found a tag (24)",
        ),
    ];
    for (got, want) in cases {
        assert!(got.contains(want), "{got:?} lacks {want:?}");
        for rust in [
            "Simple(",
            "Positive(",
            "Negative(",
            "Some(",
            "Map(",
            "Array(",
        ] {
            assert!(!got.contains(rust), "{got:?}");
        }
    }
}

#[test]
fn json_lines_input_gets_a_hint() {
    for input in [
        &b"{\"key\":\"a\",\"value\":\"1\"}\n"[..],
        b"\n{\"key\":\"a\"}",
    ] {
        let (record, _, detail) = bad_input(read_all(input));
        assert_eq!(record, 1);
        assert!(detail.contains("--format jsonl"), "{detail}");
    }
    // A damaged CBOR dump gets no such hint.
    let mut bytes = dump(&sample());
    bytes[1] = 0x01;
    let (_, _, detail) = bad_input(read_all(&bytes));
    assert!(!detail.contains("jsonl"), "{detail}");
}

#[test]
fn values_past_the_old_256_mib_limit_are_read_in_bounded_chunks() {
    // A value may be up to u32::MAX bytes; its length alone allocates nothing, so a
    // dump cut short inside a huge value is a plain truncation.
    for (len, want) in [
        (300u64 << 20, "unexpected end of input"),
        (MAX_DUMP_VALUE_LEN, "unexpected end of input"),
        (MAX_DUMP_VALUE_LEN + 1, "more than the limit"),
    ] {
        let mut bytes = Vec::new();
        encode_header(&mut bytes);
        let mut enc = Encoder::from(&mut bytes);
        enc.push(Header::Map(Some(2))).unwrap();
        enc.text("key", None).unwrap();
        enc.bytes(b"k", None).unwrap();
        enc.text("value", None).unwrap();
        enc.push(Header::Bytes(Some(len as usize))).unwrap();
        bytes.extend_from_slice(&[7; 1000]);
        let (record, _, detail) = bad_input(read_all(&bytes));
        assert_eq!(record, 2);
        assert!(detail.contains(want), "{len}: {detail}");
    }
    // A value longer than one copy chunk arrives whole.
    let big = Entry::new("k", vec![5u8; COPY_CHUNK * 2 + 3]);
    assert_eq!(
        read_all(&dump(std::slice::from_ref(&big))).unwrap(),
        vec![big]
    );
}
