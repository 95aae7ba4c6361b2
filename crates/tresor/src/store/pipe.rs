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
//! The writer's transaction begins with its first message rather than a
//! round trip of its own ([`Pipe::begin_later`]): `BEGIN` goes in front of
//! whatever is sent first, and that message is cut at the outage budget,
//! as `BEGIN` alone was (the writer's outage probe). A read can be put in
//! front of the next message too ([`Pipe::lead`]: the lock of the writer's
//! log, sent with the batch's reads), its rows kept for whoever put it.
//!
//! A write held back ([`Held`]) that must change exactly n rows is checked
//! on its own answer's row count ([`super::deferred::check_rows`]); an
//! error of the database comes back as sqlx's error of the same SQLSTATE
//! and message ([`pg_error`], `pipe/errors.rs`), so every layer above (outages, a full disk,
//! a deadlock retried, a unique index) reads it as before.

mod errors;

use super::arg::Arg;
use super::deferred::{self, Held};
use crate::error::Error;
use errors::error;
pub use errors::pg_error;
use futures_util::future::join_all;
use std::collections::HashMap;
use std::future::Future;
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
    /// `BEGIN` not sent yet: it goes in front of the next message, which is
    /// cut at this budget ([`Pipe::begin_later`]).
    begin: Option<Duration>,
    /// A read to send in front of the next message ([`Pipe::lead`]), then
    /// its rows ([`Pipe::take_led`]).
    lead: Option<(String, Vec<Arg>)>,
    led: Option<Vec<PgRow>>,
    /// A message that carried `BEGIN` was cut at its budget: what the
    /// connection is doing is unknown, and it is not used again.
    cut: bool,
}

/// What goes in front of a message: `BEGIN` (with its budget) and the
/// read put ahead, prepared.
struct Front {
    begin: Option<Duration>,
    lead: Option<(Statement, Vec<Arg>)>,
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
            begin: None,
            lead: None,
            led: None,
            cut: false,
        })
    }

    /// Begins a transaction with the next message rather than now: `BEGIN`
    /// goes in front of it, and the whole message is cut at `budget` (an
    /// outage, after which the connection is not used again).
    pub fn begin_later(&mut self, budget: Duration) {
        self.begin = Some(budget);
    }

    /// Puts a read in front of the next message sent, and keeps its rows
    /// for [`Pipe::take_led`].
    pub fn lead(&mut self, sql: String, args: Vec<Arg>) {
        self.lead = Some((sql, args));
        self.led = None;
    }

    /// Whether a read put in front ([`Pipe::lead`]) is still to be sent.
    pub fn leads(&self) -> bool {
        self.lead.is_some()
    }

    /// The rows of the read put in front, once its message was answered.
    pub fn take_led(&mut self) -> Option<Vec<PgRow>> {
        self.led.take()
    }

    /// Ends the transaction: COMMIT or ROLLBACK, or nothing when it never
    /// began (`BEGIN` still waiting for a message).
    pub async fn end(&mut self, commit: bool) -> Result<(), Error> {
        self.lead = None;
        self.led = None;
        if self.begin.take().is_some() {
            return Ok(());
        }
        self.simple(if commit { "COMMIT" } else { "ROLLBACK" })
            .await
    }

    /// How long ago the connection was opened.
    pub fn age(&self) -> Duration {
        self.opened.elapsed()
    }

    /// Whether the connection is gone (its server closed it, or an I/O
    /// error ended it).
    pub fn is_closed(&self) -> bool {
        self.cut || self.client.is_closed()
    }

    /// Runs statements without parameters (transaction control, savepoints)
    /// over the simple-query protocol.
    pub async fn simple(&mut self, sql: &str) -> Result<(), Error> {
        let (front, _) = self.front(&[]).await?;
        let client = &self.client;
        let carried = carry(client, front, async {
            client.batch_execute(sql).await.map_err(error)
        })
        .await;
        self.carried(carried)
    }

    /// What goes in front of the next message, and the statements of
    /// `list`, prepared with the read put in front (one round trip when
    /// some are not kept yet, which then carries `BEGIN`).
    async fn front(&mut self, list: &[(&str, &[Arg])]) -> Result<(Front, Vec<Statement>), Error> {
        let lead = self.lead.take();
        let mut all = Vec::with_capacity(list.len() + 1);
        if let Some((sql, args)) = &lead {
            all.push((sql.as_str(), args.as_slice()));
        }
        all.extend_from_slice(list);
        let mut statements = self.prepared(&all).await?;
        let lead = lead.map(|(_, args)| (statements.remove(0), args));
        let front = Front {
            begin: self.begin.take(),
            lead,
        };
        Ok((front, statements))
    }

    /// Keeps what a message carried in front (the read's rows), and marks
    /// the connection cut when the message was cut at `BEGIN`'s budget.
    fn carried<T>(&mut self, carried: Carried<T>) -> Result<T, Error> {
        match carried {
            Carried::Answered(led, value) => {
                if led.is_some() {
                    self.led = led;
                }
                Ok(value)
            }
            Carried::Failed(error) => Err(error),
            Carried::Cut => {
                self.cut = true;
                Err(cut())
            }
        }
    }

    /// The prepared statement of each `(text, values)`, preparing those not
    /// kept yet all together (one round trip, none once each is kept; it
    /// carries `BEGIN` when it is still to be sent).
    async fn prepared(&mut self, list: &[(&str, &[Arg])]) -> Result<Vec<Statement>, Error> {
        if self.cut {
            return Err(cut());
        }
        if self.planned.elapsed() >= PLANS_KEPT_FOR {
            self.statements.clear();
            self.planned = Instant::now();
        }
        let keys: Vec<String> = list.iter().map(|(sql, args)| key(sql, args)).collect();
        let mut missing = self.missing(&keys);
        if self.statements.len() + missing.len() > STATEMENTS_KEPT {
            self.statements.clear();
            missing = self.missing(&keys);
        }
        if !missing.is_empty() {
            let front = Front {
                begin: self.begin.take(),
                lead: None,
            };
            let client = &self.client;
            let prepare = missing.iter().map(|&at| {
                let types: Vec<Type> = list[at].1.iter().map(Arg::pg_type).collect();
                async move { client.prepare_typed(list[at].0, &types).await }
            });
            let carried = carry(client, front, async {
                join_all(prepare)
                    .await
                    .into_iter()
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(error)
            })
            .await;
            let prepared = self.carried(carried)?;
            for (at, statement) in missing.iter().zip(prepared) {
                self.statements.insert(keys[*at].clone(), statement);
            }
        }
        Ok(keys
            .iter()
            .map(|key| self.statements[key].clone())
            .collect())
    }

    /// The positions in `keys` of the statements not kept, each text once.
    fn missing(&self, keys: &[String]) -> Vec<usize> {
        let mut missing: Vec<usize> = Vec::new();
        for (at, key) in keys.iter().enumerate() {
            if !self.statements.contains_key(key)
                && !missing.iter().any(|&other| keys[other] == *key)
            {
                missing.push(at);
            }
        }
        missing
    }

    /// Runs one statement and returns its rows.
    pub async fn query(&mut self, sql: &str, args: &[Arg]) -> Result<Vec<PgRow>, Error> {
        let mut rows = self.query_each(&[(sql, args)]).await?;
        Ok(rows.pop().unwrap_or_default())
    }

    /// Runs one statement and returns how many rows it changed.
    pub async fn execute(&mut self, sql: &str, args: &[Arg]) -> Result<u64, Error> {
        let (front, mut statements) = self.front(&[(sql, args)]).await?;
        let statement = statements.remove(0);
        let params = params(args);
        let client = &self.client;
        let carried = carry(client, front, async {
            client.execute(&statement, &params).await.map_err(error)
        })
        .await;
        self.carried(carried)
    }

    /// Runs `list` in order, pipelined (one round trip), and returns each
    /// one's rows; the first error, in order, fails them all.
    pub async fn query_each(&mut self, list: &[(&str, &[Arg])]) -> Result<Vec<Vec<PgRow>>, Error> {
        let (front, statements) = self.front(list).await?;
        let params: Vec<_> = list.iter().map(|(_, args)| params(args)).collect();
        let client = &self.client;
        let carried = carry(client, front, async {
            join_all(
                statements
                    .iter()
                    .zip(&params)
                    .map(|(statement, params)| client.query(statement, params)),
            )
            .await
            .into_iter()
            .collect::<Result<Vec<_>, _>>()
            .map_err(error)
        })
        .await;
        self.carried(carried)
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
        let (front, statements) = self.front(&list).await?;
        let params: Vec<_> = writes.iter().map(|write| params(&write.args)).collect();
        let client = &self.client;
        let carried = carry(client, front, async {
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
        })
        .await;
        self.carried(carried)
    }
}

/// How a message with something in front of it ended.
enum Carried<T> {
    /// Answered: the rows of the read put in front (when one was), and
    /// what the message itself gave.
    Answered(Option<Vec<PgRow>>, T),
    Failed(Error),
    /// Not answered within `BEGIN`'s budget.
    Cut,
}

/// Sends `BEGIN` and the read put in front (when there are), then what
/// `main` sends, all pipelined (each sent before the first answer comes
/// back, run in that order); the first error, in order, fails them all.
/// With `BEGIN`, the whole is cut at its budget.
async fn carry<T>(
    client: &Client,
    front: Front,
    main: impl Future<Output = Result<T, Error>>,
) -> Carried<T> {
    let Front { begin, lead } = front;
    let lead_params = lead.as_ref().map(|(_, args)| params(args));
    let all = async {
        let begun = async {
            match begin {
                Some(_) => client.batch_execute("BEGIN").await.map_err(error),
                None => Ok(()),
            }
        };
        let led = async {
            match (&lead, &lead_params) {
                (Some((statement, _)), Some(params)) => client
                    .query(statement, params)
                    .await
                    .map(Some)
                    .map_err(error),
                _ => Ok(None),
            }
        };
        // Polled in this order: each is sent on its first poll.
        let (begun, led, value) = futures_util::join!(begun, led, main);
        begun?;
        Ok::<_, Error>((led?, value?))
    };
    let outcome = match begin {
        Some(budget) => match tokio::time::timeout(budget, all).await {
            Ok(outcome) => outcome,
            Err(_) => return Carried::Cut,
        },
        None => all.await,
    };
    match outcome {
        Ok((led, value)) => Carried::Answered(led, value),
        Err(error) => Carried::Failed(error),
    }
}

/// The error of a message cut at `BEGIN`'s budget, and of any use of its
/// connection after: the pool's own timeout, an outage.
fn cut() -> Error {
    Error::from(sqlx::Error::PoolTimedOut)
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
