//! Reading across sources: [`level`] walks a level of tables, [`merge`] combines sorted
//! cursors into one, [`visible`] turns
//! internal-key versions into what a reader at a snapshot sees, and [`operands`] merges
//! the versions under a merge operand.

pub(crate) mod level;
pub(crate) mod merge;
pub(crate) mod operands;
pub(crate) mod visible;
