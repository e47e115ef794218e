//! The `CURRENT` file: names the live manifest file (FORMAT.md §4).
//!
//! Content: one ASCII line, `<manifest file name> <checksum>\n`, where the checksum is the
//! masked CRC32C of the file name's bytes as 8 lowercase hex digits, e.g.
//! `MANIFEST-00000000000000000007 4c1d0a3b\n` (39 bytes). Text, so `cat CURRENT` tells an
//! operator which manifest is live; checksummed, so a damaged pointer is reported instead
//! of followed.
//!
//! `CURRENT` is only ever replaced whole: the new content is written to `CURRENT.tmp`,
//! synced, renamed over `CURRENT` and the directory synced (`Manifest::create` does it
//! through the `FileSystem` trait). So a crash leaves the old or the new pointer, never a
//! partial one, and any damage found here is corruption, not a torn write.

use std::path::Path;

use crate::checksum::Checksum;
use crate::error::{Error, FileKind, Reason, Result};
use crate::files::FileType;

/// Largest `CURRENT` file a reader accepts; a real one is 39 bytes.
pub(crate) const MAX_CURRENT_LEN: u64 = 64;

/// The content of a `CURRENT` file naming manifest `id`.
pub(crate) fn encode_current(id: u64) -> Vec<u8> {
    let name = FileType::Manifest.name(id);
    let crc = Checksum::of(name.as_bytes()).masked();
    format!("{name} {crc:08x}\n").into_bytes()
}

/// The manifest id a `CURRENT` file's content names. `path` names the file in errors.
///
/// # Errors
/// `Error::Corruption` (`FileKind::Manifest`): `LengthOutOfRange` if longer than
/// [`MAX_CURRENT_LEN`]; `Truncated` without the final newline; `BadEntry` if the line is
/// not `<name> <8 hex digits>` or the name is not a manifest file name; `Checksum` if the
/// checksum does not match the name.
pub(crate) fn decode_current(bytes: &[u8], path: &Path) -> Result<u64> {
    let corrupt =
        |at: usize, reason| Error::corruption(FileKind::Manifest, path, at as u64, reason);
    if bytes.len() as u64 > MAX_CURRENT_LEN {
        return Err(corrupt(0, Reason::LengthOutOfRange));
    }
    let line = bytes
        .strip_suffix(b"\n")
        .ok_or_else(|| corrupt(bytes.len(), Reason::Truncated))?;
    let shape = || {
        corrupt(
            0,
            Reason::BadEntry("CURRENT is not `<manifest name> <checksum>`"),
        )
    };
    let space = line.iter().rposition(|&b| b == b' ').ok_or_else(shape)?;
    let (name, hex) = line.split_at(space);
    let hex = hex.get(1..).unwrap_or_default();
    let lower_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
    if hex.len() != 8 || !hex.iter().all(lower_hex) {
        return Err(shape());
    }
    let stored = std::str::from_utf8(hex)
        .ok()
        .and_then(|h| u32::from_str_radix(h, 16).ok())
        .ok_or_else(shape)?;
    let computed = Checksum::of(name).masked();
    if stored != computed {
        return Err(corrupt(space + 1, Reason::Checksum { stored, computed }));
    }
    std::str::from_utf8(name)
        .ok()
        .and_then(|n| FileType::Manifest.parse(n))
        .ok_or_else(|| corrupt(0, Reason::BadEntry("CURRENT does not name a manifest file")))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    fn decode(bytes: &[u8]) -> Result<u64> {
        decode_current(bytes, Path::new("/db/CURRENT"))
    }

    fn reason(res: Result<u64>) -> (u64, Reason) {
        match res {
            Err(Error::Corruption(c)) => {
                assert_eq!(c.file, FileKind::Manifest);
                assert_eq!(c.path, Path::new("/db/CURRENT"));
                (c.offset, c.reason)
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    /// FORMAT.md §9 shows this file.
    #[test]
    fn encoding_matches_the_worked_example() {
        let bytes = encode_current(7);
        assert_eq!(bytes, b"MANIFEST-00000000000000000007 949fa703\n");
        assert_eq!(bytes.len(), 39);
        assert_eq!(decode(&bytes).unwrap(), 7);
        assert_eq!(decode(&encode_current(u64::MAX)).unwrap(), u64::MAX);
    }

    #[test]
    fn any_flipped_byte_is_corruption() {
        let good = encode_current(42);
        for i in 0..good.len() {
            for mask in [0x01, 0x20, 0x80] {
                let mut bad = good.clone();
                bad[i] ^= mask;
                reason(decode(&bad));
            }
        }
    }

    #[test]
    fn truncation_and_garbage_are_corruption() {
        let good = encode_current(42);
        for cut in 0..good.len() {
            reason(decode(&good[..cut]));
        }
        assert_eq!(reason(decode(b"")), (0, Reason::Truncated));
        assert_eq!(reason(decode(&[b'x'; 65])), (0, Reason::LengthOutOfRange));
        let mut longer = good.clone();
        longer.insert(0, b' ');
        assert!(matches!(reason(decode(&longer)).1, Reason::Checksum { .. }));
        // Upper-case hex is not the canonical form.
        let upper = String::from_utf8(good).unwrap().to_uppercase();
        assert!(matches!(
            reason(decode(upper.as_bytes())).1,
            Reason::BadEntry(_)
        ));
        // A checksummed name that is not a manifest's.
        let name = "000042.wal";
        let crc = Checksum::of(name.as_bytes()).masked();
        let other = format!("{name} {crc:08x}\n");
        assert_eq!(
            reason(decode(other.as_bytes())),
            (0, Reason::BadEntry("CURRENT does not name a manifest file"))
        );
    }
}
