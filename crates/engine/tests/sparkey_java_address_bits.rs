//! Indexes whose entry addresses use ceil(log2(max entries per block)) bits, as
//! sparkey-java writes them, are read and verified like Cairn's own (which use the bit
//! length of the count, one bit more when the count is a power of two).
//!
//! Regression: `verify` demanded bitlen(max_entries_per_block) bits and reported valid
//! sparkey-java indexes as corrupt at offset 92 whenever the fullest block held a power
//! of two entries.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use cairn::hash::raw::build_index;
use cairn::hash::{verify, Compression, IndexOptions, LogOptions, LogReader, LogWriter, Reader};

#[test]
fn ceil_log2_address_bits_are_read_and_verified() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("j.spl");
    let idx = dir.path().join("j.spi");
    // Entries of 8 bytes in 16-byte blocks: exactly 2 entries start in each block.
    let mut w = LogWriter::create(
        &log,
        &LogOptions::default().compression(Compression::Snappy, 16),
    )
    .unwrap();
    for i in 0..500u32 {
        w.put(format!("k{i:03}").as_bytes(), b"vv").unwrap();
    }
    let lh = w.close().unwrap();
    assert_eq!(lh.max_entries_per_block, 2);

    let reader = LogReader::open(&log).unwrap();
    let (_, built) = build_index(&reader, &idx, &IndexOptions::default().seed(99), None).unwrap();
    let built = built.unwrap();
    assert_eq!(
        built.header.entry_block_bits, 2,
        "Cairn uses the bit length of the count"
    );

    // Re-encode with 1 bit of in-block index, as sparkey-java does.
    let mut header = built.header.clone();
    header.entry_block_bits = 1;
    let w = (header.hash_size + header.address_size) as usize;
    let hs = header.hash_size as usize;
    let mut slots = built.slots.clone();
    for slot in slots.chunks_mut(w) {
        let mut a = [0u8; 8];
        a[..w - hs].copy_from_slice(&slot[hs..]);
        let addr = u64::from_le_bytes(a);
        if addr != 0 {
            let new = ((addr >> 2) << 1) | (addr & 1);
            slot[hs..].copy_from_slice(&new.to_le_bytes()[..w - hs]);
        }
    }
    let mut bytes = header.encode().to_vec();
    bytes.extend_from_slice(&slots);
    std::fs::write(&idx, bytes).unwrap();

    let r = Reader::open(&idx, &log).unwrap();
    for i in 0..500u32 {
        assert_eq!(
            r.get(format!("k{i:03}").as_bytes()).unwrap(),
            Some(b"vv".to_vec()),
            "k{i:03}"
        );
    }
    assert_eq!(r.iter().count(), 500);
    let report = verify(&idx, &log).unwrap();
    assert_eq!(report.slots_checked, 500);
}
