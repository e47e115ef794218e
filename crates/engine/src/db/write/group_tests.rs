//! Counter operations inside one write group, led directly so the group's make-up is
//! fixed: each increment sees every earlier member of its group, and a refused one
//! fails alone.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;

use super::*;
use crate::db::commit_queue::Increments;
use crate::db::Db;
use crate::error::Error;
use crate::fs::MemFs;
use crate::key::KeyspaceId;
use crate::options::Options;

fn open() -> Db {
    Db::open_with_fs(Arc::new(MemFs::new()), Path::new("/db"), Options::default()).unwrap()
}

fn member(ticket: u64, job: Job) -> Pending {
    Pending {
        ticket,
        job,
        thread: std::thread::current().id(),
    }
}

/// `jobs` as one write group, in order.
fn group_of(jobs: impl IntoIterator<Item = Job>) -> Vec<Pending> {
    jobs.into_iter()
        .enumerate()
        .map(|(i, job)| member(i as u64, job))
        .collect()
}

/// Each member's counters, `None` for a refused member.
fn counters_of(out: &Outcomes) -> Vec<Option<Vec<i64>>> {
    out.iter()
        .map(|r| r.as_ref().ok().map(|d| d.counters.to_vec()))
        .collect()
}

fn put(ks: KeyspaceId, key: &str, value: &str) -> Job {
    let mut batch = WriteBatch::new();
    batch.put(ks, key.as_bytes(), value.as_bytes()).unwrap();
    Job::Write {
        batch,
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: Increments::default(),
    }
}

fn remove(ks: KeyspaceId, key: &str) -> Job {
    let mut batch = WriteBatch::new();
    batch.remove(ks, key.as_bytes()).unwrap();
    Job::Write {
        batch,
        durability: Durability::None,
        blob_files: Vec::new(),
        validation: None,
        increments: Increments::default(),
    }
}

fn incr(ks: KeyspaceId, key: &str, delta: i128) -> Job {
    Job::Incr {
        keyspace: ks,
        key: key.as_bytes().to_vec(),
        delta,
        durability: Durability::Sync,
    }
}

#[test]
fn increments_in_one_group_see_the_members_before_them_and_fail_alone() {
    let db = open();
    let ks = db.keyspace("c").unwrap();
    ks.insert("k", "5").unwrap();
    ks.insert("bad", "x").unwrap();
    let id = ks.id;
    let base = db.last_seqno();
    let group = group_of([
        incr(id, "k", 1),
        put(id, "k", "10"),
        incr(id, "k", 1),
        incr(id, "k", 1),
        remove(id, "k"),
        incr(id, "k", 3),
        incr(id, "bad", 1),
        put(id, "other", "o"),
        incr(id, "k", i128::from(i64::MAX)),
        incr(id, "k", -1),
        incr(id, "fresh", -i128::from(i64::MIN)),
    ]);
    let out = lead(&db.inner, &group).unwrap();
    assert_eq!(out.len(), group.len());

    let counters: Vec<Option<i64>> = out
        .iter()
        .zip(&group)
        .map(|(r, p)| match (&p.job, r) {
            (Job::Incr { .. }, Ok(d)) => Some(d.counters[0]),
            _ => None,
        })
        .collect();
    assert_eq!(
        counters,
        [
            Some(6),
            None,
            Some(11),
            Some(12),
            None,
            Some(3),
            None,
            None,
            None,
            Some(2),
            None
        ]
    );
    assert!(matches!(&out[6], Err(Error::NotACounter { key, .. }) if key == b"bad"));
    assert!(matches!(
        &out[8],
        Err(Error::CounterOverflow { current: 3, .. })
    ));
    assert!(matches!(
        &out[10],
        Err(Error::CounterOverflow { current: 0, .. })
    ));

    // The applied members got consecutive seqnos in group order; the refused got none.
    let seqnos: Vec<u64> = out
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|d| d.seqno.0)
        .collect();
    assert_eq!(seqnos, ((base + 1)..=(base + 8)).collect::<Vec<_>>());
    assert_eq!(db.last_seqno(), base + 8);
    // Sync members made the whole group durable.
    assert_eq!(db.durable_seqno(), base + 8);

    assert_eq!(ks.get("k").unwrap(), Some(b"2".to_vec()));
    assert_eq!(ks.get("bad").unwrap(), Some(b"x".to_vec()));
    assert_eq!(ks.get("other").unwrap(), Some(b"o".to_vec()));
    assert_eq!(ks.get("fresh").unwrap(), None);
}

#[test]
fn a_group_whose_every_member_is_refused_writes_nothing() {
    let db = open();
    let ks = db.keyspace("c").unwrap();
    ks.insert("bad", "1.5").unwrap();
    let base = db.last_seqno();
    let group = vec![
        member(0, incr(ks.id, "bad", 1)),
        member(1, incr(ks.id, "bad", -1)),
    ];
    let out = lead(&db.inner, &group).unwrap();
    assert!(out
        .iter()
        .all(|r| matches!(r, Err(Error::NotACounter { value_len: 3, .. }))));
    assert_eq!(db.last_seqno(), base);
    assert_eq!(ks.get("bad").unwrap(), Some(b"1.5".to_vec()));
}

/// Increments `(after, keyspace, key, delta)`, queued in order.
fn increments(list: &[(usize, KeyspaceId, &str, i128)]) -> Increments {
    let mut out = Increments::default();
    for &(after, ks, key, delta) in list {
        out.push(after, ks, key.as_bytes(), delta);
    }
    out
}

fn batch_job(ks: KeyspaceId, ops: &[(&str, Option<&str>)], incrs: &[(usize, &str, i128)]) -> Job {
    let mut batch = WriteBatch::new();
    for (key, value) in ops {
        match value {
            Some(v) => batch.put(ks, key.as_bytes(), v.as_bytes()).unwrap(),
            None => batch.remove(ks, key.as_bytes()).unwrap(),
        }
    }
    Job::Write {
        batch,
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: increments(
            &incrs
                .iter()
                .map(|&(after, key, delta)| (after, ks, key, delta))
                .collect::<Vec<_>>(),
        ),
    }
}

/// A batch's increments resolve in their place among its ops and the group's earlier
/// members; a batch whose increment fails is refused whole, and the members after it
/// do not see any of its writes.
#[test]
fn a_batch_with_a_failing_increment_is_refused_whole_and_unseen() {
    let db = open();
    let ks = db.keyspace("c").unwrap();
    ks.insert("k", "5").unwrap();
    ks.insert("bad", "x").unwrap();
    let id = ks.id;
    let base = db.last_seqno();
    let group = group_of([
        // incr k (6), put k=10, incr k twice (11, 13), incr fresh (5).
        batch_job(
            id,
            &[("k", Some("10")), ("other", Some("o"))],
            &[(0, "k", 1), (1, "k", 1), (1, "k", 2), (2, "fresh", 5)],
        ),
        // Refused: its put of k and its incr of k must stay unseen.
        batch_job(id, &[("k", Some("100"))], &[(1, "k", 1), (1, "bad", 1)]),
        incr(id, "k", 1),
        // incr k (15), remove k, incr k (1).
        batch_job(id, &[("k", None)], &[(0, "k", 1), (1, "k", 1)]),
    ]);
    let out = lead(&db.inner, &group).unwrap();
    let counters = counters_of(&out);
    assert_eq!(
        counters,
        [
            Some(vec![6, 11, 13, 5]),
            None,
            Some(vec![14]),
            Some(vec![15, 1])
        ]
    );
    assert!(matches!(&out[1], Err(Error::NotACounter { key, .. }) if key == b"bad"));
    // Member 0 holds 6 ops (2 writes, 4 increments), member 2 one, member 3 three.
    let seqnos: Vec<u64> = out
        .iter()
        .filter_map(|r| r.as_ref().ok())
        .map(|d| d.seqno.0)
        .collect();
    assert_eq!(seqnos, [base + 6, base + 7, base + 10]);
    assert_eq!(ks.get("k").unwrap(), Some(b"1".to_vec()));
    assert_eq!(ks.get("fresh").unwrap(), Some(b"5".to_vec()));
    assert_eq!(ks.get("other").unwrap(), Some(b"o".to_vec()));
    assert_eq!(ks.get("bad").unwrap(), Some(b"x".to_vec()));
}

/// A refused batch is undone slot by slot (not by copying the group's overlay): a range
/// delete and a put it made before its failing increment leave every watched key as the
/// earlier members left it, including keys the batch touched more than once.
#[test]
fn a_refused_batch_with_a_range_delete_leaves_the_group_state_unchanged() {
    let db = open();
    let ks = db.keyspace("c").unwrap();
    ks.insert("a", "1").unwrap();
    ks.insert("b", "2").unwrap();
    ks.insert("bad", "x").unwrap();
    let id = ks.id;
    let mut refused = WriteBatch::new();
    refused.put(id, b"a", b"50").unwrap();
    refused.remove_range(id, b"a", b"b\0").unwrap();
    refused.put(id, b"b", b"70").unwrap();
    let refused = Job::Write {
        batch: refused,
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: increments(&[(1, id, "a", 1), (3, id, "b", 1), (3, id, "bad", 1)]),
    };
    let group = group_of([
        put(id, "a", "10"),
        refused,
        incr(id, "a", 1),
        incr(id, "b", 1),
    ]);
    let out = lead(&db.inner, &group).unwrap();
    assert!(matches!(&out[1], Err(Error::NotACounter { key, .. }) if key == b"bad"));
    let counters: Vec<Vec<i64>> = [2, 3]
        .iter()
        .map(|&i| out[i].as_ref().unwrap().counters.to_vec())
        .collect();
    assert_eq!(counters, [vec![11], vec![3]]);
    assert_eq!(ks.get("a").unwrap(), Some(b"11".to_vec()));
    assert_eq!(ks.get("b").unwrap(), Some(b"3".to_vec()));
}

/// An increment that reads a value the group's earlier increment wrote (kept as a number,
/// not as text) keeps the attributes that increment carried; a merge operand in between
/// applies to that number's text; a counter read from the value log counts, and a
/// non-canonical text read from the store is refused.
#[test]
fn increments_on_the_groups_own_counters_keep_attributes_and_merge_operands() {
    use crate::entry::Attrs;
    use crate::merge::AddI64;
    use crate::options::KeyspaceOptions;

    let db = open();
    let ks = db
        .keyspace_with(
            "c",
            KeyspaceOptions::default().merge_operator(Arc::new(AddI64)),
        )
        .unwrap();
    let wide = db
        .keyspace_with("w", KeyspaceOptions::separated(8))
        .unwrap();
    let opts = crate::EntryOptions::new()
        .meta(crate::Meta::new(9, b"hits".to_vec()))
        .ttl(std::time::Duration::from_secs(3600));
    ks.insert_entry("t", "40", &opts).unwrap();
    ks.insert("odd", "007").unwrap();
    wide.insert("big", "123456789012").unwrap();
    let id = ks.id;
    let mut merges = WriteBatch::new();
    merges.merge(id, b"t", b"5").unwrap();
    let merges = Job::Write {
        batch: merges,
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: Increments::default(),
    };
    let group = group_of([
        batch_job(id, &[], &[(0, "t", 1), (0, "t", 1)]),
        incr(id, "t", 1),
        merges,
        incr(id, "t", 10),
        incr(id, "odd", 1),
        incr(wide.id, "big", 1),
    ]);
    let out = lead(&db.inner, &group).unwrap();
    let counters = counters_of(&out);
    assert_eq!(
        counters,
        [
            Some(vec![41, 42]),
            Some(vec![43]),
            Some(vec![]),
            Some(vec![58]),
            None,
            Some(vec![123_456_789_013])
        ]
    );
    assert!(matches!(
        &out[4],
        Err(Error::NotACounter { value_len: 3, .. })
    ));
    assert_eq!(wide.get("big").unwrap(), Some(b"123456789013".to_vec()));
    assert_eq!(ks.get("t").unwrap(), Some(b"58".to_vec()));
    let head = ks.head("t").unwrap().unwrap();
    let kept = Attrs {
        tag: head.tag,
        meta: &head.meta,
        expires_at: head.expires_at,
    };
    assert_eq!((kept.tag, kept.meta), (9, &b"hits"[..]));
    assert!(kept.expires_at.is_some());
    assert_eq!(ks.get("odd").unwrap(), Some(b"007".to_vec()));
}
