//! Statements sent to PostgreSQL together, in one round trip.
//!
//! sqlx has no pipelining: each statement it runs is a round trip, awaited
//! before the next is sent. But PostgreSQL's simple-query protocol runs
//! several `;`-separated statements sent as one message, in order, stopping
//! at the first error, and answers them all at once. Such a message carries
//! no parameters, so each statement's bound values ([`Arg`]) are written into
//! its text here, as SQL literals that PostgreSQL reads back exactly:
//! integers and NULLs typed (`'42'::int8`, `NULL::text`), bytes in hex
//! (`E'\\x00ff'::bytea`), and text as a dollar-quoted string whose random tag
//! does not occur in it (`$t_1f…$it's$t_1f…$::text`: nothing inside is an
//! escape, so quotes, backslashes and dollars stay what they are).
//!
//! The writer's batch holds its writes back ([`Held`], `Query::defer`) and
//! sends them in one message before COMMIT; a write that must change an
//! exact number of rows is wrapped ([`expecting`]) so that PostgreSQL itself
//! raises an error otherwise, which [`map_error`] turns back into the error
//! the immediate path gives ([`rows_changed`]).

use super::arg::Arg;
use crate::error::Error;
use std::fmt::Write as _;

/// The text that a held-back write raises when it changed other rows than
/// it had to: `tresor-rows-changed:TABLE:EXPECTED:CHANGED`.
const ROWS_CHANGED: &str = "tresor-rows-changed:";

/// Statements held back on the writer's PostgreSQL transaction, in the
/// order they were made, their values written in.
#[derive(Debug, Default)]
pub struct Held {
    statements: Vec<String>,
}

impl Held {
    pub fn push(&mut self, statement: String) {
        self.statements.push(statement);
    }

    /// All the statements held, as one message (emptying the list), or
    /// `None` when there is none.
    pub fn take(&mut self) -> Option<String> {
        if self.statements.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.statements).join(";\n"))
    }
}

/// `value` as a PostgreSQL literal of the type it is bound as.
pub fn literal(value: &Arg) -> Result<String, Error> {
    Ok(match value {
        // Quoted: a bare `-9223372036854775808` would be read as a numeric.
        Arg::Int(n) => format!("'{n}'::int8"),
        Arg::NullInt => "NULL::int8".to_owned(),
        Arg::NullText => "NULL::text".to_owned(),
        Arg::Text(text) => {
            if text.contains('\0') {
                // PostgreSQL's text holds no NUL either: refused as a bound
                // value would be, rather than cutting the message short.
                return Err(Error::Database(sqlx::Error::Encode(
                    "a text with a NUL character cannot be stored".into(),
                )));
            }
            format!("{}::text", dollar_quoted(text))
        }
        Arg::Blob(bytes) => format!("E'\\\\x{}'::bytea", hex::encode(bytes)),
    })
}

/// `text` between two `$t_<random>$` tags that occur nowhere in it (nor
/// across its end and the closing tag).
fn dollar_quoted(text: &str) -> String {
    loop {
        let mut random = [0u8; 8];
        getrandom::fill(&mut random).expect("the operating system's random generator works");
        let tag = format!("$t_{}$", hex::encode(random));
        let quoted = format!("{tag}{text}{tag}");
        // The body ends at the first occurrence of the tag after the opening.
        if quoted[tag.len()..].find(&tag) == Some(text.len()) {
            return quoted;
        }
    }
}

/// `sql` with each `$N` parameter (outside quoted strings) replaced by the
/// literal of `args[N - 1]`.
pub fn inline(sql: &str, args: &[Arg]) -> Result<String, Error> {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 64);
    let (mut copied, mut at, mut quoted) = (0, 0, false);
    while at < bytes.len() {
        match bytes[at] {
            b'\'' => quoted = !quoted,
            b'$' if !quoted => {
                let digits = bytes[at + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                if digits > 0 {
                    let number: usize = sql[at + 1..at + 1 + digits].parse().unwrap_or(0);
                    let arg = number
                        .checked_sub(1)
                        .and_then(|index| args.get(index))
                        .ok_or_else(|| {
                            Error::Database(sqlx::Error::Encode(
                                format!("no value for the parameter ${number}").into(),
                            ))
                        })?;
                    out.push_str(&sql[copied..at]);
                    out.push_str(&literal(arg)?);
                    at += 1 + digits;
                    copied = at;
                    continue;
                }
            }
            _ => {}
        }
        at += 1;
    }
    out.push_str(&sql[copied..]);
    Ok(out)
}

/// `write` (an INSERT, UPDATE or DELETE with no RETURNING) wrapped so that
/// it raises an error unless it changes exactly `rows` rows of `table`. The
/// cast of the marker text to an integer fails only when the count differs:
/// the text depends on the count, so it cannot be folded at planning.
pub fn expecting(write: &str, table: &str, rows: usize) -> String {
    let mut sql = String::with_capacity(write.len() + 200);
    let _ = write!(
        sql,
        "WITH changed AS ({write} RETURNING 1) \
         SELECT CASE WHEN c.n <> {rows} \
         THEN CAST('{ROWS_CHANGED}{table}:{rows}:' || c.n AS int) END \
         FROM (SELECT COUNT(*) AS n FROM changed) AS c"
    );
    sql
}

/// Checks that a write run now changed `rows` rows of `table`.
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

/// The error of a message of held-back statements, as the statement that
/// failed would have given it run alone.
pub fn map_error(error: sqlx::Error) -> Error {
    if let sqlx::Error::Database(db) = &error
        && let Some((_, marker)) = db.message().split_once(ROWS_CHANGED)
    {
        let mut parts = marker.split(':');
        let table = parts.next().unwrap_or_default();
        let expected = number(parts.next());
        let changed = number(parts.next());
        return rows_changed(table, changed as u64, expected);
    }
    Error::Database(error)
}

/// The leading digits of `part` as a number (0 without any).
fn number(part: Option<&str>) -> usize {
    let part = part.unwrap_or_default();
    let digits = part.bytes().take_while(u8::is_ascii_digit).count();
    part[..digits].parse().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_quoted_with_a_tag_it_does_not_contain() {
        for text in ["", "plain", "it's", "$t_", "a$", "$$", "back\\slash"] {
            let quoted = literal(&Arg::Text(text.to_owned())).expect("a literal");
            let tag_end = quoted[1..].find('$').expect("a tag") + 2;
            let tag = &quoted[..tag_end];
            assert!(tag.starts_with("$t_"), "{quoted}");
            let body = &quoted[tag_end..];
            assert_eq!(body.find(tag), Some(text.len()), "{quoted}");
            assert!(quoted.ends_with(&format!("{tag}::text")), "{quoted}");
        }
    }

    #[test]
    fn a_text_with_nul_is_refused() {
        assert!(literal(&Arg::Text("a\0b".to_owned())).is_err());
    }

    #[test]
    fn parameters_are_replaced_outside_quotes_only() {
        let sql = inline(
            "SELECT $1, '$1', $10, $2",
            &[
                Arg::Int(-7),
                Arg::NullText,
                Arg::Int(3),
                Arg::Int(4),
                Arg::Int(5),
                Arg::Int(6),
                Arg::Int(7),
                Arg::Int(8),
                Arg::Int(9),
                Arg::Blob(vec![0, 255]),
            ],
        )
        .expect("inlined");
        assert_eq!(
            sql,
            "SELECT '-7'::int8, '$1', E'\\\\x00ff'::bytea, NULL::text"
        );
        assert!(inline("SELECT $2", &[Arg::Int(1)]).is_err());
        assert!(inline("SELECT $0", &[Arg::Int(1)]).is_err());
    }

    #[test]
    fn a_marker_error_names_its_table_and_counts() {
        assert_eq!(number(Some("12\"")), 12);
        assert_eq!(number(None), 0);
        let wrapped = expecting("UPDATE t SET a = 1", "plays", 3);
        assert!(wrapped.starts_with("WITH changed AS (UPDATE t SET a = 1 RETURNING 1)"));
        assert!(wrapped.contains("'tresor-rows-changed:plays:3:' || c.n"));
    }
}
