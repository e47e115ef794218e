//! MULTI/EXEC/DISCARD/WATCH over the engine's transactions, and counters made atomic by
//! engine transactions (no lock in the server).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;
use common::{start, Client};

#[test]
fn multi_queues_and_exec_returns_every_reply_with_runtime_errors_inside() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["SET", "word", "abc"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["INCR", "n"]), "+QUEUED");
    assert_eq!(c.call(&["INCR", "word"]), "+QUEUED");
    assert_eq!(c.call(&["SET", "s", "v"]), "+QUEUED");
    assert_eq!(c.call(&["GET", "s"]), "+QUEUED");
    assert_eq!(c.call(&["INCRBY", "n", "9"]), "+QUEUED");
    // MGET in a transaction: its own writes, and the store at its snapshot.
    assert_eq!(c.call(&["MGET", "s", "nope", "word", "n"]), "+QUEUED");
    // Not yet visible to another client.
    let mut other = Client::connect(srv.addr);
    assert_eq!(other.call(&["GET", "n"]), "$nil");
    assert_eq!(
        c.call(&["EXEC"]),
        "*[:1,-ERR value is not an integer or out of range,+OK,$v,:10,*[$v,$nil,$abc,$10]]"
    );
    assert_eq!(other.call(&["GET", "n"]), "$10");
    assert_eq!(other.call(&["GET", "s"]), "$v");
    // A pipelined transaction: replies in order, the counters see each other.
    let mut batch = Vec::new();
    for args in [
        &[&b"MULTI"[..]][..],
        &[b"INCR", b"p"],
        &[b"INCR", b"p"],
        &[b"EXEC"],
    ] {
        batch.extend(common::encode(args));
    }
    c.send_raw(&batch);
    let replies: Vec<String> = (0..4).map(|_| c.reply()).collect();
    assert_eq!(replies, ["+OK", "+QUEUED", "+QUEUED", "*[:1,:2]"]);
    srv.shutdown();
}

#[test]
fn queue_time_errors_abort_exec_and_discard_drops_the_queue() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["EXEC"]), "-ERR EXEC without MULTI");
    assert_eq!(c.call(&["DISCARD"]), "-ERR DISCARD without MULTI");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "-ERR MULTI calls can not be nested");
    assert_eq!(c.call(&["SET", "a", "1"]), "+QUEUED");
    assert_eq!(
        c.call(&["GET"]),
        "-ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        c.call(&["NOSUCH"]),
        "-ERR unknown command 'NOSUCH', with args beginning with: "
    );
    assert_eq!(
        c.call(&["WATCH", "a"]),
        "-ERR WATCH inside MULTI is not allowed"
    );
    assert_eq!(
        c.call(&["EXEC"]),
        "-EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(c.call(&["GET", "a"]), "$nil");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "a", "1"]), "+QUEUED");
    assert_eq!(c.call(&["DISCARD"]), "+OK");
    assert_eq!(c.call(&["GET", "a"]), "$nil");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(
        c.call(&["SHUTDOWN"]),
        "-ERR Command not allowed inside a transaction"
    );
    assert_eq!(c.call(&["DISCARD"]), "+OK");
    srv.shutdown();
}

#[test]
fn watch_aborts_exec_when_a_watched_key_changed() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let mut c = Client::connect(srv.addr);
    let mut other = Client::connect(srv.addr);
    // Changed by another client: null reply, nothing written.
    assert_eq!(c.call(&["SET", "w", "1"]), "+OK");
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["SET", "w", "2"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "x"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*nil");
    assert_eq!(c.call(&["GET", "out"]), "$nil");
    // Unchanged: runs. EXEC unwatches, so the next transaction runs despite changes.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["INCR", "w"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*[:3]");
    assert_eq!(other.call(&["SET", "w", "5"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["INCR", "w"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*[:6]");
    // A key absent at WATCH, created and removed again before EXEC: changed.
    assert_eq!(c.call(&["WATCH", "ghost"]), "+OK");
    assert_eq!(other.call(&["SET", "ghost", "1"]), "+OK");
    assert_eq!(other.call(&["DEL", "ghost"]), ":1");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "y"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*nil");
    // Changed by the same client after WATCH: aborts too, as in Redis.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(c.call(&["SET", "w", "7"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "z"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*nil");
    // FLUSHDB covers a watched key.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(other.call(&["FLUSHDB"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["SET", "out", "z"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*nil");
    // UNWATCH forgets; a write to an unwatched key does not abort.
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(c.call(&["UNWATCH"]), "+OK");
    assert_eq!(other.call(&["SET", "w", "8"]), "+OK");
    assert_eq!(c.call(&["WATCH", "v"]), "+OK");
    assert_eq!(other.call(&["SET", "unrelated", "8"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["GET", "w"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*[$8]");
    // A watched key in another database than the one EXEC runs in.
    assert_eq!(c.call(&["SELECT", "2"]), "+OK");
    assert_eq!(c.call(&["WATCH", "w"]), "+OK");
    assert_eq!(c.call(&["SELECT", "0"]), "+OK");
    assert_eq!(other.call(&["SELECT", "2"]), "+OK");
    assert_eq!(other.call(&["SET", "w", "1"]), "+OK");
    assert_eq!(c.call(&["MULTI"]), "+OK");
    assert_eq!(c.call(&["GET", "w"]), "+QUEUED");
    assert_eq!(c.call(&["EXEC"]), "*nil");
    srv.shutdown();
}

/// Transfers between two counters in MULTI/EXEC from several clients, while others INCR
/// the same keys alone: no update is lost (the sum is exact), and no EXEC fails for a
/// conflict it could retry.
#[test]
fn concurrent_exec_and_incr_lose_no_update() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let rounds = 200;
    let mut threads = Vec::new();
    for t in 0..4 {
        let addr = srv.addr;
        threads.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            for _ in 0..rounds {
                if t % 2 == 0 {
                    assert_eq!(c.call(&["MULTI"]), "+OK");
                    assert_eq!(c.call(&["DECRBY", "a", "3"]), "+QUEUED");
                    assert_eq!(c.call(&["INCRBY", "b", "3"]), "+QUEUED");
                    let reply = c.call(&["EXEC"]);
                    assert!(reply.starts_with("*[:"), "{reply}");
                } else {
                    let reply = c.call(&["INCR", "a"]);
                    assert!(reply.starts_with(':'), "{reply}");
                }
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut c = Client::connect(srv.addr);
    let a: i64 = c.call(&["GET", "a"])[1..].parse().unwrap();
    let b: i64 = c.call(&["GET", "b"])[1..].parse().unwrap();
    assert_eq!(b, 2 * rounds * 3);
    assert_eq!(a + b, 2 * rounds);
    srv.shutdown();
}

/// Many clients INCR one key at once, with no lock in the server: each increment is
/// counted once (the engine transaction retries the losers).
#[test]
fn concurrent_incr_and_append_are_atomic() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let mut threads = Vec::new();
    for _ in 0..8 {
        let addr = srv.addr;
        threads.push(std::thread::spawn(move || {
            let mut c = Client::connect(addr);
            for _ in 0..250 {
                assert!(c.call(&["INCR", "n"]).starts_with(':'));
                assert!(c.call(&["APPEND", "s", "x"]).starts_with(':'));
            }
        }));
    }
    for t in threads {
        t.join().unwrap();
    }
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["GET", "n"]), "$2000");
    assert_eq!(c.call(&["STRLEN", "s"]), ":2000");
    srv.shutdown();
}

#[test]
fn users_file_read_only_user_and_acl() {
    let users = cairn_server::Users::parse("alice wonderland\nreader letmein readonly\n").unwrap();
    let srv = start(move |c| {
        c.users = Some(users);
        c.requirepass = Some("rootpw".into());
    });
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["GET", "k"]), "-NOAUTH Authentication required.");
    assert_eq!(
        c.call(&["AUTH", "alice", "wrong"]),
        "-WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(
        c.call(&["AUTH", "nobody", "wonderland"]),
        "-WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(c.call(&["AUTH", "alice", "wonderland"]), "+OK");
    assert_eq!(c.call(&["ACL", "WHOAMI"]), "$alice");
    assert_eq!(c.call(&["SET", "k", "v"]), "+OK");
    let list = c.call(&["ACL", "LIST"]);
    // Passwords show only as their SHA-256, as in Redis.
    assert!(list.contains("user alice on #"), "{list}");
    assert!(list.contains(" ~* &* +@all,"), "{list}");
    assert!(list.contains(" ~* &* +@all -@write -@admin"), "{list}");
    assert!(list.contains("user default on"), "{list}");
    for secret in ["wonderland", "letmein", "rootpw"] {
        assert!(!list.contains(secret), "{list}");
    }
    let mut r = Client::connect(srv.addr);
    assert_eq!(r.call(&["AUTH", "reader", "letmein"]), "+OK");
    assert_eq!(r.call(&["GET", "k"]), "$v");
    assert_eq!(
        r.call(&["SET", "k", "w"]),
        "-NOPERM User reader has no permissions to run the 'set' command"
    );
    assert_eq!(
        r.call(&["INCR", "n"]),
        "-NOPERM User reader has no permissions to run the 'incr' command"
    );
    assert_eq!(
        r.call(&["ACL", "LIST"]),
        "-NOPERM User reader has no permissions to run the 'acl|list' command"
    );
    // A refused write inside MULTI aborts the transaction.
    assert_eq!(r.call(&["MULTI"]), "+OK");
    assert!(r.call(&["DEL", "k"]).starts_with("-NOPERM"));
    assert!(r.call(&["EXEC"]).starts_with("-EXECABORT"));
    assert_eq!(r.call(&["GET", "k"]), "$v");
    // `AUTH password` is the default user's.
    let mut d = Client::connect(srv.addr);
    assert_eq!(d.call(&["AUTH", "rootpw"]), "+OK");
    assert_eq!(d.call(&["ACL", "WHOAMI"]), "$default");
    assert_eq!(d.call(&["RESET"]), "+RESET");
    assert_eq!(d.call(&["GET", "k"]), "-NOAUTH Authentication required.");
    srv.shutdown();
}
