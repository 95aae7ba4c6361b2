//! Players: registration, password checks and the login lock.

use super::Service;
use crate::error::Error;
use crate::model::Player;
use crate::protect::{self, Limits};
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

/// A registration request, checked.
#[derive(Debug, Clone)]
pub struct Registration {
    pub username: String,
    pub password: String,
    /// The 7-day caps, chosen before the first deposit and the first play.
    pub limits: Limits,
    /// The identity of an account for real money (none in demo mode).
    pub opening: Option<super::Opening>,
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
            opening: None,
        })
    }

    /// The same registration with the caps the player chose.
    pub fn with_limits(self, limits: Limits) -> Self {
        Registration { limits, ..self }
    }
}

impl Service {
    /// Registers a player; returns the new player.
    pub async fn register(&self, registration: Registration) -> Result<Player, Error> {
        let password = registration.password.clone();
        let password_hash = with_hashing_permit(move || hash_password(&password)).await?;
        let username = registration.username.clone();
        let limits = registration.limits;
        let opening = registration.opening.clone();
        let provisional_ms = self.provisional_ms();
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let username = username.clone();
            let password_hash = password_hash.clone();
            let opening = opening.clone();
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
                let player = Player {
                    id,
                    username,
                    account_id,
                };
                super::account::on_register(
                    conn,
                    &player,
                    opening.as_ref(),
                    provisional_ms,
                    now_ms,
                )
                .await?;
                Ok(player)
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
