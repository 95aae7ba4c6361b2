//! The player account's storage, as typed functions run inside writer jobs
//! (or on a read connection): the account row and identity, its settings,
//! the accounts' list and the player's row. The rest of an account's
//! storage has rooms of its own, named here so that callers find it in one
//! place: the ban list (`bans.rs`), the ledger and the statement
//! (`ledger.rs`), provider deposits and their payments (`deposits.rs`),
//! reserves (`reserves.rs`) and withdrawals (`withdrawals.rs`).

use super::record::record;
use super::sql::{self, Conn};
use crate::account::{Identity, Status};
use crate::error::Error;
use crate::model::Player;

pub use super::deposits::{
    DepositRow, deposit, insert_deposit, insert_payment, payment, settle_deposit,
};
pub use super::ledger::{StatementRow, Transfer, balance, statement, transfer};
pub use super::reserves::{ReserveRow, add_reserve, reserves};
pub use super::withdrawals::{
    WithdrawalRow, insert_withdrawal, settle_withdrawal, withdrawal, withdrawal_queue,
    withdrawals_of_player,
};

record! {
    /// One row of `player_accounts`, with whether an identity was given.
    #[derive(Debug, Clone)]
    pub struct AccountRow {
        pub status: Status => |row| Status::parse(&row.try_get::<String, _>("status")?),
        pub has_identity: bool => |row| row.try_get::<i64, _>("identities")? > 0,
        pub provisional_until_ms: Option<i64>,
        pub rules_version: i64,
        pub marketing_consent: bool => |row| row.try_get::<i64, _>("marketing_consent")? == 1,
        pub reminder_minutes: Option<i64>,
        pub iban: Option<String>,
        pub banned_at_ms: Option<i64>,
        /// Suspended by the operator (migration 0014).
        pub suspended_at_ms: Option<i64>,
        pub opened_at_ms: i64,
        pub verified_at_ms: Option<i64>,
        pub closed_at_ms: Option<i64>,
        /// When the IBAN was last given, and how many times it changed since
        /// the first.
        pub iban_set_at_ms: Option<i64>,
        pub iban_changes: i64,
        /// Who verified the account (an actor label).
        pub verified_by: Option<String>,
        /// An account opened before one account per person was held: the
        /// person's first account.
        pub duplicate_of: Option<i64>,
    }
}

/// The new account's row, written by the registration's job.
#[derive(Debug, Clone)]
pub struct NewAccount<'a> {
    pub player_id: i64,
    pub identity: Option<&'a Identity>,
    pub provisional_until_ms: Option<i64>,
    pub rules_version: i64,
    pub marketing_consent: bool,
    pub iban: Option<&'a str>,
    pub now_ms: i64,
}

pub async fn insert_account(conn: &mut Conn, new: &NewAccount<'_>) -> Result<(), Error> {
    sql::query(
        "INSERT INTO player_accounts (player_id, status, provisional_until_ms, rules_version, \
         marketing_consent, iban, opened_at_ms, iban_set_at_ms) \
         VALUES ($1, 'provisional', $2, $3, $4, $5, $6, $7)",
    )
    .bind(new.player_id)
    .bind(new.provisional_until_ms)
    .bind(new.rules_version)
    .bind(i64::from(new.marketing_consent))
    .bind(new.iban)
    .bind(new.now_ms)
    .bind(new.iban.map(|_| new.now_ms))
    .execute(conn)
    .await?;
    if let Some(identity) = new.identity {
        sql::query(
            "INSERT INTO identities (player_id, birth_name, first_names, birth_date, birth_place, \
             address, email, name_key, person_key) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
        )
        .bind(new.player_id)
        .bind(&identity.birth_name)
        .bind(&identity.first_names)
        .bind(&identity.birth_date)
        .bind(&identity.birth_place)
        .bind(&identity.address)
        .bind(identity.email.as_deref())
        .bind(identity.name_key())
        .bind(identity.person_key())
        .execute(conn)
        .await?;
    }
    Ok(())
}

/// The account of `player_id`; a player without a row (none should be) reads
/// as a provisional account without identity.
pub async fn account(conn: &mut Conn, player_id: i64) -> Result<AccountRow, Error> {
    let row = sql::query_as(
        "SELECT a.status, a.provisional_until_ms, a.rules_version, a.marketing_consent, \
         a.reminder_minutes, a.iban, a.banned_at_ms, a.opened_at_ms, a.verified_at_ms, a.closed_at_ms, \
         a.iban_set_at_ms, a.iban_changes, a.verified_by, a.suspended_at_ms, \
         (SELECT COUNT(*) FROM identities i WHERE i.player_id = a.player_id) AS identities, \
         (SELECT i.duplicate_of FROM identities i WHERE i.player_id = a.player_id) AS duplicate_of \
         FROM player_accounts a WHERE a.player_id = $1",
    )
    .bind(player_id)
    .fetch_optional(conn)
    .await?;
    Ok(row.unwrap_or(AccountRow {
        status: Status::Provisional,
        has_identity: false,
        provisional_until_ms: None,
        rules_version: 1,
        marketing_consent: false,
        reminder_minutes: None,
        iban: None,
        banned_at_ms: None,
        suspended_at_ms: None,
        opened_at_ms: 0,
        verified_at_ms: None,
        closed_at_ms: None,
        iban_set_at_ms: None,
        iban_changes: 0,
        verified_by: None,
        duplicate_of: None,
    }))
}

/// The identity given at opening, if any.
pub async fn identity(conn: &mut Conn, player_id: i64) -> Result<Option<Identity>, Error> {
    sql::query_as(
        "SELECT birth_name, first_names, birth_date, birth_place, address, email \
         FROM identities WHERE player_id = $1",
    )
    .bind(player_id)
    .fetch_optional(conn)
    .await
}

record! {
    impl for Identity {
        birth_name,
        first_names,
        birth_date,
        birth_place,
        address,
        email,
    }
}

/// Refuses money coming into a closed or banned account, or into the
/// second account of a person (opened before one account per person held).
pub async fn refuse_money_in(conn: &mut Conn, player_id: i64) -> Result<(), Error> {
    let account = account(conn, player_id).await?;
    if account.status == Status::Closed {
        return Err(Error::AccountClosed);
    }
    if account.suspended_at_ms.is_some() {
        return Err(Error::AccountSuspended);
    }
    if account.banned_at_ms.is_some() {
        return Err(Error::Banned);
    }
    if account.duplicate_of.is_some() {
        return Err(Error::DuplicateAccount);
    }
    Ok(())
}

pub async fn set_reminder(
    conn: &mut Conn,
    player_id: i64,
    minutes: Option<i64>,
) -> Result<(), Error> {
    sql::query("UPDATE player_accounts SET reminder_minutes = $1 WHERE player_id = $2")
        .bind(minutes)
        .bind(player_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Gives the account an IBAN; a change of one already given is counted
/// (the verification queue shows it).
pub async fn set_iban(
    conn: &mut Conn,
    player_id: i64,
    iban: &str,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "UPDATE player_accounts SET iban = $1, iban_set_at_ms = $2, \
         iban_changes = iban_changes + CASE WHEN iban IS NULL OR iban = $1 THEN 0 ELSE 1 END \
         WHERE player_id = $3",
    )
    .bind(iban)
    .bind(now_ms)
    .bind(player_id)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn accept_rules(conn: &mut Conn, player_id: i64, version: i64) -> Result<(), Error> {
    sql::query("UPDATE player_accounts SET rules_version = $1 WHERE player_id = $2")
        .bind(version)
        .bind(player_id)
        .execute(conn)
        .await?;
    Ok(())
}

/// Marks the account verified by `by` (an actor label), if its IBAN is
/// still `iban`; false when it is not (changed since it was read).
pub async fn mark_verified(
    conn: &mut Conn,
    player_id: i64,
    iban: &str,
    by: &str,
    now_ms: i64,
) -> Result<bool, Error> {
    let changed = sql::query(
        "UPDATE player_accounts SET status = 'verified', verified_at_ms = $1, verified_by = $2, \
         provisional_until_ms = NULL WHERE player_id = $3 AND iban = $4",
    )
    .bind(now_ms)
    .bind(by)
    .bind(player_id)
    .bind(iban)
    .execute(conn)
    .await?;
    Ok(changed == 1)
}

pub async fn mark_closed(conn: &mut Conn, player_id: i64, now_ms: i64) -> Result<(), Error> {
    sql::query(
        "UPDATE player_accounts SET status = 'closed', closed_at_ms = $1 WHERE player_id = $2",
    )
    .bind(now_ms)
    .bind(player_id)
    .execute(conn)
    .await?;
    Ok(())
}

/// Ends every open session of the player; returns how many.
pub async fn end_sessions(conn: &mut Conn, player_id: i64, now_ms: i64) -> Result<u64, Error> {
    sql::query("UPDATE sessions SET ended_at_ms = $1 WHERE player_id = $2 AND ended_at_ms IS NULL")
        .bind(now_ms)
        .bind(player_id)
        .execute(conn)
        .await
}

/// The rules version in force (1 until the operator publishes another).
pub async fn rules_version(conn: &mut Conn) -> Result<i64, Error> {
    let value: Option<String> =
        sql::query_scalar("SELECT value FROM settings WHERE key = 'rules_version'")
            .fetch_optional(conn)
            .await?;
    Ok(value.and_then(|v| v.parse().ok()).unwrap_or(1))
}

pub async fn set_rules_version(conn: &mut Conn, version: i64) -> Result<(), Error> {
    sql::query(
        "INSERT INTO settings (key, value) VALUES ('rules_version', $1) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )
    .bind(version.to_string())
    .execute(conn)
    .await?;
    Ok(())
}

record! {
    /// A player as the account lists show them.
    #[derive(Debug, Clone, serde::Serialize)]
    pub struct AccountListing {
        pub player_id: i64,
        pub username: String,
        pub status: String,
        pub has_identity: bool => |row| row.try_get::<i64, _>("identities")? > 0,
        pub iban: Option<String>,
        pub banned: bool => |row| row.try_get::<Option<i64>, _>("banned_at_ms")?.is_some(),
        pub opened_at_ms: i64,
        pub provisional_until_ms: Option<i64>,
        /// When the IBAN was last given, and how many times it changed: the
        /// queue shows a change, and the verification names the IBAN reviewed.
        pub iban_set_at_ms: Option<i64>,
        pub iban_changes: i64,
        /// The person's first account, for an account opened before one
        /// account per person held.
        pub duplicate_of: Option<i64>,
    }
}

pub async fn list_accounts(
    conn: &mut Conn,
    status: Option<&str>,
) -> Result<Vec<AccountListing>, Error> {
    sql::query_as(
        "SELECT a.player_id, p.username, a.status, a.iban, a.banned_at_ms, a.opened_at_ms, \
         a.provisional_until_ms, a.iban_set_at_ms, a.iban_changes, \
         (SELECT COUNT(*) FROM identities i WHERE i.player_id = a.player_id) AS identities, \
         (SELECT i.duplicate_of FROM identities i WHERE i.player_id = a.player_id) AS duplicate_of \
         FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE $1 = '' OR a.status = $1 ORDER BY a.player_id",
    )
    .bind(status.unwrap_or(""))
    .fetch_all(conn)
    .await
}

/// Whether the player has a play in progress: their latest play, if any
/// is (a purchase settles the one before), read by MAX(id).
pub async fn play_in_progress(conn: &mut Conn, player_id: i64) -> Result<bool, Error> {
    let found: Option<i64> = sql::query_scalar(
        "SELECT id FROM plays WHERE state = 'in_progress' \
         AND id = (SELECT MAX(id) FROM plays WHERE player_id = $1)",
    )
    .bind(player_id)
    .fetch_optional(conn)
    .await?;
    Ok(found.is_some())
}

// A player from a row of `id, username, account_id`.
record! {
    impl for Player {
        id,
        username,
        account_id,
    }
}

/// The players `text` reads (`id, username, account_id`).
pub(super) async fn players(conn: &mut Conn, text: &str) -> Result<Vec<Player>, Error> {
    sql::query_as(text).fetch_all(conn).await
}

pub async fn player_by_id(conn: &mut Conn, player_id: i64) -> Result<Player, Error> {
    sql::query_as("SELECT id, username, account_id FROM players WHERE id = $1")
        .bind(player_id)
        .fetch_optional(conn)
        .await?
        .ok_or(Error::NotFound)
}
