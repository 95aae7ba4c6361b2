//! The service layer: players, the ledger, emissions and blocks, and plays.
//! Every change is a job run by the single [`Writer`]; reads go straight to
//! the pool. HTTP handlers and operator commands both call this module.

use crate::batch;
use crate::blocks::BlockCache;
use crate::error::Error;
use crate::protect::RateLimits;
use crate::store::{Conn, Db};
use crate::trail::{self, Actor};
use crate::writer::Writer;
use futures_util::future::BoxFuture;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

mod account;
mod blocks;
mod confirmations;
mod console;
mod dashboard;
mod devices;
mod documents;
mod email_change;
mod emissions;
mod free;
mod games;
mod hashing;
mod iban;
mod log;
mod money;
mod notify;
mod passwords;
mod payments;
mod players;
mod plays;
mod protection;
mod publish;
mod purchase;
mod reauth;
mod restore;
mod secrets;
mod session_cache;
mod sessions;
mod settler;
mod sheets;
mod staff;
mod staff_login;
mod staff_password;
mod statement;
mod status;
mod suspension;
mod withdrawals;

pub use crate::clock::{Clock, ManualClock, SystemClock, rfc3339};
pub use crate::model::{DEPOSITS_ACCOUNT, IdempotencyKey, PRIZES_ACCOUNT, Player, STAKES_ACCOUNT};
pub use account::{AccountView, BanImport, Closed, Opening};
pub use confirmations::Confirmed;
pub use console::{PlayerListing, Recheck};
pub use dashboard::Dashboard;
pub use devices::{SessionOrigin, SessionView};
pub use documents::{DocumentView, Review, StaffDocumentView};
pub use email_change::{CHANGES_PER_ADDRESS, CHANGES_PER_PLAYER, UNDO_TTL_MS};
pub use emissions::{BlockView, EmissionView};
pub use free::{FreeTry, free_level, free_try};
pub use games::{GameName, GameRef, GameView, StakeView};
pub use money::{MAX_DEMO_DEPOSIT_CENTS, MAX_DEPOSIT_CENTS, Me};
pub use payments::{DepositView, Payments, sign as sign_webhook};
pub use players::Registration;
pub use plays::{History, PlayView, RevealedScenario, UnitRef};
pub use publish::{LogIndex, PublishedLog, PublishedTile};
pub use purchase::{Bought, Purchase};
pub use reauth::{PasswordConfirmed, PasswordOf, WRONG_PASSWORDS_PER_SESSION};
pub use session_cache::{Buyer, SessionCache};
/// The webhook's headers.
pub mod payments_headers {
    pub use super::payments::{SIGNATURE_HEADER as SIGNATURE, TIMESTAMP_HEADER as TIMESTAMP};
}
pub use hashing::PasswordCost;
pub use staff::{StaffListing, StaffMember, TOTP_PURPOSE};
pub use staff_login::PasswordChecked;
pub use statement::{Movement, Statement};
pub use status::Status;
pub use suspension::SuspensionView;
pub use withdrawals::{Settlement, WithdrawalView};

/// Service settings, parsed once at start.
#[derive(Debug, Clone)]
pub struct Settings {
    /// Throttles on logins, registrations and purchases.
    pub rate_limits: RateLimits,
    /// A play its player never finishes is settled after this many seconds.
    pub auto_settle_after_s: i64,
    /// A session unused for this long ends.
    pub session_idle_s: i64,
    /// A session ends this long after login, used or not.
    pub session_max_s: i64,
    /// Which open block of a stake this server sells from first: the n-th,
    /// by id (falling back to the first). Servers sharing one database each
    /// take a different offset, so they do not queue on one block's row.
    pub block_offset: i64,
    /// The most jobs the writer commits in one transaction; 1 commits each
    /// job alone (the baseline that group commit is measured against).
    pub writer_max_batch: usize,
    /// Faults injected into the writer, for tests (none by default).
    pub writer_faults: crate::writer::Faults,
    /// How much work a password's hash takes: the standard cost but in the
    /// tests' own services.
    pub password_cost: PasswordCost,
    /// The longest a request waits whatever happens behind it (a COMMIT in
    /// doubt, a failover, a batch run again request by request): then it is
    /// answered `unavailable`, to be retried under its idempotency key.
    pub outage_budget: std::time::Duration,
    /// A provisional account with an identity may stake this many days
    /// unverified (fixed for each account when it opens).
    pub provisional_days: i64,
    /// The payment provider: its name, its page, the webhook's secret.
    pub payments: Payments,
    /// Four eyes on money: who may approve a withdrawal, and how much one
    /// operator may credit.
    pub four_eyes: FourEyes,
    /// Where mail goes (SMTP or the outbox); none: no mail is sent (a
    /// service opened by a one-off command).
    pub mail: Option<crate::mail::Mailer>,
    /// The largest identity document a player may send, in bytes.
    pub max_document_bytes: usize,
    /// The witnesses whose cosignatures of the log's checkpoints the site
    /// takes and publishes (`tresor serve --witness`; docs/AUDIT.md).
    pub witnesses: Vec<crate::logcheck::WitnessKey>,
    /// The games on sale (`tresor serve --games`), island first, and the
    /// definitions emissions pinned (docs/GAMES.md).
    pub games: Arc<crate::games::Catalog>,
}

/// Four eyes on money out (`docs/CONSOLE.md`): the approver of a
/// withdrawal is neither an operator who credited the account nor the one
/// who verified it, unless the installation has a single operator; and
/// each operator's credits are capped, per credit and per 24 hours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FourEyes {
    /// The installation has one operator (`--single-operator`): the
    /// approver may be who credited or verified (still in the trail).
    pub single_operator: bool,
    /// The largest single credit (`--credit-max-cents`).
    pub credit_max_cents: i64,
    /// What one operator may credit in 24 hours, to all players together
    /// (`--credit-max-per-day-cents`).
    pub credit_max_per_day_cents: i64,
}

impl Default for FourEyes {
    fn default() -> Self {
        FourEyes {
            single_operator: false,
            // 10,000 € at once, 50,000 € a day.
            credit_max_cents: 1_000_000,
            credit_max_per_day_cents: 5_000_000,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            rate_limits: RateLimits::default(),
            auto_settle_after_s: 24 * 3600,
            session_idle_s: 30 * 60,
            session_max_s: 12 * 3600,
            block_offset: 0,
            writer_max_batch: crate::writer::DEFAULT_MAX_BATCH,
            writer_faults: crate::writer::Faults::default(),
            password_cost: PasswordCost::Standard,
            outage_budget: crate::writer::DEFAULT_OUTAGE_BUDGET,
            provisional_days: crate::account::DEFAULT_PROVISIONAL_DAYS,
            payments: Payments::default(),
            four_eyes: FourEyes::default(),
            mail: None,
            max_document_bytes: crate::account::documents::DEFAULT_MAX_DOCUMENT_BYTES,
            witnesses: Vec::new(),
            games: Arc::default(),
        }
    }
}

/// The service: cheap to clone (one reference count: every layer of the
/// HTTP edge clones the state it holds on each request, issue 46), shared
/// by every request.
#[derive(Clone)]
pub struct Service(Arc<ServiceState>);

impl std::ops::Deref for Service {
    type Target = ServiceState;

    fn deref(&self) -> &ServiceState {
        &self.0
    }
}

/// What the service holds ([`Service`] derefs to it).
pub struct ServiceState {
    pub db: Db,
    pub writer: Writer,
    pub clock: Arc<dyn Clock>,
    pub settings: Arc<Settings>,
    blocks: Arc<BlockCache>,
    /// Where the settler of abandoned plays walks from (`settler.rs`).
    settler: Arc<settler::Mark>,
    /// Sessions a purchase is resolved from without a read (`session_cache.rs`).
    sessions: Arc<SessionCache>,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("backend", &self.db.backend)
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for ServiceState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServiceState")
            .field("backend", &self.db.backend)
            .finish_non_exhaustive()
    }
}

/// Parses an RFC 3339 time into milliseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Result<i64, Error> {
    let time = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .map_err(|_| Error::Validation(format!("not an RFC 3339 time: {text}")))?;
    Ok((time.unix_timestamp_nanos() / 1_000_000) as i64)
}

/// 32 bytes from the operating system's CSPRNG.
pub fn os_random_32() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random generator works");
    bytes
}

pub fn sha256_hex(data: &[u8]) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(data))
}

impl Service {
    pub fn new(db: Db, clock: Arc<dyn Clock>, mut settings: Settings) -> Service {
        // Waiting for a connection counts against the budget too.
        let db = db.with_outage_budget(settings.outage_budget);
        // Without a configured secret no provider can sign a webhook: only
        // the demo's sandbox, which asks this server, can.
        settings
            .payments
            .webhook_secret
            .get_or_insert_with(|| os_random_32().to_vec());
        let blocks = Arc::new(BlockCache::default());
        let context = Arc::new(batch::Context {
            blocks: blocks.clone(),
            games: settings.games.clone(),
            block_offset: settings.block_offset,
            secrets_key: db.secrets_key.clone(),
        });
        let writer = Writer::start_with(
            db.clone(),
            settings.writer_max_batch,
            context,
            settings.writer_faults.clone(),
        )
        .with_outage_budget(settings.outage_budget);
        Service(Arc::new(ServiceState {
            db,
            writer,
            clock,
            settings: Arc::new(settings),
            blocks,
            settler: Arc::default(),
            sessions: Arc::default(),
        }))
    }

    pub fn now_ms(&self) -> i64 {
        self.clock.now_ms()
    }

    /// Runs a writer job (see [`Writer::run`]).
    pub async fn write<T, F>(&self, job: F) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn) -> BoxFuture<'c, Result<T, Error>> + Send + Sync + 'static,
    {
        self.writer.run(job).await
    }

    /// Runs `change` (given the time) in a writer job and records it in the
    /// trail in the same job: `actor`'s `action`, with `request` and the
    /// result `change` gives beside its value.
    pub(crate) async fn write_recorded<T, F>(
        &self,
        actor: Actor,
        action: &'static str,
        request: Value,
        change: F,
    ) -> Result<T, Error>
    where
        T: Send + 'static,
        F: for<'c> Fn(&'c mut Conn, i64) -> BoxFuture<'c, Result<(T, Value), Error>>
            + Send
            + Sync
            + 'static,
    {
        let now_ms = self.now_ms();
        let change = Arc::new(change);
        self.write(move |conn| {
            let (actor, request, change) = (actor.clone(), request.clone(), change.clone());
            Box::pin(async move {
                let (value, result) = change(&mut *conn, now_ms).await?;
                trail::append(conn, now_ms, &actor, action, request, result).await?;
                Ok(value)
            })
        })
        .await
    }
}
