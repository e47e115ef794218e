//! What a worker process costs the machine, read from Linux's `/proc/self`: the bytes it
//! sent toward storage (for write amplification) and its peak resident memory.
//!
//! - `/proc/self/io`'s `write_bytes` counts every page the process (all its threads,
//!   background compactions and flushes included) dirtied in the page cache, at the time
//!   it dirtied it, whether the kernel has written it back yet or not: the bytes the store
//!   wrote to its files, a page written many times between two writebacks counting once
//!   (as it reaches the device once). `cancelled_write_bytes` (dirty pages of a file
//!   deleted before writeback, such as a log removed after its flush) is not subtracted:
//!   when that happens depends on the kernel's writeback timing, not on the store, and
//!   the usual definition of write amplification counts log bytes as written.
//! - `VmHWM` in `/proc/self/status` is the process's peak resident set, file-backed pages
//!   of its mappings included (an LMDB store's mapped data file counts once touched).
//!
//! Both read `None` where `/proc` lacks them (another OS, or task I/O accounting compiled
//! out); the report then leaves the cell empty rather than printing a zero.

/// Bytes the process has written toward storage so far.
pub fn bytes_written() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/io").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("write_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The process's peak resident set so far, bytes.
pub fn peak_resident_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let kib: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]
    use super::*;

    #[test]
    fn peak_resident_memory_covers_what_was_touched() {
        let before = peak_resident_bytes().expect("VmHWM is in /proc/self/status on Linux");
        let block = vec![1u8; 64 << 20];
        let after = peak_resident_bytes().expect("VmHWM");
        assert!(block.iter().all(|&b| b == 1));
        assert!(after >= before.max(64 << 20), "{before} -> {after}");
    }

    #[test]
    fn written_bytes_count_a_file_written_and_synced() {
        let Some(before) = bytes_written() else {
            // Kernels built without task I/O accounting have no /proc/self/io; the
            // report then shows no write amplification, which is what this checks.
            assert!(std::fs::read_to_string("/proc/self/io").is_err());
            return;
        };
        // Beside the crate, not under the temp dir: a tmpfs has no storage to count.
        let dir = std::env::current_dir()
            .expect("cwd")
            .join(format!("cairn-peers-io-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("f");
        {
            use std::io::Write as _;
            let mut f = std::fs::File::create(&path).expect("create");
            f.write_all(&vec![7u8; 4 << 20]).expect("write");
            f.sync_all().expect("fsync");
        }
        let after = bytes_written().expect("/proc/self/io");
        std::fs::remove_dir_all(&dir).expect("cleanup");
        assert!(after >= before + (4 << 20), "{before} -> {after}");
    }
}
