//! Money: the double-entry ledger, balances and deposits.

use super::{Service, rfc3339};
use crate::error::Error;
use crate::model::{DEPOSITS_ACCOUNT, Player};
use crate::protect::{self, LimitKind, LimitsView};
use crate::store::{Conn, oversight, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

/// The largest single deposit, a guard against typing mistakes.
pub const MAX_DEPOSIT_CENTS: i64 = 100_000_000;
/// The largest single demo deposit.
pub const MAX_DEMO_DEPOSIT_CENTS: i64 = 100_000;

/// Refuses (`validation`) an amount of money moved below `least_cents` or
/// above [`MAX_DEPOSIT_CENTS`].
pub(super) fn check_amount(amount_cents: i64, least_cents: i64) -> Result<(), Error> {
    if (least_cents..=MAX_DEPOSIT_CENTS).contains(&amount_cents) {
        return Ok(());
    }
    Err(Error::Validation(format!(
        "amount_cents: between {least_cents} and {MAX_DEPOSIT_CENTS}"
    )))
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

// ---------------------------------------------------------------------------
// Ledger primitives, run inside writer jobs.

/// Moves `amount_cents` from `debit` to `credit`, refusing to take a player
/// account below zero. Returns the two accounts' new balances (debit, credit).
pub(super) async fn transfer(
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

/// For an operator's credit: refuses one that would take the operator past
/// their credits per 24 hours; returns what they credited in the last 24
/// hours before it (0 for a player's own deposit).
async fn oversight_check(
    conn: &mut Conn,
    actor: &Actor,
    credit: bool,
    amount_cents: i64,
    limits: super::FourEyes,
    now_ms: i64,
) -> Result<i64, Error> {
    if !credit {
        return Ok(0);
    }
    let label = actor.label();
    // Held until COMMIT: this actor's credit on another server waits, then
    // counts this one.
    oversight::lock_actor_credits(conn, &label).await?;
    let day_ms = 24 * 3600 * 1000;
    let credited = oversight::credited_since(conn, &label, now_ms - day_ms).await?;
    if credited + amount_cents > limits.credit_max_per_day_cents {
        return Err(Error::CreditLimit {
            message: format!(
                "{label} credited {} in the last 24 hours: {} more would pass the limit of {} \
                 per operator and 24 hours (--credit-max-per-day-cents, TRESOR_CREDIT_MAX_PER_DAY_CENTS)",
                crate::model::euros(credited),
                crate::model::euros(amount_cents),
                crate::model::euros(limits.credit_max_per_day_cents)
            ),
            setting: "credit_max_per_day_cents",
        });
    }
    Ok(credited)
}

async fn account_balance(conn: &mut Conn, account_id: i64) -> Result<i64, Error> {
    sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
        .bind(account_id)
        .fetch_one(&mut *conn)
        .await
}

impl Service {
    pub async fn balance_cents(&self, account_id: i64) -> Result<i64, Error> {
        sql::query_scalar("SELECT balance_cents FROM accounts WHERE id = $1")
            .bind(account_id)
            .fetch_one(&mut *self.db.conn().await?)
            .await
    }

    pub async fn me(&self, player: &Player) -> Result<Me, Error> {
        let balance_cents = self.balance_cents(player.account_id).await?;
        // A player's play in progress is their latest (a purchase settles
        // the one before): one read of plays_by_player, however long the
        // history.
        let current_play_id: Option<i64> = sql::query_scalar(
            "SELECT id FROM plays WHERE state = 'in_progress' \
             AND id = (SELECT MAX(id) FROM plays WHERE player_id = $1)",
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
        self.deposit_as(actor, "deposit", "deposit", player, amount_cents)
            .await
    }

    /// Credits a player's account at the operator's command (`tresor player
    /// credit`). Returns the new balance.
    pub async fn credit(&self, player: &Player, amount_cents: i64) -> Result<i64, Error> {
        self.credit_as(Actor::Operator, player, amount_cents).await
    }

    /// [`Service::credit`], recorded in the trail as `actor`'s. Each
    /// operator's credits are capped per credit and per 24 hours
    /// ([`super::FourEyes`]), and recorded by whom: who credited an account
    /// does not approve its withdrawals.
    pub async fn credit_as(
        &self,
        actor: Actor,
        player: &Player,
        amount_cents: i64,
    ) -> Result<i64, Error> {
        let limits = self.settings.four_eyes;
        if amount_cents > limits.credit_max_cents {
            return Err(Error::CreditLimit {
                message: format!(
                    "a credit of {} is above the largest single credit, {} \
                     (--credit-max-cents, TRESOR_CREDIT_MAX_CENTS)",
                    crate::model::euros(amount_cents),
                    crate::model::euros(limits.credit_max_cents)
                ),
                setting: "credit_max_cents",
            });
        }
        self.deposit_as(actor, "credit", "credit", player, amount_cents)
            .await
    }

    async fn deposit_as(
        &self,
        actor: Actor,
        action: &'static str,
        kind: &'static str,
        player: &Player,
        amount_cents: i64,
    ) -> Result<i64, Error> {
        check_amount(amount_cents, 1)?;
        let account_id = player.account_id;
        let player_id = player.id;
        let now_ms = self.now_ms();
        let player = player.clone();
        let four_eyes = self.settings.four_eyes;
        self.write(move |conn| {
            let actor = actor.clone();
            let player = player.clone();
            Box::pin(async move {
                crate::store::accounts::refuse_money_in(conn, player_id).await?;
                let credit = action == "credit";
                let label = actor.label();
                let credited_today =
                    oversight_check(conn, &actor, credit, amount_cents, four_eyes, now_ms).await?;
                // The operator's credit is how money comes in outside demo
                // mode, so it counts against the player's cap like a deposit.
                protect::check_movement(conn, LimitKind::Deposit, &player, amount_cents, now_ms)
                    .await?;
                transfer(
                    conn,
                    DEPOSITS_ACCOUNT,
                    account_id,
                    amount_cents,
                    kind,
                    None,
                    now_ms,
                )
                .await?;
                let balance_cents = account_balance(conn, account_id).await?;
                let (request, result) = if credit {
                    oversight::record_credit(conn, player_id, &label, amount_cents, now_ms).await?;
                    // Both names: who credited (the actor) and whom.
                    (
                        json!({"player_id": player_id, "username": player.username,
                               "amount_cents": amount_cents, "by": label}),
                        json!({"balance_cents": balance_cents,
                               "credited_by_operator_24h_cents": credited_today + amount_cents}),
                    )
                } else {
                    (
                        json!({"player_id": player_id, "amount_cents": amount_cents}),
                        json!({"balance_cents": balance_cents}),
                    )
                };
                trail::append(conn, now_ms, &actor, action, request, result).await?;
                Ok(balance_cents)
            })
        })
        .await
    }
}
