//! Hostile and broken clients: each gets an error and loses its connection, and none
//! slows or stops the others.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;
use std::time::{Duration, Instant};

use common::{start, Client};

#[test]
fn malformed_requests_close_only_their_connection() {
    let srv = start(|_| {});
    let mut good = Client::connect(srv.addr);
    assert_eq!(good.call(&["SET", "alive", "yes"]), "+OK");
    for (bad, want) in [
        (
            &b"*1\r\n$999999999999\r\n"[..],
            "-ERR Protocol error: invalid bulk length",
        ),
        (
            b"*99999999999\r\n",
            "-ERR Protocol error: invalid multibulk length",
        ),
        (
            b"*1\r\n:5\r\n",
            "-ERR Protocol error: expected '$', got ':'",
        ),
        (
            b"*1\r\n$2\r\nabc\r\n",
            "-ERR Protocol error: expected CRLF after bulk string",
        ),
    ] {
        let mut c = Client::connect(srv.addr);
        c.send_raw(bad);
        assert_eq!(c.reply(), want);
        assert!(c.closed());
        assert_eq!(good.call(&["GET", "alive"]), "$yes");
    }
    srv.shutdown();
}

#[test]
fn slow_senders_time_out_and_others_are_served_meanwhile() {
    let srv = start(|c| c.limits.request_timeout = Duration::from_secs(1));
    let mut slow = Client::connect(srv.addr);
    slow.send_raw(b"*2\r\n$3\r\nGET\r\n$5\r\nab");
    let mut good = Client::connect(srv.addr);
    let began = Instant::now();
    assert_eq!(good.call(&["PING"]), "+PONG");
    assert!(began.elapsed() < Duration::from_millis(500));
    assert_eq!(
        slow.reply(),
        "-ERR Protocol error: request took too long to arrive"
    );
    assert!(slow.closed());
    srv.shutdown();
}

#[test]
fn max_clients_refuses_the_one_too_many() {
    let srv = start(|c| c.max_clients = 2);
    let mut a = Client::connect(srv.addr);
    let mut b = Client::connect(srv.addr);
    assert_eq!(a.call(&["PING"]), "+PONG");
    assert_eq!(b.call(&["PING"]), "+PONG");
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.reply(), "-ERR max number of clients reached");
    drop(a);
    std::thread::sleep(Duration::from_millis(200));
    let mut d = Client::connect(srv.addr);
    assert_eq!(d.call(&["PING"]), "+PONG");
    srv.shutdown();
}

#[test]
fn idle_clients_are_disconnected() {
    let srv = start(|c| c.idle_timeout = Some(Duration::from_secs(1)));
    let mut c = Client::connect(srv.addr);
    assert_eq!(c.call(&["PING"]), "+PONG");
    std::thread::sleep(Duration::from_millis(2200));
    assert!(c.closed());
    srv.shutdown();
}

#[test]
fn a_request_trickling_in_byte_by_byte_is_cut_off() {
    let srv = start(|c| c.limits.request_timeout = Duration::from_secs(1));
    let mut slow = Client::connect(srv.addr);
    let began = Instant::now();
    // One byte every 200 ms for 1.6 s: every read succeeds, the request never completes.
    for _ in 0..8 {
        if std::io::Write::write_all(&mut slow.writer, b"a").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        slow.reply(),
        "-ERR Protocol error: request took too long to arrive"
    );
    assert!(began.elapsed() < Duration::from_secs(3));
    srv.shutdown();
}
