//! Bytes from a client, as `cairn serve` reads them: the first byte picks how the input
//! is cut into reads, the rest is the stream.
//!
//! Any input must give requests or a protocol error, never a panic or an allocation
//! beyond the limits; cut into reads anyhow, the same stream gives the same requests
//! and the same verdict; every request re-encoded as a multibulk array parses back to
//! itself.
#![no_main]

use cairn_server::resp::{Parser, ProtocolError, Request};
use cairn_server::Limits;
use libfuzzer_sys::fuzz_target;

fn limits() -> Limits {
    let mut l = Limits::default();
    l.max_bulk_len = 512;
    l.max_multibulk_count = 64;
    l.max_inline_len = 256;
    l.max_request_len = 4096;
    l
}

/// Feeds `data` in reads of `cut` bytes (0: all at once), as the connection loop does.
fn run(data: &[u8], cut: usize) -> (Vec<Request>, Option<ProtocolError>) {
    let mut parser = Parser::new(limits());
    let mut buf: Vec<u8> = Vec::new();
    let mut requests = Vec::new();
    let step = if cut == 0 { data.len().max(1) } else { cut };
    for chunk in data.chunks(step) {
        buf.extend_from_slice(chunk);
        loop {
            match parser.parse(&buf) {
                Err(e) => return (requests, Some(e)),
                Ok((used, req)) => {
                    assert!(used <= buf.len(), "consumed more than was given");
                    buf.drain(..used);
                    match req {
                        Some(r) => {
                            let l = limits();
                            assert!(!r.is_empty() && r.len() <= l.max_multibulk_count);
                            assert!(r.iter().all(|a| a.len() <= l.max_bulk_len.max(l.max_inline_len)));
                            requests.push(r);
                        }
                        None => break,
                    }
                }
            }
        }
    }
    (requests, None)
}

fn encode(r: &Request) -> Vec<u8> {
    let mut out = format!("*{}\r\n", r.len()).into_bytes();
    for a in r {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&cut, data)) = input.split_first() else { return };
    let whole = run(data, 0);
    let pieces = run(data, usize::from(cut % 17));
    assert_eq!(whole, pieces, "the same stream cut differently parsed differently");
    for r in &whole.0 {
        if r.iter().map(Vec::len).sum::<usize>() <= limits().max_request_len {
            let (again, err) = run(&encode(r), 0);
            assert_eq!((again.as_slice(), err), (std::slice::from_ref(r), None), "round trip");
        }
    }
});
