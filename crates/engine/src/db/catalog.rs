//! The keyspace catalog: creating keyspaces, recording their options, dropping them.
//! Each change is one manifest edit through the version set (`db/versions.rs`).
//!
//! Invariants:
//! 1. Keyspace ids are allocated from the version's counter and never reused, so a handle
//!    to a dropped keyspace can never reach a later keyspace's data.
//! 2. A keyspace is dropped only while no compaction of it runs (a running one would
//!    commit into a keyspace that no longer exists); its files go once no reader holds
//!    a super version that lists them.

use std::sync::Arc;
use std::time::Duration;

use super::inner::Inner;
use super::versions;
use crate::error::{Error, Result};
use crate::key::KeyspaceId;
use crate::options::KeyspaceOptions;
use crate::version::{self, Edit};

/// The name of the keyspace every store has.
pub const DEFAULT_KEYSPACE: &str = "default";

/// Creates keyspace `name` if it does not exist and returns its id. With `options`, also
/// records them in the manifest if they differ from the recorded ones (one edit for
/// both); without, an existing keyspace is left as it is.
///
/// # Errors
/// `InvalidArgument` for a bad name; `ReadOnly`, `Stopped`; the manifest write's error.
pub(crate) fn create(
    inner: &Inner,
    name: &str,
    options: Option<&KeyspaceOptions>,
) -> Result<KeyspaceId> {
    version::check_keyspace_name(name)?;
    let threshold = options.map(|o| o.blob_threshold.map(|t| t as u64));
    let operator = options.and_then(|o| o.merge_operator.clone());
    // An existing keyspace whose recorded options already match needs no write: its
    // merge operator is registered even in a read-only (or stopped) store, so the
    // operands stay readable there.
    if let Some(op) = &operator {
        let version = inner.reads.supers.version();
        if let Some((id, ks)) = version.keyspace_by_name(name) {
            if let Some(name_then) = ks.merge_operator.as_deref() {
                if name_then != op.name() {
                    return Err(mismatch(name, name_then, op.name()));
                }
            }
            let same_threshold = threshold.is_none_or(|t| t == ks.blob_threshold);
            if same_threshold && ks.merge_operator.as_deref() == Some(op.name()) {
                inner.reads.merge.register(id, Arc::clone(op));
                return Ok(id);
            }
        }
    }
    inner.check_writable()?;
    if let Some(op) = &operator {
        let len = op.name().len();
        if !(1..=version::MAX_MERGE_OPERATOR_NAME_LEN).contains(&len) {
            return Err(Error::invalid(format!(
                "merge operator names must be 1 to {} bytes, got {len} bytes",
                version::MAX_MERGE_OPERATOR_NAME_LEN
            )));
        }
    }
    let mut st = inner.state.lock();
    let mut edit = Edit::default();
    let (id, recorded) = match st.version.keyspace_by_name(name) {
        Some((id, ks)) => (Some((id, ks.blob_threshold)), ks.merge_operator.clone()),
        None => (None, None),
    };
    // Merge operator names (`merge.rs` invariant 2): another name than the recorded one
    // is refused before anything changes; a first one is recorded.
    let record_operator = match (&operator, &recorded) {
        (Some(op), Some(name_then)) if op.name() != name_then => {
            return Err(mismatch(name, name_then, op.name()));
        }
        (Some(op), None) => Some(op.name().to_owned()),
        _ => None,
    };
    let id = match id {
        Some((id, recorded_threshold))
            if threshold.is_none_or(|t| t == recorded_threshold) && record_operator.is_none() =>
        {
            if let Some(op) = operator {
                inner.reads.merge.register(id, op);
            }
            return Ok(id);
        }
        Some((id, _)) => id,
        None => versions::allocate_keyspace(&st, name, &mut edit)?,
    };
    if let Some(threshold) = threshold {
        edit.blob_thresholds = vec![(id, threshold)];
    }
    if let Some(op_name) = record_operator {
        edit.merge_operators = vec![(id, op_name)];
    }
    versions::apply(inner, &mut st, edit, "manifest write")?;
    if let Some(op) = operator {
        inner.reads.merge.register(id, op);
    }
    Ok(id)
}

/// The error for a merge operator whose name differs from the recorded one.
fn mismatch(keyspace: &str, recorded: &str, given: &str) -> Error {
    Error::invalid(format!(
        "keyspace {keyspace:?} holds merge operands of the merge operator {recorded:?}, but \
         the operator given is named {given:?}"
    ))
}

/// Drops keyspace `name` and everything in it.
///
/// # Errors
/// `InvalidArgument` for the default keyspace or a name that does not exist; `ReadOnly`,
/// `Stopped`; the manifest write's error.
pub(crate) fn drop(inner: &Inner, name: &str) -> Result<()> {
    inner.check_writable()?;
    if name == DEFAULT_KEYSPACE {
        return Err(Error::invalid("the default keyspace cannot be dropped"));
    }
    {
        let mut st = inner.state.lock();
        let Some((id, _)) = st.version.keyspace_by_name(name) else {
            return Err(Error::invalid(format!("no keyspace named {name:?}")));
        };
        // Invariant 2.
        while st.compacting.contains(&id) {
            inner.stall_cv.wait_for(&mut st, Duration::from_millis(20));
        }
        let edit = Edit {
            dropped_keyspaces: vec![id],
            ..Edit::default()
        };
        versions::apply(inner, &mut st, edit, "manifest write")?;
    }
    versions::delete_obsolete_files(inner);
    Ok(())
}
