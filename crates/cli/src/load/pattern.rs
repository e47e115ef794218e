//! When operations happen (`--pattern`, `--rate`): the schedule each load thread follows.
//!
//! - `consistent`: as fast as possible, or at `--rate` operations per second in total.
//! - `burst`: alternating busy periods (`--burst-on`, as fast as possible or at `--rate`)
//!   and idle periods (`--burst-off`, no operations).
//! - `ramp`: the rate rises linearly from 0 to `--rate` over the run (so the run averages
//!   half of `--rate`).
//!
//! A rate is split evenly over the threads. Each thread keeps an absolute schedule: its
//! operation number `k` may start at [`Pacer::due`]`(k)` after the start. A thread that is
//! ahead sleeps until then; one that fell behind (a slow operation, a late wake-up) runs
//! without sleeping until it is back on schedule, so the rate over the run is the one asked
//! for as long as the backend keeps up.

use std::fmt;
use std::time::Duration;

use clap::ValueEnum;

/// `--pattern`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Pattern {
    /// As fast as possible, or at --rate.
    Consistent,
    /// Busy (--burst-on) and idle (--burst-off) periods in turn.
    Burst,
    /// The rate rises linearly from 0 to --rate.
    Ramp,
}

impl fmt::Display for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Pattern::Consistent => "consistent",
            Pattern::Burst => "burst",
            Pattern::Ramp => "ramp",
        })
    }
}

/// One thread's schedule.
#[derive(Debug, Clone, Copy)]
pub struct Pacer {
    pattern: Pattern,
    /// Operations per second of this thread (the final rate for `ramp`), if limited.
    rate: Option<f64>,
    /// Length of the run.
    run: Duration,
    on: Duration,
    off: Duration,
}

impl Pacer {
    /// The schedule of one of `threads` threads sharing `rate` operations per second.
    /// `ramp` needs a rate (checked when the flags are read); without one it runs flat out.
    pub fn new(
        pattern: Pattern,
        rate: Option<f64>,
        threads: usize,
        run: Duration,
        on: Duration,
        off: Duration,
    ) -> Pacer {
        Pacer {
            pattern,
            rate: rate.map(|r| r / threads.max(1) as f64),
            run,
            on,
            off,
        }
    }

    /// The earliest time after the start at which this thread's operation number `done`
    /// may start, given that `now` has passed; `now` itself means "go".
    pub fn due(&self, done: u64, now: Duration) -> Duration {
        let k = done as f64;
        match (self.pattern, self.rate) {
            (Pattern::Consistent, None) | (Pattern::Ramp, None) => now,
            (Pattern::Consistent, Some(r)) => secs(k / r),
            // ops(t) = r t² / (2 T), so operation k is due at sqrt(2 T k / r).
            (Pattern::Ramp, Some(r)) => secs((2.0 * self.run.as_secs_f64() * k / r).sqrt()),
            (Pattern::Burst, rate) => {
                let (on, cycle) = (self.on.as_secs_f64(), (self.on + self.off).as_secs_f64());
                if cycle <= 0.0 {
                    return now;
                }
                match rate {
                    Some(r) => {
                        let per_burst = r * on;
                        if per_burst <= 0.0 {
                            return self.run;
                        }
                        let burst = (k / per_burst).floor();
                        secs(burst * cycle + (k - burst * per_burst) / r)
                    }
                    None => {
                        let at = now.as_secs_f64() % cycle;
                        if at < on {
                            now
                        } else {
                            now + secs(cycle - at)
                        }
                    }
                }
            }
        }
    }
}

fn secs(s: f64) -> Duration {
    Duration::try_from_secs_f64(s).unwrap_or(Duration::MAX)
}

/// Parses a duration: `10` (seconds), `1.5s`, `500ms`, `250us`, `2m`.
///
/// # Errors
/// A message for anything else, or a zero or negative duration.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix("us").or_else(|| t.strip_suffix("µs")) {
        (n, 1e-6)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else {
        (t, 1.0)
    };
    number
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && *v > 0.0)
        .and_then(|v| Duration::try_from_secs_f64(v * scale).ok())
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            format!("expected a positive duration such as 10, 10s, 500ms or 2m, got {text:?}")
        })
}

/// Parses `--rate`: positive operations per second.
///
/// # Errors
/// A message for anything else.
pub fn parse_rate(text: &str) -> Result<f64, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|r| r.is_finite() && *r > 0.0)
        .ok_or_else(|| {
            format!("--rate must be a positive number of operations per second, got {text:?}")
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn pacer(pattern: Pattern, rate: Option<f64>, threads: usize) -> Pacer {
        Pacer::new(
            pattern,
            rate,
            threads,
            Duration::from_secs(10),
            200 * MS,
            800 * MS,
        )
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("0.5"), Ok(500 * MS));
        assert_eq!(parse_duration("500ms"), Ok(500 * MS));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        for bad in ["", "0", "-1s", "ten", "5h", "NaNs", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert_eq!(parse_rate("1500"), Ok(1500.0));
        assert!(parse_rate("0").is_err() && parse_rate("x").is_err());
    }

    #[test]
    fn flat_out_never_waits() {
        let p = pacer(Pattern::Consistent, None, 4);
        assert_eq!(p.due(1_000_000, 3 * MS), 3 * MS);
    }

    #[test]
    fn a_rate_is_split_over_threads() {
        // 1000 ops/s over 4 threads: each thread one op every 4 ms.
        let p = pacer(Pattern::Consistent, Some(1000.0), 4);
        assert_eq!(p.due(0, Duration::ZERO), Duration::ZERO);
        assert_eq!(p.due(250, Duration::ZERO), Duration::from_secs(1));
        assert_eq!(p.due(1, Duration::ZERO), 4 * MS);
    }

    #[test]
    fn ramp_reaches_the_rate_at_the_end() {
        // 100 ops/s at the end of a 10 s run: 500 ops in total, 125 in the first 5 s.
        let p = pacer(Pattern::Ramp, Some(100.0), 1);
        assert_eq!(p.due(500, Duration::ZERO), Duration::from_secs(10));
        assert_eq!(p.due(125, Duration::ZERO), Duration::from_secs(5));
        // The last second holds about 95 ops (rate near 100/s).
        let at_9s = (0..).find(|&k| p.due(k, Duration::ZERO) >= Duration::from_secs(9));
        assert_eq!(at_9s, Some(405));
    }

    #[test]
    fn bursts_alternate() {
        let p = pacer(Pattern::Burst, None, 2);
        assert_eq!(p.due(7, 150 * MS), 150 * MS);
        assert_eq!(p.due(7, 300 * MS), 1000 * MS);
        assert_eq!(p.due(7, 1100 * MS), 1100 * MS);
        // At 100 ops/s per thread, 20 ops per 200 ms burst, then 800 ms idle.
        let p = pacer(Pattern::Burst, Some(200.0), 2);
        assert_eq!(p.due(10, Duration::ZERO), 100 * MS);
        assert_eq!(p.due(20, Duration::ZERO), 1000 * MS);
        assert_eq!(p.due(25, Duration::ZERO), 1050 * MS);
    }
}
