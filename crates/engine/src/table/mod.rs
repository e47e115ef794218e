//! Sorted table files of the ordered store (being built; see docs/DESIGN.md).

#![cfg_attr(not(test), allow(dead_code))]

mod meta;

pub(crate) use meta::TableMeta;
