//! RESP, the Redis serialisation protocol: [`Parser`] reads requests (RESP2 multibulk
//! arrays of bulk strings, and inline lines as typed into telnet), [`Reply`] writes
//! replies in RESP2 or RESP3 ([`Protocol`], chosen per connection by `HELLO`).
//!
//! Requests are the same in both protocol versions; only replies differ (RESP3 has null,
//! maps, sets, booleans and doubles, which RESP2 spells as bulk strings and flat arrays).

mod parse;
mod reply;

pub use parse::{Parser, ProtocolError, Request};
pub use reply::{Protocol, Reply};
