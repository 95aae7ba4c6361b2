//! Players: registration (usernames unique by confusable skeleton), password
//! checks, failed logins in the trail, and filling skeletons left NULL.

use super::Service;
use super::hashing::{hash_password, password_rule, verify_password, with_hashing_permit};
use crate::error::Error;
use crate::model::{Player, Username};
use crate::protect::{self, Limits};
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

/// A registration request, checked.
#[derive(Debug, Clone)]
pub struct Registration {
    pub username: Username,
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
        let username = Username::parse(username)?;
        password_rule("password", password)?;
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
            username,
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
        let cost = self.settings.password_cost;
        let password_hash = with_hashing_permit(move || hash_password(&password, cost)).await?;
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
                // One name per skeleton: "ana", "ANA", "ａｎａ" and Cyrillic
                // "аna" are one. Rows from before the skeleton column have
                // none yet (until the backfill), hence the key too.
                let taken: Option<i64> = sql::query_scalar(
                    "SELECT id FROM players WHERE username_skeleton = $1 OR username_key = $2 LIMIT 1",
                )
                .bind(username.skeleton())
                .bind(username.key())
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
                    "INSERT INTO players (username, username_key, username_skeleton, password_hash, \
                     account_id, adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $6, $6) RETURNING id",
                )
                .bind(username.as_str())
                .bind(username.key())
                .bind(username.skeleton())
                .bind(&password_hash)
                .bind(account_id)
                .bind(now_ms)
                .fetch_one(&mut *conn)
                .await?;
                protect::insert_limits(conn, id, limits, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(id, username.as_str()),
                    "register",
                    json!({
                        "username": username.as_str(),
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
                    username: username.as_str().to_owned(),
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

    /// Checks a username and password. An unknown username costs the same
    /// argon2 verification as a known one and answers the same, so neither
    /// the answer nor its timing tells which usernames exist. (Throttling
    /// failures is the HTTP edge's, keyed by the name typed and the address,
    /// never by whether the account exists.)
    pub async fn authenticate(&self, username: &str, password: &str) -> Result<Player, Error> {
        let username = Username::normalise(username);
        let found = self.find_player(&username).await?;
        let (player, hash) = match found {
            Some((player, hash)) => (Some(player), hash),
            None => (None, self.settings.password_cost.dummy_hash()),
        };
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

    /// The player a (normalised) name designates, with the password hash:
    /// by skeleton, or by key for a row whose skeleton is not filled.
    async fn find_player(&self, username: &Username) -> Result<Option<(Player, String)>, Error> {
        let row = sql::query(
            "SELECT id, username, account_id, password_hash FROM players \
             WHERE username_skeleton = $1 OR (username_skeleton IS NULL AND username_key = $2) \
             ORDER BY username_skeleton IS NULL LIMIT 1",
        )
        .bind(username.skeleton())
        .bind(username.key())
        .fetch_optional(&mut *self.db.conn().await?)
        .await?;
        row.map(|row| {
            Ok((
                Player {
                    id: row.try_get("id")?,
                    username: row.try_get("username")?,
                    account_id: row.try_get("account_id")?,
                },
                row.try_get::<String, _>("password_hash")?,
            ))
        })
        .transpose()
    }

    /// Fills the skeleton of players registered before it existed (or by a
    /// path that did not set it), in one writer job; returns how many were
    /// filled. A row whose skeleton another player already holds keeps none
    /// and is still found by its key (logged, for the operator to rename).
    pub async fn backfill_username_skeletons(&self) -> Result<u64, Error> {
        self.write(|conn| {
            Box::pin(async move {
                let missing: Vec<(i64, String)> = sql::query_as(
                    "SELECT id, username FROM players WHERE username_skeleton IS NULL ORDER BY id",
                )
                .fetch_all(&mut *conn)
                .await?;
                let mut filled = 0;
                for (id, name) in missing {
                    let skeleton = Username::normalise(&name).skeleton().to_owned();
                    let holder: Option<i64> =
                        sql::query_scalar("SELECT id FROM players WHERE username_skeleton = $1")
                            .bind(&skeleton)
                            .fetch_optional(&mut *conn)
                            .await?;
                    if let Some(holder) = holder {
                        tracing::warn!(player = id, holder, "username too close to another's");
                        continue;
                    }
                    sql::query("UPDATE players SET username_skeleton = $1 WHERE id = $2")
                        .bind(&skeleton)
                        .bind(id)
                        .execute(&mut *conn)
                        .await?;
                    filled += 1;
                }
                Ok(filled)
            })
        })
        .await
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
        let username = Username::normalise(username);
        let (player, _) = self.find_player(&username).await?.ok_or(Error::NotFound)?;
        Ok(player)
    }
}
