//! Blob files (the value log) decoded as the store would: every record scanned with every
//! chunk checksum, the end classified (footer, torn tail or corruption), every value read
//! back through its handle.
//!
//! The first byte chooses the mode. Even: the rest is a raw file image; any input must
//! give `Ok` or a typed damage error, and a decoded image must be self-consistent. Odd:
//! the rest describes records, which this target encodes itself from `vlog/FORMAT.md` (an
//! independent encoder, so the format document and the engine are checked against each
//! other), optionally seals, then optionally damages (one flipped byte or a truncation).
//! Undamaged, the image must decode to exactly those records; damaged, to a prefix of them
//! or a typed error, never to a record that was not written.
#![no_main]

use std::path::Path;

use cairn::inspect::{decode_blob_file, BlobFileImage};
use cairn_fuzz::check_error;
use libfuzzer_sys::fuzz_target;

const CHUNK: usize = 64 << 10;
const FILE_ID: u64 = 5;

/// Masked CRC32C of the concatenation of `parts` (FORMAT.md §2).
fn crc(parts: &[&[u8]]) -> u32 {
    let c = parts.iter().fold(0u32, |c, p| crc32c::crc32c_append(c, p));
    c.rotate_right(15).wrapping_add(0xa282_ead8)
}

struct Built {
    bytes: Vec<u8>,
    /// offset, keyspace, key, value length
    records: Vec<(u64, u32, Vec<u8>, u32)>,
}

fn build(spec: &[u8], sealed: bool) -> Built {
    let mut bytes = Vec::new();
    bytes.extend_from_slice(b"CBLB");
    bytes.extend_from_slice(&1u32.to_le_bytes());
    bytes.extend_from_slice(&FILE_ID.to_le_bytes());
    let h = crc(&[&bytes]);
    bytes.extend_from_slice(&h.to_le_bytes());
    let mut records = Vec::new();
    let mut value_bytes = 0u64;
    for (i, rec) in spec.chunks_exact(4).take(16).enumerate() {
        let keyspace = u32::from(rec[0]);
        let key: Vec<u8> = (0..rec[1] % 40).map(|j| j ^ rec[0]).collect();
        let value_len = u32::from(u16::from_le_bytes([rec[2], rec[3]])) * 3;
        let value: Vec<u8> = (0..value_len).map(|j| (j as u8) ^ (i as u8)).collect();
        let offset = bytes.len() as u64;
        let mut fields = Vec::new();
        fields.extend_from_slice(&keyspace.to_le_bytes());
        fields.extend_from_slice(&value_len.to_le_bytes());
        fields.extend_from_slice(&(key.len() as u16).to_le_bytes());
        fields.extend_from_slice(&[0, 0]);
        let header_crc = crc(&[&FILE_ID.to_le_bytes(), &offset.to_le_bytes(), &fields, &key]);
        bytes.extend_from_slice(&header_crc.to_le_bytes());
        bytes.extend_from_slice(&fields);
        bytes.extend_from_slice(&key);
        for (index, chunk) in value.chunks(CHUNK).enumerate() {
            bytes.extend_from_slice(chunk);
            let c = crc(&[
                &header_crc.to_le_bytes(),
                &(index as u32).to_le_bytes(),
                chunk,
            ]);
            bytes.extend_from_slice(&c.to_le_bytes());
        }
        value_bytes += u64::from(value_len);
        records.push((offset, keyspace, key, value_len));
    }
    if sealed {
        let mut footer = Vec::new();
        footer.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        footer.extend_from_slice(&(records.len() as u64).to_le_bytes());
        footer.extend_from_slice(&value_bytes.to_le_bytes());
        footer.extend_from_slice(&FILE_ID.to_le_bytes());
        let c = crc(&[&footer]);
        footer.extend_from_slice(&c.to_le_bytes());
        footer.extend_from_slice(b"CBLF");
        bytes.extend_from_slice(&footer);
    }
    Built { bytes, records }
}

/// Checks that hold for every successfully decoded image.
fn consistent(img: &BlobFileImage, len: u64) {
    assert!(img.valid_end <= len);
    assert_eq!(img.values_verified, img.records.len() as u64);
    let mut end = 20;
    let mut sum = 0u64;
    for r in &img.records {
        assert!(r.offset >= end, "records overlap or go backwards");
        end = r.offset + 16 + r.key.len() as u64;
        end += u64::from(r.value_len) + u64::from(r.value_len).div_ceil(CHUNK as u64) * 4;
        sum += u64::from(r.value_len);
    }
    assert_eq!(sum, img.value_bytes);
    if !img.records.is_empty() {
        assert_eq!(end, img.valid_end);
    }
    if let Some(t) = &img.torn_tail {
        assert_eq!(t.offset + t.len, len, "a torn tail runs to the end");
        assert!(!img.sealed);
    }
    if img.sealed {
        assert_eq!(img.valid_end + 40, len);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let path = Path::new("00000000000000000005.blob");
    if mode & 1 == 0 {
        match decode_blob_file(rest, path) {
            Ok(img) => consistent(&img, rest.len() as u64),
            Err(e) => check_error(&e),
        }
        return;
    }
    let Some((pos_bytes, spec)) = rest.split_first_chunk::<4>() else {
        return;
    };
    let sealed = mode & 2 != 0;
    let built = build(spec, sealed);
    let mut bytes = built.bytes.clone();
    let pos = u32::from_le_bytes(*pos_bytes) as usize % (bytes.len() + 1);
    let damaged = match mode >> 2 & 3 {
        1 if pos < bytes.len() => {
            bytes[pos] ^= mode | 1;
            true
        }
        2 => {
            bytes.truncate(pos);
            pos < built.bytes.len()
        }
        _ => false,
    };
    match decode_blob_file(&bytes, path) {
        Ok(img) => {
            consistent(&img, bytes.len() as u64);
            if !damaged {
                assert_eq!(img.file_id, Some(FILE_ID));
                assert_eq!(img.records.len(), built.records.len());
                assert_eq!(img.sealed, sealed);
                assert!(img.torn_tail.is_none());
            }
            assert!(img.records.len() <= built.records.len());
            for (got, want) in img.records.iter().zip(&built.records) {
                assert_eq!(
                    (got.offset, got.keyspace, &got.key, got.value_len),
                    (want.0, want.1, &want.2, want.3),
                    "a record that was not written"
                );
            }
        }
        Err(e) => {
            assert!(damaged, "an undamaged image must decode: {e}");
            check_error(&e);
        }
    }
});
