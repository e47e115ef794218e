//! Wall-clock and process-CPU timing around a closure, as the reference
//! Sparkey `bench.c` does (`CLOCK_MONOTONIC_RAW` / `CLOCK_PROCESS_CPUTIME_ID`).

use std::time::Duration;

/// Wall and CPU time spent in one measured section.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timing {
    /// Elapsed wall-clock time.
    pub wall: Duration,
    /// CPU time consumed by the whole process (all threads, user + system).
    pub cpu: Duration,
}

impl Timing {
    /// `count` operations per CPU-second (0 if no CPU time was measured).
    pub fn per_cpu_sec(&self, count: u64) -> f64 {
        let secs = self.cpu.as_secs_f64();
        if secs > 0.0 {
            count as f64 / secs
        } else {
            0.0
        }
    }
}

fn clock(id: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; clock_gettime only writes it.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        // Both clocks used here exist on every Linux since 2.6.28; a failure
        // would only make this one sample read zero.
        return Duration::ZERO;
    }
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Monotonic wall clock (`CLOCK_MONOTONIC_RAW`, like the reference bench).
pub fn wall_now() -> Duration {
    clock(libc::CLOCK_MONOTONIC_RAW)
}

/// CPU time consumed so far by this process (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn cpu_now() -> Duration {
    clock(libc::CLOCK_PROCESS_CPUTIME_ID)
}

/// Run `f`, returning its result and the wall and process-CPU time it took.
pub fn measure<T>(f: impl FnOnce() -> T) -> (T, Timing) {
    let w0 = wall_now();
    let c0 = cpu_now();
    let out = f();
    let c1 = cpu_now();
    let w1 = wall_now();
    (
        out,
        Timing {
            wall: w1.saturating_sub(w0),
            cpu: c1.saturating_sub(c0),
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_busy_loop() {
        let (x, t) = measure(|| {
            let mut acc = 0u64;
            for i in 0..5_000_000u64 {
                acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
            }
            acc
        });
        std::hint::black_box(x);
        assert!(t.cpu > Duration::ZERO);
        assert!(t.wall > Duration::ZERO);
        assert!(t.per_cpu_sec(1) > 0.0);
    }
}
