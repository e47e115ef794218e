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

#[test]
fn tls_listener_serves_a_rustls_client() {
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let files = tempfile::tempdir().unwrap();
    let cert_path = files.path().join("cert.pem");
    let key_path = files.path().join("key.pem");
    std::fs::write(&cert_path, certified.cert.pem()).unwrap();
    std::fs::write(&key_path, certified.key_pair.serialize_pem()).unwrap();
    let srv = start(|c| c.tls = Some(cairn_server::Tls::new(0, &cert_path, &key_path)));
    let tls_addr = srv.tls_addr.unwrap();

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
    let sock = TcpStream::connect(tls_addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
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
