//! The player account's storage, as typed functions run inside writer jobs
//! (or on a read connection): the account row and identity, the ban list,
//! provider deposits and their payments, withdrawals, reserves, the ledger
//! transfers they make, and the statement's rows.

use super::sql::{self, ColumnType, Conn};
use crate::account::{BanEntry, Identity, Status};
use crate::error::Error;
use crate::model::Player;

pub use super::withdrawals::{
    WithdrawalRow, insert_withdrawal, settle_withdrawal, withdrawal, withdrawal_queue,
    withdrawals_of_player,
};

/// One row of `player_accounts`, with whether an identity was given.
#[derive(Debug, Clone)]
pub struct AccountRow {
    pub status: Status,
    pub has_identity: bool,
    pub provisional_until_ms: Option<i64>,
    pub rules_version: i64,
    pub marketing_consent: bool,
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
    let row = sql::query(
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
    let Some(row) = row else {
        return Ok(AccountRow {
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
        });
    };
    Ok(AccountRow {
        status: Status::parse(&row.try_get::<String, _>("status")?),
        has_identity: row.try_get::<i64, _>("identities")? > 0,
        provisional_until_ms: row.try_get("provisional_until_ms")?,
        rules_version: row.try_get("rules_version")?,
        marketing_consent: row.try_get::<i64, _>("marketing_consent")? == 1,
        reminder_minutes: row.try_get("reminder_minutes")?,
        iban: row.try_get("iban")?,
        banned_at_ms: row.try_get("banned_at_ms")?,
        suspended_at_ms: row.try_get("suspended_at_ms")?,
        opened_at_ms: row.try_get("opened_at_ms")?,
        verified_at_ms: row.try_get("verified_at_ms")?,
        closed_at_ms: row.try_get("closed_at_ms")?,
        iban_set_at_ms: row.try_get("iban_set_at_ms")?,
        iban_changes: row.try_get("iban_changes")?,
        verified_by: row.try_get("verified_by")?,
        duplicate_of: row.try_get("duplicate_of")?,
    })
}

/// The identity given at opening, if any.
pub async fn identity(conn: &mut Conn, player_id: i64) -> Result<Option<Identity>, Error> {
    let row = sql::query(
        "SELECT birth_name, first_names, birth_date, birth_place, address, email \
         FROM identities WHERE player_id = $1",
    )
    .bind(player_id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(Identity {
            birth_name: row.try_get("birth_name")?,
            first_names: row.try_get("first_names")?,
            birth_date: row.try_get("birth_date")?,
            birth_place: row.try_get("birth_place")?,
            address: row.try_get("address")?,
            email: row.try_get("email")?,
        })
    })
    .transpose()
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

/// A player as the account lists show them.
#[derive(Debug, Clone, serde::Serialize)]
pub struct AccountListing {
    pub player_id: i64,
    pub username: String,
    pub status: String,
    pub has_identity: bool,
    pub iban: Option<String>,
    pub banned: bool,
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

pub async fn list_accounts(
    conn: &mut Conn,
    status: Option<&str>,
) -> Result<Vec<AccountListing>, Error> {
    let rows = sql::query(
        "SELECT a.player_id, p.username, a.status, a.iban, a.banned_at_ms, a.opened_at_ms, \
         a.provisional_until_ms, a.iban_set_at_ms, a.iban_changes, \
         (SELECT COUNT(*) FROM identities i WHERE i.player_id = a.player_id) AS identities, \
         (SELECT i.duplicate_of FROM identities i WHERE i.player_id = a.player_id) AS duplicate_of \
         FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE $1 = '' OR a.status = $1 ORDER BY a.player_id",
    )
    .bind(status.unwrap_or(""))
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(AccountListing {
                player_id: row.try_get("player_id")?,
                username: row.try_get("username")?,
                status: row.try_get("status")?,
                has_identity: row.try_get::<i64, _>("identities")? > 0,
                iban: row.try_get("iban")?,
                banned: row.try_get::<Option<i64>, _>("banned_at_ms")?.is_some(),
                opened_at_ms: row.try_get("opened_at_ms")?,
                provisional_until_ms: row.try_get("provisional_until_ms")?,
                iban_set_at_ms: row.try_get("iban_set_at_ms")?,
                iban_changes: row.try_get("iban_changes")?,
                duplicate_of: row.try_get("duplicate_of")?,
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The ban list.

/// Whether a person is on the ban list in force.
pub async fn is_banned(conn: &mut Conn, name_key: &str, birth_date: &str) -> Result<bool, Error> {
    let found: i64 = sql::query_scalar(
        "SELECT COUNT(*) FROM ban_entries WHERE name_key = $1 AND birth_date = $2",
    )
    .bind(name_key)
    .bind(birth_date)
    .fetch_one(conn)
    .await?;
    Ok(found > 0)
}

/// Replaces the ban list with `entries` as a new version; returns it.
pub async fn replace_ban_list(
    conn: &mut Conn,
    entries: &[BanEntry],
    sha256: &str,
    now_ms: i64,
) -> Result<i64, Error> {
    let version: i64 =
        sql::query_scalar("SELECT CAST(COALESCE(MAX(version), 0) + 1 AS BIGINT) FROM ban_imports")
            .fetch_one(conn)
            .await?;
    sql::query("DELETE FROM ban_entries").execute(conn).await?;
    let sqlite = conn.is_sqlite();
    for chunk in entries.chunks(1000) {
        let table = sql::json_rows(
            sqlite,
            1,
            &[
                ("name_key", ColumnType::Text),
                ("birth_date", ColumnType::Text),
                ("birth_name", ColumnType::Text),
                ("first_names", ColumnType::Text),
            ],
        );
        let rows: Vec<[&str; 4]> = chunk
            .iter()
            .map(|e| {
                [
                    e.name_key.as_str(),
                    e.birth_date.as_str(),
                    e.birth_name.as_str(),
                    e.first_names.as_str(),
                ]
            })
            .collect();
        // key_version 2: keyed by `account::name_key` as it is now.
        sql::query(&format!(
            "INSERT INTO ban_entries (name_key, birth_date, birth_name, first_names, key_version) \
             SELECT name_key, birth_date, birth_name, first_names, 2 FROM {table} AS d"
        ))
        .bind(serde_json::to_string(&rows).expect("rows as JSON"))
        .execute(conn)
        .await?;
    }
    sql::query("INSERT INTO ban_imports (version, entries, sha256, imported_at_ms) VALUES ($1, $2, $3, $4)")
        .bind(version)
        .bind(entries.len() as i64)
        .bind(sha256)
        .bind(now_ms)
        .execute(conn)
        .await?;
    Ok(version)
}

/// Marks banned every account whose identity is on the list and was not yet,
/// lifts the ban of those no longer on it; returns (banned, lifted) players.
pub async fn apply_ban_list(
    conn: &mut Conn,
    now_ms: i64,
) -> Result<(Vec<Player>, Vec<Player>), Error> {
    let on_list = "EXISTS (SELECT 1 FROM identities i JOIN ban_entries b \
                   ON b.name_key = i.name_key AND b.birth_date = i.birth_date WHERE i.player_id = a.player_id)";
    let banned_sql = format!(
        "SELECT p.id, p.username, p.account_id FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE a.banned_at_ms IS NULL AND {on_list} ORDER BY p.id"
    );
    let lifted_sql = format!(
        "SELECT p.id, p.username, p.account_id FROM player_accounts a JOIN players p ON p.id = a.player_id \
         WHERE a.banned_at_ms IS NOT NULL AND NOT {on_list} ORDER BY p.id"
    );
    let banned = players(conn, &banned_sql).await?;
    let lifted = players(conn, &lifted_sql).await?;
    for player in &banned {
        sql::query("UPDATE player_accounts SET banned_at_ms = $1 WHERE player_id = $2")
            .bind(now_ms)
            .bind(player.id)
            .execute(conn)
            .await?;
        end_sessions(conn, player.id, now_ms).await?;
    }
    for player in &lifted {
        sql::query("UPDATE player_accounts SET banned_at_ms = NULL WHERE player_id = $1")
            .bind(player.id)
            .execute(conn)
            .await?;
    }
    Ok((banned, lifted))
}

async fn players(conn: &mut Conn, text: &str) -> Result<Vec<Player>, Error> {
    let rows = sql::query(text).fetch_all(conn).await?;
    rows.iter()
        .map(|row| {
            Ok(Player {
                id: row.try_get("id")?,
                username: row.try_get("username")?,
                account_id: row.try_get("account_id")?,
            })
        })
        .collect()
}

pub async fn player_by_id(conn: &mut Conn, player_id: i64) -> Result<Player, Error> {
    let row = sql::query("SELECT id, username, account_id FROM players WHERE id = $1")
        .bind(player_id)
        .fetch_optional(conn)
        .await?
        .ok_or(Error::NotFound)?;
    Ok(Player {
        id: row.try_get("id")?,
        username: row.try_get("username")?,
        account_id: row.try_get("account_id")?,
    })
}

// ---------------------------------------------------------------------------
// The ledger.

/// One double-entry movement of the account module.
#[derive(Debug, Clone, Copy)]
pub struct Transfer {
    pub debit: i64,
    pub credit: i64,
    pub amount_cents: i64,
    pub kind: &'static str,
    pub deposit_id: Option<i64>,
    pub withdrawal_id: Option<i64>,
    pub now_ms: i64,
}

/// Moves the money and updates both balances, refusing to take a player
/// account below zero (`InsufficientFunds`, nothing written). Returns the
/// debited and credited accounts' new balances.
pub async fn transfer(conn: &mut Conn, t: Transfer) -> Result<(i64, i64), Error> {
    assert!(t.amount_cents > 0, "a transfer moves a positive amount");
    let debited: Option<i64> = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents - $1 \
         WHERE id = $2 AND (kind <> 'player' OR balance_cents >= $1) RETURNING balance_cents",
    )
    .bind(t.amount_cents)
    .bind(t.debit)
    .fetch_optional(conn)
    .await?;
    let Some(debit_balance_cents) = debited else {
        return Err(Error::InsufficientFunds {
            balance_cents: balance(conn, t.debit).await?,
            needed_cents: t.amount_cents,
        });
    };
    let credit_balance_cents: i64 = sql::query_scalar(
        "UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2 RETURNING balance_cents",
    )
    .bind(t.amount_cents)
    .bind(t.credit)
    .fetch_one(conn)
    .await?;
    sql::query(
        "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, \
         created_at_ms, deposit_id, withdrawal_id) VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(t.debit)
    .bind(t.credit)
    .bind(t.amount_cents)
    .bind(t.kind)
    .bind(t.now_ms)
    .bind(t.deposit_id)
    .bind(t.withdrawal_id)
    .execute(conn)
    .await?;
    Ok((debit_balance_cents, credit_balance_cents))
}

pub async fn balance(conn: &mut Conn, account_id: i64) -> Result<i64, Error> {
    sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_one(conn)
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

// ---------------------------------------------------------------------------
// Deposits through the payment provider.

#[derive(Debug, Clone, serde::Serialize)]
pub struct DepositRow {
    pub id: i64,
    pub player_id: i64,
    pub amount_cents: i64,
    pub provider: String,
    pub state: String,
    pub created_at_ms: i64,
    pub settled_at_ms: Option<i64>,
}

pub async fn insert_deposit(
    conn: &mut Conn,
    player_id: i64,
    amount_cents: i64,
    provider: &str,
    now_ms: i64,
) -> Result<i64, Error> {
    sql::query_scalar(
        "INSERT INTO deposits (player_id, amount_cents, provider, state, created_at_ms) \
         VALUES ($1, $2, $3, 'pending', $4) RETURNING id",
    )
    .bind(player_id)
    .bind(amount_cents)
    .bind(provider)
    .bind(now_ms)
    .fetch_one(conn)
    .await
}

pub async fn deposit(conn: &mut Conn, id: i64) -> Result<Option<DepositRow>, Error> {
    let row = sql::query(
        "SELECT id, player_id, amount_cents, provider, state, created_at_ms, settled_at_ms \
         FROM deposits WHERE id = $1",
    )
    .bind(id)
    .fetch_optional(conn)
    .await?;
    row.map(|row| {
        Ok(DepositRow {
            id: row.try_get("id")?,
            player_id: row.try_get("player_id")?,
            amount_cents: row.try_get("amount_cents")?,
            provider: row.try_get("provider")?,
            state: row.try_get("state")?,
            created_at_ms: row.try_get("created_at_ms")?,
            settled_at_ms: row.try_get("settled_at_ms")?,
        })
    })
    .transpose()
}

pub async fn settle_deposit(
    conn: &mut Conn,
    id: i64,
    state: &str,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "UPDATE deposits SET state = $1, settled_at_ms = $2 WHERE id = $3 AND state = 'pending'",
    )
    .bind(state)
    .bind(now_ms)
    .bind(id)
    .execute(conn)
    .await?;
    Ok(())
}

/// An earlier confirmation with the same provider transaction id: its
/// deposit, outcome and reason.
pub async fn payment(
    conn: &mut Conn,
    provider: &str,
    transaction_id: &str,
) -> Result<Option<(i64, String, Option<String>)>, Error> {
    sql::query_as(
        "SELECT deposit_id, outcome, reason FROM payments WHERE provider = $1 AND transaction_id = $2",
    )
    .bind(provider)
    .bind(transaction_id)
    .fetch_optional(conn)
    .await
}

#[allow(clippy::too_many_arguments, reason = "one column each")]
pub async fn insert_payment(
    conn: &mut Conn,
    provider: &str,
    transaction_id: &str,
    deposit_id: i64,
    amount_cents: i64,
    outcome: &str,
    reason: Option<&str>,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO payments (provider, transaction_id, deposit_id, amount_cents, outcome, reason, received_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(provider)
    .bind(transaction_id)
    .bind(deposit_id)
    .bind(amount_cents)
    .bind(outcome)
    .bind(reason)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Reserves.

/// Adds `amount_cents` to the player's reserve, kept until `kept_until_ms`.
pub async fn add_reserve(
    conn: &mut Conn,
    player_id: i64,
    amount_cents: i64,
    kept_until_ms: i64,
    now_ms: i64,
) -> Result<(), Error> {
    sql::query(
        "INSERT INTO reserves (player_id, amount_cents, kept_until_ms, created_at_ms) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (player_id) DO UPDATE SET amount_cents = reserves.amount_cents + excluded.amount_cents, \
         kept_until_ms = excluded.kept_until_ms",
    )
    .bind(player_id)
    .bind(amount_cents)
    .bind(kept_until_ms)
    .bind(now_ms)
    .execute(conn)
    .await?;
    Ok(())
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct ReserveRow {
    pub player_id: i64,
    pub username: String,
    pub amount_cents: i64,
    pub kept_until_ms: i64,
    pub created_at_ms: i64,
}

pub async fn reserves(conn: &mut Conn) -> Result<Vec<ReserveRow>, Error> {
    let rows = sql::query(
        "SELECT r.player_id, p.username, r.amount_cents, r.kept_until_ms, r.created_at_ms \
         FROM reserves r JOIN players p ON p.id = r.player_id ORDER BY r.player_id",
    )
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(ReserveRow {
                player_id: row.try_get("player_id")?,
                username: row.try_get("username")?,
                amount_cents: row.try_get("amount_cents")?,
                kept_until_ms: row.try_get("kept_until_ms")?,
                created_at_ms: row.try_get("created_at_ms")?,
            })
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The statement.

/// One movement of a player's account, with the balance after it.
#[derive(Debug, Clone)]
pub struct StatementRow {
    pub transfer_id: i64,
    pub kind: String,
    /// Signed: what the movement added to the balance (0 for a withdrawal
    /// paid, which leaves the pending account, not the player's).
    pub delta_cents: i64,
    pub amount_cents: i64,
    pub balance_cents: i64,
    pub at_ms: i64,
    pub play_id: Option<i64>,
    pub deposit_id: Option<i64>,
    pub withdrawal_id: Option<i64>,
}

/// The player's movements, newest first, before the transfer `before` (all
/// when `None`), at most `limit`.
pub async fn statement(
    conn: &mut Conn,
    player: &Player,
    before: Option<i64>,
    limit: i64,
) -> Result<Vec<StatementRow>, Error> {
    // The balance after each movement is the account's balance now less
    // what moved after it: the movements newer than the page (none on the
    // first page) and those of the page above it, all read in one statement,
    // so one snapshot. Only the page is summed row by row, never the whole
    // history from the account's first movement. A player's account is
    // above -1000, which lets the partial indexes by account serve it
    // (migration 0021: the writers' own accounts are left out of them). A
    // stake is found through the player's plays (`plays_by_player`, then
    // `transfers_one_stake_per_play`): migration 0022 left stakes out of
    // `transfers_by_debit`, where every purchase put an entry for this
    // statement alone.
    let rows = sql::query(
        "WITH page AS (SELECT t.id, t.kind, t.amount_cents, t.created_at_ms, t.play_id, \
           t.deposit_id, t.withdrawal_id, CASE WHEN t.credit_account_id = $1 THEN t.amount_cents \
             WHEN t.debit_account_id = $1 THEN -t.amount_cents ELSE 0 END AS delta_cents \
         FROM transfers t WHERE ((t.credit_account_id = $1 AND t.credit_account_id > -1000) \
           OR (t.debit_account_id = $1 AND t.debit_account_id > -1000 AND t.kind <> 'stake') \
           OR (t.kind = 'stake' AND t.play_id IN (SELECT id FROM plays WHERE player_id = $2)) \
           OR (t.kind = 'withdrawal_paid' AND t.withdrawal_id IN (SELECT id FROM withdrawals WHERE player_id = $2))) \
           AND ($3 = 0 OR t.id < $3) ORDER BY t.id DESC LIMIT $4), \
         newer AS (SELECT COALESCE(SUM(CASE WHEN t.credit_account_id = $1 THEN t.amount_cents \
             ELSE -t.amount_cents END), 0) AS cents \
         FROM transfers t WHERE $3 <> 0 AND t.id >= $3 \
           AND ((t.credit_account_id = $1 AND t.credit_account_id > -1000) \
             OR (t.debit_account_id = $1 AND t.debit_account_id > -1000 AND t.kind <> 'stake') \
             OR (t.kind = 'stake' AND t.play_id IN (SELECT id FROM plays WHERE player_id = $2)))) \
         SELECT page.*, CAST((SELECT balance_cents FROM accounts WHERE id = $1) \
           - (SELECT cents FROM newer) \
           - COALESCE(SUM(page.delta_cents) OVER (ORDER BY page.id DESC \
               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS BIGINT) AS balance_cents \
         FROM page ORDER BY page.id DESC",
    )
    .bind(player.account_id)
    .bind(player.id)
    .bind(before.unwrap_or(0))
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter()
        .map(|row| {
            Ok(StatementRow {
                transfer_id: row.try_get("id")?,
                kind: row.try_get("kind")?,
                delta_cents: row.try_get("delta_cents")?,
                amount_cents: row.try_get("amount_cents")?,
                balance_cents: row.try_get("balance_cents")?,
                at_ms: row.try_get("created_at_ms")?,
                play_id: row.try_get("play_id")?,
                deposit_id: row.try_get("deposit_id")?,
                withdrawal_id: row.try_get("withdrawal_id")?,
            })
        })
        .collect()
}
