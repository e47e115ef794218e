//! Starting a server in-process on a free port, and a bare RESP client over a socket.
#![allow(
    dead_code,
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::indexing_slicing,
    clippy::panic
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::thread::JoinHandle;
use std::time::Duration;

use cairn::{Db, Options};
use cairn_server::{Config, Server, ShutdownHandle};

pub struct Running {
    pub addr: SocketAddr,
    pub tls_addr: Option<SocketAddr>,
    pub stop: ShutdownHandle,
    pub waiter: Option<JoinHandle<cairn_server::Result<()>>>,
    pub dir: tempfile::TempDir,
}

impl Running {
    pub fn shutdown(mut self) {
        self.stop.shutdown();
        self.waiter.take().unwrap().join().unwrap().unwrap();
    }
}

pub fn start_in(dir: tempfile::TempDir, tweak: impl FnOnce(&mut Config)) -> Running {
    let db = Db::open(dir.path().join("store"), Options::default()).unwrap();
    let mut config = Config::default();
    config.port = Some(0);
    tweak(&mut config);
    let server = Server::start(db, config).unwrap();
    let addr = server.local_addr().unwrap();
    let tls_addr = server.tls_addr();
    let stop = server.shutdown_handle();
    let waiter = std::thread::spawn(move || server.wait());
    Running {
        addr,
        tls_addr,
        stop,
        waiter: Some(waiter),
        dir,
    }
}

pub fn start(tweak: impl FnOnce(&mut Config)) -> Running {
    start_in(tempfile::tempdir().unwrap(), tweak)
}

/// A RESP client that sends commands and reads replies as raw text.
pub struct Client {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Client {
    pub fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        Client {
            reader: BufReader::new(s.try_clone().unwrap()),
            writer: s,
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.writer.write_all(bytes).unwrap();
    }

    pub fn send(&mut self, args: &[&[u8]]) {
        self.send_raw(&encode(args));
    }

    /// One reply, rendered as text: `+OK`, `-ERR ...`, `:1`, `$hello`, `$nil`, `*[...]`.
    pub fn reply(&mut self) -> String {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let line = line.trim_end_matches("\r\n").to_string();
        let (tag, rest) = line.split_at(1);
        match tag {
            "+" | "-" | ":" | "_" | "#" | "," => line.clone(),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return "$nil".into();
                }
                let mut buf = vec![0; n as usize + 2];
                self.reader.read_exact(&mut buf).unwrap();
                format!("${}", String::from_utf8_lossy(&buf[..n as usize]))
            }
            "*" | "%" | "~" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    return "*nil".into();
                }
                let n = if tag == "%" { n * 2 } else { n };
                let items: Vec<String> = (0..n).map(|_| self.reply()).collect();
                format!("{tag}[{}]", items.join(","))
            }
            _ => panic!("unexpected reply line {line:?}"),
        }
    }

    pub fn call(&mut self, args: &[&str]) -> String {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.send(&args);
        self.reply()
    }

    /// True once the server has closed the connection (reads end of input).
    pub fn closed(&mut self) -> bool {
        let mut buf = [0u8; 1];
        matches!(self.reader.read(&mut buf), Ok(0) | Err(_))
    }
}

pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}
