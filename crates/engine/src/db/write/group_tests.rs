//! Counter operations inside one write group, led directly so the group's make-up is
//! fixed: each increment sees every earlier member of its group, and a refused one
//! fails alone.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::path::Path;

use super::*;
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

fn put(ks: KeyspaceId, key: &str, value: &str) -> Job {
    let mut batch = WriteBatch::new();
    batch.put(ks, key.as_bytes(), value.as_bytes()).unwrap();
    Job::Write {
        batch,
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
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
    let group: Vec<Pending> = [
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
    ]
    .into_iter()
    .enumerate()
    .map(|(i, job)| member(i as u64, job))
    .collect();
    let out = lead(&db.inner, &group).unwrap();
    assert_eq!(out.len(), group.len());

    let counters: Vec<Option<i64>> = out
        .iter()
        .zip(&group)
        .map(|(r, p)| match (&p.job, r) {
            (Job::Incr { .. }, Ok(d)) => Some(d.counter),
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
