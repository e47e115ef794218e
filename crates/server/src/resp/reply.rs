//! Replies and their encoding in RESP2 and RESP3.
//!
//! One [`Reply`] value encodes in either protocol: RESP3's richer types fall back to the
//! RESP2 spelling Redis itself uses (null to `$-1`, a null array to `*-1`, a map to a flat
//! array of key, value, ..., a set to an array, a boolean to `:1`/`:0`, a double to a bulk
//! string). Simple strings and errors never contain CR or LF: [`Reply::error`] and
//! [`Reply::simple`] replace them with spaces, as Redis does.

/// The protocol version of a connection (`HELLO 2`, `HELLO 3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// RESP2, the default.
    Resp2,
    /// RESP3.
    Resp3,
}

/// A reply to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// `+OK`.
    Ok,
    /// A status line (`+PONG`).
    Simple(String),
    /// An error line: the code and message (`ERR syntax error`, `WRONGPASS ...`).
    Error(String),
    /// An integer.
    Int(i64),
    /// A bulk string.
    Bulk(Vec<u8>),
    /// The null bulk string (a missing key).
    Nil,
    /// The null array (RESP2 `*-1`).
    NilArray,
    /// An array.
    Array(Vec<Reply>),
    /// A map (RESP3 `%`; RESP2: a flat array).
    Map(Vec<(Reply, Reply)>),
    /// A set (RESP3 `~`; RESP2: an array).
    Set(Vec<Reply>),
    /// A boolean (RESP3 `#`; RESP2: 1 or 0).
    Bool(bool),
    /// A double (RESP3 `,`; RESP2: a bulk string).
    Double(f64),
}

impl Reply {
    /// An error reply; `text` starts with its code (`ERR`, `WRONGTYPE`, ...).
    pub fn error(text: impl Into<String>) -> Reply {
        Reply::Error(one_line(text.into()))
    }

    /// A status reply.
    pub fn simple(text: impl Into<String>) -> Reply {
        Reply::Simple(one_line(text.into()))
    }

    /// A bulk string from text.
    pub fn text(text: impl AsRef<str>) -> Reply {
        Reply::Bulk(text.as_ref().as_bytes().to_vec())
    }

    /// A bulk string, or null.
    pub fn bulk_or_nil(value: Option<Vec<u8>>) -> Reply {
        value.map_or(Reply::Nil, Reply::Bulk)
    }

    /// True for an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// Appends the encoding of the reply in `protocol` to `out`.
    pub fn encode(&self, protocol: Protocol, out: &mut Vec<u8>) {
        let resp3 = protocol == Protocol::Resp3;
        match self {
            Reply::Ok => out.extend_from_slice(b"+OK\r\n"),
            Reply::Simple(s) => line(out, b'+', s.as_bytes()),
            Reply::Error(s) => line(out, b'-', s.as_bytes()),
            Reply::Int(n) => line(out, b':', n.to_string().as_bytes()),
            Reply::Bulk(b) => bulk(out, b),
            Reply::Nil if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::Nil => out.extend_from_slice(b"$-1\r\n"),
            Reply::NilArray if resp3 => out.extend_from_slice(b"_\r\n"),
            Reply::NilArray => out.extend_from_slice(b"*-1\r\n"),
            Reply::Array(items) => {
                header(out, b'*', items.len());
                items.iter().for_each(|r| r.encode(protocol, out));
            }
            Reply::Set(items) => {
                header(out, if resp3 { b'~' } else { b'*' }, items.len());
                items.iter().for_each(|r| r.encode(protocol, out));
            }
            Reply::Map(pairs) => {
                if resp3 {
                    header(out, b'%', pairs.len());
                } else {
                    header(out, b'*', pairs.len().saturating_mul(2));
                }
                for (k, v) in pairs {
                    k.encode(protocol, out);
                    v.encode(protocol, out);
                }
            }
            Reply::Bool(b) if resp3 => {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" })
            }
            Reply::Bool(b) => out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" }),
            Reply::Double(d) => {
                let text = if d.is_infinite() {
                    if d.is_sign_positive() {
                        "inf".to_string()
                    } else {
                        "-inf".to_string()
                    }
                } else if d.is_nan() {
                    "nan".to_string()
                } else {
                    d.to_string()
                };
                if resp3 {
                    line(out, b',', text.as_bytes());
                } else {
                    bulk(out, text.as_bytes());
                }
            }
        }
    }
}

fn one_line(text: String) -> String {
    if text.contains(['\r', '\n']) {
        text.replace(['\r', '\n'], " ")
    } else {
        text
    }
}

fn line(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

fn header(out: &mut Vec<u8>, tag: u8, len: usize) {
    line(out, tag, len.to_string().as_bytes());
}

fn bulk(out: &mut Vec<u8>, body: &[u8]) {
    header(out, b'$', body.len());
    out.extend_from_slice(body);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: &Reply, p: Protocol) -> String {
        let mut out = Vec::new();
        r.encode(p, &mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    #[test]
    fn resp2_and_resp3_spellings() {
        let map = Reply::Map(vec![(Reply::text("a"), Reply::Int(1))]);
        assert_eq!(enc(&map, Protocol::Resp2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&map, Protocol::Resp3), "%1\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(&Reply::Nil, Protocol::Resp2), "$-1\r\n");
        assert_eq!(enc(&Reply::Nil, Protocol::Resp3), "_\r\n");
        assert_eq!(enc(&Reply::Bool(true), Protocol::Resp2), ":1\r\n");
        assert_eq!(enc(&Reply::Bool(true), Protocol::Resp3), "#t\r\n");
        assert_eq!(
            enc(&Reply::error("ERR a\r\nb"), Protocol::Resp2),
            "-ERR a  b\r\n"
        );
    }
}
