//! Latency: histograms in nanoseconds, the clock one operation's sample is read from, and
//! the summary (count, mean, p50/p99/p99.9/max) every report prints.
//!
//! The rule every benchmark follows (db_bench's `FinishedSingleOp`): one clock read per
//! operation, and a sample is the time since the same thread's previous operation ended
//! (or since the thread started), so nothing between operations goes unmeasured.

use std::time::{Duration, Instant};

use hdrhistogram::{CreationError, Histogram};
use serde_json::{json, Value};

/// Largest latency recorded exactly (one hour); longer ones count as one hour.
pub const HIGHEST_NS: u64 = 3_600_000_000_000;

/// An empty latency histogram in nanoseconds, 1 ns to [`HIGHEST_NS`], three significant
/// digits.
///
/// # Errors
/// Only if hdrhistogram refused the constant bounds, which it does not.
pub fn histogram() -> Result<Histogram<u64>, CreationError> {
    Histogram::new_with_bounds(1, HIGHEST_NS, 3)
}

/// Nanoseconds from `from` to `to` (0 if `to` is earlier), saturating.
pub fn nanos(from: Instant, to: Instant) -> u64 {
    u64::try_from(to.saturating_duration_since(from).as_nanos()).unwrap_or(u64::MAX)
}

/// One thread's operation clock: the instant its previous operation ended.
#[derive(Debug, Clone, Copy)]
pub struct Lap {
    last: Instant,
}

impl Lap {
    /// A clock whose first lap starts at `at`.
    pub fn at(at: Instant) -> Lap {
        Lap { last: at }
    }

    /// A clock whose first lap starts now.
    pub fn now() -> Lap {
        Lap::at(Instant::now())
    }

    /// Nanoseconds since the previous lap ended (or the clock started); the next lap
    /// starts now.
    pub fn lap(&mut self) -> u64 {
        let now = Instant::now();
        let ns = nanos(self.last, now);
        self.last = now;
        ns
    }

    /// Starts the next lap now without taking a sample (after an idle wait that is not
    /// the operation's time).
    pub fn restart(&mut self) {
        self.last = Instant::now();
    }

    /// When the previous lap ended.
    pub fn last(&self) -> Instant {
        self.last
    }
}

/// Wall-clock time from the first of `spans`' starts to the last of their ends (zero for
/// none): the elapsed time of a workload whose threads ran the spans.
pub fn wall_time(spans: impl IntoIterator<Item = (Instant, Instant)>) -> Duration {
    let mut bounds: Option<(Instant, Instant)> = None;
    for (start, end) in spans {
        bounds = Some(match bounds {
            Some((first, last)) => (first.min(start), last.max(end)),
            None => (start, end),
        });
    }
    bounds.map_or(Duration::ZERO, |(first, last)| {
        last.saturating_duration_since(first)
    })
}

/// A histogram's sample count, mean and percentiles, in nanoseconds; all zero for an
/// empty histogram.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// Samples recorded.
    pub samples: u64,
    /// Mean.
    pub mean_ns: f64,
    /// Median.
    pub p50_ns: u64,
    /// 99th percentile.
    pub p99_ns: u64,
    /// 99.9th percentile.
    pub p999_ns: u64,
    /// Largest sample.
    pub max_ns: u64,
}

impl Summary {
    /// The summary of `h`.
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        Summary {
            samples: h.len(),
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.5),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
        }
    }

    /// True if no sample was recorded.
    pub fn is_empty(&self) -> bool {
        self.samples == 0
    }
}

/// A latency histogram as the JSON object of the CLI's reports: `unit` (`op`, or `batch`
/// when a sample covers `per_sample` > 1 operations), `ops_per_sample`, `samples`,
/// `mean_ns`, `p50_ns`, `p99_ns`, `p999_ns` and `max_ns`.
pub fn latency_json(h: &Histogram<u64>, per_sample: u64) -> Value {
    let s = Summary::of(h);
    json!({
        "unit": if per_sample > 1 { "batch" } else { "op" },
        "ops_per_sample": per_sample,
        "samples": s.samples,
        "mean_ns": s.mean_ns,
        "p50_ns": s.p50_ns,
        "p99_ns": s.p99_ns,
        "p999_ns": s.p999_ns,
        "max_ns": s.max_ns,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    #[test]
    fn percentiles_of_a_known_input() {
        let mut h = histogram().unwrap();
        // 1..=1000 ns: below 2048, three significant digits record every value exactly.
        for ns in 1..=1000 {
            h.saturating_record(ns);
        }
        let s = Summary::of(&h);
        assert_eq!(s.samples, 1000);
        assert!((s.mean_ns - 500.5).abs() < 1e-9, "{s:?}");
        assert_eq!(
            (s.p50_ns, s.p99_ns, s.p999_ns, s.max_ns),
            (500, 990, 999, 1000)
        );
        let v = latency_json(&h, 1);
        assert_eq!(v["unit"], "op");
        assert_eq!(v["p99_ns"], 990);
        assert_eq!(latency_json(&h, 10)["unit"], "batch");
    }

    #[test]
    fn large_samples_keep_three_digits_and_an_hour_is_the_ceiling() {
        let mut h = histogram().unwrap();
        h.saturating_record(1_234_567);
        h.saturating_record(u64::MAX);
        let s = Summary::of(&h);
        assert!(s.p50_ns.abs_diff(1_234_567) <= 1_234_567 / 1000, "{s:?}");
        assert!(s.max_ns.abs_diff(HIGHEST_NS) <= HIGHEST_NS / 1000, "{s:?}");
    }

    #[test]
    fn an_empty_histogram_summarises_to_zeros() {
        let h = histogram().unwrap();
        assert!(Summary::of(&h).is_empty());
        assert_eq!(Summary::of(&h), Summary::default());
        assert_eq!(latency_json(&h, 1)["max_ns"], 0);
    }

    #[test]
    fn laps_and_wall_time() {
        let start = Instant::now();
        let mut lap = Lap::at(start);
        std::thread::sleep(Duration::from_millis(2));
        assert!(lap.lap() >= 2_000_000);
        assert!(lap.last() > start);
        assert!(lap.lap() < 1_000_000_000);
        let later = start + Duration::from_millis(5);
        assert_eq!(nanos(later, start), 0);
        assert_eq!(
            wall_time([(later, later + Duration::from_millis(1)), (start, later)]),
            Duration::from_millis(6)
        );
        assert_eq!(wall_time([]), Duration::ZERO);
    }
}
