//! The one error type of the service layer: business refusals the caller must
//! handle, and failures of the machinery underneath.

use crate::clock::rfc3339;
use crate::model::{InvalidIdempotencyKey, InvalidUsername, LimitKind, euros};
use tresor_game::StakeError;

/// Why a session no longer opens the door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEnd {
    /// Unused for longer than the idle limit.
    Idle { after_s: i64 },
    /// Older than the longest a session may last.
    MaxAge { after_s: i64 },
    /// Ended on the server: logout, a later login, or an exclusion.
    Ended,
    /// Ended after too many wrong current passwords given in it.
    WrongPasswords,
}

impl SessionEnd {
    /// The reason as the API names it.
    pub fn code(self) -> &'static str {
        match self {
            SessionEnd::Idle { .. } => "session_idle",
            SessionEnd::MaxAge { .. } => "session_max_age",
            SessionEnd::Ended => "session_ended",
            SessionEnd::WrongPasswords => "wrong_passwords",
        }
    }
}

impl std::fmt::Display for SessionEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SessionEnd::Idle { after_s } => write!(
                f,
                "your session has expired after {} minutes without activity: please log in again",
                after_s / 60
            ),
            SessionEnd::MaxAge { after_s } => write!(
                f,
                "your session has expired: a session lasts at most {} hours; please log in again",
                after_s / 3600
            ),
            SessionEnd::Ended => f.write_str("this session has ended: please log in again"),
            SessionEnd::WrongPasswords => f.write_str(
                "this session has ended after too many wrong passwords: please log in again",
            ),
        }
    }
}

fn limit_message(
    kind: LimitKind,
    amount_cents: i64,
    limit_cents: i64,
    left_cents: i64,
    resets_at_ms: Option<i64>,
) -> String {
    let kind = kind.as_str();
    let mut message = format!(
        "this {kind} of {} would pass your {kind} limit of {} per 7 days: {} left",
        euros(amount_cents),
        euros(limit_cents),
        euros(left_cents),
    );
    if let Some(t) = resets_at_ms {
        message.push_str(&format!(
            "; more becomes available at {}, when your oldest counted {kind} leaves the 7-day window",
            rfc3339(t)
        ));
    }
    message
}

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
    /// A game the catalogue does not have (issue 36).
    #[error("unknown game {0:?}: GET /api/games lists the games on sale")]
    UnknownGame(String),
    /// A stake a game of the catalogue does not sell (the island's is
    /// `UnknownStake`, as before the catalogue).
    #[error("unknown stake {stake_cents} cents: {game} sells {stakes}")]
    StakeNotSold {
        game: String,
        stake_cents: i64,
        stakes: String,
    },
    #[error("insufficient balance: {balance_cents} cents available, {needed_cents} cents needed")]
    InsufficientFunds {
        balance_cents: i64,
        needed_cents: i64,
    },
    #[error("sales are closed")]
    SalesClosed { opens_at_ms: Option<i64> },
    /// The database was restored from a backup behind what was published,
    /// and the operator has not yet reopened sales (`crate::backup`).
    #[error(
        "sales are closed: the service was restored from a backup and the operator has not reopened them yet"
    )]
    SalesHeldAfterRestore,
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
    #[error("{0}")]
    SessionEnded(SessionEnd),
    /// A deposit or a stake that would pass the player's 7-day cap.
    #[error("{}", limit_message(*.kind, *.amount_cents, *.limit_cents, *.left_cents, *.resets_at_ms))]
    LimitReached {
        kind: LimitKind,
        amount_cents: i64,
        limit_cents: i64,
        left_cents: i64,
        /// When the oldest counted movement leaves the window.
        resets_at_ms: Option<i64>,
    },
    /// The player's own exclusion or the operator's: the message says
    /// neither, since the player may not have asked for it.
    #[error("you are excluded from play until {}: play, deposits and login are refused until then", rfc3339(*.until_ms))]
    Excluded { until_ms: i64 },
    #[error("an exclusion cannot be shortened: it runs until {}, later than {}", rfc3339(*.until_ms), rfc3339(*.asked_until_ms))]
    ExclusionShorter { until_ms: i64, asked_until_ms: i64 },
    #[error("too many attempts: try again in {retry_after_s} seconds")]
    RateLimited { retry_after_s: u64 },
    /// A witness's cosignature of a checkpoint whose time is not after the
    /// one kept of that witness and checkpoint: an older line sent again
    /// never replaces a newer one (`POST /log/<writer>/cosignature`).
    #[error(
        "this cosignature (time {time}) is not newer than the one kept of this witness and checkpoint (time {kept}): nothing changed"
    )]
    CosignatureNotNewer { time: u64, kept: u64 },
    /// The current password asked before a change is wrong (counted: the
    /// session ends after a few).
    #[error("current_password: this is not your password")]
    WrongPassword,
    /// Too many address changes lately, by this player or to this address:
    /// nothing changed, no mail sent.
    #[error("{message}")]
    MailQuota { message: String, retry_after_s: u64 },
    /// Outside demo mode an account is opened with an identity.
    #[error("an identity is required to open an account: use /api/account/open")]
    IdentityRequired,
    #[error("you must be of age (18) to open an account")]
    Minor,
    #[error(
        "this person is on the national gambling-ban list: the account cannot be opened or used"
    )]
    Banned,
    /// A provisional account past its period: provisional since it was
    /// opened (`since_ms`), staking until `until_ms`.
    #[error("your account has been provisional since {}, and its provisional period ended at {}: staking waits until the operator has checked your identity and bank account", rfc3339(*.since_ms), rfc3339(*.until_ms))]
    VerificationRequired { since_ms: i64, until_ms: i64 },
    #[error(
        "only a verified account may withdraw: the operator has not checked your identity and bank account yet"
    )]
    NotVerified,
    #[error("the rules have changed (version {version}): accept them before your next purchase")]
    RulesNotAccepted { version: i64 },
    #[error("this account is closed")]
    AccountClosed,
    /// An identity document refused as sent (`code`: `document_empty`,
    /// `document_too_large`, `document_type`, `document_kind`,
    /// `document_already_sent`), or a review of one that is not pending (`document_decided`).
    #[error("{message}")]
    Document { code: &'static str, message: String },
    /// The account is verified only once its identity document and its
    /// IBAN's proof are both verified.
    #[error(
        "the account's documents are not all verified: its identity document and the proof of its IBAN are verified first"
    )]
    DocumentsRequired,
    /// A link sent by mail (password reset, address confirmation) that is
    /// unknown, already used or expired: which of them is not said.
    #[error(
        "this link is no longer valid: it was used already, has expired or was mistyped; ask for a new one"
    )]
    InvalidToken,
    /// Suspended by the operator: the reason is the staff's only.
    #[error(
        "this account is suspended: play, deposits and changes to the account (its e-mail address, IBAN and documents) are refused, and a withdrawal waits until the suspension is lifted; the operator's support can tell you more"
    )]
    AccountSuspended,
    /// One account per person: the identity is that of an existing account.
    #[error(
        "this person already has an account here (one account per person): log in to it, or ask the operator"
    )]
    PersonHasAccount,
    /// An account opened before one account per person was held, whose
    /// person had an account already: money in and stakes go to the first.
    #[error(
        "this person has another account, opened first (one account per person): this one may withdraw or close, but takes no money in and no stake"
    )]
    DuplicateAccount,
    /// The IBAN the operator reviewed is no longer the account's.
    #[error("the IBAN changed since it was reviewed: it is now {current}, given at {}; review it again", rfc3339(*.set_at_ms))]
    IbanChanged { current: String, set_at_ms: i64 },
    /// Four eyes on money out: the approver of a withdrawal is neither who
    /// credited the account nor who verified it.
    #[error(
        "{actor} {what} this account: another operator approves its withdrawals (an installation with a single operator says so with --single-operator, TRESOR_SINGLE_OPERATOR)"
    )]
    FourEyes { actor: String, what: &'static str },
    /// A credit past an operator's limit (per credit, or per 24 hours).
    #[error("{message}")]
    CreditLimit {
        message: String,
        setting: &'static str,
    },
    #[error("the webhook's signature does not match")]
    InvalidSignature,
    #[error("the webhook's timestamp is outside the 5-minute window")]
    StaleSignature,
    #[error("this withdrawal is {state}, no longer pending")]
    WithdrawalNotPending { state: String },
    /// The console's second factor: a code that is not the account's now
    /// (wrong, too old) or was already used.
    #[error("this code is wrong, too old or already used: give the code your app shows now")]
    InvalidCode,
    /// A console account whose role lacks the permission.
    #[error("your role does not have the permission {permission}")]
    Forbidden { permission: &'static str },
    #[error("service unavailable: {0}")]
    Unavailable(&'static str),
    /// A writer's log that does not hold against its last signed checkpoint
    /// (`trail::log::check_signed`): rewritten by someone without the key.
    #[error("{0}")]
    LogDoesNotHold(String),
    /// The database has no room left (SQLite's `SQLITE_FULL`, PostgreSQL's
    /// `53100 disk_full`, or the OS's `ENOSPC`): the request's transaction
    /// was rolled back whole.
    #[error("the server's storage is full: nothing of this request was saved; try again later")]
    StorageFull,
    /// `/readyz`: this server should not be sent players now.
    #[error("not ready: {0}")]
    NotReady(&'static str),
    #[error("database error")]
    Database(sqlx::Error),
    /// A block secret that cannot be opened: no key, a wrong key, a sealed
    /// secret changed or moved.
    #[error("{0}")]
    Secrets(#[from] crate::seal::SealError),
    /// An emission's pinned definition that does not read back as pinned.
    #[error("{0}")]
    Definition(String),
    /// An error of the writer's own SQLite connection.
    #[error("database error")]
    Sqlite(rusqlite::Error),
}

/// `ENOSPC` on Linux and the BSDs.
const NO_SPACE_LEFT: i32 = 28;

// A full disk is told apart where the error enters the service, so every
// layer above sees one `StorageFull`, whichever driver or statement met it.
impl From<sqlx::Error> for Error {
    fn from(error: sqlx::Error) -> Self {
        let full = match &error {
            // PostgreSQL's disk_full; SQLite's SQLITE_FULL (13) and
            // SQLITE_IOERR_SHMSIZE (4874, see below) through sqlx.
            sqlx::Error::Database(db) => {
                matches!(db.code().as_deref(), Some("53100" | "13" | "4874"))
            }
            sqlx::Error::Io(io) => io.raw_os_error() == Some(NO_SPACE_LEFT),
            _ => false,
        };
        if full {
            tracing::warn!(%error, "the database is full");
            return Error::StorageFull;
        }
        Error::Database(error)
    }
}

impl From<rusqlite::Error> for Error {
    fn from(error: rusqlite::Error) -> Self {
        // A full disk meets a COMMIT in one of two ways: the WAL cannot
        // grow (SQLITE_FULL), or, when the WAL's file already has room (a
        // WAL reused after a checkpoint), the WAL's index, the `-shm` file,
        // cannot grow by its next 32 KiB (SQLITE_IOERR_SHMSIZE, a "disk I/O
        // error" that only a write of one byte per page can give: issue 42,
        // finding 12). Neither is an outage.
        if let rusqlite::Error::SqliteFailure(failure, _) = &error
            && (failure.code == rusqlite::ErrorCode::DiskFull
                || failure.extended_code == rusqlite::ffi::SQLITE_IOERR_SHMSIZE)
        {
            tracing::warn!(%error, "the database is full");
            return Error::StorageFull;
        }
        Error::Sqlite(error)
    }
}

impl Error {
    /// Whether this is the database being unreachable or not accepting
    /// writes (down, restarting, failing over, a standby or demoted primary)
    /// rather than a fault of the request: the request changed nothing and
    /// may be tried again once a primary answers.
    pub fn is_outage(&self) -> bool {
        let error = match self {
            Error::Database(error) => error,
            // The SQLite file cannot be opened or read (a lost mount, the file
            // moved away): nothing was changed, and it may come back.
            Error::Sqlite(rusqlite::Error::SqliteFailure(failure, _)) => {
                return matches!(
                    failure.code,
                    rusqlite::ErrorCode::CannotOpen | rusqlite::ErrorCode::SystemIoFailure
                );
            }
            _ => return false,
        };
        match error {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            // Connection exceptions (08…), a read-only transaction (25006: a
            // standby), operator intervention (57P01 shutdown, 57P02 crash,
            // 57P03 starting up), too many connections (53300).
            sqlx::Error::Database(db) => db.code().is_some_and(|code| {
                code.starts_with("08")
                    || code.starts_with("57P")
                    || code == "25006"
                    || code == "53300"
            }),
            _ => false,
        }
    }
}

impl From<InvalidIdempotencyKey> for Error {
    fn from(_: InvalidIdempotencyKey) -> Self {
        Error::InvalidIdempotencyKey
    }
}

impl From<InvalidUsername> for Error {
    fn from(_: InvalidUsername) -> Self {
        Error::Validation(InvalidUsername::RULE.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn a_full_disk_is_storage_full_whichever_driver_meets_it() {
        let enospc = sqlx::Error::Io(std::io::Error::from_raw_os_error(28));
        assert!(matches!(Error::from(enospc), Error::StorageFull));
        let full = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_FULL),
            None,
        );
        assert!(matches!(Error::from(full), Error::StorageFull));
        let index = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_IOERR_SHMSIZE),
            Some("disk I/O error".to_owned()),
        );
        let index = Error::from(index);
        assert!(matches!(index, Error::StorageFull));
        assert!(!index.is_outage());
        let busy = rusqlite::Error::SqliteFailure(
            rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_BUSY),
            None,
        );
        assert!(matches!(Error::from(busy), Error::Sqlite(_)));
    }
}
