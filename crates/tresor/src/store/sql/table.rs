//! A table of rows bound to one statement (issue 46): the batch's
//! set-oriented statements read their rows as a table.
//!
//! A table stands in the statement's text as a mark (`{rows:N}`, its
//! parameter's number) and is rendered when the statement runs, for the
//! connection it runs on:
//!
//! - On the writer's own SQLite connection, a `VALUES (?, ?), (?, ?)…` list
//!   of plain `?` parameters, bound by position: SQLite decoding the JSON of
//!   these tables was its largest single cost in the writer (BENCHMARKS.md).
//!   Plain `?` are kept out of SQLite's list of parameter names, which is
//!   searched one by one, so n of them bind in n steps (named ones took
//!   n²/2). A statement's text then depends on its number of rows: the rows
//!   are padded with rows of NULLs to the next power of two ([`padded`]), so
//!   each statement has a few texts, each prepared once and kept
//!   (`prepare_cached`), and the padding is filtered out (a table's first
//!   column is never NULL).
//! - On the writer's own PostgreSQL connection (`store::pipe`), one typed
//!   array a column (`bigint[]`, `text[]`, NULLs allowed), bound in binary
//!   and read by `UNNEST($1::bigint[], $4::text[]) AS u(id, name)`: the
//!   first column's array is the table's own parameter, the others take
//!   numbers after the statement's last. The text does not depend on the
//!   rows, so each statement is prepared once (BENCHMARKS.md, "Tables as
//!   typed arrays on PostgreSQL").
//! - Elsewhere (sqlx's connections: outside the writer, off its hot path)
//!   one JSON parameter ([`json_rows`]), as on SQLite past its parameters.

use super::Arg;
use super::flatten::Flatten;
use serde::Serialize;
use serde::ser;
use std::fmt::{self, Write as _};

/// The parameters a statement may hold on SQLite (its default limit is
/// 32,766): a table that would go past them goes as JSON.
const MOST_PARAMETERS: usize = 30_000;

/// The type of a table's column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnType {
    Int,
    Text,
}

/// A table passed as one parameter: `$param` is a JSON array of rows, each
/// an array of values in the order of `columns`. Returns a subquery (for
/// `FROM … AS d` or `IN (SELECT …)`) that reads it as a table with those
/// column names. A set-oriented statement thus has one text and one
/// parameter however many rows it carries, on both databases.
pub fn json_rows(sqlite: bool, param: usize, columns: &[(&str, ColumnType)]) -> String {
    let mut select = Vec::with_capacity(columns.len());
    for (position, (name, kind)) in columns.iter().enumerate() {
        select.push(match (sqlite, kind) {
            (true, _) => format!("json_extract(value, '$[{position}]') AS {name}"),
            (false, ColumnType::Int) => format!("(value->>{position})::bigint AS {name}"),
            (false, ColumnType::Text) => format!("(value->>{position}) AS {name}"),
        });
    }
    let source = if sqlite {
        format!("json_each(${param})")
    } else {
        format!("jsonb_array_elements(${param}::jsonb)")
    };
    format!("(SELECT {} FROM {source})", select.join(", "))
}

/// The rows of a table of `rows` rows as SQLite binds them: the next power
/// of two, so that a statement has a few texts, not one per batch size.
pub fn padded(rows: usize) -> usize {
    rows.next_power_of_two()
}

/// Where a table bound as parameter `param` goes in a statement's text,
/// with the columns it has ([`table`]); bound by [`super::Query::bind_rows`].
#[derive(Debug, Clone, Copy)]
pub struct Table {
    /// Whether the database is SQLite: the JSON a table goes as on sqlx's
    /// connections is read differently on each.
    sqlite: bool,
    param: usize,
    columns: &'static [(&'static str, ColumnType)],
}

/// A table of rows with these `columns`, bound as parameter `param`, on
/// SQLite or PostgreSQL (`sqlite`): its text (`Display`) is a subquery to
/// read as `FROM … AS d` or `IN (SELECT …)`, rendered for the connection the
/// statement runs on, and [`super::Query::bind_rows`] binds its rows.
pub fn table(sqlite: bool, param: usize, columns: &'static [(&'static str, ColumnType)]) -> Table {
    Table {
        sqlite,
        param,
        columns,
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Rendered when the statement runs, for its connection.
        write!(f, "{{rows:{}}}", self.param)
    }
}

impl Table {
    pub(super) fn param(&self) -> usize {
        self.param
    }

    /// The rows' values, one row after the other, each row as the tuple
    /// `values` makes of it (in the order of the columns).
    pub(super) fn bind<'r, T, U: Serialize + 'r>(
        self,
        rows: &'r [T],
        values: impl Fn(&'r T) -> U,
    ) -> Bound {
        let mut flat = Vec::with_capacity(rows.len() * self.columns.len());
        for row in rows {
            values(row)
                .serialize(Flatten(&mut flat))
                .expect("a row of numbers, texts and NULLs");
        }
        assert_eq!(
            flat.len(),
            rows.len() * self.columns.len(),
            "each row has a value a column"
        );
        Bound {
            table: self,
            rows: rows.len(),
            values: flat,
        }
    }
}

/// A table's rows bound to a statement, rendered when it runs.
#[derive(Debug)]
pub(super) struct Bound {
    table: Table,
    rows: usize,
    values: Vec<Arg>,
}

/// A statement's text with its tables rendered for the writer's SQLite
/// connection, and the values of its plain `?` parameters in the order
/// they come in the text (`None` for a padding row's).
pub(super) struct Rendered<'a> {
    pub sql: String,
    pub positional: Vec<Option<&'a Arg>>,
}

/// `sql` with each table's mark replaced by what `write` writes for its
/// parameter.
fn each_table(sql: &str, mut write: impl FnMut(usize, &mut String)) -> String {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut rest = sql;
    while let Some(start) = rest.find("{rows:") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').expect("a table's end");
        let param: usize = rest[start + 6..end].parse().expect("a table's parameter");
        write(param, &mut out);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// Renders `sql`'s tables for the writer's SQLite connection: as `VALUES`
/// lists of `?` while they fit SQLite's parameters, as JSON otherwise (then
/// written into `args`, at each table's parameter).
pub(super) fn render_values<'a>(sql: &str, tables: &'a [Bound], args: &mut [Arg]) -> Rendered<'a> {
    let mut positional = Vec::new();
    let sql = each_table(sql, |param, out| {
        let bound = find(tables, param);
        let params = padded(bound.rows) * bound.table.columns.len();
        if positional.len() + params <= MOST_PARAMETERS && bound.first_never_null() {
            bound.write_values(out, &mut positional);
        } else {
            out.push_str(&json_rows(true, param, bound.table.columns));
            args[param - 1] = Arg::Text(bound.json());
        }
    });
    Rendered { sql, positional }
}

/// Renders `sql`'s tables for a PostgreSQL or sqlx connection: as typed
/// arrays read by `UNNEST` on the writer's PostgreSQL connection
/// (`arrays`), as JSON otherwise. Each table's values go into `args`: at
/// its parameter (the JSON, or its first column's array) and, for its other
/// columns' arrays, after the statement's last parameter, in the order the
/// tables were bound, so that the text does not depend on the rows.
pub(super) fn render_remote(
    sql: &str,
    tables: Vec<Bound>,
    arrays: bool,
    args: &mut Vec<Arg>,
) -> String {
    let mut texts: Vec<(usize, String)> = Vec::with_capacity(tables.len());
    for bound in tables {
        let Table {
            sqlite,
            param,
            columns,
        } = bound.table;
        let bound = match arrays {
            true => match bound.into_arrays() {
                Ok(arrays) => {
                    texts.push((param, unnest(param, arrays, columns, args)));
                    continue;
                }
                Err(bound) => bound,
            },
            false => bound,
        };
        args[param - 1] = Arg::Text(bound.json());
        texts.push((param, json_rows(sqlite, param, columns)));
    }
    each_table(sql, |param, out| {
        let (_, text) = texts
            .iter()
            .find(|(at, _)| *at == param)
            .expect("each table in the text is bound");
        out.push_str(text);
    })
}

/// `(SELECT * FROM UNNEST($1::bigint[], $4::text[]) AS u(id, name))`: the
/// table's columns' `arrays`, the first bound as its parameter `param`, the
/// others after `args`' last.
fn unnest(
    param: usize,
    arrays: Vec<Arg>,
    columns: &[(&str, ColumnType)],
    args: &mut Vec<Arg>,
) -> String {
    let mut text = String::from("(SELECT * FROM UNNEST(");
    for (position, (array, (_, kind))) in arrays.into_iter().zip(columns).enumerate() {
        let number = if position == 0 {
            args[param - 1] = array;
            param
        } else {
            args.push(array);
            args.len()
        };
        let comma = if position == 0 { "" } else { ", " };
        let kind = match kind {
            ColumnType::Int => "bigint",
            ColumnType::Text => "text",
        };
        let _ = write!(text, "{comma}${number}::{kind}[]");
    }
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let _ = write!(text, ") AS u({}))", names.join(", "));
    text
}

fn find(tables: &[Bound], param: usize) -> &Bound {
    tables
        .iter()
        .find(|bound| bound.table.param == param)
        .expect("each table in the text is bound")
}

impl Bound {
    /// Whether no row's first value is NULL, as the padding's filter needs.
    fn first_never_null(&self) -> bool {
        let width = self.table.columns.len();
        self.values
            .chunks(width)
            .all(|row| !matches!(row[0], Arg::NullInt | Arg::NullText))
    }

    /// `(SELECT column1 AS a, column2 AS b FROM (VALUES (?, ?), …) WHERE
    /// column1 IS NOT NULL)`, padded to [`padded`] rows.
    fn write_values<'a>(&'a self, out: &mut String, positional: &mut Vec<Option<&'a Arg>>) {
        let columns = self.table.columns;
        out.push_str("(SELECT ");
        for (position, (name, _)) in columns.iter().enumerate() {
            let comma = if position == 0 { "" } else { ", " };
            let _ = write!(out, "{comma}column{} AS {name}", position + 1);
        }
        out.push_str(" FROM (VALUES ");
        let rows = padded(self.rows);
        for row in 0..rows {
            out.push_str(if row == 0 { "(?" } else { ", (?" });
            for _ in 1..columns.len() {
                out.push_str(", ?");
            }
            out.push(')');
        }
        out.push_str(") WHERE column1 IS NOT NULL)");
        positional.extend(self.values.iter().map(Some));
        positional.extend(std::iter::repeat_n(
            None,
            (rows - self.rows) * columns.len(),
        ));
    }

    /// The rows as one array a column ([`Arg::Ints`], [`Arg::Texts`]), or
    /// the table back when a value is not of its column's type (a number
    /// in a text column is written as text, as JSON's `->>` reads it).
    fn into_arrays(self) -> Result<Vec<Arg>, Bound> {
        let columns = self.table.columns;
        let width = columns.len();
        let fits = self.values.iter().enumerate().all(|(at, value)| {
            matches!(
                (columns[at % width].1, value),
                (_, Arg::NullInt | Arg::NullText)
                    | (ColumnType::Int, Arg::Int(_))
                    | (ColumnType::Text, Arg::Text(_) | Arg::Int(_))
            )
        });
        if !fits {
            return Err(self);
        }
        let mut arrays: Vec<Arg> = columns
            .iter()
            .map(|(_, kind)| match kind {
                ColumnType::Int => Arg::Ints(Vec::with_capacity(self.rows)),
                ColumnType::Text => Arg::Texts(Vec::with_capacity(self.rows)),
            })
            .collect();
        for (at, value) in self.values.into_iter().enumerate() {
            match (&mut arrays[at % width], value) {
                (Arg::Ints(column), Arg::Int(value)) => column.push(Some(value)),
                (Arg::Texts(column), Arg::Text(value)) => column.push(Some(value)),
                (Arg::Texts(column), Arg::Int(value)) => column.push(Some(value.to_string())),
                (Arg::Ints(column), _) => column.push(None),
                (Arg::Texts(column), _) => column.push(None),
                _ => unreachable!("one array a column"),
            }
        }
        Ok(arrays)
    }

    /// The rows as the JSON array of arrays [`json_rows`] reads.
    fn json(&self) -> String {
        let rows: Vec<Vec<Json<'_>>> = self
            .values
            .chunks(self.table.columns.len())
            .map(|row| row.iter().map(Json).collect())
            .collect();
        serde_json::to_string(&rows).expect("rows serialise")
    }
}

/// A value as JSON.
struct Json<'a>(&'a Arg);

impl Serialize for Json<'_> {
    fn serialize<S: ser::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Arg::Int(value) => serializer.serialize_i64(*value),
            Arg::Text(value) => serializer.serialize_str(value),
            Arg::Blob(value) => serializer.serialize_bytes(value),
            Arg::NullInt | Arg::NullText => serializer.serialize_unit(),
            Arg::Ints(values) => serializer.collect_seq(values),
            Arg::Texts(values) => serializer.collect_seq(values),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::{Int, Text};

    const COLUMNS: &[(&str, ColumnType)] = &[("id", Int), ("name", Text), ("at", Int)];

    #[test]
    fn rows_flatten_in_column_order() {
        let rows = [(1, "a", Some(5)), (2, "b", None)];
        let bound = table(true, 1, COLUMNS).bind(&rows, |(id, name, at)| (id, name, at));
        assert_eq!(bound.rows, 2);
        let shown: Vec<String> = bound.values.iter().map(|v| format!("{v:?}")).collect();
        assert_eq!(
            shown,
            [
                "Int(1)",
                "Text(\"a\")",
                "Int(5)",
                "Int(2)",
                "Text(\"b\")",
                "NullInt"
            ]
        );
        assert_eq!(bound.json(), r#"[[1,"a",5],[2,"b",null]]"#);
    }

    #[test]
    fn sqlite_tables_render_as_padded_values() {
        let rows = [[7i64], [8], [9]];
        let tables = [table(true, 2, &[("id", Int)]).bind(&rows, |r| *r)];
        let mut args = vec![Arg::Int(0), Arg::NullText];
        let sql = format!(
            "SELECT * FROM t WHERE a = $1 AND id IN (SELECT id FROM {})",
            { table(true, 2, &[("id", Int)]) }
        );
        let rendered = render_values(&sql, &tables, &mut args);
        assert_eq!(
            rendered.sql,
            "SELECT * FROM t WHERE a = $1 AND id IN (SELECT id FROM (SELECT column1 AS id \
             FROM (VALUES (?), (?), (?), (?)) WHERE column1 IS NOT NULL))"
        );
        assert_eq!(rendered.positional.len(), 4);
        assert!(rendered.positional[3].is_none());
        let [bound] = tables;
        let mut args = vec![Arg::Int(0), Arg::NullText];
        let json = render_remote(&sql, vec![bound], false, &mut args);
        assert!(json.contains("json_each($2)"), "{json}");
        assert!(matches!(&args[1], Arg::Text(t) if t == "[[7],[8],[9]]"));
    }

    /// On the writer's PostgreSQL connection each column is one typed
    /// array: the first at the table's parameter, the others numbered after
    /// the statement's last, once per table however often it is read, and
    /// the same text whatever the rows.
    #[test]
    fn postgres_tables_render_as_typed_arrays() {
        let first = table(false, 1, COLUMNS);
        let second = table(false, 3, &[("id", Int), ("key", Text)]);
        let sql = format!(
            "SELECT * FROM {first} AS d WHERE d.at > $2 AND d.id IN (SELECT id FROM {second}) \
             UNION ALL SELECT * FROM {first} AS e"
        );
        let render = |rows: &[(i64, Option<&str>, Option<i64>)]| {
            let mut args = vec![Arg::NullText, Arg::Int(5), Arg::NullText];
            let tables = vec![
                first.bind(rows, |(id, name, at)| (id, name, at)),
                second.bind(&[(1, "k")], |(id, key)| (id, key)),
            ];
            (render_remote(&sql, tables, true, &mut args), args)
        };
        let (text, args) = render(&[(1, Some("a"), None), (2, None, Some(7))]);
        let a = "(SELECT * FROM UNNEST($1::bigint[], $4::text[], $5::bigint[]) AS u(id, name, at))";
        let b = "(SELECT * FROM UNNEST($3::bigint[], $6::text[]) AS u(id, key))";
        assert_eq!(
            text,
            format!(
                "SELECT * FROM {a} AS d WHERE d.at > $2 AND d.id IN (SELECT id FROM {b}) \
                 UNION ALL SELECT * FROM {a} AS e"
            )
        );
        let shown: Vec<String> = args.iter().map(|arg| format!("{arg:?}")).collect();
        assert_eq!(
            shown,
            [
                "Ints([Some(1), Some(2)])",
                "Int(5)",
                "Ints([Some(1)])",
                "Texts([Some(\"a\"), None])",
                "Ints([None, Some(7)])",
                "Texts([Some(\"k\")])"
            ]
        );
        assert_eq!(render(&[]).0, text, "one text whatever the rows");
    }

    /// A table's rows read back as they were bound, through the writer's
    /// SQLite connection (`VALUES` of plain `?`, padded, beside a named
    /// parameter and a second table) and past SQLite's parameters (JSON).
    #[tokio::test]
    async fn tables_read_back_as_bound() {
        use crate::store::sql::{Conn, open_lite, query_as, query_scalar};
        let dir = tempfile::tempdir().expect("a folder");
        let mut conn = Conn::Lite(open_lite(&dir.path().join("t.db")).expect("opened"));
        let rows = [
            (i64::MIN, "quote ' \" and \\ back", Some(i64::MAX)),
            (2, "été, 🎲, \n", None),
            (3, "", Some(0)),
        ];
        let first = table(true, 1, COLUMNS);
        let second = table(true, 3, &[("id", Int)]);
        let read: Vec<(i64, String, Option<i64>)> = query_as(&format!(
            "SELECT d.id, d.name || $2, d.at FROM {first} AS d \
             WHERE d.id NOT IN (SELECT id FROM {second}) ORDER BY d.id"
        ))
        .bind_rows(&first, &rows, |(id, name, at)| (id, name, at))
        .bind("!")
        .bind_rows(&second, &[3i64, 100, 101], |id| [*id])
        .fetch_all(&mut conn)
        .await
        .expect("read");
        let wanted: Vec<(i64, String, Option<i64>)> = rows[..2]
            .iter()
            .map(|(id, name, at)| (*id, format!("{name}!"), *at))
            .collect();
        assert_eq!(read, wanted);
        let many: Vec<i64> = (0..40_000).collect();
        let ids = table(true, 1, &[("id", Int)]);
        let count: i64 = query_scalar(&format!("SELECT COUNT(*) FROM {ids}"))
            .bind_rows(&ids, &many, |id| [*id])
            .fetch_one(&mut conn)
            .await
            .expect("read as JSON");
        assert_eq!(count, 40_000);
    }
}
