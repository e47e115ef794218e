//! The machine's latency floor: how often a thread that does nothing but read the clock
//! loses the CPU for a while without asking to (hypervisor steal, interrupts, other
//! processes). Every store's tail latencies sit on top of these gaps: an operation that
//! takes `t` µs is hit by a gap longer than `x` µs with probability about
//! `gaps_per_s(x) × t / 10⁶`, so no store's p99.9 on this machine falls much below the
//! gap length `x` at which that probability is 0.1 %.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// Gap lengths counted, µs.
pub const THRESHOLDS_US: [u64; 5] = [5, 10, 20, 40, 100];

/// Gaps a spinning thread saw between two consecutive clock reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Noise {
    /// Seconds measured.
    pub seconds: f64,
    /// Clock reads made.
    pub reads: u64,
    /// Gaps longer than each of [`THRESHOLDS_US`], per second.
    pub gaps_per_s: Vec<(u64, f64)>,
    /// The longest gap, µs.
    pub max_gap_us: f64,
}

/// Spins for `duration`, reading the clock, and counts the gaps between reads.
pub fn measure(duration: Duration) -> Noise {
    let start = Instant::now();
    let mut prev = start;
    let mut reads = 0u64;
    let mut counts = [0u64; THRESHOLDS_US.len()];
    let mut max_gap = Duration::ZERO;
    loop {
        let now = Instant::now();
        reads += 1;
        let gap = now - prev;
        prev = now;
        if gap > max_gap {
            max_gap = gap;
        }
        let us = gap.as_micros();
        for (count, &threshold) in counts.iter_mut().zip(&THRESHOLDS_US) {
            if us > u128::from(threshold) {
                *count += 1;
            }
        }
        if now - start >= duration {
            break;
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    Noise {
        seconds,
        reads,
        gaps_per_s: THRESHOLDS_US
            .iter()
            .zip(counts)
            .map(|(&t, c)| (t, c as f64 / seconds))
            .collect(),
        max_gap_us: max_gap.as_secs_f64() * 1e6,
    }
}

impl Noise {
    /// One line for the report.
    pub fn describe(&self) -> String {
        let gaps: Vec<String> = self
            .gaps_per_s
            .iter()
            .map(|(t, per_s)| format!("> {t} µs: {per_s:.0}/s"))
            .collect();
        format!(
            "over {:.0} s, a thread that only reads the clock saw gaps between two reads of {}; longest gap {:.0} µs",
            self.seconds,
            gaps.join(", "),
            self.max_gap_us
        )
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing)]
mod tests {
    use super::*;

    #[test]
    fn longer_gaps_are_never_more_frequent_than_shorter_ones() {
        let noise = measure(Duration::from_millis(200));
        assert!(noise.seconds >= 0.2 && noise.reads > 0);
        assert_eq!(noise.gaps_per_s.len(), THRESHOLDS_US.len());
        assert!(noise.gaps_per_s.windows(2).all(|w| w[0].1 >= w[1].1));
        let longest = noise.max_gap_us;
        for (threshold, per_s) in &noise.gaps_per_s {
            // A gap above a threshold exists only if the longest gap is above it.
            assert!(*per_s == 0.0 || longest > *threshold as f64);
        }
    }
}
