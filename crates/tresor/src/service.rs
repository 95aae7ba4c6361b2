//! The service layer: players, the ledger, emissions and blocks, and plays.
//! Every change is a job run by the single [`Writer`]; reads go straight to
//! the pool. HTTP handlers and operator commands both call this module.

use crate::batch::{self, BuyCommand, Command, Reply, SettleCommand, ThrowCommand};
use crate::blocks::{BlockCache, BlockData};
use crate::error::{Error, SessionEnd};
use crate::protect::{self, LimitKind, Limits, LimitsView, RateLimits};
use crate::store::{Conn, Db, sql};
use crate::trail::{self, Actor};
use crate::writer::Writer;
use futures_util::future::BoxFuture;
use serde::Serialize;
use serde_json::json;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use tresor_game::{
    BlockSecret, Level, Outcome, Scenario, Stake, UNITS_PER_BLOCK, generate_scenario,
};

/// The ledger's system accounts (created by the first migration).
pub const DEPOSITS_ACCOUNT: i64 = 1;
pub const STAKES_ACCOUNT: i64 = 2;
pub const PRIZES_ACCOUNT: i64 = 3;

/// The largest single deposit, a guard against typing mistakes.
pub const MAX_DEPOSIT_CENTS: i64 = 100_000_000;
/// The largest single demo deposit.
pub const MAX_DEMO_DEPOSIT_CENTS: i64 = 100_000;

/// Where time comes from: the system clock in production, a hand-moved clock
/// in tests.
pub trait Clock: Send + Sync + fmt::Debug {
    /// Milliseconds since the Unix epoch.
    fn now_ms(&self) -> i64;
}

#[derive(Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("the clock is after 1970");
        since.as_millis() as i64
    }
}

/// A clock that moves only when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(now_ms: i64) -> Self {
        ManualClock(AtomicI64::new(now_ms))
    }

    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

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
        }
    }
}

/// The service: cheap to clone, shared by every request.
#[derive(Clone)]
pub struct Service {
    pub db: Db,
    pub writer: Writer,
    pub clock: Arc<dyn Clock>,
    pub settings: Arc<Settings>,
    blocks: Arc<BlockCache>,
}

impl fmt::Debug for Service {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Service")
            .field("backend", &self.db.backend)
            .finish_non_exhaustive()
    }
}

/// A logged-in player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    pub id: i64,
    pub username: String,
    pub account_id: i64,
}

/// A player's view of themselves.
#[derive(Debug, Clone, Serialize)]
pub struct Me {
    pub username: String,
    pub balance_cents: i64,
    pub demo: bool,
    pub current_play_id: Option<i64>,
    /// The 7-day caps on deposits and stakes: in force, used, left, pending.
    pub limits: LimitsView,
    /// The end of an exclusion in force (RFC 3339), if any.
    pub excluded_until: Option<String>,
}

/// The unit a play bought: emission, block and index in the block.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct UnitRef {
    pub emission: i64,
    pub block: i64,
    pub index: i64,
}

/// A play as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct PlayView {
    pub id: i64,
    pub stake_cents: i64,
    pub unit: UnitRef,
    pub created_at: String,
    pub state: &'static str,
    pub outcome: Outcome,
    pub throws_left: i64,
    pub finished_at: Option<String>,
    pub scenario: RevealedScenario,
}

/// A scenario with only its first `throws` throws revealed.
#[derive(Debug, Clone)]
pub struct RevealedScenario {
    pub scenario: Scenario,
    pub throws: usize,
}

impl Serialize for RevealedScenario {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.scenario.view(self.throws).serialize(serializer)
    }
}

/// One page of a player's history, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct History {
    pub plays: Vec<PlayView>,
    pub next_cursor: Option<String>,
}

/// A block as the public sees it: the secret only once it is published.
#[derive(Debug, Clone, Serialize)]
pub struct BlockView {
    pub id: i64,
    pub emission: i64,
    pub stake_cents: i64,
    pub state: String,
    pub commitment: String,
    pub units_sold: i64,
    pub units_per_block: u32,
    pub secret: Option<String>,
}

/// An emission with its blocks, for the operator.
#[derive(Debug, Clone, Serialize)]
pub struct EmissionView {
    pub id: i64,
    pub name: String,
    pub state: String,
    pub created_at: String,
    pub blocks: Vec<BlockView>,
}

/// The sales window and site message (Article 1).
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    pub sales_open: bool,
    pub opens_at: Option<String>,
    pub message: Option<String>,
    pub demo: bool,
    pub stakes: Vec<i64>,
}

/// A purchase's validated request.
#[derive(Debug, Clone)]
pub struct Purchase {
    pub stake: Stake,
    pub idempotency_key: IdempotencyKey,
}

/// An `Idempotency-Key`: 1 to 64 characters among `A-Z a-z 0-9 - _ :`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self, Error> {
        let ok = (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
        if ok {
            Ok(IdempotencyKey(text.to_owned()))
        } else {
            Err(Error::InvalidIdempotencyKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A registration request, checked.
#[derive(Debug, Clone)]
pub struct Registration {
    pub username: String,
    pub password: String,
    /// The 7-day caps, chosen before the first deposit and the first play.
    pub limits: Limits,
}

impl Registration {
    pub fn parse(
        username: &str,
        password: &str,
        adult: bool,
        accept_rules: bool,
    ) -> Result<Self, Error> {
        let username = username.trim();
        let username_ok = (3..=32).contains(&username.chars().count())
            && username
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !username_ok {
            return Err(Error::Validation(
                "username: 3 to 32 letters, digits, '.', '-' or '_'".to_owned(),
            ));
        }
        if password.chars().count() < 10 {
            return Err(Error::Validation(
                "password: at least 10 characters".to_owned(),
            ));
        }
        if password.len() > 1024 {
            return Err(Error::Validation("password: at most 1024 bytes".to_owned()));
        }
        if !adult {
            return Err(Error::Validation(
                "adult: you must declare that you are of age to play".to_owned(),
            ));
        }
        if !accept_rules {
            return Err(Error::Validation(
                "accept_rules: you must accept the rules of the game".to_owned(),
            ));
        }
        Ok(Registration {
            username: username.to_owned(),
            password: password.to_owned(),
            limits: Limits::default(),
        })
    }

    /// The same registration with the caps the player chose.
    pub fn with_limits(self, limits: Limits) -> Self {
        Registration { limits, ..self }
    }
}

/// Formats milliseconds since the epoch as RFC 3339 UTC.
pub fn rfc3339(ms: i64) -> String {
    let time = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let format = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    time.format(&format).unwrap_or_default()
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

// ---------------------------------------------------------------------------
// Ledger primitives, run inside writer jobs.

/// Moves `amount_cents` from `debit` to `credit`, refusing to take a player
/// account below zero. Returns the two accounts' new balances (debit, credit).
async fn transfer(
    conn: &mut Conn,
    debit: i64,
    credit: i64,
    amount_cents: i64,
    kind: &str,
    play_id: Option<i64>,
    now_ms: i64,
) -> Result<(i64, i64), Error> {
    assert!(amount_cents > 0, "a transfer moves a positive amount");
    let debited: Option<i64> = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents - $1 \
         WHERE id = $2 AND (kind <> 'player' OR balance_cents >= $1) RETURNING balance_cents",
    )
    .bind(amount_cents)
    .bind(debit)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(debit_balance_cents) = debited else {
        let balance_cents: i64 =
            sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
                .bind(debit)
                .fetch_one(&mut *conn)
                .await?;
        return Err(Error::InsufficientFunds {
            balance_cents,
            needed_cents: amount_cents,
        });
    };
    let credit_balance_cents: i64 = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2 RETURNING balance_cents",
    )
    .bind(amount_cents)
    .bind(credit)
    .fetch_one(&mut *conn)
    .await?;
    sql::query(
        "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(debit)
    .bind(credit)
    .bind(amount_cents)
    .bind(kind)
    .bind(play_id)
    .bind(now_ms)
    .execute(&mut *conn)
    .await?;
    Ok((debit_balance_cents, credit_balance_cents))
}

async fn account_balance(conn: &mut Conn, account_id: i64) -> Result<i64, Error> {
    sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_one(&mut *conn)
        .await
}

async fn setting(conn: &mut Conn, key: &str) -> Result<Option<String>, Error> {
    sql::query_scalar("SELECT value FROM settings WHERE key = $1")
        .bind(key)
        .fetch_optional(conn)
        .await
}

async fn put_setting(conn: &mut Conn, key: &str, value: Option<&str>) -> Result<(), Error> {
    sql::query("DELETE FROM settings WHERE key = $1")
        .bind(key)
        .execute(&mut *conn)
        .await?;
    if let Some(value) = value {
        sql::query("INSERT INTO settings (key, value) VALUES ($1, $2)")
            .bind(key)
            .bind(value)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

const PLAY_COLUMNS: &str = "p.id, p.player_id, p.block_id, b.emission_id, p.unit_index, p.stake_cents, p.level, \
     p.prize_cents, p.throws_made, p.state, p.created_at_ms, p.finished_at_ms";

#[derive(Debug, Clone)]
struct PlayRow {
    id: i64,
    block_id: i64,
    emission_id: i64,
    unit_index: i64,
    stake_cents: i64,
    level: i64,
    prize_cents: i64,
    throws_made: i64,
    state: String,
    created_at_ms: i64,
    finished_at_ms: Option<i64>,
}

impl PlayRow {
    fn from_row(row: &sql::Row) -> Result<Self, Error> {
        Ok(PlayRow {
            id: row.try_get("id")?,
            block_id: row.try_get("block_id")?,
            emission_id: row.try_get("emission_id")?,
            unit_index: row.try_get("unit_index")?,
            stake_cents: row.try_get("stake_cents")?,
            level: row.try_get("level")?,
            prize_cents: row.try_get("prize_cents")?,
            throws_made: row.try_get("throws_made")?,
            state: row.try_get("state")?,
            created_at_ms: row.try_get("created_at_ms")?,
            finished_at_ms: row.try_get("finished_at_ms")?,
        })
    }
}

/// What a purchase hands back: the play, and whether it was an earlier
/// purchase replayed by its idempotency key.
#[derive(Debug, Clone)]
pub struct Bought {
    pub play_id: i64,
    pub replayed: bool,
    /// The play as the purchase wrote it (none for a replay).
    fresh: Option<batch::PlayState>,
}

impl PlayRow {
    /// A play as the writer's batch left it.
    fn from_state(play: &batch::PlayState) -> PlayRow {
        PlayRow {
            id: play.id,
            block_id: play.block_id,
            emission_id: play.emission_id,
            unit_index: play.unit_index,
            stake_cents: play.stake_cents,
            level: play.level,
            prize_cents: play.prize_cents,
            throws_made: play.throws_made,
            state: if play.finished {
                "finished"
            } else {
                "in_progress"
            }
            .to_owned(),
            created_at_ms: play.created_at_ms,
            finished_at_ms: play.finished_at_ms,
        }
    }
}

impl Service {
    pub fn new(db: Db, clock: Arc<dyn Clock>, settings: Settings) -> Service {
        let blocks = Arc::new(BlockCache::default());
        let context = Arc::new(batch::Context {
            blocks: blocks.clone(),
            block_offset: settings.block_offset,
        });
        let writer = Writer::start(db.clone(), settings.writer_max_batch, context);
        Service {
            db,
            writer,
            clock,
            settings: Arc::new(settings),
            blocks,
        }
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

    async fn block_data(&self, block_id: i64) -> Result<Arc<BlockData>, Error> {
        if let Some(data) = self.blocks.get(block_id) {
            return Ok(data);
        }
        let secret: Vec<u8> = sql::query_scalar("SELECT secret FROM blocks WHERE id = $1")
            .bind(block_id)
            .fetch_one(&mut *self.db.conn().await?)
            .await?;
        let secret =
            BlockSecret::from_bytes(secret.try_into().expect("a stored secret is 32 bytes"));
        let cache = self.blocks.clone();
        Ok(
            tokio::task::spawn_blocking(move || cache.insert(block_id, &secret))
                .await
                .expect("shuffle task"),
        )
    }

    /// Computes the outcomes of every block on sale, so that no purchase waits
    /// for a shuffle.
    pub async fn warm_block_cache(&self) -> Result<(), Error> {
        let ids: Vec<i64> =
            sql::query_scalar("SELECT id FROM blocks WHERE state IN ('open', 'suspended')")
                .fetch_all(&mut *self.db.conn().await?)
                .await?;
        for id in ids {
            self.block_data(id).await?;
        }
        Ok(())
    }

    // -- Players --------------------------------------------------------------

    /// Registers a player; returns the new player.
    pub async fn register(&self, registration: Registration) -> Result<Player, Error> {
        let password = registration.password.clone();
        let password_hash = with_hashing_permit(move || hash_password(&password)).await?;
        let username = registration.username.clone();
        let limits = registration.limits;
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let username = username.clone();
            let password_hash = password_hash.clone();
            Box::pin(async move {
                let key = username.to_lowercase();
                let taken: Option<i64> =
                    sql::query_scalar("SELECT id FROM players WHERE username_key = $1")
                        .bind(&key)
                        .fetch_optional(&mut *conn)
                        .await?;
                if taken.is_some() {
                    return Err(Error::UsernameTaken);
                }
                let account_id: i64 = sql::query_scalar(
                    "INSERT INTO accounts (kind, balance_cents) VALUES ('player', 0) RETURNING id",
                )
                .fetch_one(&mut *conn)
                .await?;
                let id: i64 = sql::query_scalar(
                    "INSERT INTO players (username, username_key, password_hash, account_id, \
                     adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $5, $5) RETURNING id",
                )
                .bind(&username)
                .bind(&key)
                .bind(&password_hash)
                .bind(account_id)
                .bind(now_ms)
                .fetch_one(&mut *conn)
                .await?;
                protect::insert_limits(conn, id, limits, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(id, &username),
                    "register",
                    json!({
                        "username": username,
                        "adult": true,
                        "accept_rules": true,
                        "deposit_limit_cents": limits.deposit.cents(),
                        "stake_limit_cents": limits.stake.cents(),
                    }),
                    json!({"player_id": id, "account_id": account_id}),
                )
                .await?;
                Ok(Player {
                    id,
                    username,
                    account_id,
                })
            })
        })
        .await
    }

    /// Checks a username and password.
    pub async fn authenticate(&self, username: &str, password: &str) -> Result<Player, Error> {
        let row = sql::query(
            "SELECT id, username, account_id, password_hash FROM players WHERE username_key = $1",
        )
        .bind(username.trim().to_lowercase())
        .fetch_optional(&mut *self.db.conn().await?)
        .await?;
        // Hash even for an unknown name, so that timing does not tell which
        // usernames exist.
        let (player, hash) = match row {
            Some(row) => (
                Some(Player {
                    id: row.try_get("id")?,
                    username: row.try_get("username")?,
                    account_id: row.try_get("account_id")?,
                }),
                row.try_get::<String, _>("password_hash")?,
            ),
            None => (None, DUMMY_HASH.to_owned()),
        };
        if let Some(player) = &player {
            self.refuse_if_login_locked(player).await?;
        }
        let password = password.to_owned();
        let ok = with_hashing_permit(move || verify_password(&password, &hash)).await;
        match player {
            Some(player) if ok => Ok(player),
            player => {
                self.record_failed_login(player).await?;
                Err(Error::InvalidCredentials)
            }
        }
    }

    /// Refuses a login to an account that had too many failed logins in the
    /// last hour, before its password is even checked. Counted from the trail
    /// (a partial index keeps it cheap), so the count survives a restart and
    /// holds across several servers on one database.
    async fn refuse_if_login_locked(&self, player: &Player) -> Result<(), Error> {
        let most = i64::from(self.settings.rate_limits.failed_logins_per_hour_per_account);
        let now_ms = self.now_ms();
        let (failures, oldest_ms): (i64, Option<i64>) = sql::query_as(
            "SELECT COUNT(*), MIN(at_ms) FROM trail \
             WHERE action = 'login_failed' AND actor = $1 AND at_ms > $2",
        )
        .bind(Actor::player(player.id, &player.username).label())
        .bind(now_ms - 3600 * 1000)
        .fetch_one(&mut *self.db.conn().await?)
        .await?;
        match oldest_ms {
            Some(oldest_ms) if failures >= most => Err(Error::RateLimited {
                retry_after_s: ((oldest_ms + 3600 * 1000 - now_ms).max(1000) as u64).div_ceil(1000),
            }),
            _ => Ok(()),
        }
    }

    /// Puts a refused login into the trail. The username typed is kept only
    /// when it names a player: an unknown "username" is often a password typed
    /// in the wrong field, which must not be archived.
    async fn record_failed_login(&self, player: Option<Player>) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let player = player.clone();
            Box::pin(async move {
                let actor = match &player {
                    Some(player) => Actor::player(player.id, &player.username),
                    None => Actor::Anonymous,
                };
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "login_failed",
                    json!({"username_known": player.is_some()}),
                    json!({"error": "invalid_credentials"}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    pub async fn player_by_username(&self, username: &str) -> Result<Player, Error> {
        let row =
            sql::query("SELECT id, username, account_id FROM players WHERE username_key = $1")
                .bind(username.trim().to_lowercase())
                .fetch_optional(&mut *self.db.conn().await?)
                .await?
                .ok_or(Error::NotFound)?;
        Ok(Player {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            account_id: row.try_get("account_id")?,
        })
    }

    // -- Sessions -------------------------------------------------------------

    /// Opens a session and returns its token (only its hash is stored).
    pub async fn open_session(&self, player_id: i64) -> Result<String, Error> {
        let token = hex::encode(os_random_32());
        let token_hash = sha256_hex(token.as_bytes());
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token_hash = token_hash.clone();
            Box::pin(async move {
                // Checked here, in the job that opens the session, so that a
                // login racing an exclusion cannot slip through.
                protect::refuse_if_excluded(conn, player_id, now_ms).await?;
                sql::query(
                    "INSERT INTO sessions (token_hash, player_id, created_at_ms, last_seen_at_ms) VALUES ($1, $2, $3, $3)",
                )
                .bind(token_hash)
                .bind(player_id)
                .bind(now_ms)
                .execute(&mut *conn)
                .await?;
                // The trail records that a session opened, never its token.
                let username: String =
                    sql::query_scalar("SELECT username FROM players WHERE id = $1")
                        .bind(player_id)
                        .fetch_one(&mut *conn)
                        .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(player_id, &username),
                    "login",
                    json!({"username": username}),
                    json!({"session": "opened"}),
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(token)
    }

    /// The player of a live session; refreshes its idle timer now and then.
    pub async fn session_player(&self, token: &str) -> Result<Player, Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let mut conn = self.db.conn().await?;
        let row = sql::query(
            "SELECT s.created_at_ms, s.last_seen_at_ms, s.ended_at_ms, p.id, p.username, p.account_id \
             FROM sessions s JOIN players p ON p.id = s.player_id \
             WHERE s.token_hash = $1",
        )
        .bind(&token_hash)
        .fetch_optional(&mut conn)
        .await?
        .ok_or(Error::Unauthorized)?;
        drop(conn);
        let now_ms = self.now_ms();
        let created_at_ms: i64 = row.try_get("created_at_ms")?;
        let last_seen_at_ms: i64 = row.try_get("last_seen_at_ms")?;
        let ended_at_ms: Option<i64> = row.try_get("ended_at_ms")?;
        // The reason lets the page say why the player must log in again.
        if ended_at_ms.is_some() {
            return Err(Error::SessionEnded(SessionEnd::Ended));
        }
        if now_ms - created_at_ms > self.settings.session_max_s * 1000 {
            return Err(Error::SessionEnded(SessionEnd::MaxAge {
                after_s: self.settings.session_max_s,
            }));
        }
        if now_ms - last_seen_at_ms > self.settings.session_idle_s * 1000 {
            return Err(Error::SessionEnded(SessionEnd::Idle {
                after_s: self.settings.session_idle_s,
            }));
        }
        // Refreshing the idle timer costs a write; once a minute is enough.
        if now_ms - last_seen_at_ms > 60_000 {
            self.write(move |conn| {
                let token_hash = token_hash.clone();
                Box::pin(async move {
                    sql::query("UPDATE sessions SET last_seen_at_ms = $1 WHERE token_hash = $2")
                        .bind(now_ms)
                        .bind(token_hash)
                        .execute(&mut *conn)
                        .await?;
                    Ok(())
                })
            })
            .await?;
        }
        Ok(Player {
            id: row.try_get("id")?,
            username: row.try_get("username")?,
            account_id: row.try_get("account_id")?,
        })
    }

    pub async fn close_session(&self, token: &str) -> Result<(), Error> {
        let token_hash = sha256_hex(token.as_bytes());
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let token_hash = token_hash.clone();
            Box::pin(async move {
                let closed: Option<(i64, String)> = sql::query_as(
                    "UPDATE sessions SET ended_at_ms = $1 WHERE token_hash = $2 AND ended_at_ms IS NULL \
                     RETURNING player_id, (SELECT username FROM players WHERE players.id = sessions.player_id)",
                )
                .bind(now_ms)
                .bind(token_hash)
                .fetch_optional(&mut *conn)
                .await?;
                if let Some((player_id, username)) = closed {
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player_id, &username),
                        "logout",
                        json!({}),
                        json!({"session": "closed"}),
                    )
                    .await?;
                }
                Ok(())
            })
        })
        .await
    }

    // -- Money ----------------------------------------------------------------

    pub async fn balance_cents(&self, account_id: i64) -> Result<i64, Error> {
        sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&mut *self.db.conn().await?)
            .await
    }

    pub async fn me(&self, player: &Player) -> Result<Me, Error> {
        let balance_cents = self.balance_cents(player.account_id).await?;
        let current_play_id: Option<i64> = sql::query_scalar(
            "SELECT id FROM plays WHERE player_id = $1 AND state = 'in_progress' ORDER BY id DESC LIMIT 1",
        )
        .bind(player.id)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?;
        let (limits, excluded_until_ms) = self.protection(player).await?;
        Ok(Me {
            username: player.username.clone(),
            balance_cents,
            demo: self.is_demo().await?,
            current_play_id,
            limits,
            excluded_until: excluded_until_ms.map(rfc3339),
        })
    }

    /// Credits a player's account from the deposits account, at the player's
    /// request (the demo deposit). Returns the new balance.
    pub async fn deposit(&self, player: &Player, amount_cents: i64) -> Result<i64, Error> {
        let actor = Actor::player(player.id, &player.username);
        self.deposit_as(actor, "deposit", player, amount_cents)
            .await
    }

    /// Credits a player's account at the operator's command (`tresor player
    /// credit`). Returns the new balance.
    pub async fn credit(&self, player: &Player, amount_cents: i64) -> Result<i64, Error> {
        self.deposit_as(Actor::Operator, "credit", player, amount_cents)
            .await
    }

    async fn deposit_as(
        &self,
        actor: Actor,
        action: &'static str,
        player: &Player,
        amount_cents: i64,
    ) -> Result<i64, Error> {
        if !(1..=MAX_DEPOSIT_CENTS).contains(&amount_cents) {
            return Err(Error::Validation(format!(
                "amount_cents: between 1 and {MAX_DEPOSIT_CENTS}"
            )));
        }
        let account_id = player.account_id;
        let player_id = player.id;
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let actor = actor.clone();
            let player = player.clone();
            Box::pin(async move {
                // The operator's credit is how money comes in outside demo
                // mode, so it counts against the player's cap like a deposit.
                protect::check_movement(conn, LimitKind::Deposit, &player, amount_cents, now_ms)
                    .await?;
                transfer(
                    conn,
                    DEPOSITS_ACCOUNT,
                    account_id,
                    amount_cents,
                    "deposit",
                    None,
                    now_ms,
                )
                .await?;
                let balance_cents = account_balance(conn, account_id).await?;
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    action,
                    json!({"player_id": player_id, "amount_cents": amount_cents}),
                    json!({"balance_cents": balance_cents}),
                )
                .await?;
                Ok(balance_cents)
            })
        })
        .await
    }

    // -- Status ---------------------------------------------------------------

    pub async fn is_demo(&self) -> Result<bool, Error> {
        let mut conn = self.db.conn().await?;
        Ok(setting(&mut conn, "demo").await?.as_deref() == Some("1"))
    }

    /// Marks this database as a demo database, for good.
    pub async fn set_demo(&self) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                put_setting(conn, "demo", Some("1")).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::System,
                    "demo_mode",
                    json!({}),
                    json!({"demo": true}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    pub async fn status(&self) -> Result<Status, Error> {
        let mut conn = self.db.conn().await?;
        let opens_at_ms: Option<i64> = setting(&mut conn, "sales_open_at_ms")
            .await?
            .and_then(|v| v.parse().ok());
        let message = setting(&mut conn, "announcement").await?;
        let demo = setting(&mut conn, "demo").await?.as_deref() == Some("1");
        let stakes: Vec<i64> = sql::query_scalar(
            "SELECT DISTINCT b.stake_cents FROM blocks b JOIN emissions e ON e.id = b.emission_id \
             WHERE b.state = 'open' AND e.state = 'open' ORDER BY b.stake_cents",
        )
        .fetch_all(&mut conn)
        .await?;
        let now_ms = self.now_ms();
        Ok(Status {
            sales_open: opens_at_ms.is_none_or(|t| t <= now_ms) && !stakes.is_empty(),
            opens_at: opens_at_ms.map(rfc3339),
            message,
            demo,
            stakes,
        })
    }

    /// Sets (or clears) when sales open.
    pub async fn set_sales_open_at(&self, opens_at_ms: Option<i64>) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                put_setting(
                    conn,
                    "sales_open_at_ms",
                    opens_at_ms.map(|t| t.to_string()).as_deref(),
                )
                .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "sales_open_at",
                    json!({"opens_at": opens_at_ms.map(rfc3339), "opens_at_ms": opens_at_ms}),
                    json!({}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Sets (or clears) the message shown on the site.
    pub async fn set_announcement(&self, message: Option<String>) -> Result<(), Error> {
        if let Some(text) = &message
            && (text.trim().is_empty() || text.chars().count() > 1000)
        {
            return Err(Error::Validation(
                "announcement: 1 to 1000 characters, not only spaces".to_owned(),
            ));
        }
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let message = message.clone();
            Box::pin(async move {
                put_setting(conn, "announcement", message.as_deref()).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "announce",
                    json!({"message": message}),
                    json!({}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    // -- Emissions and blocks -------------------------------------------------

    /// Creates an emission with `blocks_per_stake` blocks of each stake, each
    /// with a fresh secret from the OS CSPRNG. Returns the emission id.
    pub async fn create_emission(
        &self,
        name: &str,
        stakes: &[Stake],
        blocks_per_stake: u32,
    ) -> Result<i64, Error> {
        self.create_emission_as(Actor::Operator, name, stakes, blocks_per_stake)
            .await
    }

    /// [`Service::create_emission`], recorded in the trail as `actor`'s (the
    /// demo emission is the system's).
    pub async fn create_emission_as(
        &self,
        actor: Actor,
        name: &str,
        stakes: &[Stake],
        blocks_per_stake: u32,
    ) -> Result<i64, Error> {
        if stakes.is_empty() || !(1..=1000).contains(&blocks_per_stake) {
            return Err(Error::Validation(
                "an emission needs at least one stake and 1 to 1000 blocks".to_owned(),
            ));
        }
        let mut blocks = Vec::new();
        for stake in stakes {
            for _ in 0..blocks_per_stake {
                blocks.push((stake.cents(), BlockSecret::from_bytes(os_random_32())));
            }
        }
        let name = name.to_owned();
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let name = name.clone();
            let blocks = blocks.clone();
            let actor = actor.clone();
            Box::pin(async move {
                let emission_id: i64 = sql::query_scalar(
                    "INSERT INTO emissions (name, state, created_at_ms) VALUES ($1, 'open', $2) RETURNING id",
                )
                .bind(&name)
                .bind(now_ms)
                .fetch_one(&mut *conn)
                .await?;
                let mut created = Vec::with_capacity(blocks.len());
                for (stake_cents, secret) in &blocks {
                    let commitment = secret.commitment().to_hex();
                    let block_id: i64 = sql::query_scalar(
                        "INSERT INTO blocks (emission_id, stake_cents, secret, commitment, state, created_at_ms) \
                         VALUES ($1, $2, $3, $4, 'open', $5) RETURNING id",
                    )
                    .bind(emission_id)
                    .bind(*stake_cents)
                    .bind(secret.as_bytes().to_vec())
                    .bind(&commitment)
                    .bind(now_ms)
                    .fetch_one(&mut *conn)
                    .await?;
                    // The commitment is public from now on; the secret never
                    // enters the trail.
                    created.push(json!({
                        "block_id": block_id,
                        "stake_cents": stake_cents,
                        "commitment": commitment,
                    }));
                }
                let stakes: Vec<i64> = blocks.iter().map(|(stake, _)| *stake).collect();
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "emission_create",
                    json!({"name": name, "stakes_cents": stakes}),
                    json!({"emission_id": emission_id, "blocks": created}),
                )
                .await?;
                Ok(emission_id)
            })
        })
        .await
    }

    /// Closes an emission: its sales stop and the secrets of its blocks are
    /// published. Units left unsold stay counted as such.
    pub async fn close_emission(&self, emission_id: i64) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                let state: Option<String> =
                    sql::query_scalar("SELECT state FROM emissions WHERE id = $1")
                        .bind(emission_id)
                        .fetch_optional(&mut *conn)
                        .await?;
                match state.as_deref() {
                    None => return Err(Error::NotFound),
                    Some("closed") => {
                        return Err(Error::Validation(format!(
                            "emission {emission_id} is already closed"
                        )));
                    }
                    Some(_) => {}
                }
                sql::query(
                    "UPDATE emissions SET state = 'closed', closed_at_ms = $1 WHERE id = $2",
                )
                .bind(now_ms)
                .bind(emission_id)
                .execute(&mut *conn)
                .await?;
                let closed: Vec<i64> = sql::query_scalar(
                    "UPDATE blocks SET state = 'closed', published_at_ms = $1 \
                     WHERE emission_id = $2 AND state IN ('open', 'suspended') RETURNING id",
                )
                .bind(now_ms)
                .bind(emission_id)
                .fetch_all(&mut *conn)
                .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "emission_close",
                    json!({"emission_id": emission_id}),
                    json!({"blocks_closed": closed}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    /// Takes an open block out of sale; sales go on from the other open
    /// blocks of its stake, if any.
    pub async fn suspend_block(&self, block_id: i64) -> Result<(), Error> {
        self.move_block(block_id, "open", "suspended", "block_suspend")
            .await
    }

    /// Puts a suspended block back on sale (its emission must be open).
    pub async fn resume_block(&self, block_id: i64) -> Result<(), Error> {
        self.move_block(block_id, "suspended", "open", "block_resume")
            .await
    }

    async fn move_block(
        &self,
        block_id: i64,
        from: &'static str,
        to: &'static str,
        action: &'static str,
    ) -> Result<(), Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                let row: Option<(String, String)> = sql::query_as(
                    "SELECT b.state, e.state FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                     WHERE b.id = $1",
                )
                .bind(block_id)
                .fetch_optional(&mut *conn)
                .await?;
                let Some((state, emission_state)) = row else {
                    return Err(Error::NotFound);
                };
                if state != from {
                    return Err(Error::Validation(format!(
                        "block {block_id} is {state}, not {from}"
                    )));
                }
                if emission_state != "open" {
                    return Err(Error::Validation(format!(
                        "the emission of block {block_id} is closed"
                    )));
                }
                sql::query("UPDATE blocks SET state = $1 WHERE id = $2 AND state = $3")
                    .bind(to)
                    .bind(block_id)
                    .bind(from)
                    .execute(&mut *conn)
                    .await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    action,
                    json!({"block_id": block_id}),
                    json!({"state": to}),
                )
                .await?;
                Ok(())
            })
        })
        .await
    }

    fn block_view(row: &sql::Row) -> Result<BlockView, Error> {
        let published: Option<i64> = row.try_get("published_at_ms")?;
        let secret: Vec<u8> = row.try_get("secret")?;
        Ok(BlockView {
            id: row.try_get("id")?,
            emission: row.try_get("emission_id")?,
            stake_cents: row.try_get("stake_cents")?,
            state: row.try_get("state")?,
            commitment: row.try_get("commitment")?,
            units_sold: row.try_get("units_sold")?,
            units_per_block: UNITS_PER_BLOCK,
            // The secret leaves the server only once the block is closed.
            secret: published.map(|_| hex::encode(&secret)),
        })
    }

    /// Every block, oldest first, with secrets only where published.
    pub async fn blocks(&self) -> Result<Vec<BlockView>, Error> {
        let rows = sql::query(
            "SELECT id, emission_id, stake_cents, state, commitment, units_sold, secret, published_at_ms \
             FROM blocks ORDER BY id",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        rows.iter().map(Self::block_view).collect()
    }

    pub async fn emissions(&self) -> Result<Vec<EmissionView>, Error> {
        let rows = sql::query("SELECT id, name, state, created_at_ms FROM emissions ORDER BY id")
            .fetch_all(&mut *self.db.conn().await?)
            .await?;
        let blocks = self.blocks().await?;
        let mut emissions = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.try_get("id")?;
            emissions.push(EmissionView {
                id,
                name: row.try_get("name")?,
                state: row.try_get("state")?,
                created_at: rfc3339(row.try_get("created_at_ms")?),
                blocks: blocks
                    .iter()
                    .filter(|b| b.emission == id)
                    .cloned()
                    .collect(),
            });
        }
        Ok(emissions)
    }

    // -- Plays ----------------------------------------------------------------

    /// Buys the next unit of an open block of the stake for the player: in one
    /// transaction the stake is debited, the unit assigned and the play
    /// recorded with its outcome. A play the player left unfinished is settled
    /// first. The same idempotency key returns the first play again.
    pub async fn buy(&self, player: &Player, purchase: Purchase) -> Result<Bought, Error> {
        let request_hash = sha256_hex(format!("stake_cents={}", purchase.stake.cents()).as_bytes());
        // Make sure the blocks that will be sold from are in memory, so the
        // writer never waits for a shuffle (best effort: the job checks
        // again). Looked up once a second, not on every purchase.
        if self.blocks.due_for_check(purchase.stake.cents()) {
            let candidates: Vec<i64> = sql::query_scalar(
                "SELECT b.id FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                 WHERE b.stake_cents = $1 AND b.state = 'open' AND e.state = 'open' \
                 ORDER BY b.id LIMIT $2",
            )
            .bind(purchase.stake.cents())
            .bind(self.settings.block_offset + 2)
            .fetch_all(&mut *self.db.conn().await?)
            .await?;
            for block_id in candidates {
                self.block_data(block_id).await?;
            }
        }
        let command = Command::Buy(BuyCommand {
            player: player.clone(),
            stake: purchase.stake,
            idempotency_key: purchase.idempotency_key,
            request_hash,
            now_ms: self.now_ms(),
        });
        match self.writer.hot(command).await? {
            Reply::Bought { play_id, fresh } => Ok(Bought {
                play_id,
                replayed: fresh.is_none(),
                fresh,
            }),
            other => unreachable!("a purchase is answered as one: {other:?}"),
        }
    }

    /// The view of a play just bought: built from what the purchase wrote,
    /// or read back for a replay.
    pub async fn bought_view(&self, player: &Player, bought: &Bought) -> Result<PlayView, Error> {
        match &bought.fresh {
            Some(fresh) => self.play_view(PlayRow::from_state(fresh)).await,
            None => self.play(player, bought.play_id).await,
        }
    }

    /// Reveals the next throw of a play; the fourth finishes it and credits
    /// its win. Returns the play after the throw.
    pub async fn throw(&self, player: &Player, play_id: i64) -> Result<PlayView, Error> {
        let command = Command::Throw(ThrowCommand {
            player: player.clone(),
            play_id,
            now_ms: self.now_ms(),
        });
        match self.writer.hot(command).await? {
            Reply::Thrown(play) => self.play_view(PlayRow::from_state(&play)).await,
            other => unreachable!("a throw is answered as one: {other:?}"),
        }
    }

    /// Settles every play left unfinished for longer than the configured
    /// delay. Returns how many were settled.
    pub async fn settle_abandoned(&self) -> Result<usize, Error> {
        let now_ms = self.now_ms();
        let before_ms = now_ms - self.settings.auto_settle_after_s * 1000;
        let ids: Vec<i64> = sql::query_scalar(
            "SELECT id FROM plays WHERE state = 'in_progress' AND created_at_ms <= $1 ORDER BY id LIMIT 1000",
        )
        .bind(before_ms)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut settled = 0;
        for chunk in ids.chunks(100) {
            let command = Command::Settle(SettleCommand {
                play_ids: chunk.to_vec(),
                now_ms,
            });
            match self.writer.hot(command).await? {
                Reply::Settled(count) => settled += count,
                other => unreachable!("a settlement is answered as one: {other:?}"),
            }
        }
        Ok(settled)
    }

    async fn play_view(&self, row: PlayRow) -> Result<PlayView, Error> {
        let data = self.block_data(row.block_id).await?;
        let stake = Stake::try_from(row.stake_cents).expect("a stored stake is valid");
        let level = Level::new(row.level as u8).expect("a stored level is valid");
        let seed = data.seeder.seed(row.unit_index as u32);
        let scenario = generate_scenario(stake, level, &seed);
        debug_assert_eq!(scenario.outcome.prize_cents, row.prize_cents);
        Ok(PlayView {
            id: row.id,
            stake_cents: row.stake_cents,
            unit: UnitRef {
                emission: row.emission_id,
                block: row.block_id,
                index: row.unit_index,
            },
            created_at: rfc3339(row.created_at_ms),
            state: if row.state == "finished" {
                "finished"
            } else {
                "in_progress"
            },
            outcome: Outcome {
                level,
                prize_cents: row.prize_cents,
            },
            throws_left: 4 - row.throws_made,
            finished_at: row.finished_at_ms.map(rfc3339),
            scenario: RevealedScenario {
                scenario,
                throws: row.throws_made as usize,
            },
        })
    }

    /// One of the player's plays; another player's play is "not found".
    pub async fn play(&self, player: &Player, play_id: i64) -> Result<PlayView, Error> {
        let row = sql::query(&format!(
            "SELECT {PLAY_COLUMNS} FROM plays p JOIN blocks b ON b.id = p.block_id WHERE p.id = $1 AND p.player_id = $2"
        ))
        .bind(play_id)
        .bind(player.id)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?
        .ok_or(Error::NotFound)?;
        self.play_view(PlayRow::from_row(&row)?).await
    }

    /// The player's plays, newest first, `limit` at a time.
    pub async fn history(
        &self,
        player: &Player,
        limit: i64,
        cursor: Option<i64>,
    ) -> Result<History, Error> {
        let limit = limit.clamp(1, 100);
        let rows = sql::query(&format!(
            "SELECT {PLAY_COLUMNS} FROM plays p JOIN blocks b ON b.id = p.block_id \
             WHERE p.player_id = $1 AND p.id < $2 ORDER BY p.id DESC LIMIT $3"
        ))
        .bind(player.id)
        .bind(cursor.unwrap_or(i64::MAX))
        .bind(limit + 1)
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut plays = Vec::with_capacity(rows.len());
        for row in rows.iter().take(limit as usize) {
            plays.push(self.play_view(PlayRow::from_row(row)?).await?);
        }
        let next_cursor = if rows.len() as i64 > limit {
            plays.last().map(|p| p.id.to_string())
        } else {
            None
        };
        Ok(History { plays, next_cursor })
    }
}

/// A valid argon2id hash of a random password, checked against when the
/// username is unknown so that a login takes as long either way.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$JtqWGUn4JF+8dWmFSkU+UeL2sbU2hSQyk4Uu6BtLvNY";

/// Each argon2 hash takes about 19 MiB and tens of milliseconds: a few at a
/// time, so that a burst of logins queues up instead of exhausting memory.
async fn with_hashing_permit<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    static HASHING: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
        tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()) * 2)
    });
    let _permit = HASHING
        .acquire()
        .await
        .expect("the hashing semaphore is never closed");
    tokio::task::spawn_blocking(work)
        .await
        .expect("password hashing task")
}

fn hash_password(password: &str) -> Result<String, Error> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|_| Error::Unavailable("password hashing failed"))
}

fn verify_password(password: &str, hash: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(hash)
        .map(|parsed| {
            argon2::Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}
