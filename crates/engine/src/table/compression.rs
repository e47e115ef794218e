//! Stored blocks: per-block compression and the 5-byte trailer (compression type + masked
//! CRC32C) that follows every block of a table on disk (FORMAT.md §4.1).
//!
//! Owns: the [`Compression`] registry, turning a raw block into its stored form
//! ([`Compressor::seal`]) and back ([`unseal`]), and the bounds that keep a hostile file
//! from driving a large allocation. It does not know what a block holds.
//!
//! A compressed body is `raw_len: VLQ` followed by the codec's output; `raw_len` is checked
//! against [`MAX_BLOCK_LEN`] and against how far the codec can possibly expand the bytes
//! present before any output buffer is sized from it. Zstandard has no useful expansion
//! bound (one RLE block of a few bytes may stand for 128 KiB), so its output buffer starts
//! small and grows only while the decoder reports it too small, up to `raw_len`.
//!
//! Without the `zstd` Cargo feature a Zstandard [`Compressor`] cannot be made and
//! [`unseal`] returns `Error::FeatureDisabled` for a block stored with Zstandard (after its
//! checksum is verified, so damage is still reported as damage); every other codec works.
//!
//! Thread-safety: a [`Compressor`] has one owner (the writer); [`unseal`] is a pure
//! function (it uses a per-thread Zstandard context).

#[cfg(feature = "zstd")]
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;

use super::{BLOCK_TRAILER_LEN, MAX_BLOCK_LEN};
use crate::checksum::Checksum;
use crate::coding::{get_u32_le, put_vlq, Cursor};
use crate::error::{Error, FileKind, Reason, Result};

/// How a stored block's body is compressed. On-disk values; never renumbered.
///
/// The default is `None`: compression is chosen per store by the `Db`'s options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
#[repr(u8)]
pub(crate) enum Compression {
    /// The body is the raw block.
    #[default]
    None = 0,
    /// Raw Snappy (no framing), after the `raw_len` VLQ.
    Snappy = 1,
    /// One or more Zstandard frames, after the `raw_len` VLQ.
    Zstd = 2,
    /// An LZ4 block (the `lz4_flex` block format, without its own size prefix), after the
    /// `raw_len` VLQ.
    Lz4 = 3,
}

impl Compression {
    /// The compression with on-disk number `tag`, if it is one.
    pub(crate) fn from_u8(tag: u8) -> Option<Compression> {
        match tag {
            0 => Some(Compression::None),
            1 => Some(Compression::Snappy),
            2 => Some(Compression::Zstd),
            3 => Some(Compression::Lz4),
            _ => None,
        }
    }

    /// The on-disk number.
    pub(crate) fn as_u8(self) -> u8 {
        self as u8
    }
}

/// Raw Snappy decodes to under 22 bytes per compressed byte (its densest element, a 3-byte
/// copy, yields 64); 32 leaves a margin.
const SNAPPY_MAX_EXPANSION: usize = 32;

/// An LZ4 block decodes to at most 255 bytes per compressed byte (a match length is
/// extended by one byte per 255); 256 leaves a margin.
const LZ4_MAX_EXPANSION: usize = 256;

/// First output buffer for Zstandard bodies whose claim is not yet backed by output.
#[cfg(feature = "zstd")]
const ZSTD_FIRST_GUESS: usize = 64 << 10;

/// A Zstandard compression context.
#[cfg(feature = "zstd")]
type ZstdCompressor = zstd::bulk::Compressor<'static>;

/// Without the `zstd` feature there is no Zstandard context: the type has no values, so
/// code holding one is unreachable.
#[cfg(not(feature = "zstd"))]
enum ZstdCompressor {}

/// Compresses raw blocks for one writer and frames them as stored blocks.
pub(crate) struct Compressor {
    kind: Compression,
    zstd: Option<ZstdCompressor>,
    scratch: Vec<u8>,
}

impl std::fmt::Debug for Compressor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compressor")
            .field("kind", &self.kind)
            .finish()
    }
}

impl Compressor {
    /// A compressor for `kind` (`zstd_level` is used only for Zstandard).
    ///
    /// # Errors
    /// `Error::Io` if the Zstandard context cannot be created; `Error::FeatureDisabled`
    /// for Zstandard in a build without the `zstd` feature.
    pub(crate) fn new(kind: Compression, zstd_level: i32, path: &Path) -> Result<Compressor> {
        let zstd = match kind {
            #[cfg(feature = "zstd")]
            Compression::Zstd => Some(
                zstd::bulk::Compressor::new(zstd_level)
                    .map_err(|e| Error::io(path, "zstd init", e))?,
            ),
            #[cfg(not(feature = "zstd"))]
            Compression::Zstd => {
                let _ = zstd_level;
                return Err(Error::zstd_disabled(format!(
                    "writing Zstandard-compressed blocks to table file {}",
                    path.display()
                )));
            }
            _ => None,
        };
        Ok(Compressor {
            kind,
            zstd,
            scratch: Vec::new(),
        })
    }

    /// Appends the stored form of `raw` to `out`: the body (compressed if that saves at
    /// least 1/8 of `raw`, else `raw` itself), then the trailer. Returns the body length.
    ///
    /// # Errors
    /// `Error::Io` if Zstandard fails (the block is then not appended).
    pub(crate) fn seal(&mut self, raw: &[u8], out: &mut Vec<u8>, path: &Path) -> Result<usize> {
        let used = self.compress(raw, path)?;
        let body: &[u8] = if used == Compression::None {
            raw
        } else {
            &self.scratch
        };
        let start = out.len();
        out.extend_from_slice(body);
        out.push(used.as_u8());
        let crc = Checksum::of(out.get(start..).unwrap_or(&[]));
        out.extend_from_slice(&crc.masked().to_le_bytes());
        Ok(body.len())
    }

    /// Fills `scratch` with the compressed body and returns the type to store, or
    /// `Compression::None` if compression does not save enough.
    // `path` names the file in Zstandard errors only.
    #[cfg_attr(not(feature = "zstd"), allow(unused_variables))]
    fn compress(&mut self, raw: &[u8], path: &Path) -> Result<Compression> {
        if self.kind == Compression::None || raw.is_empty() {
            return Ok(Compression::None);
        }
        self.scratch.clear();
        put_vlq(&mut self.scratch, raw.len() as u64);
        match (self.kind, self.zstd.as_mut()) {
            (Compression::Snappy, _) => {
                let header = self.scratch.len();
                self.scratch
                    .resize(header + snap::raw::max_compress_len(raw.len()), 0);
                let dst = self.scratch.get_mut(header..).unwrap_or(&mut []);
                match snap::raw::Encoder::new().compress(raw, dst) {
                    Ok(n) => self.scratch.truncate(header + n),
                    Err(_) => return Ok(Compression::None),
                }
            }
            (Compression::Lz4, _) => {
                self.scratch
                    .extend_from_slice(&lz4_flex::block::compress(raw));
            }
            #[cfg(feature = "zstd")]
            (Compression::Zstd, Some(z)) => {
                let frame = z
                    .compress(raw)
                    .map_err(|e| Error::io(path, "zstd compress", e))?;
                self.scratch.extend_from_slice(&frame);
            }
            #[cfg(not(feature = "zstd"))]
            (Compression::Zstd, Some(z)) => match *z {},
            _ => return Ok(Compression::None),
        }
        if self.scratch.len() <= raw.len() - raw.len() / 8 {
            Ok(self.kind)
        } else {
            Ok(Compression::None)
        }
    }
}

/// Checks the trailer of the stored block at `offset` of the table file `path` (`stored` =
/// body then trailer) and returns the raw block.
///
/// # Errors
/// `Error::Corruption` (a table file, at `offset`) with `Truncated` if there is no room for
/// a trailer, `Checksum` if the CRC does not match, `BadTag` for an unknown compression
/// type, `LengthOutOfRange` or `Decompress` for a body that claims too much or does not
/// decode to exactly its claimed length; `Error::FeatureDisabled` for a sound Zstandard
/// block in a build without the `zstd` feature.
pub(crate) fn unseal(stored: &[u8], path: &Path, offset: u64) -> Result<Arc<[u8]>> {
    let corrupt = |reason| Error::corruption(FileKind::Table, path, offset, reason);
    let (kind, body) = check_trailer(stored).map_err(corrupt)?;
    #[cfg(not(feature = "zstd"))]
    if kind == Compression::Zstd {
        return Err(Error::zstd_disabled(format!(
            "reading the Zstandard-compressed block at byte {offset} of table file {}",
            path.display()
        )));
    }
    decode_body(kind, body).map_err(corrupt)
}

/// For a stored block kept without compression, the length of its body (the raw block,
/// which starts the stored bytes), once the trailer's checksum is checked if `verify`;
/// `None` for a compressed block (whose trailer [`unseal`] checks).
///
/// # Errors
/// `Truncated` for bytes too short to hold a trailer; `Checksum` if `verify` and the
/// checksum does not match.
pub(crate) fn raw_len_in_place(
    stored: &[u8],
    verify: bool,
) -> std::result::Result<Option<usize>, Reason> {
    let body_len = stored
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or(Reason::Truncated)?;
    if stored.get(body_len) != Some(&(Compression::None as u8)) {
        return Ok(None);
    }
    if verify {
        check_trailer(stored)?;
    }
    Ok(Some(body_len))
}

/// Checks the trailer of `stored` (its length, CRC and compression type) and returns the
/// compression type and the body.
fn check_trailer(stored: &[u8]) -> std::result::Result<(Compression, &[u8]), Reason> {
    let body_len = stored
        .len()
        .checked_sub(BLOCK_TRAILER_LEN)
        .ok_or(Reason::Truncated)?;
    let covered = stored.get(..=body_len).ok_or(Reason::Truncated)?;
    // The checksum is computed before the stored one is read: the block is then read
    // from its start, in order, where a read of its end first would miss on a line
    // (often on a page) no prefetcher has asked for yet.
    let computed = Checksum::of(covered).masked();
    let stored_crc = get_u32_le(stored, body_len + 1).ok_or(Reason::Truncated)?;
    if computed != stored_crc {
        return Err(Reason::Checksum {
            stored: stored_crc,
            computed,
        });
    }
    let (body, tag) = covered.split_at(body_len);
    let tag = tag.first().copied().unwrap_or(0xff);
    let kind = Compression::from_u8(tag).ok_or(Reason::BadTag(tag))?;
    Ok((kind, body))
}

/// Decodes a checked block body of compression `kind` into the raw block, in the one
/// allocation the block then lives in (Snappy and LZ4 decode straight into it).
fn decode_body(kind: Compression, body: &[u8]) -> std::result::Result<Arc<[u8]>, Reason> {
    if body.len() > MAX_BLOCK_LEN {
        return Err(Reason::LengthOutOfRange);
    }
    if kind == Compression::None {
        return Ok(Arc::from(body));
    }
    let mut cur = Cursor::new(body);
    let raw_len = usize::try_from(cur.vlq()?).map_err(|_| Reason::LengthOutOfRange)?;
    let input = body.get(cur.position()..).unwrap_or(&[]);
    if raw_len > MAX_BLOCK_LEN {
        return Err(Reason::LengthOutOfRange);
    }
    let bound = match kind {
        Compression::Snappy => input.len().saturating_mul(SNAPPY_MAX_EXPANSION),
        Compression::Lz4 => input.len().saturating_mul(LZ4_MAX_EXPANSION),
        _ => usize::MAX,
    };
    if raw_len > bound {
        return Err(Reason::Decompress(format!(
            "block claims {raw_len} bytes, more than its {} compressed bytes can hold",
            input.len()
        )));
    }
    let (out, n) = match kind {
        Compression::Snappy => {
            let claimed =
                snap::raw::decompress_len(input).map_err(|e| Reason::Decompress(e.to_string()))?;
            if claimed != raw_len {
                return Err(wrong_len(raw_len, claimed));
            }
            let mut out = zeroed(raw_len);
            let n = snap::raw::Decoder::new()
                .decompress(input, fill(&mut out)?)
                .map_err(|e| Reason::Decompress(e.to_string()))?;
            (out, n)
        }
        Compression::Lz4 => {
            let mut out = zeroed(raw_len);
            let n = lz4_flex::block::decompress_into(input, fill(&mut out)?)
                .map_err(|e| Reason::Decompress(e.to_string()))?;
            (out, n)
        }
        _ => {
            let out = zstd_decompress(input, raw_len)?;
            let n = out.len();
            (Arc::from(out), n)
        }
    };
    if n != raw_len {
        return Err(wrong_len(raw_len, n));
    }
    Ok(out)
}

/// `len` zero bytes in a new shared allocation (written in place: one allocation, no
/// copy).
fn zeroed(len: usize) -> Arc<[u8]> {
    std::iter::repeat_n(0u8, len).collect()
}

/// The bytes of an allocation [`zeroed`] has just made, to decode into.
fn fill(out: &mut Arc<[u8]>) -> std::result::Result<&mut [u8], Reason> {
    Arc::get_mut(out).ok_or_else(|| Reason::Decompress("block buffer is shared".into()))
}

fn wrong_len(claimed: usize, got: usize) -> Reason {
    Reason::Decompress(format!("block claims {claimed} bytes but decodes to {got}"))
}

#[cfg(feature = "zstd")]
thread_local! {
    static ZSTD: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

/// Without the `zstd` feature [`unseal`] refuses Zstandard blocks before decoding them, so
/// this is never reached; it fails rather than guess.
#[cfg(not(feature = "zstd"))]
fn zstd_decompress(_input: &[u8], _raw_len: usize) -> std::result::Result<Vec<u8>, Reason> {
    Err(Reason::Decompress(
        "Zstandard support is not compiled in (the \"zstd\" feature)".into(),
    ))
}

/// Decodes Zstandard frames into a buffer that grows only as real output needs it.
#[cfg(feature = "zstd")]
fn zstd_decompress(input: &[u8], raw_len: usize) -> std::result::Result<Vec<u8>, Reason> {
    use zstd::zstd_safe::zstd_sys::ZSTD_ErrorCode;
    let too_small = 0usize.wrapping_sub(ZSTD_ErrorCode::ZSTD_error_dstSize_tooSmall as usize);
    let mut capacity = raw_len.min(input.len().saturating_mul(64).max(ZSTD_FIRST_GUESS));
    ZSTD.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = zstd::zstd_safe::DCtx::try_create();
        }
        let dctx = slot
            .as_mut()
            .ok_or_else(|| Reason::Decompress("cannot create a zstd context".into()))?;
        loop {
            let mut out: Vec<u8> = Vec::with_capacity(capacity);
            match dctx.decompress(&mut out, input) {
                Ok(_) => return Ok(out),
                Err(code) if code == too_small && capacity < raw_len => {
                    capacity = raw_len.min(capacity.saturating_mul(4));
                }
                Err(code) if code == too_small => {
                    return Err(Reason::Decompress(format!(
                        "block decodes to more than its claimed {raw_len} bytes"
                    )))
                }
                Err(code) => {
                    return Err(Reason::Decompress(
                        zstd::zstd_safe::get_error_name(code).to_string(),
                    ))
                }
            }
        }
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;

    /// [`super::unseal`] with the damage as its `Reason`.
    fn unseal(stored: &[u8]) -> std::result::Result<Vec<u8>, Reason> {
        super::unseal(stored, Path::new("t"), 0)
            .map(|raw| raw.to_vec())
            .map_err(|e| match e {
                Error::Corruption(c) => c.reason,
                other => panic!("not corruption: {other:?}"),
            })
    }

    /// Every registered compression, in on-disk order.
    const ALL: [Compression; 4] = [
        Compression::None,
        Compression::Snappy,
        Compression::Zstd,
        Compression::Lz4,
    ];

    /// The compressions this build can write and read.
    const BUILT: &[Compression] = &[
        Compression::None,
        Compression::Snappy,
        #[cfg(feature = "zstd")]
        Compression::Zstd,
        Compression::Lz4,
    ];

    fn seal(kind: Compression, raw: &[u8]) -> Vec<u8> {
        let mut c = Compressor::new(kind, 3, Path::new("t")).unwrap();
        let mut out = Vec::new();
        let body = c.seal(raw, &mut out, Path::new("t")).unwrap();
        assert_eq!(out.len(), body + BLOCK_TRAILER_LEN);
        out
    }

    #[test]
    fn registry_is_stable() {
        for (i, kind) in ALL.iter().enumerate() {
            assert_eq!(kind.as_u8() as usize, i);
            assert_eq!(Compression::from_u8(i as u8), Some(*kind));
        }
        assert_eq!(Compression::from_u8(4), None);
        assert_eq!(Compression::default(), Compression::None);
    }

    #[test]
    fn every_codec_round_trips_and_only_keeps_real_savings() {
        let text: Vec<u8> = b"cairn cairn cairn stones ".repeat(200);
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let noise: Vec<u8> = (0..5000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        for &kind in BUILT {
            for raw in [&text[..], &noise[..], b"", b"x"] {
                let stored = seal(kind, raw);
                assert_eq!(unseal(&stored).unwrap(), raw, "{kind:?}");
                let tag = stored[stored.len() - BLOCK_TRAILER_LEN];
                if raw.len() < 8 || std::ptr::eq(raw, &noise[..]) {
                    assert_eq!(tag, 0, "{kind:?} must store incompressible data raw");
                } else if kind != Compression::None {
                    assert_eq!(tag, kind.as_u8());
                    assert!(stored.len() < raw.len() / 2);
                }
            }
        }
    }

    #[test]
    fn any_flipped_bit_is_a_checksum_error() {
        for &kind in BUILT {
            let stored = seal(kind, &b"abcabcabcabcabcabc".repeat(20));
            for i in 0..stored.len() * 8 {
                let mut bad = stored.clone();
                bad[i / 8] ^= 1 << (i % 8);
                assert!(
                    matches!(unseal(&bad), Err(Reason::Checksum { .. })),
                    "{kind:?} bit {i}"
                );
            }
            for cut in 0..stored.len() {
                assert!(unseal(&stored[..cut]).is_err(), "{kind:?} cut {cut}");
            }
        }
    }

    /// Re-seals a hand-made body with a valid trailer, as a hostile writer would.
    fn forge(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = body.to_vec();
        out.push(tag);
        let crc = Checksum::of(&out).masked();
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    #[test]
    fn hostile_bodies_are_refused_before_allocating() {
        assert_eq!(unseal(&forge(9, b"x")), Err(Reason::BadTag(9)));
        for tag in BUILT.iter().map(|c| c.as_u8()).filter(|&t| t != 0) {
            // Claims 64 MiB + 1 from 3 bytes.
            let mut body = Vec::new();
            put_vlq(&mut body, (MAX_BLOCK_LEN + 1) as u64);
            body.extend_from_slice(&[0, 0, 0]);
            assert_eq!(unseal(&forge(tag, &body)), Err(Reason::LengthOutOfRange));
            // Claims 1 MiB from 3 bytes: beyond Snappy's and LZ4's expansion; Zstandard
            // decodes garbage and fails without allocating the claim up front.
            let mut body = Vec::new();
            put_vlq(&mut body, 1 << 20);
            body.extend_from_slice(&[1, 2, 3]);
            assert!(matches!(
                unseal(&forge(tag, &body)),
                Err(Reason::Decompress(_))
            ));
            // A claim that disagrees with the real length.
            let mut good = seal(Compression::from_u8(tag).unwrap(), &b"aaaa".repeat(100));
            let body_len = good.len() - BLOCK_TRAILER_LEN;
            good[0] ^= 1; // raw_len 400 -> 401 (VLQ 0x90 0x03 -> 0x91 0x03)
            let bad = forge(tag, &good[..body_len]);
            assert!(
                matches!(unseal(&bad), Err(Reason::Decompress(_))),
                "tag {tag}"
            );
        }
    }

    /// Without the `zstd` feature a Zstandard block is refused as unsupported, not as
    /// damage, once its checksum holds; a damaged one is still a checksum error.
    #[cfg(not(feature = "zstd"))]
    #[test]
    fn zstd_blocks_need_the_feature() {
        let mut body = Vec::new();
        put_vlq(&mut body, 400);
        body.extend_from_slice(b"some frame");
        let stored = forge(Compression::Zstd.as_u8(), &body);
        let err = super::unseal(&stored, Path::new("t.sst"), 77).unwrap_err();
        assert!(
            matches!(&err, Error::FeatureDisabled { feature: "zstd", what } if what.contains("t.sst")),
            "{err:?}"
        );
        let mut bad = stored.clone();
        bad[0] ^= 1;
        assert!(matches!(unseal(&bad), Err(Reason::Checksum { .. })));
        assert!(matches!(
            Compressor::new(Compression::Zstd, 3, Path::new("t.sst")),
            Err(Error::FeatureDisabled { .. })
        ));
    }
}
