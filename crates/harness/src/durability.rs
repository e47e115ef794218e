//! The one spelling of a [`Durability`] on command lines and in reports: `sync`,
//! `periodic:<µs>`, `buffered`, `async:<depth>` or `none` (crates/cli/README.md,
//! `--durability`). [`parse_durability`] reads it, [`durability_name`] writes it, and
//! each undoes the other.

use std::time::Duration;

use cairn::Durability;

/// What a wrong spelling is told it should have been.
const EXPECTED: &str = "expected sync, periodic:<µs>, buffered, async:<depth> or none";

/// Parses `sync`, `periodic:<µs>`, `buffered`, `async:<depth>` or `none`; the interval
/// and the depth are whole numbers of at least 1.
///
/// # Errors
/// A message naming the mistake (it suits a clap `value_parser`).
pub fn parse_durability(text: &str) -> Result<Durability, String> {
    let positive = |what: &str, value: &str| match value.parse::<u64>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "{what} must be a whole number of at least 1, got {value:?}"
        )),
    };
    match text.split_once(':') {
        None => match text {
            "sync" => Ok(Durability::Sync),
            "buffered" => Ok(Durability::Buffered),
            "none" => Ok(Durability::None),
            "periodic" => Err("periodic needs an interval: periodic:<microseconds>".into()),
            "async" => Err("async needs a queue depth: async:<depth>".into()),
            _ => Err(format!("unknown durability {text:?}: {EXPECTED}")),
        },
        Some(("periodic", us)) => Ok(Durability::Periodic(Duration::from_micros(positive(
            "the periodic interval (µs)",
            us,
        )?))),
        Some(("async", depth)) => {
            let depth = positive("the async queue depth", depth)?;
            usize::try_from(depth)
                .map(|queue_depth| Durability::Async { queue_depth })
                .map_err(|_| format!("async queue depth {depth} is too large"))
        }
        Some(_) => Err(format!("unknown durability {text:?}: {EXPECTED}")),
    }
}

/// The spelling of `d` that [`parse_durability`] reads back.
pub fn durability_name(d: Durability) -> String {
    match d {
        Durability::Sync => "sync".into(),
        Durability::Periodic(every) => format!("periodic:{}", every.as_micros()),
        Durability::Buffered => "buffered".into(),
        Durability::Async { queue_depth } => format!("async:{queue_depth}"),
        Durability::None => "none".into(),
        // `Durability` is non-exhaustive; a mode without a spelling prints as its Debug form.
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn every_spelling_parses() {
        assert_eq!(parse_durability("sync"), Ok(Durability::Sync));
        assert_eq!(parse_durability("buffered"), Ok(Durability::Buffered));
        assert_eq!(parse_durability("none"), Ok(Durability::None));
        assert_eq!(
            parse_durability("periodic:1000"),
            Ok(Durability::Periodic(Duration::from_millis(1)))
        );
        assert_eq!(
            parse_durability("async:64"),
            Ok(Durability::Async { queue_depth: 64 })
        );
    }

    #[test]
    fn wrong_spellings_are_refused() {
        for bad in [
            "",
            "Sync",
            "periodic",
            "periodic:",
            "periodic:0",
            "periodic:1.5",
            "async:0",
            "async:-1",
            "async",
            "fsync:3",
        ] {
            assert!(parse_durability(bad).is_err(), "{bad:?} accepted");
        }
        let err = parse_durability("fsync").unwrap_err();
        assert!(err.contains(EXPECTED), "{err}");
    }

    #[test]
    fn spellings_round_trip() {
        for text in ["sync", "periodic:250", "buffered", "async:8", "none"] {
            assert_eq!(
                parse_durability(text).map(durability_name).as_deref(),
                Ok(text)
            );
        }
        for d in [
            Durability::Sync,
            Durability::Periodic(Duration::from_micros(100_000)),
            Durability::Buffered,
            Durability::Async { queue_depth: 1024 },
            Durability::None,
        ] {
            assert_eq!(parse_durability(&durability_name(d)), Ok(d));
        }
    }
}
