//! The SQL the writer runs, over either driver, with sqlx's shape
//! (`query(…).bind(…).fetch_one(conn)`), so every statement is written once
//! for both databases.
//!
//! On SQLite the writer owns a plain `rusqlite` connection and runs its jobs
//! on its own thread: a statement is a function call on a prepared statement
//! kept in a cache, not a round trip to a driver thread (two futex wake-ups
//! and two context switches per statement, which is where the time went; see
//! BENCHMARKS.md). On PostgreSQL, and for reads outside the writer, the same
//! calls go through sqlx.
//!
//! On PostgreSQL the writer has a connection of its own ([`Conn::Pipe`],
//! `store::pipe`): its statements are prepared once per connection, a
//! batch's writes are held back (`Query::defer`) and its reads sent together
//! ([`fetch_each`]), each group pipelined: a batch then costs a few round
//! trips whatever its size, and no value is ever written into a text. A
//! set statement's rows ([`Query::bind_rows`]) are rendered when it runs,
//! for its connection (`sql/table.rs`).

mod flatten;
mod row;
mod table;

pub use super::arg::Arg;
use super::deferred;
use super::pipe::Pipe;
use crate::error::Error;
use futures_util::future::BoxFuture;
use row::lite_rows;
pub use row::{Decode, FromRow, Row, RowIndex};
use serde::Serialize;
use sqlx::any::AnyRow;
use sqlx::pool::PoolConnection;
use sqlx::{Any, AnyConnection};
use std::borrow::Cow;
use std::marker::PhantomData;
pub use table::{ColumnType, Table, json_rows, padded, table};

/// A connection the writer's SQL can run on.
#[derive(Debug)]
pub enum Conn {
    /// The writer's own SQLite connection; it manages its transactions with
    /// `BEGIN IMMEDIATE` / `COMMIT` statements.
    Lite(rusqlite::Connection),
    /// A transaction of sqlx's pool (PostgreSQL, or any database outside the
    /// writer).
    Tx(sqlx::Transaction<'static, Any>),
    /// A pooled connection, for reads outside the writer.
    Pooled(PoolConnection<Any>),
    /// The writer's own connection on PostgreSQL (`store::pipe`), inside
    /// the transaction it began: the writes deferred (`Query::defer`) are
    /// held back and sent together by [`Conn::flush`], which every other
    /// statement runs first, so that each statement still sees what the
    /// ones before it wrote. Its futures are boxed where they are awaited
    /// here: they are large (`BEGIN` and a read carried in front), and the
    /// writer's SQLite thread polls the same code on its own stack.
    Pipe(Box<Pipe>),
}

impl Conn {
    fn any(&mut self) -> Option<&mut AnyConnection> {
        match self {
            Conn::Lite(_) | Conn::Pipe(_) => None,
            Conn::Tx(tx) => Some(&mut **tx),
            Conn::Pooled(conn) => Some(&mut **conn),
        }
    }

    /// Sends the writes held back, all in one round trip (nothing when none
    /// is held, or off [`Conn::Pipe`]). A failure is the error the failed
    /// statement gives run alone; the transaction is then aborted.
    pub async fn flush(&mut self) -> Result<(), Error> {
        let Conn::Pipe(pipe) = self else {
            return Ok(());
        };
        if !pipe.holds() {
            return Ok(());
        }
        count_round_trip();
        Box::pin(pipe.flush()).await?;
        Ok(())
    }

    /// Puts the read `query` in front of the next message on the writer's
    /// PostgreSQL connection, to travel with it (the log's lock with the
    /// batch's reads), its rows kept for [`Conn::led`]. `false` anywhere
    /// else: nothing is sent, and the caller runs it as usual.
    pub fn lead(&mut self, query: Query<'_>) -> bool {
        let Conn::Pipe(pipe) = self else {
            return false;
        };
        count_statement();
        let (sql, args) = query.remote(true);
        pipe.lead(sql.into_owned(), args);
        true
    }

    /// The rows of the read put in front ([`Conn::lead`]); sent now, alone,
    /// when no message has carried it yet.
    pub async fn led(&mut self) -> Result<Vec<Row>, Error> {
        let Conn::Pipe(pipe) = self else {
            return Ok(Vec::new());
        };
        if pipe.leads() {
            count_round_trip();
            Box::pin(pipe.query_each(&[])).await?;
        }
        let rows = pipe.take_led().unwrap_or_default();
        Ok(rows.into_iter().map(Row::Pg).collect())
    }

    /// Whether this is a SQLite connection (the writer's own or sqlx's):
    /// the few statements whose text differs between the two databases ask.
    pub fn is_sqlite(&mut self) -> bool {
        match self {
            Conn::Lite(_) => true,
            Conn::Pipe(_) => false,
            _ => self
                .any()
                .is_some_and(|conn| conn.backend_name() == "SQLite"),
        }
    }

    /// Runs one statement without arguments or results (transaction
    /// control, savepoints).
    pub async fn execute_raw(&mut self, sql: &str) -> Result<(), Error> {
        count_statement();
        if let Conn::Lite(conn) = self {
            // Prepared once and kept, as every other statement: BEGIN
            // IMMEDIATE, COMMIT and the savepoints run on every batch, and
            // `execute_batch` parsed them again each time (issue 34).
            let mut statement = conn.prepare_cached(sql)?;
            let mut rows = statement.raw_query();
            while rows.next()?.is_some() {}
            return Ok(());
        }
        self.flush().await?;
        count_round_trip();
        if let Conn::Pipe(pipe) = self {
            return Box::pin(pipe.simple(sql)).await;
        }
        Ok(any_raw(self.any().expect("not SQLite"), sql).await?)
    }

    async fn run(&mut self, query: Query<'_>, limit: Option<usize>) -> Result<Vec<Row>, Error> {
        count_statement();
        if let Conn::Lite(conn) = self {
            let (sql, args, positional) = query.lite();
            return Ok(lite_rows(conn, &sql, &args, &positional, limit)?);
        }
        let (sql, args) = query.remote(matches!(self, Conn::Pipe(_)));
        self.flush().await?;
        count_round_trip();
        if let Conn::Pipe(pipe) = self {
            let mut rows = Box::pin(pipe.query(&sql, &args)).await?;
            if let Some(limit) = limit {
                rows.truncate(limit);
            }
            return Ok(rows.into_iter().map(Row::Pg).collect());
        }
        let conn = self.any().expect("not SQLite");
        let query = any_query(&sql, args);
        let future: BoxFuture<'_, Result<Vec<AnyRow>, sqlx::Error>> = match limit {
            Some(_) => {
                Box::pin(async move { Ok(query.fetch_optional(conn).await?.into_iter().collect()) })
            }
            None => Box::pin(query.fetch_all(conn)),
        };
        Ok(future.await?.into_iter().map(Row::Any).collect())
    }

    async fn execute(&mut self, query: Query<'_>) -> Result<u64, Error> {
        count_statement();
        if let Conn::Lite(conn) = self {
            let (sql, args, positional) = query.lite();
            lite_rows(conn, &sql, &args, &positional, None)?;
            return Ok(conn.changes());
        }
        let (sql, args) = query.remote(matches!(self, Conn::Pipe(_)));
        self.flush().await?;
        count_round_trip();
        if let Conn::Pipe(pipe) = self {
            return Box::pin(pipe.execute(&sql, &args)).await;
        }
        let conn = self.any().expect("not SQLite");
        let future: BoxFuture<'_, Result<_, sqlx::Error>> =
            Box::pin(any_query(&sql, args).execute(conn));
        Ok(future.await?.rows_affected())
    }
}

/// What [`counting`] counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Counts {
    /// Statements run or held back.
    pub statements: u64,
    /// Messages sent to the database server and waited for (none on the
    /// writer's own SQLite connection, whose statements are function calls).
    pub round_trips: u64,
}

tokio::task_local! {
    /// What runs inside [`counting`]: the writer counts each batch's
    /// statements and round trips, which must not grow with its jobs.
    static COUNTS: std::cell::Cell<Counts>;
}

fn count_statement() {
    let _ = COUNTS.try_with(|counts| {
        let mut now = counts.get();
        now.statements += 1;
        counts.set(now);
    });
}

fn count_round_trip() {
    let _ = COUNTS.try_with(|counts| {
        let mut now = counts.get();
        now.round_trips += 1;
        counts.set(now);
    });
}

/// Runs `future` and counts the statements and round trips it makes.
pub async fn counting<F: std::future::Future>(future: F) -> (F::Output, Counts) {
    COUNTS
        .scope(std::cell::Cell::new(Counts::default()), async move {
            let output = future.await;
            (output, COUNTS.with(std::cell::Cell::get))
        })
        .await
}

/// Runs `queries` (reads) and returns each one's rows, in order. On the
/// writer's PostgreSQL connection they are pipelined, in one round trip,
/// run one after the other as they would be one by one (each sees what the
/// one before it locked or wrote); elsewhere they run in turn.
pub async fn fetch_each(conn: &mut Conn, queries: Vec<Query<'_>>) -> Result<Vec<Vec<Row>>, Error> {
    if queries.is_empty() {
        return Ok(Vec::new());
    }
    conn.flush().await?;
    let Conn::Pipe(pipe) = conn else {
        let mut results = Vec::with_capacity(queries.len());
        for query in queries {
            results.push(query.fetch_all(conn).await?);
        }
        return Ok(results);
    };
    for _ in &queries {
        count_statement();
    }
    count_round_trip();
    let queries: Vec<(Cow<'_, str>, Vec<Arg>)> = queries
        .into_iter()
        .map(|query| query.remote(true))
        .collect();
    let list: Vec<(&str, &[Arg])> = queries
        .iter()
        .map(|(sql, args)| (sql.as_ref(), args.as_slice()))
        .collect();
    let results = Box::pin(pipe.query_each(&list)).await?;
    Ok(results
        .into_iter()
        .map(|rows| rows.into_iter().map(Row::Pg).collect())
        .collect())
}

/// One statement without arguments. (sqlx's `Executor` methods return
/// boxed futures, which stay provably `Send` in the writer's generic code;
/// see rust-lang/rust#96865 for why its `async fn`s do not.)
fn any_raw<'a>(
    conn: &'a mut AnyConnection,
    sql: &'a str,
) -> BoxFuture<'a, Result<(), sqlx::Error>> {
    use sqlx::Executor as _;
    let future = conn.execute(sql);
    Box::pin(async move {
        future.await?;
        Ok(())
    })
}

fn any_query(
    sql: &str,
    args: Vec<Arg>,
) -> sqlx::query::Query<'_, Any, sqlx::any::AnyArguments<'_>> {
    let mut query = sqlx::query(sql);
    for arg in args {
        query = match arg {
            Arg::Int(value) => query.bind(value),
            Arg::Text(value) => query.bind(value),
            Arg::Blob(value) => query.bind(value),
            Arg::NullInt => query.bind(None::<i64>),
            Arg::NullText => query.bind(None::<String>),
            Arg::Ints(_) | Arg::Texts(_) => unreachable!("tables go to sqlx as JSON"),
        };
    }
    query
}

/// A statement and its arguments.
#[derive(Debug)]
pub struct Query<'q> {
    sql: Cow<'q, str>,
    args: Vec<Arg>,
    /// The tables bound ([`Query::bind_rows`]), rendered when the
    /// statement runs, for its connection (`sql/table.rs`).
    tables: Vec<table::Bound>,
}

pub fn query(sql: &str) -> Query<'_> {
    Query {
        sql: Cow::Borrowed(sql),
        args: Vec::new(),
        tables: Vec::new(),
    }
}

/// A statement whose text it owns: built now, run later ([`fetch_each`]).
pub fn query_owned(sql: String) -> Query<'static> {
    Query {
        sql: Cow::Owned(sql),
        args: Vec::new(),
        tables: Vec::new(),
    }
}

impl<'q> Query<'q> {
    pub fn bind(mut self, value: impl Into<Arg>) -> Self {
        self.args.push(value.into());
        self
    }

    /// Binds `rows` as the table `table` stands for in the text (its
    /// parameter, the next one), each row as the tuple `values` makes of it,
    /// in the order of the table's columns.
    pub fn bind_rows<'r, T, U: Serialize + 'r>(
        mut self,
        table: &Table,
        rows: &'r [T],
        values: impl Fn(&'r T) -> U,
    ) -> Self {
        assert_eq!(table.param(), self.args.len() + 1, "tables bound in order");
        // Its parameter, bound when the statement runs (its JSON, or its
        // first column's array), or left out of the text (SQLite's VALUES).
        self.args.push(Arg::NullText);
        self.tables.push(table.bind(rows, values));
        self
    }

    /// The text, named arguments and plain `?` arguments to run on the
    /// writer's SQLite connection.
    fn lite(&self) -> (Cow<'_, str>, Cow<'_, [Arg]>, Vec<Option<&Arg>>) {
        if self.tables.is_empty() {
            return (
                Cow::Borrowed(&self.sql),
                Cow::Borrowed(&self.args),
                Vec::new(),
            );
        }
        let mut args = self.args.clone();
        let rendered = table::render_values(&self.sql, &self.tables, &mut args);
        (
            Cow::Owned(rendered.sql),
            Cow::Owned(args),
            rendered.positional,
        )
    }

    /// The text and arguments to run anywhere else: its tables as typed
    /// arrays on the writer's PostgreSQL connection (`pipe`), as JSON on
    /// sqlx's.
    fn remote(mut self, pipe: bool) -> (Cow<'q, str>, Vec<Arg>) {
        if self.tables.is_empty() {
            return (self.sql, self.args);
        }
        let tables = std::mem::take(&mut self.tables);
        let sql = table::render_remote(&self.sql, tables, pipe, &mut self.args);
        (Cow::Owned(sql), self.args)
    }

    pub async fn execute(self, conn: &mut Conn) -> Result<u64, Error> {
        conn.execute(self).await
    }

    /// Holds the write back until [`Conn::flush`] on the writer's
    /// PostgreSQL transaction; runs it now anywhere else.
    pub async fn defer(self, conn: &mut Conn) -> Result<(), Error> {
        match conn {
            Conn::Pipe(pipe) => {
                count_statement();
                let (sql, args) = self.remote(true);
                pipe.hold(sql.into_owned(), args, None);
                Ok(())
            }
            _ => self.execute(conn).await.map(drop),
        }
    }

    /// As [`Query::defer`], for a write that must change exactly `rows`
    /// rows of `table`: otherwise the batch fails (`deferred::rows_changed`),
    /// when it runs now as when it is flushed.
    pub async fn defer_expecting(
        self,
        conn: &mut Conn,
        table: &'static str,
        rows: usize,
    ) -> Result<(), Error> {
        match conn {
            Conn::Pipe(pipe) => {
                count_statement();
                let (sql, args) = self.remote(true);
                pipe.hold(sql.into_owned(), args, Some((table, rows)));
                Ok(())
            }
            _ => {
                let changed = self.execute(conn).await?;
                deferred::check_rows(table, changed, rows)
            }
        }
    }

    pub async fn fetch_optional(self, conn: &mut Conn) -> Result<Option<Row>, Error> {
        Ok(conn.run(self, Some(1)).await?.into_iter().next())
    }

    pub async fn fetch_one(self, conn: &mut Conn) -> Result<Row, Error> {
        self.fetch_optional(conn)
            .await?
            .ok_or(Error::Database(sqlx::Error::RowNotFound))
    }

    pub async fn fetch_all(self, conn: &mut Conn) -> Result<Vec<Row>, Error> {
        conn.run(self, None).await
    }
}

/// A statement read as rows of `T`: `query_scalar` (its first column) or
/// `query_as` (a tuple).
#[derive(Debug)]
pub struct Typed<'q, T, const SCALAR: bool> {
    query: Query<'q>,
    _type: PhantomData<fn() -> T>,
}

pub fn query_scalar<T: Decode>(sql: &str) -> Typed<'_, T, true> {
    Typed {
        query: query(sql),
        _type: PhantomData,
    }
}

pub fn query_as<T: FromRow>(sql: &str) -> Typed<'_, T, false> {
    Typed {
        query: query(sql),
        _type: PhantomData,
    }
}

/// How a typed statement reads its rows.
pub trait ReadRow<T> {
    fn read(row: &Row) -> Result<T, Error>;
}

impl<T: Decode> ReadRow<T> for Typed<'_, T, true> {
    fn read(row: &Row) -> Result<T, Error> {
        row.try_get(0usize)
    }
}

impl<T: FromRow> ReadRow<T> for Typed<'_, T, false> {
    fn read(row: &Row) -> Result<T, Error> {
        T::from_row(row)
    }
}

impl<'q, T, const SCALAR: bool> Typed<'q, T, SCALAR>
where
    Self: ReadRow<T>,
{
    pub fn bind(mut self, value: impl Into<Arg>) -> Self {
        self.query = self.query.bind(value);
        self
    }

    /// As [`Query::bind_rows`].
    pub fn bind_rows<'r, R, U: Serialize + 'r>(
        mut self,
        table: &Table,
        rows: &'r [R],
        values: impl Fn(&'r R) -> U,
    ) -> Self {
        self.query = self.query.bind_rows(table, rows, values);
        self
    }

    pub async fn fetch_optional(self, conn: &mut Conn) -> Result<Option<T>, Error> {
        match self.query.fetch_optional(conn).await? {
            Some(row) => Ok(Some(Self::read(&row)?)),
            None => Ok(None),
        }
    }

    pub async fn fetch_one(self, conn: &mut Conn) -> Result<T, Error> {
        Self::read(&self.query.fetch_one(conn).await?)
    }

    pub async fn fetch_all(self, conn: &mut Conn) -> Result<Vec<T>, Error> {
        self.query
            .fetch_all(conn)
            .await?
            .iter()
            .map(Self::read)
            .collect()
    }
}

/// Opens the writer's own connection to the SQLite file, with the same
/// settings as the pool's: WAL, every commit durable (`synchronous = FULL`),
/// foreign keys checked.
pub fn open_lite(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = rusqlite::Connection::open(path)?;
    conn.execute_batch(
        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
         PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;",
    )?;
    conn.set_prepared_statement_cache_capacity(256);
    Ok(conn)
}

/// The writer's connection ([`open_lite`]), with room for its work: a page
/// cache of 64 MiB (SQLite's default, 2 MiB, had the writer read the pages
/// of the plays' and transfers' indexes from the file again and again), and
/// its statement journals in memory, not spilled to a temporary file (both
/// seen in a profile of a block sold whole: BENCHMARKS.md). The readers keep
/// the default: there are eight of them, and a read by key touches a few
/// pages.
pub fn open_lite_writer(path: &std::path::Path) -> rusqlite::Result<rusqlite::Connection> {
    let conn = open_lite(path)?;
    conn.execute_batch("PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;")?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// SQLite's memory statistics are off (`.cargo/config.toml`): with them
    /// on, every allocation of every connection takes one global mutex.
    #[test]
    fn memory_statistics_are_off() {
        let conn = rusqlite::Connection::open_in_memory().expect("opened");
        let mut statement = conn.prepare("PRAGMA compile_options").expect("prepared");
        let options: Vec<String> = statement
            .query_map([], |row| row.get(0))
            .expect("read")
            .collect::<Result<_, _>>()
            .expect("read");
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{options:?}"
        );
    }

    /// Transaction control runs from the cache of prepared statements, and
    /// a statement that answers a row (a pragma setting) runs too.
    #[tokio::test]
    async fn raw_statements_run_prepared() {
        let dir = tempfile::tempdir().expect("a folder");
        let mut conn = Conn::Lite(open_lite(&dir.path().join("t.db")).expect("opened"));
        conn.execute_raw("CREATE TABLE t (a INTEGER)")
            .await
            .expect("created");
        for value in 0..3 {
            conn.execute_raw("BEGIN IMMEDIATE").await.expect("begun");
            query("INSERT INTO t (a) VALUES ($1)")
                .bind(value)
                .execute(&mut conn)
                .await
                .expect("inserted");
            conn.execute_raw(if value == 1 { "ROLLBACK" } else { "COMMIT" })
                .await
                .expect("ended");
        }
        conn.execute_raw("PRAGMA max_page_count = 100000")
            .await
            .expect("a pragma answering a row");
        let kept: Vec<i64> = query_scalar("SELECT a FROM t ORDER BY a")
            .fetch_all(&mut conn)
            .await
            .expect("read");
        assert_eq!(kept, vec![0, 2]);
    }
}
