//! The one error type of the service layer: business refusals the caller must
//! handle, and failures of the machinery underneath.

use tresor_game::StakeError;

/// Why a request was not carried out. Every refusal changes nothing.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Validation(String),
    #[error("not logged in, or the session has expired")]
    Unauthorized,
    #[error("not found")]
    NotFound,
    #[error("this username is already taken")]
    UsernameTaken,
    #[error("wrong username or password")]
    InvalidCredentials,
    #[error("{0}")]
    UnknownStake(#[from] StakeError),
    #[error("insufficient balance: {balance_cents} cents available, {needed_cents} cents needed")]
    InsufficientFunds {
        balance_cents: i64,
        needed_cents: i64,
    },
    #[error("sales are closed")]
    SalesClosed { opens_at_ms: Option<i64> },
    #[error("no unit of this stake is on sale: every block is sold out, suspended or closed")]
    SoldOut,
    #[error("this game is finished: it has no throw left")]
    PlayFinished,
    #[error("this Idempotency-Key was already used for a different request")]
    IdempotencyConflict,
    #[error(
        "the Idempotency-Key header is missing or malformed (1 to 64 characters among A-Z a-z 0-9 - _ :)"
    )]
    InvalidIdempotencyKey,
    #[error("demo mode is off")]
    DemoOnly,
    #[error("service unavailable: {0}")]
    Unavailable(&'static str),
    #[error("database error")]
    Database(#[from] sqlx::Error),
}
