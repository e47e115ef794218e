//! The TLS listener: a rustls client trusting a self-signed certificate made for the
//! test talks RESP over it; a client speaking plain RESP to it is disconnected.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use common::start;

/// Reads until `want` bytes arrived (or the stream ends).
fn read_n(r: &mut impl Read, want: usize) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    while got.len() < want {
        let n = r.read(&mut buf).unwrap();
        if n == 0 {
            break;
        }
        got.extend_from_slice(&buf[..n]);
    }
    got
}

/// A server with a TLS listener on a self-signed certificate, and that certificate.
fn start_tls(
    tweak: impl FnOnce(&mut cairn_server::Config),
) -> (common::Running, rcgen::CertifiedKey, tempfile::TempDir) {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let files = tempfile::tempdir().unwrap();
    let cert_path = files.path().join("cert.pem");
    let key_path = files.path().join("key.pem");
    std::fs::write(&cert_path, certified.cert.pem()).unwrap();
    std::fs::write(&key_path, certified.key_pair.serialize_pem()).unwrap();
    let srv = start(|c| {
        c.tls = Some(cairn_server::Tls::new(0, &cert_path, &key_path));
        tweak(c);
    });
    (srv, certified, files)
}

/// A rustls client trusting `certified`, connected to `addr`.
fn connect_tls(
    certified: &rcgen::CertifiedKey,
    addr: std::net::SocketAddr,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = "localhost".try_into().unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    rustls::StreamOwned::new(conn, sock)
}

#[test]
fn tls_listener_serves_a_rustls_client() {
    let (srv, certified, _files) = start_tls(|_| {});
    let tls_addr = srv.tls_addr.unwrap();
    let mut tls = connect_tls(&certified, tls_addr);
    tls.write_all(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$6\r\nsecret\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n")
        .unwrap();
    tls.flush().unwrap();
    let want = b"+OK\r\n$6\r\nsecret\r\n";
    assert_eq!(read_n(&mut tls, want.len()), want);

    // The plain listener sees the same store.
    let mut plain = common::Client::connect(srv.addr);
    assert_eq!(plain.call(&["GET", "k"]), "$secret");

    // Plain RESP on the TLS port is not a TLS handshake: the connection is closed
    // without a reply in clear text.
    let mut raw = TcpStream::connect(tls_addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    raw.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    let got = read_n(&mut raw, 1 << 16);
    assert!(!got.windows(4).any(|w| w == b"PONG"), "{got:?}");
    srv.shutdown();
}

#[test]
fn tls_with_a_missing_key_file_refuses_to_start() {
    let files = tempfile::tempdir().unwrap();
    let db = cairn::Db::open(files.path().join("store"), cairn::Options::default()).unwrap();
    let mut config = cairn_server::Config::default();
    config.port = Some(0);
    config.tls = Some(cairn_server::Tls::new(
        0,
        files.path().join("none.pem"),
        files.path().join("none.key"),
    ));
    let err = cairn_server::Server::start(db, config).err().unwrap();
    assert!(err.to_string().contains("none.pem"), "{err}");
}

/// Replies far larger than the socket buffers, over TLS, to a pipelining client on a
/// single loop: rustls's records are pushed as the socket drains (partial writes,
/// writable events), every byte arrives in order, and another client is served meanwhile.
#[test]
fn tls_pipelined_large_replies_arrive_whole() {
    let (srv, certified, _files) = start_tls(|c| c.threads = 1);
    let big: Vec<u8> = (0..200_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut plain = common::Client::connect(srv.addr);
    assert_eq!(
        plain.call(&["SET", "big", std::str::from_utf8(&big).unwrap()]),
        "+OK"
    );
    let mut tls = connect_tls(&certified, srv.tls_addr.unwrap());
    let mut requests = Vec::new();
    let mut want = Vec::new();
    for i in 1..=40 {
        requests.extend(common::encode(&[b"GET", b"big"]));
        want.extend(format!("${}\r\n", big.len()).into_bytes());
        want.extend(&big);
        want.extend(b"\r\n");
        requests.extend(common::encode(&[b"INCR", b"tls-n"]));
        want.extend(format!(":{i}\r\n").into_bytes());
    }
    tls.write_all(&requests).unwrap();
    tls.flush().unwrap();
    // Read the first part, then let the server wait on the unread rest while another
    // client of the same loop is served.
    let mut got = read_n(&mut tls, 1 << 20);
    assert_eq!(plain.call(&["PING"]), "+PONG");
    got.extend(read_n(&mut tls, want.len() - got.len()));
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the replies differ from what was asked");
    assert_eq!(plain.call(&["GET", "tls-n"]), "$40");
    srv.shutdown();
}
