//! Writes held back on the writer's PostgreSQL connection until the
//! batch's end, and the check of a write's row count.
//!
//! The writer's batch holds its writes back ([`Held`], `Query::defer`) and
//! sends them together before COMMIT (`store::pipe`: each one a prepared
//! statement with its values bound, all pipelined in one round trip). A
//! write that must change an exact number of rows carries that number, and
//! its answer's row count is checked ([`check_rows`]) as when it runs now:
//! otherwise the batch fails with the same error either way
//! ([`rows_changed`]).

use super::arg::Arg;
use crate::error::Error;

/// A write held back: its text, its values, and the table and count of
/// rows it must change, if it must.
#[derive(Debug)]
pub struct HeldWrite {
    pub sql: String,
    pub args: Vec<Arg>,
    pub expect: Option<(&'static str, usize)>,
}

/// Writes held back, in the order they were made.
#[derive(Debug, Default)]
pub struct Held {
    writes: Vec<HeldWrite>,
}

impl Held {
    pub fn push(&mut self, sql: String, args: Vec<Arg>, expect: Option<(&'static str, usize)>) {
        self.writes.push(HeldWrite { sql, args, expect });
    }

    pub fn is_empty(&self) -> bool {
        self.writes.is_empty()
    }

    /// All the writes held, emptying the list.
    pub fn take(&mut self) -> Vec<HeldWrite> {
        std::mem::take(&mut self.writes)
    }
}

/// Checks that a write changed `rows` rows of `table`.
pub fn check_rows(table: &str, changed: u64, rows: usize) -> Result<(), Error> {
    if changed as usize == rows {
        Ok(())
    } else {
        Err(rows_changed(table, changed, rows))
    }
}

/// Refuses the batch when a write found other rows than it expected: the
/// batch's reads no longer hold (a buyer's rows cannot change under the
/// players' locks, a block's units are checked as they are written; this
/// guards that reasoning).
pub fn rows_changed(table: &str, changed: u64, expected: usize) -> Error {
    tracing::error!(
        table,
        changed,
        expected,
        "a batch update found other rows than it read"
    );
    Error::Unavailable("the batch's reads changed under it")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_held_in_order_and_taken_once() {
        let mut held = Held::default();
        held.push("A".to_owned(), vec![Arg::Int(1)], None);
        held.push("B".to_owned(), Vec::new(), Some(("plays", 2)));
        let taken = held.take();
        let texts: Vec<&str> = taken.iter().map(|w| w.sql.as_str()).collect();
        assert_eq!(texts, ["A", "B"]);
        assert_eq!(taken[1].expect, Some(("plays", 2)));
        assert!(held.take().is_empty());
        assert!(check_rows("plays", 2, 2).is_ok());
        assert!(matches!(
            check_rows("plays", 1, 2),
            Err(Error::Unavailable(_))
        ));
    }
}
