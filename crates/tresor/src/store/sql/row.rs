//! The rows the writer's SQL reads, whichever connection read them (the
//! writer's own SQLite or PostgreSQL connection, or sqlx's), and the Rust
//! values read from their columns.

use super::Arg;
use crate::error::Error;
use crate::store::pipe::{self, PgRow};
use rusqlite::types::Value as LiteValue;
use sqlx::any::AnyRow;
use sqlx::{Column as _, Row as _};
use std::sync::Arc;

/// Runs one statement on the SQLite connection, from its cache of prepared
/// statements. Parameters are written `$1`, `$2`… as for PostgreSQL and bound
/// by name, so their order in the text does not matter; plain `?` (a
/// table's rows, `table.rs`) take `positional` in turn, `None` as NULL.
pub(super) fn lite_rows(
    conn: &rusqlite::Connection,
    sql: &str,
    args: &[Arg],
    positional: &[Option<&Arg>],
    limit: Option<usize>,
) -> rusqlite::Result<Vec<Row>> {
    let mut statement = conn.prepare_cached(sql)?;
    let mut next = positional.iter();
    for index in 1..=statement.parameter_count() {
        let Some(name) = statement.parameter_name(index) else {
            match next.next() {
                Some(Some(value)) => statement.raw_bind_parameter(index, value)?,
                Some(None) => statement.raw_bind_parameter(index, rusqlite::types::Null)?,
                None => return Err(rusqlite::Error::InvalidParameterCount(index, index - 1)),
            }
            continue;
        };
        let position = name
            .strip_prefix('$')
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|&n| (1..=args.len()).contains(&n))
            .ok_or_else(|| rusqlite::Error::InvalidParameterName(name.to_owned()))?;
        statement.raw_bind_parameter(index, &args[position - 1])?;
    }
    let count = statement.column_count();
    let columns: Arc<[String]> = statement
        .column_names()
        .into_iter()
        .map(str::to_owned)
        .collect();
    let mut rows = statement.raw_query();
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        let mut values = Vec::with_capacity(count);
        for index in 0..count {
            values.push(row.get::<_, LiteValue>(index)?);
        }
        out.push(Row::Lite {
            columns: columns.clone(),
            values,
        });
        if limit.is_some_and(|limit| out.len() >= limit) {
            break;
        }
    }
    Ok(out)
}

/// A row read by the writer's SQL.
pub enum Row {
    Lite {
        columns: Arc<[String]>,
        values: Vec<LiteValue>,
    },
    Any(AnyRow),
    /// A row of the writer's PostgreSQL connection.
    Pg(PgRow),
}

impl std::fmt::Debug for Row {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Row::Lite { values, .. } => f.debug_tuple("Row").field(values).finish(),
            Row::Any(row) => f.debug_tuple("Row").field(&row.len()).finish(),
            Row::Pg(row) => f.debug_tuple("Row").field(&row.len()).finish(),
        }
    }
}

/// A column of a [`Row`], by position or by name.
pub trait RowIndex: Copy + std::fmt::Display {
    fn position<'n>(self, names: impl Iterator<Item = &'n str>) -> Option<usize>;
}

impl RowIndex for usize {
    fn position<'n>(self, mut names: impl Iterator<Item = &'n str>) -> Option<usize> {
        names.nth(self).map(|_| self)
    }
}

impl RowIndex for &str {
    fn position<'n>(self, mut names: impl Iterator<Item = &'n str>) -> Option<usize> {
        names.position(|name| name == self)
    }
}

impl Row {
    pub fn try_get<T: Decode, I: RowIndex>(&self, index: I) -> Result<T, Error> {
        match self {
            Row::Lite { columns, values } => {
                let position = index
                    .position(columns.iter().map(String::as_str))
                    .ok_or_else(|| rusqlite::Error::InvalidColumnName(index.to_string()))?;
                let value = &values[position];
                T::lite(value).ok_or_else(|| {
                    Error::Sqlite(rusqlite::Error::InvalidColumnType(
                        position,
                        columns[position].clone(),
                        value.data_type(),
                    ))
                })
            }
            Row::Any(row) => {
                let position = index
                    .position(row.columns().iter().map(|c| c.name()))
                    .ok_or_else(|| sqlx::Error::ColumnNotFound(index.to_string()))?;
                Ok(T::any(row, position)?)
            }
            Row::Pg(row) => {
                let position = index
                    .position(row.columns().iter().map(|c| c.name()))
                    .ok_or_else(|| sqlx::Error::ColumnNotFound(index.to_string()))?;
                T::pg(row, position)
            }
        }
    }
}

/// A Rust value read from a column.
pub trait Decode: Sized + Send {
    fn lite(value: &LiteValue) -> Option<Self>;
    fn any(row: &AnyRow, index: usize) -> Result<Self, sqlx::Error>;
    fn pg(row: &PgRow, index: usize) -> Result<Self, Error>;
}

macro_rules! decode {
    ($ty:ty, $pg:expr, $pattern:pat => $value:expr) => {
        impl Decode for $ty {
            fn lite(value: &LiteValue) -> Option<Self> {
                match value {
                    $pattern => Some($value),
                    _ => None,
                }
            }
            fn any(row: &AnyRow, index: usize) -> Result<Self, sqlx::Error> {
                row.try_get(index)
            }
            fn pg(row: &PgRow, index: usize) -> Result<Self, Error> {
                $pg(row, index)?.ok_or_else(|| {
                    Error::Database(sqlx::Error::Decode(
                        format!("column {index} is NULL").into(),
                    ))
                })
            }
        }
        impl Decode for Option<$ty> {
            fn lite(value: &LiteValue) -> Option<Self> {
                match value {
                    LiteValue::Null => Some(None),
                    other => <$ty>::lite(other).map(Some),
                }
            }
            fn any(row: &AnyRow, index: usize) -> Result<Self, sqlx::Error> {
                row.try_get(index)
            }
            fn pg(row: &PgRow, index: usize) -> Result<Self, Error> {
                $pg(row, index)
            }
        }
    };
}

decode!(i64, pipe::int, LiteValue::Integer(v) => *v);
decode!(String, pipe::value::<String>, LiteValue::Text(v) => v.clone());
decode!(Vec<u8>, pipe::value::<Vec<u8>>, LiteValue::Blob(v) => v.clone());

/// Rows read into tuples, as `query_as`.
pub trait FromRow: Sized + Send {
    fn from_row(row: &Row) -> Result<Self, Error>;
}

impl<A: Decode, B: Decode> FromRow for (A, B) {
    fn from_row(row: &Row) -> Result<Self, Error> {
        Ok((row.try_get(0usize)?, row.try_get(1usize)?))
    }
}

impl<A: Decode, B: Decode, C: Decode> FromRow for (A, B, C) {
    fn from_row(row: &Row) -> Result<Self, Error> {
        Ok((
            row.try_get(0usize)?,
            row.try_get(1usize)?,
            row.try_get(2usize)?,
        ))
    }
}
