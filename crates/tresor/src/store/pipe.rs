//! The writer's own PostgreSQL connection (tokio-postgres): its statements
//! prepared once per connection and sent pipelined.
//!
//! sqlx awaits each statement's answer before it sends the next, and has no
//! pipelining. The writer's batch needs few round trips (its reads together,
//! its writes together) and, before this connection, sent each group as one
//! simple-query message with every value written in as a SQL literal, which
//! PostgreSQL parsed and planned again on every batch. Here each statement
//! is prepared once per connection with its parameters' types (the
//! extended protocol's Parse), kept by its text, and run with its values
//! bound (Bind/Execute); statements whose futures are polled together go
//! out before the first answer comes back (tokio-postgres pipelines them),
//! each one still running after the one before, in order, as one by one.
//!
//! A write held back ([`Held`]) that must change exactly n rows is checked
//! on its own answer's row count ([`super::deferred::check_rows`]); an
//! error of the database comes back as sqlx's error of the same SQLSTATE
//! and message ([`pg_error`]), so every layer above (outages, a full disk,
//! a deadlock retried, a unique index) reads it as before.

use super::arg::Arg;
use super::deferred::{self, Held};
use crate::error::Error;
use futures_util::future::join_all;
use std::borrow::Cow;
use std::collections::HashMap;
use std::time::{Duration, Instant};
use tokio_postgres::types::{IsNull, ToSql, Type};
use tokio_postgres::{Client, NoTls, Statement};

/// A row read on the writer's PostgreSQL connection.
pub type PgRow = tokio_postgres::Row;

/// Statements kept prepared per connection: far more than the writer's
/// texts; past it the cache starts again (a text built with a value in it
/// would otherwise grow it without end).
const STATEMENTS_KEPT: usize = 1024;

/// How long a prepared statement is kept before it is prepared again.
///
/// PostgreSQL plans a prepared statement's first five runs with their
/// values, then keeps one generic plan for as long as nothing invalidates
/// it, and only an `ANALYZE` of its tables does (autovacuum's, or by
/// hand). A plan made while `plays` and the purchase keys were nearly empty
/// reads them whole (a hash join over a sequential scan), which is the
/// right plan for ten rows and a slow one for a million: with autovacuum
/// off, a PostgreSQL on which a block of 450,000 units was sold slowed
/// from 1,635 to 890 purchases a second as it read `plays` whole four
/// times a batch (1.2 billion rows read over 3,060 batches). Prepared again
/// every few seconds, each plan is made for the tables as they are; the
/// cost is one round trip of Parse messages per period.
const PLANS_KEPT_FOR: Duration = Duration::from_secs(10);

/// The writer's PostgreSQL connection, its prepared statements and the
/// writes held back for the batch's end.
#[derive(Debug)]
pub struct Pipe {
    client: Client,
    /// Prepared statements by their parameters' types and text.
    statements: HashMap<String, Statement>,
    /// When `statements` was last emptied ([`PLANS_KEPT_FOR`]).
    planned: Instant,
    held: Held,
    opened: Instant,
}

impl Pipe {
    /// Connects to the PostgreSQL server at `url` (sqlx's URL of the host
    /// the pool is on now) and checks it is of the kind `check` asks
    /// (`SELECT` of one boolean), when one is given.
    pub async fn connect(url: &str, check: Option<&str>) -> Result<Pipe, sqlx::Error> {
        let config: tokio_postgres::Config = writer_url(url)?
            .parse()
            .map_err(|error: tokio_postgres::Error| sqlx::Error::Configuration(error.into()))?;
        let (client, connection) = config.connect(NoTls).await.map_err(pg_error)?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "the writer's PostgreSQL connection ended");
            }
        });
        if let Some(check) = check {
            let row = client.query_one(check, &[]).await.map_err(pg_error)?;
            let accepted: bool = row.try_get(0).map_err(pg_error)?;
            if !accepted {
                return Err(sqlx::Error::Protocol(
                    "the server is not of the kind asked for (a standby or a demoted primary)"
                        .to_owned(),
                ));
            }
        }
        Ok(Pipe {
            client,
            statements: HashMap::new(),
            planned: Instant::now(),
            held: Held::default(),
            opened: Instant::now(),
        })
    }

    /// How long ago the connection was opened.
    pub fn age(&self) -> Duration {
        self.opened.elapsed()
    }

    /// Whether the connection is gone (its server closed it, or an I/O
    /// error ended it).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// Runs statements without parameters (transaction control, savepoints)
    /// over the simple-query protocol.
    pub async fn simple(&mut self, sql: &str) -> Result<(), Error> {
        self.client.batch_execute(sql).await.map_err(error)
    }

    /// The prepared statement of each `(text, values)`, preparing those not
    /// kept yet all together (one round trip, none once each is kept).
    async fn prepared(&mut self, list: &[(&str, &[Arg])]) -> Result<Vec<Statement>, Error> {
        if self.planned.elapsed() >= PLANS_KEPT_FOR {
            self.statements.clear();
            self.planned = Instant::now();
        }
        let keys: Vec<String> = list.iter().map(|(sql, args)| key(sql, args)).collect();
        let mut missing: Vec<(usize, Vec<Type>)> = Vec::new();
        for (at, key) in keys.iter().enumerate() {
            if !self.statements.contains_key(key)
                && !missing.iter().any(|(other, _)| keys[*other] == *key)
            {
                missing.push((at, list[at].1.iter().map(Arg::pg_type).collect()));
            }
        }
        if !missing.is_empty() {
            if self.statements.len() + missing.len() > STATEMENTS_KEPT {
                self.statements.clear();
            }
            let client = &self.client;
            let prepared = join_all(
                missing
                    .iter()
                    .map(|(at, types)| client.prepare_typed(list[*at].0, types)),
            )
            .await;
            for ((at, _), statement) in missing.iter().zip(prepared) {
                self.statements
                    .insert(keys[*at].clone(), statement.map_err(error)?);
            }
        }
        Ok(keys
            .iter()
            .map(|key| self.statements[key].clone())
            .collect())
    }

    /// Runs one statement and returns its rows.
    pub async fn query(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<PgRow>, Error> {
        let mut rows = self.query_each(&[(sql, args)]).await?;
        Ok(rows.pop().unwrap_or_default())
    }

    /// Runs one statement and returns how many rows it changed.
    pub async fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, Error> {
        let statement = self.prepared(&[(sql, args)]).await?.remove(0);
        self.client
            .execute(&statement, &params(args))
            .await
            .map_err(error)
    }

    /// Runs `list` in order, pipelined (one round trip), and returns each
    /// one's rows; the first error, in order, fails them all.
    pub async fn query_each(&mut self, list: &[(&str, &[Arg])]) -> Result<Vec<Vec<PgRow>>, Error> {
        let statements = self.prepared(list).await?;
        let params: Vec<_> = list.iter().map(|(_, args)| params(args)).collect();
        let client = &self.client;
        let results = join_all(
            statements
                .iter()
                .zip(&params)
                .map(|(statement, params)| client.query(statement, params)),
        )
        .await;
        results
            .into_iter()
            .map(|result| result.map_err(error))
            .collect()
    }

    /// Holds a write back until [`Pipe::flush`].
    pub fn hold(&mut self, sql: String, args: Vec<Arg>, expect: Option<(&'static str, usize)>) {
        self.held.push(sql, args, expect);
    }

    /// Whether writes are held back.
    pub fn holds(&self) -> bool {
        !self.held.is_empty()
    }

    /// Forgets the writes held back (the transaction is rolled back).
    pub fn discard_held(&mut self) {
        self.held.take();
    }

    /// Sends the writes held back, pipelined (one round trip), and returns
    /// how many there were. A failure is the first statement's, in order,
    /// that failed or changed other rows than it had to; the transaction
    /// is then to be rolled back.
    pub async fn flush(&mut self) -> Result<usize, Error> {
        let writes = self.held.take();
        if writes.is_empty() {
            return Ok(0);
        }
        let list: Vec<(&str, &[Arg])> = writes
            .iter()
            .map(|write| (write.sql.as_str(), write.args.as_slice()))
            .collect();
        let statements = self.prepared(&list).await?;
        let params: Vec<_> = writes.iter().map(|write| params(&write.args)).collect();
        let client = &self.client;
        let results = join_all(
            statements
                .iter()
                .zip(&params)
                .map(|(statement, params)| client.execute(statement, params)),
        )
        .await;
        for (write, result) in writes.iter().zip(results) {
            let changed = result.map_err(error)?;
            if let Some((table, rows)) = write.expect {
                deferred::check_rows(table, changed, rows)?;
            }
        }
        Ok(writes.len())
    }
}

/// The key of a prepared statement: its parameters' types and its text.
fn key(sql: &str, args: &[Arg]) -> String {
    let mut key = String::with_capacity(args.len() + 1 + sql.len());
    for arg in args {
        key.push(match arg {
            Arg::Int(_) | Arg::NullInt => 'i',
            Arg::Text(_) | Arg::NullText => 't',
            Arg::Blob(_) => 'b',
            Arg::Ints(_) => 'I',
            Arg::Texts(_) => 'T',
        });
    }
    key.push('\n');
    key.push_str(sql);
    key
}

fn params(args: &[Arg]) -> Vec<&(dyn ToSql + Sync)> {
    args.iter().map(|arg| arg as &(dyn ToSql + Sync)).collect()
}

/// sqlx's URL of one host as tokio-postgres reads it: user, password, host,
/// port and database, and of its parameters those both read the same way.
fn writer_url(url: &str) -> Result<String, sqlx::Error> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let kept: Vec<&str> = query
        .split('&')
        .filter(|param| {
            let name = param.split('=').next().unwrap_or_default();
            matches!(name, "application_name" | "options")
        })
        .collect();
    let base = base.replacen("postgres://", "postgresql://", 1);
    if !base.starts_with("postgresql://") {
        return Err(sqlx::Error::Configuration(
            "the writer's connection needs a postgres:// URL".into(),
        ));
    }
    Ok(if kept.is_empty() {
        base
    } else {
        format!("{base}?{}", kept.join("&"))
    })
}

impl Arg {
    /// The type the parameter is prepared with (as sqlx binds the same
    /// Rust values; a table's column as an array of its type).
    fn pg_type(&self) -> Type {
        match self {
            Arg::Int(_) | Arg::NullInt => Type::INT8,
            Arg::Text(_) | Arg::NullText => Type::TEXT,
            Arg::Blob(_) => Type::BYTEA,
            Arg::Ints(_) => Type::INT8_ARRAY,
            Arg::Texts(_) => Type::TEXT_ARRAY,
        }
    }
}

impl ToSql for Arg {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Arg::Int(value) => value.to_sql(ty, out),
            Arg::Text(value) => value.as_str().to_sql(ty, out),
            Arg::Blob(value) => value.as_slice().to_sql(ty, out),
            Arg::NullInt | Arg::NullText => Ok(IsNull::Yes),
            Arg::Ints(values) => values.to_sql(ty, out),
            Arg::Texts(values) => values.to_sql(ty, out),
        }
    }

    /// Prepared with the type [`Arg::pg_type`] gives, so always accepted.
    fn accepts(_: &Type) -> bool {
        true
    }

    tokio_postgres::types::to_sql_checked!();
}

/// Reads column `index` of a row of the writer's connection as an integer
/// (of any width PostgreSQL's integers have), or NULL.
pub fn int(row: &PgRow, index: usize) -> Result<Option<i64>, Error> {
    let column = row
        .columns()
        .get(index)
        .ok_or_else(|| sqlx::Error::ColumnIndexOutOfBounds {
            index,
            len: row.len(),
        })?;
    let value = match *column.type_() {
        Type::INT2 => row
            .try_get::<_, Option<i16>>(index)
            .map(|v| v.map(i64::from)),
        Type::INT4 => row
            .try_get::<_, Option<i32>>(index)
            .map(|v| v.map(i64::from)),
        _ => row.try_get::<_, Option<i64>>(index),
    };
    value.map_err(error)
}

/// Reads column `index` as `T` (text or bytes), or NULL.
pub fn value<T>(row: &PgRow, index: usize) -> Result<Option<T>, Error>
where
    T: for<'a> tokio_postgres::types::FromSql<'a>,
{
    row.try_get::<_, Option<T>>(index).map_err(error)
}

/// A column's position by name.
pub fn position(row: &PgRow, name: &str) -> Option<usize> {
    row.columns()
        .iter()
        .position(|column| column.name() == name)
}

fn error(error: tokio_postgres::Error) -> Error {
    Error::from(pg_error(error))
}

/// tokio-postgres's error as sqlx's: an error of the server keeps its
/// SQLSTATE, message, constraint and table; a lost connection is an I/O
/// error (an outage, as sqlx's own).
pub fn pg_error(error: tokio_postgres::Error) -> sqlx::Error {
    if let Some(db) = error.as_db_error() {
        return sqlx::Error::Database(Box::new(PgError {
            code: db.code().code().to_owned(),
            message: db.message().to_owned(),
            constraint: db.constraint().map(str::to_owned),
            table: db.table().map(str::to_owned),
        }));
    }
    if error.is_closed() {
        return sqlx::Error::Io(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            error.to_string(),
        ));
    }
    let io = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<std::io::Error>())
        .map(|io| std::io::Error::new(io.kind(), error.to_string()));
    match io {
        Some(io) => sqlx::Error::Io(io),
        None => sqlx::Error::Protocol(error.to_string()),
    }
}

/// An error of the PostgreSQL server, as sqlx's `DatabaseError`.
#[derive(Debug)]
struct PgError {
    code: String,
    message: String,
    constraint: Option<String>,
    table: Option<String>,
}

impl std::fmt::Display for PgError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (SQLSTATE {})", self.message, self.code)
    }
}

impl std::error::Error for PgError {}

impl sqlx::error::DatabaseError for PgError {
    fn message(&self) -> &str {
        &self.message
    }

    fn code(&self) -> Option<Cow<'_, str>> {
        Some(Cow::Borrowed(&self.code))
    }

    fn as_error(&self) -> &(dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn as_error_mut(&mut self) -> &mut (dyn std::error::Error + Send + Sync + 'static) {
        self
    }

    fn into_error(self: Box<Self>) -> Box<dyn std::error::Error + Send + Sync + 'static> {
        self
    }

    fn constraint(&self) -> Option<&str> {
        self.constraint.as_deref()
    }

    fn table(&self) -> Option<&str> {
        self.table.as_deref()
    }

    fn kind(&self) -> sqlx::error::ErrorKind {
        use sqlx::error::ErrorKind;
        match self.code.as_str() {
            "23505" => ErrorKind::UniqueViolation,
            "23503" => ErrorKind::ForeignKeyViolation,
            "23502" => ErrorKind::NotNullViolation,
            "23514" => ErrorKind::CheckViolation,
            _ => ErrorKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_url_keeps_what_both_drivers_read_alike() {
        assert_eq!(
            writer_url(
                "postgres://u:p%40ss@h:5433/db?statement-cache-capacity=9&application_name=t"
            )
            .expect("a URL"),
            "postgresql://u:p%40ss@h:5433/db?application_name=t"
        );
        assert_eq!(
            writer_url("postgresql://h/db").expect("a URL"),
            "postgresql://h/db"
        );
        assert!(writer_url("sqlite://x").is_err());
    }

    #[test]
    fn a_statement_is_kept_by_its_types_and_text() {
        assert_eq!(
            key("SELECT $1, $2", &[Arg::NullInt, Arg::Text(String::new())]),
            "it\nSELECT $1, $2"
        );
        assert_ne!(
            key("SELECT $1", &[Arg::Int(1)]),
            key("SELECT $1", &[Arg::Blob(vec![])])
        );
    }
}
