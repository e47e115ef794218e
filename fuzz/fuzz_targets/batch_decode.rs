//! Raw bytes as a write-batch payload (a WAL record's content).
//!
//! Any input must give `Ok` or a typed damage error, and never allocate more than the
//! input can describe; a decoded batch has no more operations than the input has bytes.
#![no_main]

use std::path::Path;

use cairn::inspect::{decode_batch, BatchOp};
use cairn_fuzz::check_error;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match decode_batch(data, Path::new("batch")) {
        Ok(ops) => {
            assert!(ops.len() <= data.len(), "more operations than bytes");
            let payload: usize = ops
                .iter()
                .map(|op| match op {
                    BatchOp::Put { key, value, .. } => key.len() + value.len(),
                    BatchOp::PutAttrs {
                        key, value, meta, ..
                    } => {
                        assert!(meta.len() <= cairn::MAX_META_LEN, "metadata over the limit");
                        key.len() + value.len() + meta.len()
                    }
                    BatchOp::Delete { key, .. } => key.len(),
                    BatchOp::RangeDelete { start, end, .. } => {
                        assert!(end.is_empty() || start < end, "a range that holds no key");
                        start.len() + end.len()
                    }
                    _ => 0,
                })
                .sum();
            assert!(
                payload <= data.len(),
                "keys and values larger than the input"
            );
        }
        Err(e) => check_error(&e),
    }
});
