//! [`Fences`]: an in-memory search aid for a table's index block, built when the table is
//! opened, so a seek touches one small contiguous array instead of decoding a restart key
//! (two cache misses: the restart array, then the entry) at every step of a binary search.
//!
//! For every restart point `i` of the block, `fence[i]` is the 8 bytes of the restart key's
//! user key that follow `common`, the prefix shared by the block's first and last user
//! keys, zero-padded and read big-endian. User keys are taken as
//! [`compare_encoded`](crate::key::compare_encoded) takes them (an encoded key shorter than
//! a trailer is all user key), so the fences agree with the block's order.
//!
//! Invariants:
//! 1. Every user key of the block starts with `common`: it sorts between the first and
//!    the last, which both start with it.
//! 2. For user keys `a` and `b` that start with `common`, `fence(a) < fence(b)` implies
//!    `a < b`. Zero padding keeps this true for keys shorter than `common + 8` bytes: a
//!    padded zero can only be below, never above, a real byte of the other key. So fences
//!    narrow a search, and only keys with equal fences need a full comparison.
//! 3. Fences never decide an answer alone: [`Fences::candidates`] returns a range of
//!    restart points that the caller still searches by full keys, so a fence that a
//!    damaged block would make wrong costs time, never a wrong answer beyond what the
//!    block's own (checksummed) order gives.
//! 4. Keys often share more than 8 bytes past `common` in stretches: a table of
//!    `counter:…` and `key:…` keys has no common prefix, and every key of each family has
//!    the same first 8 bytes. A run of at least [`RUN_MIN`] equal fences keeps fences of
//!    its own one level down, past the run's own common prefix (up to [`RUN_DEPTH`]
//!    levels), so [`Fences::first_at_or_after`] still decides a point lookup there and
//!    [`Fences::candidates`] narrows a seek to the run's own candidates. Every
//!    entry of a run lies between the run's first and last keys, so invariants 1 and 2
//!    hold inside it; entries before the run have smaller fences and entries after it
//!    larger ones, so a target with the run's fence lies within the run's reach.
//!
//! Thread-safety: immutable after [`Fences::build`]; `Send + Sync`.

use crate::error::Reason;
use crate::key::user_key_of;

/// What fences are built from: a block's restart points and the full key at each
/// (`block::Block` is one), so this module needs nothing else of a block.
pub(crate) trait RestartKeys {
    /// Restart points (at least 1).
    fn restart_count(&self) -> usize;

    /// The full key stored at restart point `i`.
    ///
    /// # Errors
    /// The block's own decoding errors, for a restart entry that does not decode.
    fn restart_key_at(&self, i: usize) -> Result<&[u8], Reason>;
}

/// The 8 bytes of `user` after `skip` bytes, zero-padded, big-endian.
#[allow(clippy::big_endian_bytes)] // big-endian, so integer order is byte order; never stored
fn fence_of(user: &[u8], skip: usize) -> u64 {
    let mut bytes = [0u8; 8];
    for (dst, src) in bytes.iter_mut().zip(user.iter().skip(skip)) {
        *dst = *src;
    }
    u64::from_be_bytes(bytes)
}

/// Fewest equal fences in a row that get fences of their own (invariant 4): shorter runs
/// are searched by their keys, a comparison or two.
const RUN_MIN: usize = 4;

/// Levels of runs within runs (invariant 4): fences then tell apart keys that share up
/// to `8 * RUN_DEPTH` bytes past the block's common prefix.
const RUN_DEPTH: usize = 3;

/// The fences of one block's restart points; see the module documentation.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fences {
    common: Vec<u8>,
    fences: Vec<u64>,
    /// The runs of at least [`RUN_MIN`] equal fences, by position, each with the fences of
    /// its entries one level down (invariant 4).
    runs: Vec<Run>,
}

/// A run of equal fences starting at `start` (invariant 4).
#[derive(Debug, Clone)]
struct Run {
    start: usize,
    inner: Fences,
}

/// Where a user key falls among a [`Fences`]' fences.
enum Place<'a> {
    /// Every entry before this position has a smaller fence, the one at it a larger one.
    Decided(usize),
    /// The run starting at this position has the key's fence and these fences of its own.
    Run(usize, &'a Fences),
    /// Some entry has the key's fence and no run's fences tell them apart.
    Tie,
}

impl Fences {
    /// The fences of every restart point of `block`.
    ///
    /// # Errors
    /// The block's own decoding errors, for a restart entry that does not decode.
    pub(crate) fn build(block: &impl RestartKeys) -> Result<Fences, Reason> {
        Fences::build_range(block, 0, block.restart_count(), RUN_DEPTH)
    }

    /// The fences of restart points `from..to` (at least one), with runs down to `depth`
    /// more levels.
    fn build_range(
        block: &impl RestartKeys,
        from: usize,
        to: usize,
        depth: usize,
    ) -> Result<Fences, Reason> {
        let first = user_key_of(block.restart_key_at(from)?).to_vec();
        let last = user_key_of(block.restart_key_at(to.saturating_sub(1).max(from))?);
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        let mut common = first;
        common.truncate(shared);
        let mut fences = Vec::with_capacity(to.saturating_sub(from));
        for i in from..to {
            let user = user_key_of(block.restart_key_at(i)?);
            fences.push(fence_of(user, common.len()));
        }
        let mut runs = Vec::new();
        if depth > 0 {
            let mut start = 0;
            while start < fences.len() {
                let fence = fences.get(start).copied();
                let len = fences.get(start..).map_or(0, |rest| {
                    rest.iter().take_while(|&&f| Some(f) == fence).count()
                });
                if len >= RUN_MIN {
                    let inner =
                        Fences::build_range(block, from + start, from + start + len, depth - 1)?;
                    runs.push(Run { start, inner });
                }
                start += len.max(1);
            }
        }
        Ok(Fences {
            common,
            fences,
            runs,
        })
    }

    /// Bytes the fences hold: the common prefix and one 8-byte fence per restart point,
    /// and the same for every run's fences.
    pub(crate) fn len(&self) -> usize {
        self.common.len()
            + self.fences.len() * std::mem::size_of::<u64>()
            + self
                .runs
                .iter()
                .map(|r| std::mem::size_of::<Run>() + r.inner.len())
                .sum::<usize>()
    }

    /// The restart points `[lo, hi]` that can hold the last restart key below `target` (an
    /// encoded key or seek probe), or restart 0 when no restart key is below it: every
    /// restart before `lo` has a user key below `target`'s, and every one after `hi` a user
    /// key above it.
    pub(crate) fn candidates(&self, target: &[u8]) -> (usize, usize) {
        let (lo, hi) = candidates_in(&self.common, &self.fences, fence_of, target);
        if lo == hi || self.runs.is_empty() {
            return (lo, hi);
        }
        self.within_run(target).unwrap_or((lo, hi))
    }

    /// [`Fences::candidates`] from the fences of the run whose fence is `target`'s, if
    /// there is one (invariant 4). The run's own candidates are the restart points of the
    /// run that can hold the last key below `target`; when that may be none of them (its
    /// first), the last restart before the run can, as everything before the run is below.
    fn within_run(&self, target: &[u8]) -> Option<(usize, usize)> {
        let user = user_key_of(target);
        user.strip_prefix(self.common.as_slice())?;
        let Place::Run(below, run) = self.place(user) else {
            return None;
        };
        let (lo, hi) = run.candidates(target);
        let lo = if lo == 0 {
            below.saturating_sub(1)
        } else {
            below + lo
        };
        Some((lo, below + hi))
    }

    /// Where `user` (which starts with `common`) falls among the fences (invariant 4).
    fn place(&self, user: &[u8]) -> Place<'_> {
        let t = fence_of(user, self.common.len());
        let below = self.fences.partition_point(|&f| f < t);
        if self.fences.get(below) != Some(&t) {
            return Place::Decided(below);
        }
        match self.runs.binary_search_by_key(&below, |r| r.start) {
            Ok(i) => self
                .runs
                .get(i)
                .map_or(Place::Tie, |r| Place::Run(below, &r.inner)),
            Err(_) => Place::Tie,
        }
    }

    /// For a block with a restart at every entry (an index block): the position of the
    /// first entry `>=` `target` (the entry count if none is), when the fences alone
    /// decide it, i.e. when no fence equals the target's; `None` otherwise, and the
    /// caller searches the keys. By invariant 2 every entry before the position has a user
    /// key below `target`'s and the entry at it one above, whatever their trailers.
    pub(crate) fn first_at_or_after(&self, target: &[u8]) -> Option<usize> {
        self.first_at_or_after_user(user_key_of(target))
    }

    /// [`Fences::first_at_or_after`] for the user key `user`; where a run of fences equal
    /// to the target's has fences of its own, they decide (invariant 4).
    fn first_at_or_after_user(&self, user: &[u8]) -> Option<usize> {
        match user.strip_prefix(self.common.as_slice()) {
            Some(_) => match self.place(user) {
                Place::Decided(at) => Some(at),
                Place::Run(below, run) => Some(below + run.first_at_or_after_user(user)?),
                Place::Tie => None,
            },
            None if user < self.common.as_slice() => Some(0),
            None => Some(self.fences.len()),
        }
    }
}

/// Restart points a [`Guide`] covers at most.
pub(crate) const GUIDE_MAX: usize = 16;

/// Longest common prefix a [`Guide`] keeps.
const GUIDE_COMMON: usize = 22;

/// The fences of a small block, kept inline in the block's header: a seek in a data block
/// picks its restart interval from the header it has just touched, instead of reading the
/// restart array and then restart keys, each a dependent cache miss.
///
/// Each fence is the first 4 bytes of [`fence_of`]'s 8 (a prefix of a big-endian integer
/// orders the same way, more coarsely), so the invariants of [`Fences`] hold as they are:
/// only equal fences need full comparisons. Blocks with more than [`GUIDE_MAX`] restart
/// points, or whose first and last keys share more than 22 bytes, have no guide and are
/// searched by their restart keys.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Guide {
    len: u8,
    common_len: u8,
    common: [u8; GUIDE_COMMON],
    fences: [u32; GUIDE_MAX],
}

/// The first 4 bytes of [`fence_of`].
fn short_fence(user: &[u8], skip: usize) -> u32 {
    (fence_of(user, skip) >> 32) as u32
}

impl Guide {
    /// The guide of `block`, or `None` if the block is too large for one (see above).
    ///
    /// # Errors
    /// The block's own decoding errors, for a restart entry that does not decode.
    pub(crate) fn build(block: &impl RestartKeys) -> Result<Option<Guide>, Reason> {
        let count = block.restart_count();
        if count > GUIDE_MAX {
            return Ok(None);
        }
        let first = user_key_of(block.restart_key_at(0)?);
        let last = user_key_of(block.restart_key_at(count.saturating_sub(1))?);
        let shared = first.iter().zip(last).take_while(|(a, b)| a == b).count();
        if shared > GUIDE_COMMON {
            return Ok(None);
        }
        let mut guide = Guide {
            len: count as u8,
            common_len: shared as u8,
            common: [0; GUIDE_COMMON],
            fences: [0; GUIDE_MAX],
        };
        for (dst, src) in guide.common.iter_mut().zip(first.iter().take(shared)) {
            *dst = *src;
        }
        for i in 0..count {
            let user = user_key_of(block.restart_key_at(i)?);
            if let Some(f) = guide.fences.get_mut(i) {
                *f = short_fence(user, shared);
            }
        }
        Ok(Some(guide))
    }

    /// As [`Fences::candidates`].
    pub(crate) fn candidates(&self, target: &[u8]) -> (usize, usize) {
        let common = self
            .common
            .get(..usize::from(self.common_len))
            .unwrap_or(&[]);
        let fences = self.fences.get(..usize::from(self.len)).unwrap_or(&[]);
        candidates_in(common, fences, short_fence, target)
    }
}

/// [`Fences::candidates`] over `fences` (one per restart point, made by `fence` from a
/// user key and the length of `common`).
fn candidates_in<F: Ord + Copy>(
    common: &[u8],
    fences: &[F],
    fence: impl Fn(&[u8], usize) -> F,
    target: &[u8],
) -> (usize, usize) {
    let last = fences.len().saturating_sub(1);
    let user = user_key_of(target);
    let (below, not_above) = match user.strip_prefix(common) {
        Some(_) => {
            let t = fence(user, common.len());
            let below = fences.partition_point(|&f| f < t);
            // A second search only when some fence equals the target's.
            let not_above = if fences.get(below) == Some(&t) {
                fences.partition_point(|&f| f <= t)
            } else {
                below
            };
            (below, not_above)
        }
        // Not starting with `common`: below every key of the block, or above all.
        None if user < common => (0, 0),
        None => (fences.len(), fences.len()),
    };
    let lo = below.saturating_sub(1).min(last);
    let hi = not_above.saturating_sub(1).clamp(lo, last);
    (lo, hi)
}

#[cfg(test)]
#[path = "fences_tests.rs"]
mod tests;
