//! A 300 MiB value written from a reader and read back as a stream, on real files: neither
//! side ever holds the value (the data is generated and compared on the fly, and both
//! buffers stay at their documented bounds), and a random seek verifies one chunk.

#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::io::{self, Read, Seek, SeekFrom};
use std::sync::Arc;

use super::format::{CHUNK_CRC_LEN, CHUNK_LEN};
use super::{Reader, Writer, WriterOptions};
use crate::fs::StdFs;
use crate::key::KeyspaceId;

const LEN: u64 = 300 << 20;

/// The byte at position `p` of the generated value (no short period, so a chunk moved to
/// another place would not compare equal).
fn byte_at(p: u64) -> u8 {
    (p.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8
}

/// Generates `len` bytes on demand.
struct Generated {
    pos: u64,
    len: u64,
}

impl Read for Generated {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min((self.len - self.pos) as usize);
        for (i, b) in buf[..n].iter_mut().enumerate() {
            *b = byte_at(self.pos + i as u64);
        }
        self.pos += n as u64;
        Ok(n)
    }
}

#[test]
fn a_300_mib_value_streams_in_and_out_with_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let fs = Arc::new(StdFs);
    let mut w = Writer::new(
        fs.clone(),
        tmp.path(),
        WriterOptions::default(),
        Box::new(|| 1),
    );
    let mut source = Generated { pos: 0, len: LEN };
    let h = w
        .append_from(KeyspaceId(0), b"big", LEN as u32, &mut source)
        .unwrap();
    assert_eq!(
        source.pos, LEN,
        "exactly the value was read from the source"
    );
    assert!(w.buffer_capacity() <= (1 << 20) + CHUNK_LEN as usize + 64);
    w.sync().unwrap();

    let reader = Reader::new(fs, tmp.path(), 4);
    let mut s = reader.open_value(&h).unwrap();
    assert_eq!(s.len(), LEN);
    let mut buf = vec![0u8; 1 << 20];
    let mut pos = 0u64;
    loop {
        let n = s.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        for (i, b) in buf[..n].iter().enumerate() {
            if *b != byte_at(pos + i as u64) {
                panic!("byte {} differs", pos + i as u64);
            }
        }
        pos += n as u64;
        assert!(s.buffer_capacity() <= (CHUNK_LEN + CHUNK_CRC_LEN) as usize);
    }
    assert_eq!(pos, LEN);

    // Random access: a seek deep into the value reads (and checks) one chunk.
    for at in [LEN / 2 + 12_345, LEN - 1, 7 * CHUNK_LEN - 3] {
        s.seek(SeekFrom::Start(at)).unwrap();
        let mut small = [0u8; 8];
        let n = s.read(&mut small).unwrap();
        assert!(n >= 1);
        for (i, b) in small[..n].iter().enumerate() {
            assert_eq!(*b, byte_at(at + i as u64));
        }
    }
    // validate_handle streams the whole value too.
    assert!(reader.validate_handle(&h).unwrap());
}
