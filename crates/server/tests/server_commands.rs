//! The server end to end over a socket: commands, pipelining, RESP3, databases, and a
//! graceful shutdown that keeps every acknowledged write.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;
use common::{start, start_in, Client};

#[test]
fn strings_counters_and_errors() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["PING"]), "+PONG");
    assert_eq!(c.call(&["SET", "k", "10"]), "+OK");
    assert_eq!(c.call(&["INCR", "k"]), ":11");
    assert_eq!(c.call(&["GET", "k"]), "$11");
    assert_eq!(c.call(&["INCRBY", "k", "-20"]), ":-9");
    assert_eq!(c.call(&["SET", "k", "x", "NX"]), "$nil");
    assert_eq!(c.call(&["SET", "k", "y", "XX", "GET"]), "$-9");
    assert_eq!(
        c.call(&["INCR", "k"]),
        "-ERR value is not an integer or out of range"
    );
    assert_eq!(c.call(&["GETDEL", "k"]), "$y");
    assert_eq!(c.call(&["EXISTS", "k"]), ":0");
    assert_eq!(
        c.call(&["GET"]),
        "-ERR wrong number of arguments for 'get' command"
    );
    assert_eq!(
        c.call(&["FOO", "a", "b"]),
        "-ERR unknown command 'FOO', with args beginning with: 'a' 'b' "
    );
    assert_eq!(
        c.call(&["SET", "k", "v", "EX", "0"]),
        "-ERR invalid expire time in 'set' command"
    );
    assert_eq!(c.call(&["SET", "t", "v", "EX", "100"]), "+OK");
    assert_eq!(c.call(&["TTL", "t"]), ":100");
    assert_eq!(c.call(&["APPEND", "t", "w"]), ":2");
    assert_eq!(c.call(&["TTL", "t"]), ":100");
    assert_eq!(c.call(&["PERSIST", "t"]), ":1");
    assert_eq!(c.call(&["TTL", "t"]), ":-1");
    srv.shutdown();
}

#[test]
fn pipeline_of_ten_thousand_commands_in_one_write() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let mut c = Client::connect(srv.addr);
    let mut batch = Vec::new();
    for i in 0..10_000 {
        batch.extend(common::encode(&[b"INCR", b"n"]));
        if i % 1000 == 0 {
            batch.extend(common::encode(&[b"GET", b"n"]));
        }
    }
    let writer = {
        let mut w = c.writer.try_clone().unwrap();
        std::thread::spawn(move || std::io::Write::write_all(&mut w, &batch).unwrap())
    };
    let mut last = String::new();
    for _ in 0..10_010 {
        last = c.reply();
    }
    writer.join().unwrap();
    assert_eq!(last, ":10000");
    srv.shutdown();
}

#[test]
fn resp3_hello_and_databases() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    let hello = c.call(&["HELLO", "3"]);
    assert!(hello.starts_with("%[$server,$redis,"), "{hello}");
    assert_eq!(c.call(&["GET", "nope"]), "_");
    assert_eq!(c.call(&["CONFIG", "GET", "databases"]), "%[$databases,$16]");
    assert_eq!(c.call(&["SELECT", "3"]), "+OK");
    assert_eq!(c.call(&["SET", "a", "in-3"]), "+OK");
    let mut other = Client::connect(srv.addr);
    assert_eq!(other.call(&["GET", "a"]), "$nil");
    assert_eq!(
        other.call(&["SELECT", "16"]),
        "-ERR DB index is out of range"
    );
    assert_eq!(
        c.call(&["HELLO", "4"]),
        "-NOPROTO unsupported protocol version"
    );
    srv.shutdown();
}

#[test]
fn acknowledged_writes_survive_a_graceful_shutdown() {
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let mut c = Client::connect(srv.addr);
    for i in 0..500 {
        assert_eq!(c.call(&["SET", &format!("k{i}"), &i.to_string()]), "+OK");
    }
    c.send(&[b"SHUTDOWN"]);
    assert!(c.closed(), "SHUTDOWN closes without a reply");
    let common::Running {
        mut waiter, dir, ..
    } = srv;
    waiter.take().unwrap().join().unwrap().unwrap();
    let srv = start_in(dir, |_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["GET", "k499"]), "$499");
    assert_eq!(c.call(&["DBSIZE"]), ":500");
    srv.shutdown();
}

#[test]
fn requirepass_gates_commands() {
    let srv = start(|c| c.requirepass = Some("pw".into()));
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["GET", "a"]), "-NOAUTH Authentication required.");
    assert_eq!(
        c.call(&["AUTH", "nope"]),
        "-WRONGPASS invalid username-password pair or user is disabled."
    );
    assert_eq!(c.call(&["AUTH", "default", "pw"]), "+OK");
    assert_eq!(c.call(&["GET", "a"]), "$nil");
    srv.shutdown();
}

#[test]
fn metrics_endpoint_serves_prometheus_text() {
    use std::io::{Read, Write};
    let db_dir = tempfile::tempdir().unwrap();
    let db = cairn::Db::open(db_dir.path(), cairn::Options::default()).unwrap();
    let mut config = cairn_server::Config::default();
    config.port = Some(0);
    config.metrics_addr = Some("127.0.0.1:0".parse().unwrap());
    let server = cairn_server::Server::start(db, config).unwrap();
    let (addr, metrics) = (server.local_addr().unwrap(), server.metrics_addr().unwrap());
    let stop = server.shutdown_handle();
    let waiter = std::thread::spawn(move || server.wait());
    let mut c = Client::connect(addr);
    assert_eq!(c.call(&["SET", "a", "1"]), "+OK");
    assert_eq!(c.call(&["GET", "a"]), "$1");
    let mut http = std::net::TcpStream::connect(metrics).unwrap();
    http.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut page = String::new();
    http.read_to_string(&mut page).unwrap();
    assert!(page.starts_with("HTTP/1.0 200 OK\r\n"), "{page}");
    assert!(
        page.contains("cairn_commands_total{cmd=\"set\"} 1\n"),
        "{page}"
    );
    assert!(
        page.contains("cairn_command_duration_seconds_count{cmd=\"get\"} 1\n"),
        "{page}"
    );
    assert!(page.contains("cairn_connected_clients 1\n"), "{page}");
    assert!(page.contains("cairn_engine_last_seqno "), "{page}");
    assert!(page.contains("cairn_engine_wal_syncs_total "), "{page}");
    // The memory gauges: the default block cache's capacity, and no budget.
    assert!(
        page.contains("cairn_engine_block_cache_capacity_bytes 67108864\n"),
        "{page}"
    );
    assert!(page.contains("cairn_engine_index_filter_bytes "), "{page}");
    assert!(!page.contains("cairn_engine_memory_budget_bytes"), "{page}");
    // No row cache in this store (the library's default), and its counters are there.
    assert!(
        page.contains("cairn_engine_row_cache_capacity_bytes 0\n"),
        "{page}"
    );
    assert!(
        page.contains("cairn_engine_row_cache_hits_total 0\n"),
        "{page}"
    );
    // The disk-usage gauge: at least the store's log and manifest, and INFO agrees
    // (both read the same measure, refreshed at most every 10 s).
    let disk: u64 = page
        .lines()
        .find_map(|l| l.strip_prefix("cairn_engine_disk_bytes "))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no disk gauge in {page}"));
    assert!(disk > 0, "{page}");
    let info = c.call(&["INFO", "persistence"]);
    assert!(
        info.contains(&format!("cairn_disk_bytes:{disk}\r\n")),
        "{info}"
    );
    stop.shutdown();
    waiter.join().unwrap().unwrap();
}

#[test]
fn unix_socket_only() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("cairn.sock");
    let db = cairn::Db::open(dir.path().join("store"), cairn::Options::default()).unwrap();
    let mut config = cairn_server::Config::default();
    config.port = None;
    config.unix_socket = Some(sock.clone());
    let server = cairn_server::Server::start(db, config).unwrap();
    assert!(server.local_addr().is_none());
    let stop = server.shutdown_handle();
    let waiter = std::thread::spawn(move || server.wait());
    let mut c = std::os::unix::net::UnixStream::connect(&sock).unwrap();
    c.write_all(b"SET u 1\r\nGET u\r\n").unwrap();
    let mut got = [0u8; 12];
    c.read_exact(&mut got).unwrap();
    assert_eq!(&got, b"+OK\r\n$1\r\n1\r\n");
    stop.shutdown();
    waiter.join().unwrap().unwrap();
    assert!(!sock.exists(), "the socket file is removed at shutdown");
}

#[test]
fn pipelined_sets_commit_together_in_order() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    let mut burst = Vec::new();
    for args in [
        &[&b"SET"[..], b"a", b"1"][..],
        &[b"set", b"a", b"2"],
        &[b"GET", b"a"],
        &[b"SET", b"b", b"x"],
        &[b"INCR", b"b"],
        &[b"SET", b"c"],
        &[b"SET", b"n", b"41"],
        &[b"SELECT", b"1"],
        &[b"SET", b"n", b"in-db-1"],
        &[b"SELECT", b"0"],
        &[b"INCR", b"n"],
    ] {
        burst.extend(common::encode(args));
    }
    c.send_raw(&burst);
    let replies: Vec<String> = (0..11).map(|_| c.reply()).collect();
    assert_eq!(
        replies,
        [
            "+OK",
            "+OK",
            "$2",
            "+OK",
            "-ERR value is not an integer or out of range",
            "-ERR wrong number of arguments for 'set' command",
            "+OK",
            "+OK",
            "+OK",
            "+OK",
            ":42"
        ]
    );
    let stats = c.call(&["INFO", "commandstats"]);
    assert!(stats.contains("cmdstat_set:calls=5,"), "{stats}");
    srv.shutdown();
}

#[test]
fn pipelined_counters_batch_with_redis_semantics() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["SET", "t", "5", "EX", "100"]), "+OK");
    let mut burst = Vec::new();
    for args in [
        &[&b"INCR"[..], b"t"][..],
        &[b"INCRBY", b"t", b"10"],
        &[b"DECR", b"fresh"],
        &[b"DECRBY", b"fresh", b"4"],
        &[b"SET", b"big", b"9223372036854775806"],
        &[b"INCR", b"big"],
        &[b"INCR", b"big"],
        &[b"INCRBY", b"t", b"x"],
        &[b"SET", b"t2", b"1"],
        &[b"INCR", b"t2"],
    ] {
        burst.extend(common::encode(args));
    }
    c.send_raw(&burst);
    let replies: Vec<String> = (0..10).map(|_| c.reply()).collect();
    assert_eq!(
        replies,
        [
            ":6",
            ":16",
            ":-1",
            ":-5",
            "+OK",
            ":9223372036854775807",
            "-ERR increment or decrement would overflow",
            "-ERR value is not an integer or out of range",
            "+OK",
            ":2"
        ]
    );
    assert_eq!(c.call(&["TTL", "t"]), ":100");
    assert_eq!(c.call(&["GET", "t"]), "$16");
    assert_eq!(c.call(&["TTL", "t2"]), ":-1");
    assert_eq!(c.call(&["GET", "big"]), "$9223372036854775807");
    srv.shutdown();
}

/// A pipelined burst of counters commits as one engine batch whose increments the write
/// leader resolves; a batch with one refused increment is refused whole by the engine, so
/// the server then runs the burst command by command. Either way each command gets
/// Redis's own reply: the INCR of a non-integer value errors with Redis's text, the
/// others around it apply, and every counter keeps its key's expiry.
#[test]
fn pipelined_counters_with_one_non_integer_apply_the_others() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["SET", "a", "1", "EX", "100"]), "+OK");
    assert_eq!(c.call(&["SET", "s", "abc", "EX", "100"]), "+OK");
    let mut burst = Vec::new();
    for args in [
        &[&b"INCR"[..], b"a"][..],
        &[b"INCR", b"s"],
        &[b"INCR", b"b"],
        &[b"INCRBY", b"a", b"5"],
        &[b"DECR", b"s"],
        &[b"DECRBY", b"c", b"3"],
    ] {
        burst.extend(common::encode(args));
    }
    c.send_raw(&burst);
    let replies: Vec<String> = (0..6).map(|_| c.reply()).collect();
    let not_integer = "-ERR value is not an integer or out of range";
    assert_eq!(replies, [":2", not_integer, ":1", ":7", not_integer, ":-3"]);
    assert_eq!(c.call(&["GET", "a"]), "$7");
    assert_eq!(c.call(&["TTL", "a"]), ":100");
    assert_eq!(c.call(&["GET", "s"]), "$abc");
    assert_eq!(c.call(&["TTL", "s"]), ":100");
    assert_eq!(c.call(&["GET", "b"]), "$1");
    assert_eq!(c.call(&["TTL", "b"]), ":-1");
    srv.shutdown();
}

/// A burst where every counter succeeds: each keeps its key's expiry (Redis's INCR keeps
/// the TTL), a plain SET in the same burst clears the expiry before the INCR after it,
/// and counters created by the burst have none.
#[test]
fn pipelined_counters_keep_the_expiry() {
    let srv = start(|_| {});
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["SET", "t", "5", "EX", "100"]), "+OK");
    assert_eq!(c.call(&["SET", "u", "5", "PX", "200000"]), "+OK");
    let mut burst = Vec::new();
    for args in [
        &[&b"INCR"[..], b"t"][..],
        &[b"INCRBY", b"t", b"10"],
        &[b"SET", b"u", b"40"],
        &[b"INCR", b"u"],
        &[b"DECR", b"v"],
        &[b"INCR", b"t"],
    ] {
        burst.extend(common::encode(args));
    }
    c.send_raw(&burst);
    let replies: Vec<String> = (0..6).map(|_| c.reply()).collect();
    assert_eq!(replies, [":6", ":16", "+OK", ":41", ":-1", ":17"]);
    assert_eq!(c.call(&["TTL", "t"]), ":100");
    assert_eq!(c.call(&["GET", "t"]), "$17");
    assert_eq!(c.call(&["TTL", "u"]), ":-1");
    assert_eq!(c.call(&["TTL", "v"]), ":-1");
    srv.shutdown();
}

/// Pipelined counters of several connections on the same keys lose no increment: each
/// burst's increments are resolved by the engine's write leader, atomically with every
/// other write.
#[test]
fn concurrent_pipelined_counters_add_up() {
    const CLIENTS: usize = 4;
    const ROUNDS: usize = 20;
    const BURST: usize = 50;
    let srv = start(|c| c.durability = cairn::Durability::Buffered);
    let addr = srv.addr;
    let workers: Vec<_> = (0..CLIENTS)
        .map(|_| {
            std::thread::spawn(move || {
                let mut c = Client::connect(addr);
                for _ in 0..ROUNDS {
                    let mut burst = Vec::new();
                    for i in 0..BURST {
                        if i % 2 == 0 {
                            burst.extend(common::encode(&[b"INCR", b"shared"]));
                        } else {
                            burst.extend(common::encode(&[b"INCRBY", b"by2", b"2"]));
                        }
                    }
                    c.send_raw(&burst);
                    for _ in 0..BURST {
                        let r = c.reply();
                        assert!(r.starts_with(':'), "{r}");
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }
    let mut c = Client::connect(addr);
    let each = CLIENTS * ROUNDS * BURST / 2;
    assert_eq!(c.call(&["GET", "shared"]), format!("${each}"));
    assert_eq!(c.call(&["GET", "by2"]), format!("${}", each * 2));
    srv.shutdown();
}
