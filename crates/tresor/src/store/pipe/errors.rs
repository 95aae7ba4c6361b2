//! The errors of the writer's PostgreSQL connection as sqlx's, so that
//! every layer above reads them as before (outages, a full disk, a deadlock
//! retried, a unique index).

use crate::error::Error;
use std::borrow::Cow;

pub(super) fn error(error: tokio_postgres::Error) -> Error {
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
