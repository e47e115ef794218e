//! A progress bar shared by a workload's threads, advanced in steps so the threads rarely
//! touch it.

use indicatif::ProgressBar;

/// One thread's pending progress on a shared bar; what is pending when it is dropped is
/// added then.
#[derive(Debug)]
pub struct Ticker<'a> {
    bar: &'a ProgressBar,
    step: u64,
    pending: u64,
}

impl<'a> Ticker<'a> {
    /// Adds to `bar` once at least `step` units are pending.
    pub fn new(bar: &'a ProgressBar, step: u64) -> Ticker<'a> {
        Ticker {
            bar,
            step,
            pending: 0,
        }
    }

    /// Counts `n` more units done.
    pub fn add(&mut self, n: u64) {
        self.pending += n;
        if self.pending >= self.step {
            self.bar.inc(self.pending);
            self.pending = 0;
        }
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        self.bar.inc(self.pending);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_arrives_in_steps_and_at_the_end() {
        let bar = ProgressBar::hidden();
        {
            let mut ticker = Ticker::new(&bar, 10);
            ticker.add(9);
            assert_eq!(bar.position(), 0);
            ticker.add(2);
            assert_eq!(bar.position(), 11);
            ticker.add(3);
        }
        assert_eq!(bar.position(), 14);
    }
}
