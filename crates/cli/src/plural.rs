//! Counts in English text: "1 table", "2 tables", "0 tables".
//!
//! Every human-readable line that prints a count with its noun goes through [`count`] (or
//! [`plural`] when the number is formatted apart, e.g. padded into a column). JSON output
//! keeps its fixed field names and never uses these.

use std::fmt::Display;

/// `one` if `n` is 1, else `many` (English uses the plural for 0 as well).
pub fn plural<'a, N>(n: N, one: &'a str, many: &'a str) -> &'a str
where
    N: PartialEq + From<u8>,
{
    if n == N::from(1) {
        one
    } else {
        many
    }
}

/// `n` and its noun in agreement: `count(1, "table", "tables")` is `"1 table"`.
pub fn count<N>(n: N, one: &str, many: &str) -> String
where
    N: Display + PartialEq + From<u8> + Copy,
{
    format!("{n} {}", plural(n, one, many))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_everything_else_plural() {
        assert_eq!(count(0u64, "table", "tables"), "0 tables");
        assert_eq!(count(1usize, "table", "tables"), "1 table");
        assert_eq!(count(2u32, "entry", "entries"), "2 entries");
        assert_eq!(plural(1u64, "file", "files"), "file");
        assert_eq!(plural(11u64, "file", "files"), "files");
    }
}
