//! A value bound to a statement's parameter, on either driver; a table's
//! column as one array on the writer's PostgreSQL connection
//! (`store/sql/table.rs`).

use rusqlite::types::ToSqlOutput;

/// A value bound to a statement's parameter.
#[derive(Debug, Clone)]
pub enum Arg {
    Int(i64),
    Text(String),
    Blob(Vec<u8>),
    NullInt,
    NullText,
    /// A table's column of numbers, as a `bigint[]` (writer's PostgreSQL
    /// connection only).
    Ints(Vec<Option<i64>>),
    /// A table's column of texts, as a `text[]` (idem).
    Texts(Vec<Option<String>>),
}

impl rusqlite::ToSql for Arg {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Arg::Int(value) => ToSqlOutput::from(*value),
            Arg::Text(value) => ToSqlOutput::from(value.as_str()),
            Arg::Blob(value) => ToSqlOutput::from(value.as_slice()),
            Arg::NullInt | Arg::NullText => ToSqlOutput::from(rusqlite::types::Null),
            Arg::Ints(_) | Arg::Texts(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "a table's array is bound on PostgreSQL only".into(),
                ));
            }
        })
    }
}

impl From<i64> for Arg {
    fn from(value: i64) -> Self {
        Arg::Int(value)
    }
}
impl From<Option<i64>> for Arg {
    fn from(value: Option<i64>) -> Self {
        value.map_or(Arg::NullInt, Arg::Int)
    }
}
impl From<&str> for Arg {
    fn from(value: &str) -> Self {
        Arg::Text(value.to_owned())
    }
}
impl From<String> for Arg {
    fn from(value: String) -> Self {
        Arg::Text(value)
    }
}
impl From<&String> for Arg {
    fn from(value: &String) -> Self {
        Arg::Text(value.clone())
    }
}
impl From<Option<String>> for Arg {
    fn from(value: Option<String>) -> Self {
        value.map_or(Arg::NullText, Arg::Text)
    }
}
impl From<Option<&str>> for Arg {
    fn from(value: Option<&str>) -> Self {
        value.map_or(Arg::NullText, |v| Arg::Text(v.to_owned()))
    }
}
impl From<Vec<u8>> for Arg {
    fn from(value: Vec<u8>) -> Self {
        Arg::Blob(value)
    }
}
impl From<&[u8]> for Arg {
    fn from(value: &[u8]) -> Self {
        Arg::Blob(value.to_vec())
    }
}
