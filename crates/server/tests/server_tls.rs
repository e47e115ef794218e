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
    tls_over(certified, TcpStream::connect(addr).unwrap())
}

/// A rustls client trusting `certified`, over `sock` (the handshake starts at the first
/// read or write).
fn tls_over(
    certified: &rcgen::CertifiedKey,
    sock: TcpStream,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    tls_over_as(certified, sock, None)
}

/// As [`tls_over`], presenting `client`'s certificate and key if given.
fn tls_over_as(
    certified: &rcgen::CertifiedKey,
    sock: TcpStream,
    client: Option<(&rcgen::Certificate, &rcgen::KeyPair)>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certified.cert.der().clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let config = match client {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let key = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
            builder
                .with_client_auth_cert(vec![cert.der().clone()], key)
                .unwrap()
        }
    };
    let name = "localhost".try_into().unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
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

/// Reads one RESP bulk string (`$<len>\r\n<bytes>\r\n`) from a TLS stream.
fn read_bulk(r: &mut impl Read) -> String {
    let mut header = Vec::new();
    let mut byte = [0u8; 1];
    while !header.ends_with(b"\r\n") {
        assert_eq!(r.read(&mut byte).unwrap(), 1, "end of input in {header:?}");
        header.push(byte[0]);
    }
    let header = String::from_utf8(header).unwrap();
    let len: usize = header.trim_end()[1..].parse().unwrap();
    let body = read_n(r, len + 2);
    String::from_utf8(body[..len].to_vec()).unwrap()
}

/// The value of `field` in an INFO reply.
fn info_field(info: &str, field: &str) -> String {
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {info}"))
        .to_string()
}

fn info(tls: &mut (impl Read + Write)) -> String {
    tls.write_all(&common::encode(&[b"INFO"])).unwrap();
    tls.flush().unwrap();
    read_bulk(tls)
}

/// A TLS server that admits one client (`max_clients = 1`), with that client connected
/// and answering PING.
fn one_client_admitted() -> (
    common::Running,
    rcgen::CertifiedKey,
    tempfile::TempDir,
    rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
) {
    one_client_admitted_with(Duration::from_secs(1))
}

/// As [`one_client_admitted`], with a shutdown grace of `grace`.
fn one_client_admitted_with(
    grace: Duration,
) -> (
    common::Running,
    rcgen::CertifiedKey,
    tempfile::TempDir,
    rustls::StreamOwned<rustls::ClientConnection, TcpStream>,
) {
    let (srv, certified, files) = start_tls(|c| {
        c.max_clients = 1;
        c.threads = 1;
        c.shutdown_grace = grace;
    });
    let tls_addr = srv.tls_addr.unwrap();
    let mut first = connect_tls(&certified, tls_addr);
    first.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    first.flush().unwrap();
    assert_eq!(read_n(&mut first, 7), b"+PONG\r\n");
    (srv, certified, files, first)
}

/// A TLS client over `max_clients` is told so over TLS, as a plain client is: it reads
/// exactly the error and then the end of the session (close_notify). The refusal is
/// counted, is not a client, and the admitted client goes on being served.
#[test]
fn a_tls_client_over_max_clients_reads_the_error_over_tls() {
    let (srv, certified, _files, mut first) = one_client_admitted();
    let tls_addr = srv.tls_addr.unwrap();

    let mut second = connect_tls(&certified, tls_addr);
    let mut got = Vec::new();
    // Ok only if the server ended the session with close_notify after the message.
    second.read_to_end(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );

    // A client that sends a request at once, before reading, is told the same.
    let mut eager = connect_tls(&certified, tls_addr);
    eager.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    eager.flush().unwrap();
    let mut got = Vec::new();
    eager.read_to_end(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );

    let info = info(&mut first);
    assert_eq!(info_field(&info, "rejected_connections"), "2");
    assert_eq!(info_field(&info, "connected_clients"), "1");
    first
        .write_all(&common::encode(&[b"CLIENT", b"LIST"]))
        .unwrap();
    first.flush().unwrap();
    assert_eq!(read_bulk(&mut first).lines().count(), 1);
    first.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    first.flush().unwrap();
    assert_eq!(read_n(&mut first, 7), b"+PONG\r\n");
    srv.shutdown();
}

/// Refused TLS clients that connect and never handshake are held only in a small number
/// and only for a while: the ones beyond it are closed at once, the held ones later, and
/// meanwhile the admitted client is served and a client admitted after it is too.
#[test]
fn refused_tls_clients_that_never_handshake_are_bounded() {
    let (srv, certified, _files, mut first) = one_client_admitted();
    let tls_addr = srv.tls_addr.unwrap();

    const SILENT: usize = 200;
    let silent: Vec<TcpStream> = (0..SILENT)
        .map(|_| {
            let s = TcpStream::connect(tls_addr).unwrap();
            s.set_nonblocking(true).unwrap();
            s
        })
        .collect();
    // The admitted client is served meanwhile.
    first.write_all(b"*1\r\n$4\r\nPING\r\n").unwrap();
    first.flush().unwrap();
    assert_eq!(read_n(&mut first, 7), b"+PONG\r\n");

    // Which silent clients the server has closed (end of input, nothing sent to them).
    let closed = |socks: &[TcpStream]| -> usize {
        socks
            .iter()
            .filter(|s| {
                let mut buf = [0u8; 16];
                match (&mut &**s).read(&mut buf) {
                    Ok(0) => true,
                    Ok(n) => panic!("a client that sent nothing got {n} bytes"),
                    Err(e) => e.kind() != std::io::ErrorKind::WouldBlock,
                }
            })
            .count()
    };
    // Those beyond the bound on refusals in flight (64) are closed at accept.
    let began = std::time::Instant::now();
    let mut early = closed(&silent);
    while early < SILENT - 64 && began.elapsed() < Duration::from_secs(3) {
        std::thread::sleep(Duration::from_millis(20));
        early = closed(&silent);
    }
    assert!(early >= SILENT - 64, "only {early} closed at once");
    assert!(early < SILENT, "no refusal waited for its handshake");

    let info = info(&mut first);
    assert_eq!(
        info_field(&info, "rejected_connections"),
        SILENT.to_string()
    );
    assert_eq!(info_field(&info, "connected_clients"), "1");

    // The acceptor is not held up by the waiting refusals: once the first client
    // leaves, a new one is admitted and served.
    drop(first);
    let admitted = std::time::Instant::now();
    let ping = || -> Option<()> {
        let mut c = connect_tls(&certified, tls_addr);
        c.write_all(b"*1\r\n$4\r\nPING\r\n").ok()?;
        c.flush().ok()?;
        let mut got = [0u8; 7];
        c.read_exact(&mut got).ok()?;
        (&got == b"+PONG\r\n").then_some(())
    };
    // Until the loop has seen the first client leave, a new one is still refused.
    while ping().is_none() {
        assert!(admitted.elapsed() < Duration::from_secs(10));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        admitted.elapsed() < Duration::from_secs(4),
        "admission took {:?}",
        admitted.elapsed()
    );

    // The held ones are dropped at their deadline.
    let mut all = closed(&silent);
    while all < SILENT && began.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(100));
        all = closed(&silent);
    }
    assert_eq!(all, SILENT);
    srv.shutdown();
}

/// Waits until the server has refused `count` clients in all (INFO, asked by `first`).
fn wait_rejected(first: &mut (impl Read + Write), count: usize) {
    let began = std::time::Instant::now();
    while info_field(&info(first), "rejected_connections") != count.to_string() {
        assert!(began.elapsed() < Duration::from_secs(10), "never refused");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Regression: a TLS client refused (max_clients) whose handshake was still under way
/// when a shutdown began was closed with the acceptor, without its error; a TLS client
/// accepted in the acceptor's last pass (refused because the server is stopping) would
/// have been too. The acceptor now stops accepting but goes on telling the refusals it
/// holds, within the shutdown's grace: the client reads its error over TLS.
#[test]
fn a_refused_tls_client_still_handshaking_at_shutdown_reads_the_error() {
    // A long grace, so a slow handshake on a loaded machine still falls within it.
    let (srv, certified, _files, mut first) = one_client_admitted_with(Duration::from_secs(20));
    let tls_addr = srv.tls_addr.unwrap();
    // Refused at accept; its handshake has not begun.
    let waiting = TcpStream::connect(tls_addr).unwrap();
    wait_rejected(&mut first, 1);

    let common::Running { stop, waiter, .. } = srv;
    stop.shutdown();
    let mut late = tls_over(&certified, waiting);
    let mut got = Vec::new();
    late.read_to_end(&mut got).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&got),
        "-ERR max number of clients reached\r\n"
    );
    waiter.unwrap().join().unwrap().unwrap();
}

/// A refused TLS client that never handshakes holds a shutdown up no longer than the
/// shutdown's grace for replies (1 s), and is then closed.
#[test]
fn a_silent_refused_tls_client_does_not_hold_shutdown_up() {
    let (srv, _certified, _files, mut first) = one_client_admitted();
    let tls_addr = srv.tls_addr.unwrap();
    let mut silent = TcpStream::connect(tls_addr).unwrap();
    silent
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    wait_rejected(&mut first, 1);
    let began = std::time::Instant::now();
    srv.shutdown();
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "shutdown took {:?}",
        began.elapsed()
    );
    let mut buf = [0u8; 16];
    assert!(
        matches!(silent.read(&mut buf), Ok(0) | Err(_)),
        "still open"
    );
}

/// A CA, and a client certificate it signed.
struct ClientPki {
    ca: rcgen::Certificate,
    client: rcgen::Certificate,
    client_key: rcgen::KeyPair,
}

fn client_pki() -> ClientPki {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "cairn test client CA");
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec!["client".to_string()]).unwrap();
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let client = params.signed_by(&client_key, &ca, &ca_key).unwrap();
    ClientPki {
        ca,
        client,
        client_key,
    }
}

/// A server whose TLS listener asks for client certificates (`optional` or required)
/// chaining to `pki`'s CA, and the server's own certificate.
fn start_mtls(
    pki: &ClientPki,
    optional: bool,
) -> (common::Running, rcgen::CertifiedKey, tempfile::TempDir) {
    let ca_files = tempfile::tempdir().unwrap();
    let ca_path = ca_files.path().join("clients-ca.pem");
    std::fs::write(&ca_path, pki.ca.pem()).unwrap();
    let (srv, certified, files) = start_tls(|c| {
        let tls = c.tls.take().unwrap();
        let asked = if optional {
            cairn_server::ClientCerts::Optional(ca_path.clone())
        } else {
            cairn_server::ClientCerts::Required(ca_path.clone())
        };
        c.tls = Some(tls.with_client_certs(asked));
    });
    // The CA file is read at start; the directory may go.
    drop(ca_files);
    (srv, certified, files)
}

/// A rustls client trusting the server's `certified`, presenting `client`'s certificate
/// and key if given, connected to `addr`.
fn connect_as(
    certified: &rcgen::CertifiedKey,
    addr: std::net::SocketAddr,
    client: Option<(&rcgen::Certificate, &rcgen::KeyPair)>,
) -> rustls::StreamOwned<rustls::ClientConnection, TcpStream> {
    tls_over_as(certified, TcpStream::connect(addr).unwrap(), client)
}

/// True if PING over `tls` gets PONG; false if the handshake or the read fails or the
/// server closes the connection first.
fn pings(tls: &mut rustls::StreamOwned<rustls::ClientConnection, TcpStream>) -> bool {
    if tls.write_all(b"*1\r\n$4\r\nPING\r\n").is_err() || tls.flush().is_err() {
        return false;
    }
    let mut got = Vec::new();
    let mut buf = [0u8; 64];
    while got.len() < 7 {
        match tls.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    got == b"+PONG\r\n"
}

#[test]
fn required_client_certificates_admit_only_clients_the_ca_signed() {
    let pki = client_pki();
    let (srv, certified, _files) = start_mtls(&pki, false);
    let addr = srv.tls_addr.unwrap();
    let mut signed = connect_as(&certified, addr, Some((&pki.client, &pki.client_key)));
    assert!(pings(&mut signed));

    // No certificate, or one the CA did not sign: refused in the handshake.
    let mut anonymous = connect_as(&certified, addr, None);
    assert!(!pings(&mut anonymous));
    let stranger = rcgen::generate_simple_self_signed(vec!["client".to_string()]).unwrap();
    let mut unsigned = connect_as(&certified, addr, Some((&stranger.cert, &stranger.key_pair)));
    assert!(!pings(&mut unsigned));
    // A certificate of another CA's client is no better.
    let other = client_pki();
    let mut foreign = connect_as(&certified, addr, Some((&other.client, &other.client_key)));
    assert!(!pings(&mut foreign));

    // The refusals harmed nobody: the admitted client and a new one are served.
    assert!(pings(&mut signed));
    let mut again = connect_as(&certified, addr, Some((&pki.client, &pki.client_key)));
    assert!(pings(&mut again));
    srv.shutdown();
}

#[test]
fn optional_client_certificates_admit_clients_without_one_but_not_with_a_bad_one() {
    let pki = client_pki();
    let (srv, certified, _files) = start_mtls(&pki, true);
    let addr = srv.tls_addr.unwrap();
    let mut anonymous = connect_as(&certified, addr, None);
    assert!(pings(&mut anonymous));
    let mut signed = connect_as(&certified, addr, Some((&pki.client, &pki.client_key)));
    assert!(pings(&mut signed));
    let other = client_pki();
    let mut foreign = connect_as(&certified, addr, Some((&other.client, &other.client_key)));
    assert!(!pings(&mut foreign));
    srv.shutdown();
}

#[test]
fn a_client_ca_file_that_is_missing_or_holds_no_certificate_refuses_to_start() {
    let files = tempfile::tempdir().unwrap();
    let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = files.path().join("cert.pem");
    let key = files.path().join("key.pem");
    std::fs::write(&cert, certified.cert.pem()).unwrap();
    std::fs::write(&key, certified.key_pair.serialize_pem()).unwrap();
    let empty = files.path().join("empty-ca.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    for (ca, want) in [
        (files.path().join("missing-ca.pem"), "missing-ca.pem"),
        (empty, "no certificate in the file"),
    ] {
        let db = cairn::Db::open(files.path().join("store"), cairn::Options::default()).unwrap();
        let mut config = cairn_server::Config::default();
        config.port = Some(0);
        config.tls = Some(
            cairn_server::Tls::new(0, &cert, &key)
                .with_client_certs(cairn_server::ClientCerts::Required(ca)),
        );
        let err = cairn_server::Server::start(db, config).err().unwrap();
        assert!(err.to_string().contains(want), "{err}");
        assert!(err.to_string().contains("client CA"), "{err}");
    }
}
