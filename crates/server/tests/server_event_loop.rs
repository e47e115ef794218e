//! The event loops: many clients on few loops, their writes committed together, and
//! clients that read or send slowly, or not at all, costing the others nothing.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::collections::HashMap;
use std::io::Write;
use std::net::Shutdown;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use cairn::{Db, Options};
use common::{encode, start, Client};

/// 24 clients on 2 loops pipeline INCR/INCRBY/DECR to 4 shared counters and SETs of their
/// own keys, interleaved; every reply is right for its request and the totals are exact.
#[test]
fn many_clients_on_few_loops_interleave_pipelined_counters_exactly() {
    let srv = start(|c| c.threads = 2);
    const CLIENTS: usize = 24;
    const ROUNDS: usize = 40;
    const DEPTH: usize = 12;
    let addr = srv.addr;
    let handles: Vec<_> = (0..CLIENTS)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                let mut added: HashMap<String, i64> = HashMap::new();
                for round in 0..ROUNDS {
                    let mut burst = Vec::new();
                    let mut wants = Vec::new();
                    for i in 0..DEPTH {
                        let counter = format!("ctr:{}", (t + i) % 4);
                        let (request, delta) = match (round + i) % 4 {
                            0 => (vec!["INCR".to_string(), counter.clone()], 1),
                            1 => (vec!["INCRBY".into(), counter.clone(), "5".into()], 5),
                            2 => (vec!["DECR".into(), counter.clone()], -1),
                            _ => {
                                let key = format!("own:{t}:{round}:{i}");
                                (vec!["SET".into(), key, format!("{round}.{i}")], 0)
                            }
                        };
                        let args: Vec<&[u8]> = request.iter().map(|a| a.as_bytes()).collect();
                        burst.extend(encode(&args));
                        wants.push((request[0].clone(), counter, delta));
                    }
                    c.send_raw(&burst);
                    for (name, counter, delta) in wants {
                        let reply = c.reply();
                        if name == "SET" {
                            assert_eq!(reply, "+OK");
                        } else {
                            assert!(reply.starts_with(':'), "{name}: {reply}");
                            *added.entry(counter).or_default() += delta;
                        }
                    }
                }
                added
            })
        })
        .collect();
    let mut totals: HashMap<String, i64> = HashMap::new();
    for h in handles {
        for (k, v) in h.join().unwrap() {
            *totals.entry(k).or_default() += v;
        }
    }
    let mut c = Client::connect(srv.addr);
    for (counter, total) in &totals {
        assert_eq!(c.call(&["GET", counter]), format!("${total}"));
    }
    for t in [0, CLIENTS - 1] {
        for round in [0, ROUNDS - 1] {
            for i in 0..DEPTH {
                if (round + i) % 4 == 3 {
                    let key = format!("own:{t}:{round}:{i}");
                    assert_eq!(c.call(&["GET", &key]), format!("${round}.{i}"));
                }
            }
        }
    }
    srv.shutdown();
}

/// A client that pipelines big replies and never reads them fills its socket; the loop
/// stops reading it and goes on serving the others of the same loop.
#[test]
fn a_client_that_does_not_read_does_not_stall_the_others() {
    let srv = start(|c| c.threads = 1);
    let mut setup = Client::connect(srv.addr);
    let big = "x".repeat(64 << 10);
    assert_eq!(setup.call(&["SET", "big", &big]), "+OK");
    let hog = std::net::TcpStream::connect(srv.addr).unwrap();
    let mut hog_writer = hog.try_clone().unwrap();
    // A million GETs of 64 KiB: 24 MB of requests and 64 GB of replies, far beyond
    // what the sockets buffer, so the writer blocks once the server stops reading.
    let request = encode(&[b"GET", b"big"]).repeat(100_000);
    let writing = std::thread::spawn(move || {
        for _ in 0..10 {
            if hog_writer.write_all(&request).is_err() {
                return;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let mut other = Client::connect(srv.addr);
    for i in 0..200 {
        assert_eq!(other.call(&["SET", "k", &i.to_string()]), "+OK");
        assert_eq!(other.call(&["INCR", "n"]), format!(":{}", i + 1));
    }
    // The hog is still stuck: the server stopped reading it.
    assert!(!writing.is_finished());
    // Closing with replies unread resets the connection: the server's next write fails
    // and it drops the client.
    hog.shutdown(Shutdown::Both).unwrap();
    writing.join().unwrap();
    drop(hog);
    let began = Instant::now();
    srv.shutdown();
    assert!(began.elapsed() < Duration::from_secs(30));
}

/// A client sending one request a byte at a time, slowly, holds nothing up: another
/// client of the same loop makes many round trips meanwhile, and the slow request still
/// runs once complete.
#[test]
fn a_slow_client_does_not_stall_the_others() {
    let srv = start(|c| c.threads = 1);
    let request = encode(&[b"SET", b"slow", b"done"]);
    let mut slow = Client::connect(srv.addr);
    let mut slow_writer = slow.writer.try_clone().unwrap();
    let sent = Arc::new(AtomicBool::new(false));
    let sent_flag = Arc::clone(&sent);
    let trickle = std::thread::spawn(move || {
        for b in &request {
            slow_writer.write_all(&[*b]).unwrap();
            std::thread::sleep(Duration::from_millis(15));
        }
        sent_flag.store(true, Ordering::SeqCst);
    });
    let mut fast = Client::connect(srv.addr);
    let mut trips = 0;
    while !sent.load(Ordering::SeqCst) {
        assert_eq!(fast.call(&["INCR", "fast"]), format!(":{}", trips + 1));
        trips += 1;
    }
    trickle.join().unwrap();
    assert_eq!(slow.reply(), "+OK");
    assert_eq!(fast.call(&["GET", "slow"]), "$done");
    // The slow request took about 0.5 s to arrive; round trips went on all along.
    assert!(
        trips >= 20,
        "only {trips} round trips while the slow client sent"
    );
    srv.shutdown();
}

/// Clients pipeline SETs and INCRs while the server shuts down: every write whose reply
/// a client received is in the store afterwards.
#[test]
fn shutdown_under_write_load_loses_no_acknowledged_write() {
    let mut srv = start(|c| c.threads = 2);
    let addr = srv.addr;
    let clients: Vec<_> = (0..8)
        .map(|t| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                c.reader
                    .get_mut()
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut acked_sets = Vec::new();
                let mut acked_counter = 0i64;
                let began = Instant::now();
                for round in 0.. {
                    if began.elapsed() > Duration::from_secs(20) {
                        break;
                    }
                    let mut burst = Vec::new();
                    for i in 0..8 {
                        let key = format!("k:{t}:{round}:{i}");
                        burst.extend(encode(&[b"SET", key.as_bytes(), b"v"]));
                        burst.extend(encode(&[b"INCR", format!("ctr:{t}").as_bytes()]));
                    }
                    if c.writer.write_all(&burst).is_err() {
                        break;
                    }
                    let mut line = String::new();
                    let mut gone = false;
                    for i in 0..8 {
                        for want_set in [true, false] {
                            line.clear();
                            let read = std::io::BufRead::read_line(&mut c.reader, &mut line);
                            if !matches!(read, Ok(n) if n > 0) {
                                gone = true;
                                break;
                            }
                            if want_set {
                                assert_eq!(line, "+OK\r\n");
                                acked_sets.push(format!("k:{t}:{round}:{i}"));
                            } else {
                                let n: i64 = line.trim_end()[1..].parse().unwrap();
                                assert!(n > acked_counter);
                                acked_counter = n;
                            }
                        }
                        if gone {
                            break;
                        }
                    }
                    if gone {
                        break;
                    }
                }
                (t, acked_sets, acked_counter)
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    srv.stop.shutdown();
    srv.waiter.take().unwrap().join().unwrap().unwrap();
    let results: Vec<_> = clients.into_iter().map(|h| h.join().unwrap()).collect();
    let db = Db::open(srv.dir.path().join("store"), Options::default()).unwrap();
    let ks = db.keyspace("db0").unwrap();
    let mut total_acked = 0;
    for (t, sets, counter) in results {
        for key in &sets {
            assert_eq!(ks.get(key).unwrap().as_deref(), Some(&b"v"[..]), "{key}");
        }
        total_acked += sets.len();
        let stored: i64 = ks
            .get(format!("ctr:{t}"))
            .unwrap()
            .map_or(0, |v| String::from_utf8(v).unwrap().parse().unwrap());
        // A write may be committed and its reply lost with the connection, never the
        // other way round.
        assert!(
            stored >= counter,
            "ctr:{t}: stored {stored}, acknowledged {counter}"
        );
    }
    assert!(total_acked > 0);
}

/// One pipeline mixing batched writes (SET, INCR), writes run by a worker (DEL, APPEND,
/// SET NX), reads run on the loop (GET, EXISTS) and SELECT: every request sees the
/// writes before it and the replies come back in request order.
#[test]
fn a_pipeline_mixing_batched_worker_and_inline_requests_keeps_its_order() {
    let srv = start(|c| c.threads = 1);
    let mut c = Client::connect(srv.addr);
    let steps: &[(&[&str], &str)] = &[
        (&["SET", "a", "1"], "+OK"),
        (&["INCR", "n"], ":1"),
        (&["GET", "a"], "$1"),
        (&["INCRBY", "n", "9"], ":10"),
        (&["APPEND", "a", "2"], ":2"),
        (&["SET", "a", "3"], "+OK"),
        (&["GET", "a"], "$3"),
        (&["DEL", "a"], ":1"),
        (&["EXISTS", "a"], ":0"),
        (&["SET", "a", "4"], "+OK"),
        (&["SET", "a", "5", "NX"], "$nil"),
        (&["SELECT", "1"], "+OK"),
        (&["INCR", "n"], ":1"),
        (&["SET", "a", "db1"], "+OK"),
        (&["SELECT", "0"], "+OK"),
        (&["GET", "a"], "$4"),
        (&["DECR", "n"], ":9"),
        (&["SELECT", "1"], "+OK"),
        (&["GET", "a"], "$db1"),
        (&["GET", "n"], "$1"),
    ];
    let mut burst = Vec::new();
    for (args, _) in steps {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        burst.extend(encode(&args));
    }
    // Three times over: the burst arrives whole, then split at every 7th byte.
    for round in 0..3 {
        if round == 0 {
            c.send_raw(&burst);
        } else {
            for chunk in burst.chunks(7) {
                c.send_raw(chunk);
            }
        }
        for (args, want) in steps {
            assert_eq!(c.reply(), *want, "round {round}: {args:?}");
        }
        // The burst ends in db1; clear both databases for the next round.
        assert_eq!(c.call(&["DEL", "a", "n"]), ":2");
        assert_eq!(c.call(&["SELECT", "0"]), "+OK");
        assert_eq!(c.call(&["DEL", "a", "n"]), ":2");
    }
    srv.shutdown();
}

/// A client that pipelines big replies, never reads them and stays connected holds a
/// shutdown up only for its short grace: the server's threads end within seconds, the
/// client's connection is closed (its writes fail), and so is an idle client's.
#[test]
fn a_client_that_does_not_read_does_not_hold_up_shutdown() {
    let mut srv = start(|c| c.threads = 1);
    let mut setup = Client::connect(srv.addr);
    let big = "x".repeat(64 << 10);
    assert_eq!(setup.call(&["SET", "big", &big]), "+OK");
    let hog = std::net::TcpStream::connect(srv.addr).unwrap();
    let mut hog_writer = hog.try_clone().unwrap();
    let request = encode(&[b"GET", b"big"]).repeat(100_000);
    // `true` once a write failed: the server closed the connection.
    let writing =
        std::thread::spawn(move || (0..10).any(|_| hog_writer.write_all(&request).is_err()));
    // Let the hog's replies fill the sockets, so the server stops reading it.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(setup.call(&["PING"]), "+PONG");
    assert!(!writing.is_finished());
    let began = Instant::now();
    srv.stop.shutdown();
    srv.waiter.take().unwrap().join().unwrap().unwrap();
    let took = began.elapsed();
    assert!(took < Duration::from_secs(5), "shutdown took {took:?}");
    assert!(writing.join().unwrap(), "the hog's connection stayed open");
    assert!(setup.closed());
    drop(hog);
}

/// A client pipelining requests with big replies and SHUTDOWN last, reading as it goes,
/// gets every reply and then the end of input: the replies queued when the shutdown
/// begins are still written.
#[test]
fn replies_queued_at_shutdown_reach_a_client_that_reads() {
    let srv = start(|c| c.threads = 1);
    let mut c = Client::connect(srv.addr);
    let big: String = (0..64 << 10)
        .map(|i| char::from(b'a' + (i % 26) as u8))
        .collect();
    assert_eq!(c.call(&["SET", "big", &big]), "+OK");
    const GETS: usize = 40;
    let mut pipeline = encode(&[b"GET", b"big"]).repeat(GETS);
    pipeline.extend(encode(&[b"SHUTDOWN"]));
    let mut writer = c.writer.try_clone().unwrap();
    let sending = std::thread::spawn(move || writer.write_all(&pipeline).is_ok());
    let want = format!("${big}");
    for i in 0..GETS {
        assert!(c.reply() == want, "reply {i} differs");
    }
    assert!(c.closed(), "SHUTDOWN closes after the replies before it");
    assert!(sending.join().unwrap());
    srv.shutdown();
}
