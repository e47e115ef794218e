//! Raw bytes as a whole log file: open it and iterate every entry.
//!
//! Any input must give `Ok` or a typed damage error; iteration must end, and never yield
//! an entry after an error.
#![no_main]

use cairn::hash::LogReader;
use cairn_fuzz::{check_error, drain, path, write};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let log = path("log_header.spl");
    write(&log, data);
    match LogReader::open_with_cache(&log, 1 << 20) {
        Ok(reader) => {
            // The header was accepted: its invariants hold.
            let h = reader.header();
            assert!(h.data_end >= 84 && h.data_end <= data.len() as u64);
            assert!(h.num_puts <= h.data_end && h.num_deletes <= h.data_end);
            let _ = drain(reader.iter());
        }
        Err(e) => check_error(&e),
    }
});
