//! Raw bytes as a whole sorted-table file, decoded as the store's reader would: open
//! (footer, properties, index, filter), verify every block and entry, then scan the cursor
//! forwards and backwards.
//!
//! Any input must give `Ok` or a typed damage error. When it decodes, both scans visit
//! exactly the entries the properties record, and the summary is consistent.
#![no_main]

use std::path::Path;

use cairn::inspect::decode_table;
use cairn_fuzz::check_error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_table(data, Path::new("00000000000000000001.sst")) {
        Ok(t) => {
            assert_eq!(t.file_size, data.len() as u64);
            assert_eq!(t.forward_entries, t.entries, "forward scan count");
            assert_eq!(t.backward_entries, t.entries, "backward scan count");
            assert!(t.entries >= 1 && t.tombstones <= t.entries);
            assert!(t.min_seqno <= t.max_seqno);
            assert!(t.smallest_key <= t.largest_key);
        }
        Err(e) => check_error(&e),
    }
});
