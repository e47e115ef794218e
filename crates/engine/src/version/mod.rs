//! Versions and the manifest of the ordered store (being built; see docs/DESIGN.md).

#![cfg_attr(not(test), allow(dead_code))]
