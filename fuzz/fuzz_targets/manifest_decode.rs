//! Raw bytes as a manifest, decoded and replayed as recovery does. The first byte chooses
//! what the rest is:
//!
//! * `0 mod 3`: a whole manifest file image.
//! * `1 mod 3`: a list of edit payloads, each a length byte then that many bytes, which the
//!   target frames into a manifest file with a valid header and checksummed records (as
//!   `version/FORMAT.md` describes), so inputs reach edit decoding and version replay
//!   without forging checksums.
//! * `2 mod 3`: the content of a `CURRENT` file.
//!
//! Any input must give `Ok` or a typed damage error. When a manifest decodes: at least one
//! record was replayed, the valid end lies within the input and a torn tail covers exactly
//! the rest; keyspace ids and names are unique, names are 1..=255 bytes, every keyspace id
//! is below `next_keyspace_id`, `wal_min_id <= next_file_id`, and the header's file id is
//! below `next_file_id`. A framed list never has a torn tail and replays every payload.
#![no_main]

use std::collections::BTreeSet;
use std::path::Path;

use cairn::inspect::{decode_current, decode_manifest};
use cairn_fuzz::check_error;
use libfuzzer_sys::fuzz_target;

/// CRC32C, bit by bit (reflected polynomial `0x82F63B78`), masked as the format stores it.
/// Written independently of the engine so the target also checks the documented framing.
fn masked_crc(parts: &[&[u8]]) -> u32 {
    let mut crc = !0u32;
    for &b in parts.iter().flat_map(|p| p.iter()) {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    (!crc).rotate_right(15).wrapping_add(0xA282_EAD8)
}

/// A manifest file with id 1 holding one record per payload.
fn frame(mut rest: &[u8]) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    out.extend_from_slice(b"CMAN");
    out.extend_from_slice(&1u32.to_le_bytes());
    out.extend_from_slice(&1u64.to_le_bytes());
    let crc = masked_crc(&[&out]);
    out.extend_from_slice(&crc.to_le_bytes());
    let mut records = 0;
    while let Some((&len, tail)) = rest.split_first() {
        let len = usize::from(len).min(tail.len());
        let (payload, next) = tail.split_at(len);
        let len_bytes = (payload.len() as u32).to_le_bytes();
        out.extend_from_slice(&masked_crc(&[&len_bytes]).to_le_bytes());
        out.extend_from_slice(&masked_crc(&[&len_bytes, payload]).to_le_bytes());
        out.extend_from_slice(&len_bytes);
        out.extend_from_slice(payload);
        records += 1;
        rest = next;
    }
    (out, records)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let path = Path::new("MANIFEST-00000000000000000001");
    let (image, framed) = match mode % 3 {
        0 => (rest.to_vec(), None),
        1 => {
            let (image, records) = frame(rest);
            (image, Some(records))
        }
        _ => {
            match decode_current(rest, Path::new("CURRENT")) {
                Ok(id) => {
                    let name = format!("MANIFEST-{id:020} ");
                    assert_eq!(rest.len(), 39, "CURRENT is one fixed-length line");
                    assert!(rest.starts_with(name.as_bytes()));
                }
                Err(e) => check_error(&e),
            }
            return;
        }
    };
    match decode_manifest(&image, path) {
        Ok(img) => {
            assert!(img.edits >= 1, "a manifest starts with a snapshot record");
            assert!(img.valid_end <= image.len() as u64);
            match &img.torn_tail {
                Some(t) => {
                    assert_eq!(t.offset, img.valid_end);
                    assert_eq!(
                        t.offset + t.len,
                        image.len() as u64,
                        "a torn tail runs to the end"
                    );
                }
                None => assert_eq!(img.valid_end, image.len() as u64),
            }
            if let Some(records) = framed {
                assert!(img.torn_tail.is_none(), "framed records are never torn");
                assert_eq!(img.edits, records);
            }
            assert!(img.file_id < img.next_file_id);
            assert!(img.wal_min_id <= img.next_file_id);
            let mut names = BTreeSet::new();
            let mut ids = BTreeSet::new();
            for ks in &img.keyspaces {
                assert!((1..=255).contains(&ks.name.len()));
                assert!(names.insert(ks.name.clone()), "duplicate keyspace name");
                assert!(ids.insert(ks.id), "duplicate keyspace id");
                assert!(ks.id < img.next_keyspace_id);
                assert_eq!(ks.tables.len(), 7);
                assert_eq!(ks.level_bytes.len(), 7);
            }
        }
        Err(e) => check_error(&e),
    }
});
