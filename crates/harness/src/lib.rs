//! `cairn-harness`: the pieces every Cairn benchmark and load test is built from, in one
//! place, so `cairn bench`, `cairn load` (crates/cli), the ordered-store peer suite
//! (crates/ordered-peers) and the constant-store benchmark (crates/bench) draw the same
//! keys, cut the same values, time operations the same way and spell durability alike.
//!
//! | module | what it holds |
//! |---|---|
//! | [`rng`] | [`Rng`], the seeded splitmix64 generator every random choice comes from |
//! | [`keys`] | key numbers as fixed-width bytes ([`Keys`], [`KeyFormat`]) and the `fillrandom` permutation |
//! | [`values`] | [`ValueSource`]: values cut from a buffer that compresses to about half |
//! | [`latency`] | latency histograms, the per-operation clock ([`Lap`]) and percentile summaries |
//! | [`durability`] | the command-line spelling of [`cairn::Durability`], both ways |
//! | [`cost`] | [`WriteCost`]: the engine's write counters over one benchmark |
//! | [`split`] | how a workload's operations and keys are split between threads |
//! | [`progress`] | [`Ticker`]: a shared progress bar advanced in steps |
//! | [`scratch`] | [`ScratchDir`] (a temporary or given directory) and [`dir_size`] |
//! | [`report`] | number formatting and rates shared by the reports |
//!
//! Everything random is deterministic for a seed: two runs with the same settings pick the
//! same keys and write the same bytes. The generator is splitmix64 rather than a crate's
//! because the peer suite's Go driver implements the very same sequence (see
//! crates/ordered-peers/go/data.go), so both drivers draw identical keys.

pub mod cost;
pub mod durability;
pub mod keys;
pub mod latency;
pub mod progress;
pub mod report;
pub mod rng;
pub mod scratch;
pub mod split;
pub mod values;

pub use cost::WriteCost;
pub use durability::{durability_name, parse_durability};
pub use keys::{KeyFormat, Keys};
pub use latency::{histogram, Lap, Summary};
pub use progress::Ticker;
pub use rng::Rng;
pub use scratch::{dir_size, ScratchDir};
pub use values::{ValueSource, Values};
