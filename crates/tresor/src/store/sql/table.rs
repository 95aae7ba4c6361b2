//! A table of rows bound to one statement (issue 46): the batch's
//! set-oriented statements read their rows as a table.
//!
//! On PostgreSQL the rows are one JSON parameter (`jsonb_array_elements`,
//! [`super::json_rows`]). On the writer's own SQLite connection they are a
//! `VALUES (?, ?), (?, ?)…` list of plain `?` parameters, bound by position:
//! SQLite decoding the JSON of these tables was its largest single cost in
//! the writer (BENCHMARKS.md). Plain `?` are kept out of SQLite's list of
//! parameter names, which is searched one by one, so n of them bind in n
//! steps (named ones took n²/2). A statement's text then depends on its
//! number of rows: the rows are padded with rows of NULLs to the next power
//! of two ([`padded`]), so each statement has a few texts, each prepared
//! once and kept (`prepare_cached`), and the padding is filtered out (a
//! table's first column is never NULL). Elsewhere (sqlx's SQLite
//! connection) the rows go as JSON, as on PostgreSQL.

use super::{Arg, ColumnType, json_rows};
use serde::Serialize;
use serde::ser::{self, Impossible};
use std::fmt::{self, Write as _};

/// The parameters a statement may hold on SQLite (its default limit is
/// 32,766): a table that would go past them goes as JSON.
const MOST_PARAMETERS: usize = 30_000;

/// The rows of a table of `rows` rows as SQLite binds them: the next power
/// of two, so that a statement has a few texts, not one per batch size.
pub fn padded(rows: usize) -> usize {
    rows.next_power_of_two()
}

/// Where a table bound as parameter `param` goes in a statement's text,
/// with the columns it has ([`table`]); bound by [`super::Query::bind_rows`].
#[derive(Debug, Clone, Copy)]
pub struct Table {
    sqlite: bool,
    param: usize,
    columns: &'static [(&'static str, ColumnType)],
}

/// A table of rows with these `columns`, bound as parameter `param`: its
/// text (`Display`) is a subquery to read as `FROM … AS d` or `IN (SELECT
/// …)`, and [`super::Query::bind_rows`] binds its rows.
pub fn table(sqlite: bool, param: usize, columns: &'static [(&'static str, ColumnType)]) -> Table {
    Table {
        sqlite,
        param,
        columns,
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.sqlite {
            // Rendered when the statement runs, for its connection.
            write!(f, "{{rows:{}}}", self.param)
        } else {
            f.write_str(&json_rows(false, self.param, self.columns))
        }
    }
}

impl Table {
    pub(super) fn sqlite(&self) -> bool {
        self.sqlite
    }

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

/// A table's rows bound to a statement on SQLite, rendered when it runs.
#[derive(Debug)]
pub(super) struct Bound {
    table: Table,
    rows: usize,
    values: Vec<Arg>,
}

/// A statement's text with its SQLite tables rendered for the connection it
/// runs on, and the values of its plain `?` parameters in the order they
/// come in the text (`None` for a padding row's).
pub(super) struct Rendered<'a> {
    pub sql: String,
    pub positional: Vec<Option<&'a Arg>>,
}

/// Renders `sql`'s tables: as `VALUES` lists of `?` on the writer's SQLite
/// connection (`lite`) while they fit SQLite's parameters, as JSON
/// otherwise (then written into `args`, at each table's parameter).
pub(super) fn render<'a>(
    sql: &str,
    tables: &'a [Bound],
    lite: bool,
    args: &mut [Arg],
) -> Rendered<'a> {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut positional = Vec::new();
    let mut rest = sql;
    while let Some(start) = rest.find("{rows:") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').expect("a table's end");
        let param: usize = rest[start + 6..end].parse().expect("a table's parameter");
        let bound = tables
            .iter()
            .find(|bound| bound.table.param == param)
            .expect("each table in the text is bound");
        let params = padded(bound.rows) * bound.table.columns.len();
        if lite && positional.len() + params <= MOST_PARAMETERS && bound.first_never_null() {
            bound.write_values(&mut out, &mut positional);
        } else {
            out.push_str(&json_rows(true, param, bound.table.columns));
            args[param - 1] = Arg::Text(bound.json());
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Rendered {
        sql: out,
        positional,
    }
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
        }
    }
}

/// What a row that is not a tuple of numbers, texts and NULLs fails with.
#[derive(Debug)]
struct NotFlat(String);

impl fmt::Display for NotFlat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for NotFlat {}

impl ser::Error for NotFlat {
    fn custom<M: fmt::Display>(message: M) -> Self {
        NotFlat(message.to_string())
    }
}

/// Serialises a row (a tuple, array or tuple struct of numbers, texts and
/// options) as the flat list of its values.
struct Flatten<'v>(&'v mut Vec<Arg>);

macro_rules! ints {
    ($($method:ident: $ty:ty),*) => {
        $(fn $method(self, value: $ty) -> Result<(), NotFlat> {
            let value = i64::try_from(value).map_err(|_| NotFlat("out of range".into()))?;
            self.0.push(Arg::Int(value));
            Ok(())
        })*
    };
}

macro_rules! refused {
    ($($method:ident($($ty:ty),*)),*) => {
        $(fn $method(self, $(_: $ty),*) -> Result<(), NotFlat> {
            Err(NotFlat(concat!("not a table's value: ", stringify!($method)).into()))
        })*
    };
}

impl<'v> ser::Serializer for Flatten<'v> {
    type Ok = ();
    type Error = NotFlat;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Impossible<(), NotFlat>;
    type SerializeMap = Impossible<(), NotFlat>;
    type SerializeStruct = Impossible<(), NotFlat>;
    type SerializeStructVariant = Impossible<(), NotFlat>;

    ints!(serialize_i8: i8, serialize_i16: i16, serialize_i32: i32, serialize_i64: i64,
          serialize_u8: u8, serialize_u16: u16, serialize_u32: u32, serialize_u64: u64);
    refused!(
        serialize_bool(bool),
        serialize_f32(f32),
        serialize_f64(f64),
        serialize_char(char),
        serialize_bytes(&[u8]),
        serialize_unit_struct(&'static str)
    );

    fn serialize_str(self, value: &str) -> Result<(), NotFlat> {
        self.0.push(Arg::Text(value.to_owned()));
        Ok(())
    }

    fn serialize_none(self) -> Result<(), NotFlat> {
        self.0.push(Arg::NullInt);
        Ok(())
    }

    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Result<(), NotFlat> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), NotFlat> {
        self.serialize_none()
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
    ) -> Result<(), NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), NotFlat> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, NotFlat> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, NotFlat> {
        Err(ser::Error::custom("not a table's value: a map"))
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, NotFlat> {
        Err(ser::Error::custom("not a table's value: a struct"))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, NotFlat> {
        Err(ser::Error::custom("not a table's value: an enum"))
    }
}

macro_rules! elements {
    ($($trait:ident: $method:ident),*) => {
        $(impl ser::$trait for Flatten<'_> {
            type Ok = ();
            type Error = NotFlat;
            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), NotFlat> {
                value.serialize(Flatten(self.0))
            }
            fn end(self) -> Result<(), NotFlat> {
                Ok(())
            }
        })*
    };
}

elements!(SerializeSeq: serialize_element, SerializeTuple: serialize_element,
          SerializeTupleStruct: serialize_field);

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
        let rendered = render(&sql, &tables, true, &mut args);
        assert_eq!(
            rendered.sql,
            "SELECT * FROM t WHERE a = $1 AND id IN (SELECT id FROM (SELECT column1 AS id \
             FROM (VALUES (?), (?), (?), (?)) WHERE column1 IS NOT NULL))"
        );
        assert_eq!(rendered.positional.len(), 4);
        assert!(rendered.positional[3].is_none());
        let json = render(&sql, &tables, false, &mut args);
        assert!(json.sql.contains("json_each($2)"), "{}", json.sql);
        assert!(json.positional.is_empty());
        assert!(matches!(&args[1], Arg::Text(t) if t == "[[7],[8],[9]]"));
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
