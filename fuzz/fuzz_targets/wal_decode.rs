//! Raw bytes as a whole write-ahead log file, decoded as recovery would (the first byte
//! chooses salvage), including every batch the records carry.
//!
//! Any input must give `Ok` or a typed damage error. When it decodes, records are in file
//! order with increasing seqnos, the valid end lies within the input, and a torn tail
//! covers exactly the rest of it.
#![no_main]

use std::path::Path;

use cairn::inspect::decode_wal;
use cairn_fuzz::check_error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, bytes)) = data.split_first() else {
        return;
    };
    let salvage = mode & 1 == 1;
    match decode_wal(bytes, Path::new("00000000000000000001.wal"), salvage) {
        Ok(img) => {
            assert!(img.valid_end <= bytes.len() as u64);
            for pair in img.records.windows(2) {
                assert!(pair[0].offset < pair[1].offset, "records out of file order");
                assert!(pair[0].seqno < pair[1].seqno, "seqnos must increase");
            }
            if let Some(t) = &img.torn_tail {
                assert_eq!(
                    t.offset + t.len,
                    bytes.len() as u64,
                    "a torn tail runs to the end"
                );
            }
            if !salvage {
                assert!(img.dropped.is_empty(), "only salvage drops ranges");
            }
        }
        Err(e) => check_error(&e),
    }
});
