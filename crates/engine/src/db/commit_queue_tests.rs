//! A job that must not wait (`CommitQueue::try_run`) leads only an idle queue, and hands
//! the queue on to the writers that came while it led.
#![allow(clippy::unwrap_used, clippy::indexing_slicing, clippy::panic)]

use std::sync::mpsc;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use super::*;

fn done(seqno: u64) -> Outcomes {
    smallvec::smallvec![Ok(Done {
        seqno: SeqNo(seqno),
        counters: Counters::new(),
    })]
}

fn write() -> Job {
    Job::Write {
        batch: WriteBatch::new(),
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: Increments::default(),
    }
}

#[test]
fn a_try_on_an_idle_queue_leads_alone_and_may_decline() {
    let q = CommitQueue::default();
    let got = q
        .try_run(write(), |group| {
            assert_eq!(group.len(), 1);
            Ok(Some(done(7)))
        })
        .unwrap();
    assert_eq!(got.map(|d| d.seqno), Some(SeqNo(7)));
    assert!(q.try_run(write(), |_| Ok(None)).unwrap().is_none());
    let failed = q.try_run(write(), |_| Err(Error::Poisoned));
    assert!(matches!(failed, Err(Error::Poisoned)));
    // Each try stepped down: a queued writer leads at once.
    let led = q.run(write(), |_| Ok(done(9))).unwrap();
    assert_eq!(led.seqno, SeqNo(9));
}

#[test]
fn a_try_while_a_group_is_led_is_declined_without_queueing() {
    let q = Arc::new(CommitQueue::default());
    let (started_tx, started) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let leader = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            q.run(write(), |_| {
                started_tx.send(()).unwrap();
                release_rx.recv().unwrap();
                Ok(done(1))
            })
            .unwrap()
        })
    };
    started.recv().unwrap();
    let declined = q.try_run(write(), |_| panic!("must not lead while a group is led"));
    assert!(declined.unwrap().is_none());
    release.send(()).unwrap();
    assert_eq!(leader.join().unwrap().seqno, SeqNo(1));
    assert!(
        q.queue.lock().waiting.is_empty(),
        "the declined try left nothing queued"
    );
    let got = q.try_run(write(), |_| Ok(Some(done(2)))).unwrap();
    assert_eq!(got.map(|d| d.seqno), Some(SeqNo(2)));
}

#[test]
fn writers_that_queue_behind_a_try_lead_their_own_group_after_it() {
    let q = Arc::new(CommitQueue::default());
    let (queued_tx, queued) = mpsc::channel::<()>();
    let (follower_tx, follower_rx) = mpsc::channel();
    let got = q
        .try_run(write(), |_| {
            let follower_q = Arc::clone(&q);
            let tx = follower_tx.clone();
            thread::spawn(move || {
                queued_tx.send(()).unwrap();
                let led = follower_q.run(write(), |group| {
                    assert_eq!(group.len(), 1, "the follower's own group");
                    Ok(done(5))
                });
                tx.send(led.unwrap().seqno).unwrap();
            });
            queued.recv().unwrap();
            // Lead on until the follower is queued behind this leader.
            let started = std::time::Instant::now();
            while q.queue.lock().waiting.len() != 1 {
                assert!(
                    started.elapsed() < Duration::from_secs(10),
                    "the follower never queued"
                );
                thread::sleep(Duration::from_millis(1));
            }
            Ok(Some(done(4)))
        })
        .unwrap();
    assert_eq!(got.map(|d| d.seqno), Some(SeqNo(4)));
    let follower = follower_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert_eq!(follower, SeqNo(5));
}

#[test]
fn a_commit_that_panics_breaks_the_queue_instead_of_leaving_writers_waiting() {
    let q = Arc::new(CommitQueue::default());
    let (queued_tx, queued) = mpsc::channel::<()>();
    let (follower_tx, follower_rx) = mpsc::channel();
    let leader = {
        let q = Arc::clone(&q);
        thread::spawn(move || {
            let mut round = 0;
            let q2 = Arc::clone(&q);
            std::panic::catch_unwind(AssertUnwindSafe(|| {
                q.run(write(), |group| {
                    round += 1;
                    if round == 2 {
                        // The follower's group, led by this leader's second round.
                        assert_eq!(group.len(), 1);
                        panic!("a commit panics");
                    }
                    let follower_q = Arc::clone(&q2);
                    let tx = follower_tx.clone();
                    let queued_tx = queued_tx.clone();
                    thread::spawn(move || {
                        queued_tx.send(()).unwrap();
                        tx.send(follower_q.run(write(), |_| Ok(done(99)))).unwrap();
                    });
                    queued.recv().unwrap();
                    let started = std::time::Instant::now();
                    while q2.queue.lock().waiting.len() != 1 {
                        assert!(started.elapsed() < Duration::from_secs(10));
                        thread::sleep(Duration::from_millis(1));
                    }
                    Ok(done(1))
                })
            }))
        })
    };
    let led = leader.join().unwrap();
    assert!(led.is_err(), "the panic reached the leader's caller");
    let follower = follower_rx.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(matches!(follower, Err(Error::Poisoned)), "{follower:?}");
    // Later writers are refused at once, waiting or not, and nobody leads any more.
    let later = q.run(write(), |_| panic!("no commit after the queue broke"));
    assert!(matches!(later, Err(Error::Poisoned)));
    let tried = q.try_run(write(), |_| panic!("no commit after the queue broke"));
    assert!(matches!(tried, Err(Error::Poisoned)));
    q.wait_for_leader();
    let state = q.queue.lock();
    assert!(state.waiting.is_empty() && state.done.is_empty());
}

#[test]
fn increments_keep_each_key_apart_in_their_shared_buffer() {
    let mut incs = Increments::default();
    assert!(incs.is_empty());
    let (a, b) = (KeyspaceId(1), KeyspaceId(2));
    incs.push(0, a, b"ab", 1);
    incs.push(0, b, b"", -2);
    incs.push(3, a, b"abc", i128::from(i64::MIN));
    incs.push(3, a, b"ab", 7);
    assert_eq!(incs.len(), 4);
    let got: Vec<(usize, KeyspaceId, &[u8], i128)> = incs
        .iter()
        .map(|i| (i.after, i.keyspace, i.key, i.delta))
        .collect();
    assert_eq!(
        got,
        [
            (0, a, &b"ab"[..], 1),
            (0, b, &b""[..], -2),
            (3, a, &b"abc"[..], i128::from(i64::MIN)),
            (3, a, &b"ab"[..], 7),
        ]
    );
    // A job's size counts each increment as the Put it becomes.
    let job = Job::Write {
        batch: WriteBatch::new(),
        durability: Durability::Buffered,
        blob_files: Vec::new(),
        validation: None,
        increments: incs,
    };
    assert_eq!(
        job.size(),
        WriteBatch::new().encoded_len() + (2 + 32) + 32 + (3 + 32) + (2 + 32)
    );
}
