//! The byte layout of a pack ([`FORMAT.md`](FORMAT.md)): header, member data, directory,
//! footer; encoding, and the decoder that checks every length, offset and name before
//! anything is trusted.
//!
//! Grammar:
//!
//! ```text
//! pack      := header member_data* directory footer
//! header    := magic:u32 version:u32 seqno:u64 header_crc:u32          (20 bytes)
//! directory := count:u32 entry*
//! entry     := name_len:u8 name[name_len] offset:u64 len:u64 crc:u32
//! footer    := dir_offset:u64 dir_len:u64 dir_crc:u32 version:u32 magic:u32 footer_crc:u32
//! ```
//!
//! Member data tiles the bytes between the header and the directory in directory order,
//! with no gap and no overlap; each member's `crc` covers its bytes.

use std::collections::BTreeSet;
use std::path::Path;

use crate::checksum::Checksum;
use crate::coding::{get_u32_le, get_u64_le, Cursor};
use crate::error::{Error, FileKind, Reason, Result};

/// The file magic: the bytes `C P A K` read as a little-endian `u32`.
pub(crate) const MAGIC: u32 = u32::from_le_bytes(*b"CPAK");

/// The format version this build writes and reads.
pub(crate) const VERSION: u32 = 1;

/// Bytes of the header.
pub(crate) const HEADER_LEN: u64 = 20;

/// Bytes of the footer.
pub(crate) const FOOTER_LEN: u64 = 32;

/// Bytes of an entry besides its name: `name_len`, `offset`, `len`, `crc`.
const ENTRY_FIXED_LEN: usize = 1 + 8 + 8 + 4;

/// Largest directory a reader accepts (a million members with long names).
pub(crate) const MAX_DIR_LEN: u64 = 256 << 20;

/// One member as the directory records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// File name in the store directory (see [`valid_name`]).
    pub(crate) name: String,
    /// Offset of its first byte in the pack.
    pub(crate) offset: u64,
    /// Its length in bytes.
    pub(crate) len: u64,
    /// Masked CRC32C of its bytes.
    pub(crate) crc: u32,
}

/// What the header and footer say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Frame {
    /// The seqno the packed checkpoint holds writes up to.
    pub(crate) seqno: u64,
    /// Where the directory starts (= the end of the member data).
    pub(crate) dir_offset: u64,
    /// Bytes of the directory.
    pub(crate) dir_len: u64,
}

/// True if `name` may name a member: 1..=255 bytes of ASCII letters, digits, `.`, `_`
/// and `-`, not starting with `.`. So no path separator, no `..`, no hidden or absolute
/// name can reach the file system through a pack.
pub(crate) fn valid_name(name: &str) -> bool {
    (1..=255).contains(&name.len())
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
}

/// The header of a pack of a checkpoint at `seqno`.
pub(crate) fn encode_header(seqno: u64) -> Vec<u8> {
    crate::files::FileHeader {
        magic: MAGIC,
        version: VERSION,
        id: seqno,
    }
    .encode()
}

/// The directory of `entries`.
///
/// Requires: every name is [`valid_name`] (checked by the writer before it writes).
pub(crate) fn encode_directory(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        debug_assert!(valid_name(&e.name));
        out.push(e.name.len() as u8);
        out.extend_from_slice(e.name.as_bytes());
        out.extend_from_slice(&e.offset.to_le_bytes());
        out.extend_from_slice(&e.len.to_le_bytes());
        out.extend_from_slice(&e.crc.to_le_bytes());
    }
    out
}

/// The footer pointing at a directory at `dir_offset` holding `dir`.
pub(crate) fn encode_footer(dir_offset: u64, dir: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(FOOTER_LEN as usize);
    out.extend_from_slice(&dir_offset.to_le_bytes());
    out.extend_from_slice(&(dir.len() as u64).to_le_bytes());
    out.extend_from_slice(&Checksum::of(dir).masked().to_le_bytes());
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&MAGIC.to_le_bytes());
    let crc = Checksum::of(&out).masked();
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn corrupt(path: &Path, offset: u64, reason: Reason) -> Error {
    Error::corruption(FileKind::Pack, path, offset, reason)
}

fn checksum(path: &Path, at: u64, stored: u32, bytes: &[u8]) -> Result<()> {
    let computed = Checksum::of(bytes).masked();
    if stored != computed {
        return Err(corrupt(path, at, Reason::Checksum { stored, computed }));
    }
    Ok(())
}

fn version_check(path: &Path, version: u32) -> Result<()> {
    if version != VERSION {
        return Err(Error::UnsupportedVersion {
            file: FileKind::Pack,
            path: path.to_path_buf(),
            major: version,
            minor: 0,
        });
    }
    Ok(())
}

/// Checks the header (the first [`HEADER_LEN`] bytes) and the footer (the last
/// [`FOOTER_LEN`]) of a pack of `file_len` bytes, and where they put the directory.
///
/// # Errors
/// `Corruption` (`FileKind::Pack`): `FileTooSmall`, `BadMagic`, `Checksum`, or
/// `LengthOutOfRange` if the directory does not sit exactly between the member data and
/// the footer; `UnsupportedVersion`.
pub(crate) fn decode_frame(
    header: &[u8],
    footer: &[u8],
    file_len: u64,
    path: &Path,
) -> Result<Frame> {
    if file_len < HEADER_LEN + FOOTER_LEN {
        return Err(corrupt(
            path,
            0,
            Reason::FileTooSmall {
                expected: HEADER_LEN + FOOTER_LEN,
                actual: file_len,
            },
        ));
    }
    let (Some(magic), Some(version), Some(seqno), Some(stored)) = (
        get_u32_le(header, 0),
        get_u32_le(header, 4),
        get_u64_le(header, 8),
        get_u32_le(header, 16),
    ) else {
        return Err(corrupt(path, 0, Reason::Truncated));
    };
    if magic != MAGIC {
        return Err(corrupt(path, 0, Reason::BadMagic { found: magic }));
    }
    checksum(path, 16, stored, header.get(..16).unwrap_or_default())?;
    version_check(path, version)?;

    let at = file_len - FOOTER_LEN;
    let (Some(dir_offset), Some(dir_len), Some(_), Some(version), Some(magic), Some(stored)) = (
        get_u64_le(footer, 0),
        get_u64_le(footer, 8),
        get_u32_le(footer, 16),
        get_u32_le(footer, 20),
        get_u32_le(footer, 24),
        get_u32_le(footer, 28),
    ) else {
        return Err(corrupt(path, at, Reason::Truncated));
    };
    if magic != MAGIC {
        return Err(corrupt(path, at + 24, Reason::BadMagic { found: magic }));
    }
    checksum(path, at + 28, stored, footer.get(..28).unwrap_or_default())?;
    version_check(path, version)?;
    let fits = dir_offset >= HEADER_LEN
        && (4..=MAX_DIR_LEN).contains(&dir_len)
        && dir_offset.checked_add(dir_len) == Some(at);
    if !fits {
        return Err(corrupt(path, at, Reason::LengthOutOfRange));
    }
    Ok(Frame {
        seqno,
        dir_offset,
        dir_len,
    })
}

/// Decodes the directory bytes `dir` of a pack whose footer is `footer`, checking its
/// checksum, every name, and that the members tile `HEADER_LEN..frame.dir_offset` in
/// order.
///
/// # Errors
/// `Corruption` (`FileKind::Pack`, offset in the pack): `Checksum` for the directory;
/// `Truncated` if an entry is cut short or bytes follow the last; `BadEntry` for an
/// invalid or repeated name, or a pack without `CURRENT`; `LengthOutOfRange` for a member
/// that does not start where the previous one ends or runs into the directory.
pub(crate) fn decode_directory(
    dir: &[u8],
    footer: &[u8],
    frame: Frame,
    path: &Path,
) -> Result<Vec<Entry>> {
    let stored = get_u32_le(footer, 16).unwrap_or_default();
    checksum(path, frame.dir_offset, stored, dir)?;
    let base = frame.dir_offset;
    let mut cur = Cursor::new(dir);
    let at = |cur: &Cursor<'_>| base + cur.position() as u64;
    let count = cur.u32_le().map_err(|r| corrupt(path, base, r))?;
    if count as usize > cur.remaining() / (ENTRY_FIXED_LEN + 1) {
        return Err(corrupt(path, base, Reason::LengthOutOfRange));
    }
    let mut entries = Vec::with_capacity(count as usize);
    let mut names = BTreeSet::new();
    let mut end = HEADER_LEN;
    for _ in 0..count {
        let start = at(&cur);
        let field = |cur: &mut Cursor<'_>, n: usize| {
            cur.take(n)
                .map_err(|r| corrupt(path, start, r))
                .map(<[u8]>::to_vec)
        };
        let name_len = cur.u8().map_err(|r| corrupt(path, start, r))?;
        let name = field(&mut cur, usize::from(name_len))?;
        let name = String::from_utf8(name)
            .ok()
            .filter(|n| valid_name(n))
            .ok_or_else(|| corrupt(path, start, Reason::BadEntry("member name is not allowed")))?;
        if !names.insert(name.clone()) {
            return Err(corrupt(
                path,
                start,
                Reason::BadEntry("member name repeats"),
            ));
        }
        let fixed = field(&mut cur, 20)?;
        let (Some(offset), Some(len), Some(crc)) = (
            get_u64_le(&fixed, 0),
            get_u64_le(&fixed, 8),
            get_u32_le(&fixed, 16),
        ) else {
            return Err(corrupt(path, start, Reason::Truncated));
        };
        let member_end = offset.checked_add(len);
        if offset != end || member_end.is_none_or(|e| e > frame.dir_offset) {
            return Err(corrupt(path, start, Reason::LengthOutOfRange));
        }
        end = member_end.unwrap_or(end);
        entries.push(Entry {
            name,
            offset,
            len,
            crc,
        });
    }
    if !cur.is_empty() {
        return Err(corrupt(
            path,
            at(&cur),
            Reason::BadEntry("bytes after the last entry"),
        ));
    }
    if end != frame.dir_offset {
        return Err(corrupt(path, base, Reason::LengthOutOfRange));
    }
    if !names.contains(crate::files::CURRENT) {
        return Err(corrupt(
            path,
            base,
            Reason::BadEntry("the pack holds no CURRENT file"),
        ));
    }
    Ok(entries)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    /// A small pack image: two members, "CURRENT" last.
    fn sample() -> Vec<u8> {
        let mut out = encode_header(7);
        let members: [(&str, &[u8]); 2] = [("000001.wal", b"abc"), ("CURRENT", b"xyz\n")];
        let mut entries = Vec::new();
        for (name, bytes) in members {
            entries.push(Entry {
                name: name.to_string(),
                offset: out.len() as u64,
                len: bytes.len() as u64,
                crc: Checksum::of(bytes).masked(),
            });
            out.extend_from_slice(bytes);
        }
        let dir_offset = out.len() as u64;
        let dir = encode_directory(&entries);
        out.extend_from_slice(&dir);
        out.extend_from_slice(&encode_footer(dir_offset, &dir));
        out
    }

    fn decode(image: &[u8]) -> Result<(Frame, Vec<Entry>)> {
        let path = Path::new("/x.pack");
        let len = image.len() as u64;
        let header = image.get(..HEADER_LEN as usize).unwrap_or_default();
        let footer = image
            .get(image.len().saturating_sub(FOOTER_LEN as usize)..)
            .unwrap_or_default();
        let frame = decode_frame(header, footer, len, path)?;
        let dir = &image[frame.dir_offset as usize..(frame.dir_offset + frame.dir_len) as usize];
        let entries = decode_directory(dir, footer, frame, path)?;
        for e in &entries {
            let bytes = &image[e.offset as usize..(e.offset + e.len) as usize];
            checksum(path, e.offset, e.crc, bytes)?;
        }
        Ok((frame, entries))
    }

    #[test]
    fn round_trip_and_sizes_match_format_md() {
        let image = sample();
        // 20 header + 7 member bytes + 4 count + 2 entries + 32 footer.
        let dir_len = 4 + (ENTRY_FIXED_LEN + 10) + (ENTRY_FIXED_LEN + 7);
        assert_eq!(image.len(), 20 + 7 + dir_len + 32);
        // FORMAT.md §9 shows this file byte by byte.
        let hex: String = image.iter().map(|b| format!("{b:02x}")).collect();
        assert!(
            hex.starts_with("435041") && hex.contains("85d73241616263"),
            "{hex}"
        );
        assert!(hex.ends_with("99351938010000004350414ba9803e17"), "{hex}");
        let (frame, entries) = decode(&image).unwrap();
        assert_eq!(frame.seqno, 7);
        assert_eq!(frame.dir_offset, 27);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].name, "000001.wal");
        assert_eq!((entries[1].offset, entries[1].len), (23, 4));
    }

    #[test]
    fn any_flipped_byte_is_an_error() {
        let good = sample();
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x10;
            let res = decode(&bad);
            assert!(
                matches!(res, Err(Error::Corruption(ref c)) if c.file == FileKind::Pack)
                    || matches!(res, Err(Error::UnsupportedVersion { .. })),
                "byte {i}: {res:?}"
            );
        }
    }

    #[test]
    fn every_truncation_is_an_error() {
        let good = sample();
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn names_that_could_leave_the_directory_are_refused() {
        for bad in [
            "", ".", "..", "../x", "a/b", "/etc", "a\\b", ".hidden", "x\0", "é",
        ] {
            assert!(!valid_name(bad), "{bad:?}");
        }
        let long = "a".repeat(256);
        assert!(!valid_name(&long));
        for good in [
            "CURRENT",
            "MANIFEST-00000000000000000007",
            "00000000000000000012.sst",
        ] {
            assert!(valid_name(good), "{good}");
        }
    }
}
