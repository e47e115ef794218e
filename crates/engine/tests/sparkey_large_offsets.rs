//! Logs beyond 4 GiB: entry offsets past 2^32 need 8-byte index addresses, and every
//! length and offset is 64-bit. The log is a sparse file (a 4.5 GiB value of zeros), so
//! the test needs almost no disk space or memory.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{Seek, SeekFrom, Write};

use cairn::hash::raw::{LogHeader, LOG_HEADER_LEN};
use cairn::hash::{write_index, Compression, IndexOptions, LogReader, Reader};

fn vlq(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[test]
fn a_log_past_4_gib_gets_8_byte_addresses_and_serves_lookups() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.spl");
    let idx = dir.path().join("big.spi");
    let big_value: u64 = (4 << 30) + (512 << 20); // 4.5 GiB

    // PUT "huge" -> 4.5 GiB of zeros, then PUT "after" -> "tail" past the 4 GiB mark.
    let mut first = Vec::new();
    vlq(5, &mut first);
    vlq(big_value, &mut first);
    first.extend_from_slice(b"huge");
    let second_offset = LOG_HEADER_LEN + first.len() as u64 + big_value;
    let mut second = Vec::new();
    vlq(6, &mut second);
    vlq(4, &mut second);
    second.extend_from_slice(b"aftertail");
    let data_end = second_offset + second.len() as u64;

    let mut header = LogHeader::new(0x1234_5678, Compression::None, 0);
    header.num_puts = 2;
    header.data_end = data_end;
    header.max_key_len = 5;
    header.max_value_len = big_value;
    header.put_size = first.len() as u64 + big_value + second.len() as u64;

    let mut f = std::fs::File::create(&log).unwrap();
    f.write_all(&header.encode()).unwrap();
    f.write_all(&first).unwrap();
    f.seek(SeekFrom::Start(second_offset)).unwrap();
    f.write_all(&second).unwrap();
    drop(f);
    assert!(second_offset > u64::from(u32::MAX));

    let (_, ih) = write_index(&idx, &log, &IndexOptions::default().seed(7)).unwrap();
    assert_eq!(
        ih.address_size, 8,
        "offsets past 4 GiB need 8-byte addresses"
    );
    assert_eq!(ih.num_entries, 2);
    assert_eq!(ih.data_end, data_end);

    let r = Reader::open(&idx, &log).unwrap();
    assert_eq!(r.get(b"after").unwrap(), Some(b"tail".to_vec()));
    // The 4.5 GiB value is served zero-copy from the map, never copied.
    let mut scratch = Vec::new();
    let v = r.get_ref(b"huge", &mut scratch).unwrap().unwrap();
    assert_eq!(v.len() as u64, big_value);
    assert_eq!(v[v.len() - 1], 0);
    assert!(scratch.is_empty());
    assert_eq!(r.get(b"absent").unwrap(), None);

    // The log iterator walks both entries, skipping over the value's length.
    let l = LogReader::open(&log).unwrap();
    assert_eq!(l.header().data_end, data_end);
}
