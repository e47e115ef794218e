//! What a load touches: which key number each operation picks (`--keys`), how a key
//! number becomes bytes (`--key-size`), and how long values are (`--value-size`).
//!
//! Keys are the numbers `0..key_count`, written as zero-padded ASCII decimal (the keys of
//! `cairn bench`, [`KeyFormat::Decimal`] of `cairn-harness`). A key's length is a pure function of its
//! number and the seed, so every operation on number `n` uses the same bytes and a read
//! finds what the preload or an earlier write stored. Two numbers never share bytes:
//! same length means different digits.
//!
//! Popularity (which numbers are drawn):
//! - `uniform`: every number equally likely.
//! - `zipfian[:θ]` (θ in (0, 1), default 0.99): the number of popularity rank `r` is
//!   drawn with probability proportional to `1 / (r + 1)^θ` (YCSB's generator, Gray et
//!   al., "Quickly generating billion-record synthetic databases").
//! - `pareto[:α]` (α > 1, default 1.16): the hottest fraction `F` of the keys receives
//!   `F^(1 - 1/α)` of the accesses, the Lorenz curve of a Pareto distribution with shape α;
//!   α = 1.16 is the 80/20 rule, smaller α is more skewed.
//! - `sequential`: thread `t` of `T` walks `n`, `n+1`, ... from `t * key_count / T`,
//!   wrapping at `key_count`.
//!
//! For zipfian and pareto, popularity ranks are spread over the key space by a fixed
//! permutation (`rank * m + c mod key_count`, `m` coprime to `key_count`), so the hot keys
//! are scattered over the ordered store instead of sitting in its first block (YCSB's
//! "scrambled" zipfian does the same).

use std::fmt;

use cairn_harness::split::portion;
use cairn_harness::{KeyFormat, Rng};

/// Default θ of `zipfian` (YCSB's).
pub const DEFAULT_THETA: f64 = 0.99;
/// Default α of `pareto` (the 80/20 rule).
pub const DEFAULT_ALPHA: f64 = 1.16;

/// Terms of the zipfian normalisation sum computed exactly; beyond, the integral's
/// Euler-Maclaurin approximation (relative error far below 1e-9 at this point).
const ZETA_EXACT_TERMS: u64 = 1 << 20;

/// `--keys`: how popular each key is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Popularity {
    /// Every key equally likely.
    Uniform,
    /// YCSB's zipfian with exponent θ.
    Zipfian(f64),
    /// The Pareto principle with shape α.
    Pareto(f64),
    /// Each thread walks the keys in order.
    Sequential,
}

impl Popularity {
    /// Parses `uniform`, `zipfian[:θ]`, `pareto[:α]` or `sequential`.
    ///
    /// # Errors
    /// A message naming the mistake.
    pub fn parse(text: &str) -> Result<Popularity, String> {
        let (name, param) = match text.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (text, None),
        };
        let number = |what: &str, p: &str| {
            p.parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| format!("--keys {name}: {what} must be a number, got {p:?}"))
        };
        match (name, param) {
            ("uniform", None) => Ok(Popularity::Uniform),
            ("sequential", None) => Ok(Popularity::Sequential),
            ("zipfian", None) => Ok(Popularity::Zipfian(DEFAULT_THETA)),
            ("pareto", None) => Ok(Popularity::Pareto(DEFAULT_ALPHA)),
            ("zipfian", Some(p)) => {
                let theta = number("θ", p)?;
                if theta > 0.0 && theta < 1.0 {
                    Ok(Popularity::Zipfian(theta))
                } else {
                    Err(format!(
                        "--keys zipfian:θ needs 0 < θ < 1 (0.99 is YCSB's), got {theta}"
                    ))
                }
            }
            ("pareto", Some(p)) => {
                let alpha = number("α", p)?;
                if alpha > 1.0 {
                    Ok(Popularity::Pareto(alpha))
                } else {
                    Err(format!(
                        "--keys pareto:α needs α > 1 (1.16 is the 80/20 rule), got {alpha}"
                    ))
                }
            }
            _ => Err(format!(
                "unknown --keys {text:?}: expected uniform, zipfian[:θ], pareto[:α] or sequential"
            )),
        }
    }
}

impl fmt::Display for Popularity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Popularity::Uniform => f.write_str("uniform"),
            Popularity::Zipfian(theta) => write!(f, "zipfian:{theta}"),
            Popularity::Pareto(alpha) => write!(f, "pareto:{alpha}"),
            Popularity::Sequential => f.write_str("sequential"),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// A bijection of `0..n`: `r * mult + offset mod n`.
#[derive(Debug, Clone, Copy)]
struct Scramble {
    n: u64,
    mult: u64,
    offset: u64,
}

impl Scramble {
    fn new(n: u64) -> Scramble {
        let n = n.max(1);
        let mut mult = 0x9E37_79B9_7F4A_7C15 % n;
        while mult == 0 || gcd(mult, n) != 1 {
            mult = (mult + 1) % n;
            if n == 1 {
                mult = 1;
                break;
            }
        }
        Scramble {
            n,
            mult,
            offset: 0x2545_F491_4F6C_DD1D % n,
        }
    }

    fn apply(&self, rank: u64) -> u64 {
        ((u128::from(rank) * u128::from(self.mult) + u128::from(self.offset)) % u128::from(self.n))
            as u64
    }
}

/// YCSB's zipfian constants for `n` items.
#[derive(Debug, Clone, Copy)]
struct Zipf {
    n: u64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

/// `sum_{i=1..n} 1 / i^theta`.
fn zeta(n: u64, theta: f64) -> f64 {
    let exact = n.min(ZETA_EXACT_TERMS);
    let mut sum: f64 = (1..=exact).map(|i| (i as f64).powf(-theta)).sum();
    if n > exact {
        // Euler-Maclaurin: sum_{i=m+1..n} f(i) ~ integral_m^n f + (f(n) - f(m)) / 2.
        let (m, nf) = (exact as f64, n as f64);
        let integral = (nf.powf(1.0 - theta) - m.powf(1.0 - theta)) / (1.0 - theta);
        sum += integral + (nf.powf(-theta) - m.powf(-theta)) / 2.0;
    }
    sum
}

impl Zipf {
    fn new(n: u64, theta: f64) -> Zipf {
        let zetan = zeta(n, theta);
        let zeta2 = 1.0 + 0.5f64.powf(theta);
        let nf = n as f64;
        Zipf {
            n,
            alpha: 1.0 / (1.0 - theta),
            zetan,
            eta: (1.0 - (2.0 / nf).powf(1.0 - theta)) / (1.0 - zeta2 / zetan),
            half_pow_theta: 0.5f64.powf(theta),
        }
    }

    /// A popularity rank in `0..n` (0 the most popular).
    fn rank(&self, rng: &mut Rng) -> u64 {
        let u = rng.unit();
        let uz = u * self.zetan;
        if uz < 1.0 || self.n == 1 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta || self.n == 2 {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// How numbers are drawn, fixed for a run and shared by its threads.
#[derive(Debug, Clone, Copy)]
enum Draw {
    Uniform,
    Zipfian(Zipf),
    /// The exponent `α / (α - 1)` of the inverse Lorenz curve.
    Pareto(f64),
    Sequential,
}

/// The key-number generator of a run: `--keys` over `0..key_count`.
#[derive(Debug, Clone, Copy)]
pub struct KeyChooser {
    n: u64,
    draw: Draw,
    scramble: Scramble,
}

impl KeyChooser {
    /// A chooser of numbers in `0..key_count` (`key_count` >= 1). Zipfian precomputes its
    /// normalisation in O(min(key_count, 2^20)).
    pub fn new(popularity: Popularity, key_count: u64) -> KeyChooser {
        let n = key_count.max(1);
        let draw = match popularity {
            Popularity::Uniform => Draw::Uniform,
            Popularity::Sequential => Draw::Sequential,
            Popularity::Zipfian(theta) => Draw::Zipfian(Zipf::new(n, theta)),
            Popularity::Pareto(alpha) => Draw::Pareto(alpha / (alpha - 1.0)),
        };
        KeyChooser {
            n,
            draw,
            scramble: Scramble::new(n),
        }
    }

    /// The generator of thread `thread` of `threads`.
    pub fn picker(&self, thread: usize, threads: usize) -> KeyPicker {
        KeyPicker {
            chooser: *self,
            next: portion(self.n, thread, threads),
        }
    }

    /// The popularity rank of key number `key` (0 the hottest); the inverse of the
    /// permutation. For tests and reports.
    #[cfg(test)]
    fn rank_of(&self, key: u64) -> u64 {
        (0..self.n)
            .find(|&r| self.scramble.apply(r) == key)
            .unwrap_or(u64::MAX)
    }
}

/// One thread's key generator.
#[derive(Debug, Clone)]
pub struct KeyPicker {
    chooser: KeyChooser,
    /// The next number of a sequential walk.
    next: u64,
}

impl KeyPicker {
    /// The next key number, in `0..key_count`.
    pub fn next_key(&mut self, rng: &mut Rng) -> u64 {
        let c = &self.chooser;
        match c.draw {
            Draw::Uniform => rng.below(c.n),
            Draw::Sequential => {
                let n = self.next;
                self.next = if n + 1 >= c.n { 0 } else { n + 1 };
                n
            }
            Draw::Zipfian(z) => c.scramble.apply(z.rank(rng)),
            Draw::Pareto(exponent) => {
                let rank = ((c.n as f64) * rng.unit().powf(exponent)) as u64;
                c.scramble.apply(rank.min(c.n - 1))
            }
        }
    }
}

/// Largest key the ordered store takes (`u16::MAX` bytes).
pub const MAX_KEY_SIZE: usize = u16::MAX as usize;
/// Largest value the load writes (64 MiB).
pub const MAX_VALUE_SIZE: usize = 64 << 20;
/// An exponential size is cut at this many times its mean.
const EXP_CUTOFF: f64 = 16.0;

/// `--key-size` / `--value-size`: a length in bytes, fixed or drawn per item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// Always this many bytes (`100`).
    Fixed(usize),
    /// Uniform in `lo..=hi` (`64..4096`).
    Uniform(usize, usize),
    /// Exponential with this mean, cut at 16 times the mean (`exp:1024`).
    Exp(usize),
}

impl Size {
    /// Parses `N`, `LO..HI` (both inclusive) or `exp:MEAN`, each at most `limit`.
    ///
    /// # Errors
    /// A message naming the mistake.
    pub fn parse(text: &str, limit: usize) -> Result<Size, String> {
        let num = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| format!("expected a size in bytes, got {s:?} in {text:?}"))
                .and_then(|n| {
                    if n <= limit {
                        Ok(n)
                    } else {
                        Err(format!("{n} is above the limit of {limit} bytes"))
                    }
                })
        };
        let size = if let Some(mean) = text.strip_prefix("exp:") {
            let mean = num(mean)?;
            if mean == 0 {
                return Err("exp:MEAN needs a mean of at least 1".into());
            }
            Size::Exp(mean)
        } else if let Some((lo, hi)) = text.split_once("..") {
            let (lo, hi) = (num(lo)?, num(hi)?);
            if lo > hi {
                return Err(format!("{text:?}: the low end is above the high end"));
            }
            Size::Uniform(lo, hi)
        } else {
            Size::Fixed(num(text)?)
        };
        Ok(size)
    }

    /// The largest length drawn.
    pub fn max(&self, limit: usize) -> usize {
        match *self {
            Size::Fixed(n) => n,
            Size::Uniform(_, hi) => hi,
            Size::Exp(mean) => ((mean as f64 * EXP_CUTOFF) as usize).min(limit),
        }
    }

    /// A length, at most `self.max(limit)`.
    pub fn sample(&self, rng: &mut Rng, limit: usize) -> usize {
        match *self {
            Size::Fixed(n) => n,
            Size::Uniform(lo, hi) => lo + rng.below((hi - lo) as u64 + 1) as usize,
            Size::Exp(mean) => {
                let x = -(mean as f64) * (1.0 - rng.unit()).ln();
                (x as usize).min(self.max(limit))
            }
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Size::Fixed(n) => write!(f, "{n}"),
            Size::Uniform(lo, hi) => write!(f, "{lo}..{hi}"),
            Size::Exp(mean) => write!(f, "exp:{mean}"),
        }
    }
}

/// Stream of the per-key length choices (independent of the operations' streams).
const KEY_SIZE_STREAM: u64 = 0x6B65_7973_697A_6573;

/// Turns key numbers into key bytes of `--key-size` lengths.
#[derive(Debug, Clone)]
pub struct KeyShape {
    size: Size,
    seed: u64,
    /// The shortest length able to hold every number (decimal digits of `key_count - 1`).
    min_len: usize,
}

impl KeyShape {
    /// Keys for the numbers `0..key_count`. Drawn lengths below the digits a number
    /// needs are raised to that many digits.
    ///
    /// # Errors
    /// A fixed `--key-size` too short for `key_count`.
    pub fn new(size: Size, key_count: u64, seed: u64) -> Result<KeyShape, String> {
        let min_len = KeyFormat::Decimal.width_for(key_count);
        if let Size::Fixed(n) = size {
            if n < min_len {
                return Err(format!(
                    "--key-size {n} is too small for --key-count {key_count}: the keys are decimal numbers of up to {min_len} digits"
                ));
            }
        }
        Ok(KeyShape {
            size,
            seed,
            min_len,
        })
    }

    /// The length of key number `n`.
    pub fn len_of(&self, n: u64) -> usize {
        let drawn = match self.size {
            Size::Fixed(len) => len,
            _ => self
                .size
                .sample(&mut Rng::new(self.seed ^ KEY_SIZE_STREAM, n), MAX_KEY_SIZE),
        };
        drawn.max(self.min_len)
    }

    /// Writes the bytes of key number `n` into `buf` (replacing its contents).
    pub fn write(&self, n: u64, buf: &mut Vec<u8>) {
        buf.clear();
        buf.resize(self.len_of(n), 0);
        KeyFormat::Decimal.fill(n, buf);
    }

    /// The bytes of key number `n`, allocated.
    pub fn key(&self, n: u64) -> Vec<u8> {
        let mut buf = Vec::new();
        self.write(n, &mut buf);
        buf
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)]

    use super::*;

    /// Draws `draws` numbers from one thread and returns the count of each number.
    fn histogram(popularity: Popularity, n: u64, draws: usize) -> Vec<u64> {
        let chooser = KeyChooser::new(popularity, n);
        let mut picker = chooser.picker(0, 1);
        let mut rng = Rng::new(42, 7);
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            let k = picker.next_key(&mut rng);
            assert!(k < n, "{k} out of range 0..{n}");
            counts[k as usize] += 1;
        }
        counts
    }

    /// Share of the draws that went to the hottest `fraction` of the keys.
    fn top_share(counts: &[u64], fraction: f64) -> f64 {
        let mut sorted = counts.to_vec();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top = ((counts.len() as f64 * fraction) as usize).max(1);
        let total: u64 = sorted.iter().sum();
        sorted[..top].iter().sum::<u64>() as f64 / total as f64
    }

    #[test]
    fn parse_popularity() {
        assert_eq!(Popularity::parse("uniform"), Ok(Popularity::Uniform));
        assert_eq!(Popularity::parse("sequential"), Ok(Popularity::Sequential));
        assert_eq!(
            Popularity::parse("zipfian"),
            Ok(Popularity::Zipfian(DEFAULT_THETA))
        );
        assert_eq!(
            Popularity::parse("zipfian:0.5"),
            Ok(Popularity::Zipfian(0.5))
        );
        assert_eq!(Popularity::parse("pareto:2"), Ok(Popularity::Pareto(2.0)));
        for bad in [
            "zipf",
            "zipfian:1",
            "zipfian:0",
            "zipfian:x",
            "pareto:1",
            "pareto:0.5",
            "uniform:3",
            "pareto:inf",
        ] {
            assert!(Popularity::parse(bad).is_err(), "{bad:?} accepted");
        }
        for text in ["uniform", "sequential", "zipfian:0.8", "pareto:1.5"] {
            assert_eq!(Popularity::parse(text).unwrap().to_string(), text);
        }
    }

    #[test]
    fn uniform_is_flat() {
        let counts = histogram(Popularity::Uniform, 1000, 200_000);
        let share = top_share(&counts, 0.01);
        // 1% of the keys get about 1% of the draws (a little more: the top is the max).
        assert!(share < 0.02, "top 1% got {share}");
        assert!(counts.iter().all(|&c| c > 100), "a key is starved");
    }

    #[test]
    fn zipfian_is_skewed_and_matches_its_law() {
        let n = 10_000;
        let draws = 400_000;
        let counts = histogram(Popularity::Zipfian(0.99), n, draws);
        let share = top_share(&counts, 0.01);
        // For θ = 0.99 and 10,000 keys the top 100 ranks hold zeta(100)/zeta(10000),
        // about 53% of the probability.
        let expected = zeta(100, 0.99) / zeta(n, 0.99);
        assert!(
            (share - expected).abs() < 0.03,
            "top 1%: {share}, law {expected}"
        );
        // The hottest key is rank 0, scattered by the permutation, with 1/zeta(n) of the
        // draws.
        let chooser = KeyChooser::new(Popularity::Zipfian(0.99), n);
        let (hottest, count) = counts.iter().enumerate().max_by_key(|(_, c)| **c).unwrap();
        assert_eq!(chooser.rank_of(hottest as u64), 0);
        assert_ne!(hottest, 0, "rank 0 should be scattered away from key 0");
        let p0 = *count as f64 / draws as f64;
        let law = 1.0 / zeta(n, 0.99);
        assert!((p0 - law).abs() < 0.01, "rank 0 share {p0}, law {law}");
        // Less skew with a smaller θ.
        let mild = top_share(&histogram(Popularity::Zipfian(0.5), n, draws), 0.01);
        assert!(mild < share - 0.2, "θ=0.5: {mild}, θ=0.99: {share}");
    }

    #[test]
    fn pareto_follows_the_80_20_rule() {
        let counts = histogram(Popularity::Pareto(DEFAULT_ALPHA), 10_000, 400_000);
        let top20 = top_share(&counts, 0.2);
        assert!((top20 - 0.8).abs() < 0.03, "top 20% got {top20}");
        let top1 = top_share(&counts, 0.01);
        let law = 0.01f64.powf(1.0 - 1.0 / DEFAULT_ALPHA);
        assert!((top1 - law).abs() < 0.04, "top 1% got {top1}, law {law}");
        let steeper = top_share(&histogram(Popularity::Pareto(3.0), 10_000, 400_000), 0.2);
        assert!(steeper < top20 - 0.2, "α=3: {steeper}");
    }

    #[test]
    fn sequential_threads_walk_their_own_slices_and_wrap() {
        let chooser = KeyChooser::new(Popularity::Sequential, 10);
        let mut rng = Rng::new(1, 1);
        let mut first = chooser.picker(0, 2);
        let mut second = chooser.picker(1, 2);
        let a: Vec<u64> = (0..12).map(|_| first.next_key(&mut rng)).collect();
        let b: Vec<u64> = (0..6).map(|_| second.next_key(&mut rng)).collect();
        assert_eq!(a, vec![0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1]);
        assert_eq!(b, vec![5, 6, 7, 8, 9, 0]);
    }

    #[test]
    fn tiny_key_spaces_stay_in_range() {
        for n in [1, 2, 3] {
            for p in [
                Popularity::Uniform,
                Popularity::Zipfian(0.99),
                Popularity::Pareto(1.16),
                Popularity::Sequential,
            ] {
                histogram(p, n, 1000);
            }
        }
    }

    #[test]
    fn scramble_is_a_permutation() {
        for n in [1u64, 2, 6, 97, 1000, 1024] {
            let s = Scramble::new(n);
            let mut seen: Vec<u64> = (0..n).map(|r| s.apply(r)).collect();
            seen.sort_unstable();
            assert_eq!(seen, (0..n).collect::<Vec<_>>(), "n={n}");
        }
    }

    #[test]
    fn zeta_approximation_matches_the_exact_sum() {
        let n = ZETA_EXACT_TERMS * 3;
        let exact: f64 = (1..=n).map(|i| (i as f64).powf(-0.99)).sum();
        assert!((zeta(n, 0.99) - exact).abs() / exact < 1e-9);
    }

    #[test]
    fn sizes_parse_and_stay_in_range() {
        assert_eq!(Size::parse("100", 1000), Ok(Size::Fixed(100)));
        assert_eq!(Size::parse("64..4096", 10_000), Ok(Size::Uniform(64, 4096)));
        assert_eq!(Size::parse("exp:1024", 1 << 20), Ok(Size::Exp(1024)));
        for bad in ["", "x", "10..5", "exp:0", "2000", "1..2000", "-1"] {
            assert!(Size::parse(bad, 1000).is_err(), "{bad:?} accepted");
        }
        let mut rng = Rng::new(3, 3);
        let uniform = Size::Uniform(64, 4096);
        let draws: Vec<usize> = (0..20_000)
            .map(|_| uniform.sample(&mut rng, 1 << 20))
            .collect();
        assert!(draws.iter().all(|d| (64..=4096).contains(d)));
        assert!(draws.contains(&64) || draws.iter().any(|&d| d < 80));
        let exp = Size::Exp(1024);
        let draws: Vec<usize> = (0..50_000).map(|_| exp.sample(&mut rng, 1 << 20)).collect();
        let mean = draws.iter().sum::<usize>() as f64 / draws.len() as f64;
        assert!((mean - 1024.0).abs() < 40.0, "mean {mean}");
        assert!(draws.iter().all(|&d| d <= 16 * 1024));
    }

    #[test]
    fn key_lengths_are_stable_per_number_and_keys_distinct() {
        let shape = KeyShape::new(Size::Uniform(2, 12), 1000, 5).unwrap();
        let mut all = std::collections::HashSet::new();
        for n in 0..1000 {
            let k = shape.key(n);
            assert_eq!(k, shape.key(n));
            assert!((3..=12).contains(&k.len()), "{k:?}");
            let digits = std::str::from_utf8(&k).unwrap();
            assert_eq!(digits.parse::<u64>().unwrap(), n);
            assert!(all.insert(k));
        }
        assert_eq!(
            KeyShape::new(Size::Fixed(16), 100, 0).unwrap().key(42),
            b"0000000000000042"
        );
        assert!(KeyShape::new(Size::Fixed(2), 1000, 0).is_err());
    }
}
