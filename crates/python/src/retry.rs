//! The pause between attempts of a transaction that conflicted (`Db.update`,
//! `Keyspace.fetch_update`), taken without the GIL.

/// Waits before attempt `attempt + 1` of a retried transaction: a pause up to 50 µs × 2^attempt (at
/// most 10 ms), spread by the clock's nanoseconds so conflicting threads do not meet again
/// in lockstep.
pub(crate) fn backoff(attempt: u32) {
    let cap_us = (50u64 << attempt.min(8)).min(10_000);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::from(d.subsec_nanos()));
    std::thread::sleep(std::time::Duration::from_micros(nanos % cap_us + 1));
}
