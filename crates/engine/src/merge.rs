//! Merge operators: a keyspace's rule for combining the operands written with
//! [`crate::Keyspace::merge`] into a value, applied when the value is read and when
//! compaction rewrites the key, so an append or a counter update needs no read.
//!
//! Owns: the public [`MergeOperator`] trait, the two built-in operators ([`Append`],
//! [`AddI64`]), the per-keyspace registry of the operators an open store uses
//! ([`Registry`]), and [`Chain`], which collects one key's versions newest first and
//! merges them. Does not own where the versions come from (`db/read.rs`,
//! `iter/visible.rs`, `compaction/stream.rs`) nor their encoding (`Kind::Merge`,
//! `BATCH_FORMAT.md`).
//!
//! Semantics (docs/DESIGN.md, "Merge operators"): the value of a key whose newest visible
//! version is a merge operand is `full_merge(key, base, operands)`, where the operands
//! are every operand from the newest down to (not including) the *base*, oldest first,
//! and the base is the first older version that is not an operand: a put's value, or
//! `None` for a tombstone, an expired entry, a version a range tombstone hides, or no
//! older version at all. The merged value carries the base's attributes (tag, metadata,
//! expiry; none without a base) and the newest operand's seqno.
//!
//! Invariants:
//! 1. Operators must be deterministic and, where they implement `partial_merge`,
//!    associative: `full_merge(b, [x, y]) == full_merge(b, [partial_merge(x, y)])`.
//!    Compaction relies on this to combine operands; readers on the determinism.
//! 2. An operator's name is recorded with its keyspace in the manifest; a store whose
//!    keyspace recorded another name refuses to open that keyspace with a different
//!    operator, and without one it refuses to read operands (`Registry`).
//! 3. A failing `full_merge` loses nothing: reads report [`Error::MergeFailed`], and
//!    compaction keeps the operands as they were.
//!
//! Thread-safety: operators are `Send + Sync` and called from any thread, concurrently.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::error::{Error, Result};
use crate::key::KeyspaceId;

/// A keyspace's rule for combining merge operands into a value; register one with
/// [`crate::KeyspaceOptions::merge_operator`].
///
/// Operands are what [`crate::Keyspace::merge`] wrote. Implementations must be
/// deterministic (every read and every compaction must compute the same value) and, where
/// they implement [`MergeOperator::partial_merge`], associative.
///
/// ```
/// use std::sync::Arc;
/// use cairn::{Db, KeyspaceOptions, MergeOperator, Options};
///
/// /// Keeps the largest operand (byte order).
/// struct Max;
///
/// impl MergeOperator for Max {
///     fn name(&self) -> &str {
///         "example.max"
///     }
///     fn full_merge(&self, _key: &[u8], existing: Option<&[u8]>, operands: &[&[u8]]) -> Result<Vec<u8>, String> {
///         Ok(operands.iter().copied().chain(existing).max().unwrap_or_default().to_vec())
///     }
///     fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
///         Some(older.max(newer).to_vec())
///     }
/// }
///
/// # fn main() -> cairn::Result<()> {
/// # let dir = tempfile::tempdir().map_err(|e| cairn::Error::InvalidArgument(e.to_string()))?;
/// let db = Db::open(dir.path(), Options::default())?;
/// let scores = db.keyspace_with("scores", KeyspaceOptions::default().merge_operator(Arc::new(Max)))?;
/// scores.merge("ada", "17")?;
/// scores.merge("ada", "42")?;
/// scores.merge("ada", "23")?;
/// assert_eq!(scores.get("ada")?, Some(b"42".to_vec()));
/// # Ok(())
/// # }
/// ```
pub trait MergeOperator: Send + Sync {
    /// The operator's name, recorded with the keyspace: a later open must register an
    /// operator of the same name to read the operands. Change it when the meaning of the
    /// operands changes.
    fn name(&self) -> &str;

    /// The value of `key` given its base value `existing` (`None`: the key had no value
    /// under the operands) and the `operands` written on top of it, oldest first (at
    /// least one).
    ///
    /// # Errors
    /// A message saying why the operands cannot be combined (reads then fail with
    /// [`Error::MergeFailed`]; nothing is lost).
    fn full_merge(
        &self,
        key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String>;

    /// One operand equivalent to `older` followed by `newer`, without the base, or `None`
    /// if the operator cannot combine them (the default). Compaction uses it to keep one
    /// operand where it cannot reach the base.
    fn partial_merge(&self, key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        let _ = (key, older, newer);
        None
    }

    /// Checks an operand when it is written, so a malformed one is refused then rather
    /// than failing every later read. The default accepts every operand.
    ///
    /// # Errors
    /// A message saying why the operand is refused ([`crate::Keyspace::merge`] then
    /// returns `InvalidArgument`).
    fn check_operand(&self, key: &[u8], operand: &[u8]) -> std::result::Result<(), String> {
        let _ = (key, operand);
        Ok(())
    }
}

impl fmt::Debug for dyn MergeOperator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MergeOperator")
            .field("name", &self.name())
            .finish()
    }
}

/// The built-in operator the C and Python bindings name with `name`: `"cairn.add_i64"`
/// ([`AddI64`]) or `"cairn.append"` ([`Append`], with `separator` between parts; empty
/// for none).
///
/// # Errors
/// [`Error::InvalidArgument`] for another name, or a separator with `cairn.add_i64`.
pub fn builtin_merge_operator(name: &str, separator: &[u8]) -> Result<Arc<dyn MergeOperator>> {
    match name {
        "cairn.add_i64" if separator.is_empty() => Ok(Arc::new(AddI64)),
        "cairn.add_i64" => Err(Error::invalid("cairn.add_i64 takes no separator")),
        "cairn.append" => Ok(Arc::new(Append::with_separator(separator))),
        other => Err(Error::invalid(format!(
            "unknown merge operator {other:?} (\"cairn.add_i64\" or \"cairn.append\")"
        ))),
    }
}

/// Concatenates operands onto the value, with an optional separator between parts: an
/// append-only log or list per key. Name `cairn.append`, or `cairn.append/<separator in
/// hex>` with a separator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Append {
    separator: Vec<u8>,
    name: String,
}

impl Append {
    /// Plain concatenation.
    pub fn new() -> Append {
        Append::with_separator(Vec::new())
    }

    /// Concatenation with `separator` between the value and each operand (none before the
    /// first part of a key without a base).
    pub fn with_separator(separator: impl Into<Vec<u8>>) -> Append {
        let separator = separator.into();
        let mut name = String::from("cairn.append");
        if !separator.is_empty() {
            name.push('/');
            for b in &separator {
                name.push_str(&format!("{b:02x}"));
            }
        }
        Append { separator, name }
    }

    /// The separator.
    pub fn separator(&self) -> &[u8] {
        &self.separator
    }

    fn join<'a>(&self, parts: impl Iterator<Item = &'a [u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, part) in parts.enumerate() {
            if i > 0 {
                out.extend_from_slice(&self.separator);
            }
            out.extend_from_slice(part);
        }
        out
    }
}

impl Default for Append {
    fn default() -> Append {
        Append::new()
    }
}

impl MergeOperator for Append {
    fn name(&self) -> &str {
        &self.name
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        Ok(self.join(existing.into_iter().chain(operands.iter().copied())))
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        Some(self.join([older, newer].into_iter()))
    }
}

/// Adds `i64` operands to a counter held as canonical decimal text, the format of
/// [`crate::Keyspace::incr`] (`b"-5"`, `b"42"`): `merge(key, "5")` adds 5 with no read,
/// and `incr`, `get` and merges may be mixed on one key. A missing base counts as 0.
/// Operands must be canonical text (checked when written); a base that is not a counter
/// or a sum leaving `i64` makes the read fail with [`Error::MergeFailed`]. Name
/// `cairn.add_i64`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AddI64;

impl AddI64 {
    fn number(what: &str, bytes: &[u8]) -> std::result::Result<i64, String> {
        // The counter format of `db/counter.rs`: exactly one spelling per number.
        let parsed = std::str::from_utf8(bytes)
            .ok()
            .filter(|t| t.len() <= 20)
            .and_then(|t| t.parse::<i64>().ok())
            .filter(|n| n.to_string().as_bytes() == bytes);
        parsed.ok_or_else(|| {
            format!(
                "{what} {:?} is not the canonical decimal text of an i64",
                String::from_utf8_lossy(bytes.get(..32).unwrap_or(bytes))
            )
        })
    }
}

impl MergeOperator for AddI64 {
    fn name(&self) -> &str {
        "cairn.add_i64"
    }

    fn full_merge(
        &self,
        _key: &[u8],
        existing: Option<&[u8]>,
        operands: &[&[u8]],
    ) -> std::result::Result<Vec<u8>, String> {
        let mut sum = match existing {
            Some(v) => AddI64::number("the value", v)?,
            None => 0,
        };
        for op in operands {
            let n = AddI64::number("an operand", op)?;
            sum = sum
                .checked_add(n)
                .ok_or_else(|| format!("adding {n} to {sum} leaves the range of i64"))?;
        }
        Ok(sum.to_string().into_bytes())
    }

    fn partial_merge(&self, _key: &[u8], older: &[u8], newer: &[u8]) -> Option<Vec<u8>> {
        let a = AddI64::number("an operand", older).ok()?;
        let b = AddI64::number("an operand", newer).ok()?;
        Some(a.checked_add(b)?.to_string().into_bytes())
    }

    fn check_operand(&self, _key: &[u8], operand: &[u8]) -> std::result::Result<(), String> {
        AddI64::number("the operand", operand).map(|_| ())
    }
}

/// The operator registered for each keyspace of an open store (invariant 2). Reads and
/// compactions look it up only when they meet an operand.
#[derive(Default)]
pub(crate) struct Registry {
    operators: RwLock<HashMap<KeyspaceId, Arc<dyn MergeOperator>>>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<(KeyspaceId, String)> = self
            .operators
            .read()
            .iter()
            .map(|(k, o)| (*k, o.name().to_owned()))
            .collect();
        f.debug_struct("Registry")
            .field("operators", &names)
            .finish()
    }
}

impl Registry {
    /// Registers `operator` for `keyspace`, replacing any earlier one.
    pub(crate) fn register(&self, keyspace: KeyspaceId, operator: Arc<dyn MergeOperator>) {
        self.operators.write().insert(keyspace, operator);
    }

    /// The operator of `keyspace`, if one is registered.
    pub(crate) fn get(&self, keyspace: KeyspaceId) -> Option<Arc<dyn MergeOperator>> {
        self.operators.read().get(&keyspace).cloned()
    }
}

/// The error for merge operands met in a keyspace without an operator.
pub(crate) fn missing(keyspace: &str) -> Error {
    Error::invalid(format!(
        "keyspace {keyspace:?} holds merge operands but no merge operator is registered for \
         it; open it with KeyspaceOptions::merge_operator (the operator named in its \
         recorded options)"
    ))
}

/// The version a merge chain ends at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Base<'a> {
    /// No value under the operands (a tombstone, an expired or range-deleted version, or
    /// nothing older).
    None,
    /// A value.
    Value(&'a [u8]),
}

/// The operands of one key collected newest first, as readers and compaction meet them.
#[derive(Debug, Default, Clone)]
pub(crate) struct Chain {
    /// Newest first.
    operands: VecDeque<Vec<u8>>,
}

impl Chain {
    /// An empty chain.
    pub(crate) fn new() -> Chain {
        Chain::default()
    }

    /// Adds the next (older) operand.
    pub(crate) fn push(&mut self, operand: &[u8]) {
        self.operands.push_back(operand.to_vec());
    }

    /// Forgets the operands.
    pub(crate) fn clear(&mut self) {
        self.operands.clear();
    }

    /// Adds an operand newer than every one collected (for a walk that meets versions
    /// oldest first).
    pub(crate) fn push_newest(&mut self, operand: &[u8]) {
        self.operands.push_front(operand.to_vec());
    }

    /// The value the operands make on `base` (invariant 3 for failures).
    ///
    /// # Errors
    /// `MergeFailed` with the operator's message.
    pub(crate) fn merge(
        &self,
        operator: &dyn MergeOperator,
        key: &[u8],
        base: Base<'_>,
    ) -> Result<Vec<u8>> {
        let oldest_first: Vec<&[u8]> = self.operands.iter().rev().map(Vec::as_slice).collect();
        let existing = match base {
            Base::None => None,
            Base::Value(v) => Some(v),
        };
        operator
            .full_merge(key, existing, &oldest_first)
            .map_err(|detail| Error::MergeFailed {
                operator: operator.name().to_owned(),
                key: key.to_vec(),
                detail,
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn builtins_are_found_by_the_names_the_bindings_use() {
        let name =
            |n: &str, sep: &[u8]| builtin_merge_operator(n, sep).map(|op| op.name().to_owned());
        assert_eq!(name("cairn.add_i64", b"").unwrap(), "cairn.add_i64");
        assert_eq!(name("cairn.append", b"").unwrap(), "cairn.append");
        assert_eq!(name("cairn.append", b",").unwrap(), "cairn.append/2c");
        assert!(matches!(
            name("cairn.add_i64", b","),
            Err(Error::InvalidArgument(_))
        ));
        assert!(matches!(
            name("no.such", b""),
            Err(Error::InvalidArgument(_))
        ));
    }

    #[test]
    fn append_joins_with_its_separator() {
        let plain = Append::new();
        assert_eq!(plain.name(), "cairn.append");
        assert_eq!(
            plain.full_merge(b"k", Some(b"ab"), &[b"c", b"d"]).unwrap(),
            b"abcd"
        );
        let comma = Append::with_separator(",");
        assert_eq!(comma.name(), "cairn.append/2c");
        assert_eq!(comma.full_merge(b"k", None, &[b"a", b"b"]).unwrap(), b"a,b");
        assert_eq!(comma.full_merge(b"k", Some(b""), &[b"a"]).unwrap(), b",a");
        assert_eq!(comma.partial_merge(b"k", b"a", b"b").unwrap(), b"a,b");
    }

    #[test]
    fn add_i64_sums_canonical_text_and_refuses_the_rest() {
        let add = AddI64;
        assert_eq!(add.full_merge(b"k", None, &[b"5", b"-7"]).unwrap(), b"-2");
        assert_eq!(add.full_merge(b"k", Some(b"40"), &[b"2"]).unwrap(), b"42");
        assert!(add.full_merge(b"k", Some(b"forty"), &[b"2"]).is_err());
        assert!(add
            .full_merge(b"k", Some(b"9223372036854775807"), &[b"1"])
            .is_err());
        assert!(add.check_operand(b"k", b"+5").is_err());
        assert!(add.check_operand(b"k", b"05").is_err());
        assert!(add.check_operand(b"k", b"-5").is_ok());
        assert_eq!(add.partial_merge(b"k", b"3", b"4").unwrap(), b"7");
        assert_eq!(add.partial_merge(b"k", b"9223372036854775807", b"1"), None);
    }

    #[test]
    fn a_failing_operator_names_itself_and_the_key() {
        let mut chain = Chain::new();
        chain.push(b"x");
        match chain.merge(&AddI64, b"key", Base::None) {
            Err(Error::MergeFailed { operator, key, .. }) => {
                assert_eq!(
                    (operator.as_str(), key.as_slice()),
                    ("cairn.add_i64", &b"key"[..])
                );
            }
            other => panic!("expected MergeFailed, got {other:?}"),
        }
    }

    proptest! {
        /// Invariant 1 for the built-ins: combining any adjacent pair first changes nothing.
        #[test]
        fn partial_merge_is_associative(
            base in prop::option::of(-1000i64..1000),
            ops in prop::collection::vec(-1000i64..1000, 2..6),
            at in 0usize..5,
        ) {
            let text: Vec<Vec<u8>> = ops.iter().map(|n| n.to_string().into_bytes()).collect();
            let base_text = base.map(|b| b.to_string().into_bytes());
            let at = at % (text.len() - 1);
            for op in [&AddI64 as &dyn MergeOperator, &Append::with_separator("|")] {
                let all: Vec<&[u8]> = text.iter().map(Vec::as_slice).collect();
                let whole = op.full_merge(b"k", base_text.as_deref(), &all).unwrap();
                let combined = op.partial_merge(b"k", &text[at], &text[at + 1]).unwrap();
                let mut fewer = all.clone();
                fewer.splice(at..at + 2, [combined.as_slice()]);
                prop_assert_eq!(op.full_merge(b"k", base_text.as_deref(), &fewer).unwrap(), whole);
            }
        }
    }
}
