//! The provider's confirmations of deposits (its webhook, or the demo's
//! sandbox in-process), applied once per transaction id: a success is
//! credited, or — over the 7-day cap, wrong amount, deposit already
//! settled, account closed, suspended, banned or excluded — recorded as
//! money to refund, never credited; a failure settles the deposit as
//! failed. The player is told by mail once the job has committed.

use super::Service;
use super::notify::Notice;
use crate::error::Error;
use crate::model::{PROVIDER_ACCOUNT, Player, TO_REFUND_ACCOUNT};
use crate::protect::{self, LimitKind};
use crate::store::Conn;
use crate::store::accounts::{self as store, DepositRow, Transfer};
use crate::trail::{self, Actor};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// The webhook's body.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    /// Our deposit id, which the provider was given.
    pub deposit_id: i64,
    /// The provider's own id of the payment: the idempotency key.
    pub transaction_id: String,
    pub amount_cents: i64,
    /// `succeeded` or `failed`.
    pub status: String,
}

/// What a confirmation did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Confirmed {
    pub deposit_id: i64,
    /// `credited`, `to_refund` or `failed`.
    pub outcome: String,
    pub reason: Option<String>,
    /// The same transaction id was confirmed before: nothing changed.
    pub replayed: bool,
}

impl Confirmation {
    /// Refuses a body no provider sends.
    fn check(&self) -> Result<(), Error> {
        if self.amount_cents <= 0
            || self.transaction_id.is_empty()
            || self.transaction_id.len() > 200
        {
            return Err(Error::Validation(
                "amount_cents must be positive and transaction_id 1 to 200 characters".to_owned(),
            ));
        }
        if !matches!(self.status.as_str(), "succeeded" | "failed") {
            return Err(Error::Validation("status: succeeded or failed".to_owned()));
        }
        Ok(())
    }
}

impl Service {
    /// Applies a confirmation whose origin is proven (the webhook's
    /// signature, or the sandbox in-process) once per transaction id.
    pub(super) async fn apply_confirmation(
        &self,
        confirmation: Confirmation,
    ) -> Result<Confirmed, Error> {
        confirmation.check()?;
        let now_ms = self.now_ms();
        let provider = self.settings.payments.provider.clone();
        let amount_cents = confirmation.amount_cents;
        let confirmed = self
            .write(move |conn| {
                let (c, provider) = (confirmation.clone(), provider.clone());
                Box::pin(async move { confirm(conn, &c, &provider, now_ms).await })
            })
            .await?;
        self.tell_confirmed(&confirmed, amount_cents).await?;
        Ok(confirmed)
    }

    /// Mails the player what a new confirmation did (nothing for a replay
    /// or a failure).
    async fn tell_confirmed(&self, confirmed: &Confirmed, amount_cents: i64) -> Result<(), Error> {
        if confirmed.replayed || confirmed.outcome == "failed" {
            return Ok(());
        }
        let notice = match &confirmed.reason {
            None => Notice::DepositCredited { amount_cents },
            Some(reason) => Notice::DepositRefunded {
                amount_cents,
                reason: reason.clone(),
            },
        };
        let deposit = store::deposit(&mut *self.db.conn().await?, confirmed.deposit_id).await?;
        if let Some(deposit) = deposit {
            self.notify(deposit.player_id, notice).await;
        }
        Ok(())
    }
}

/// The writer job of a confirmation through `provider`.
async fn confirm(
    conn: &mut Conn,
    c: &Confirmation,
    provider: &str,
    now_ms: i64,
) -> Result<Confirmed, Error> {
    if let Some((deposit_id, outcome, reason)) =
        store::payment(conn, provider, &c.transaction_id).await?
    {
        // The same confirmation again (a retry, a replay): what it did the
        // first time, and nothing more.
        return Ok(Confirmed {
            deposit_id,
            outcome,
            reason,
            replayed: true,
        });
    }
    let deposit = store::deposit(conn, c.deposit_id)
        .await?
        .ok_or(Error::NotFound)?;
    // A provider confirms only the deposits it was asked for: one asked
    // through another (before a change of provider) is not its to settle,
    // and nothing is recorded or credited.
    if deposit.provider != provider {
        return Err(Error::Validation(format!(
            "deposit {} was asked through the provider {}, not {provider}",
            deposit.id, deposit.provider
        )));
    }
    if c.status == "failed" {
        return fail(conn, deposit, c, provider, now_ms).await;
    }
    let player = store::player_by_id(conn, deposit.player_id).await?;
    let refusal = refusal(conn, &deposit, &player, c, now_ms).await?;
    settle(conn, &deposit, &player, c, provider, refusal, now_ms).await
}

/// A failed payment settles a pending deposit as failed (a settled one
/// stays as it is).
async fn fail(
    conn: &mut Conn,
    deposit: DepositRow,
    c: &Confirmation,
    provider: &str,
    now_ms: i64,
) -> Result<Confirmed, Error> {
    if deposit.state != "pending" {
        return Ok(Confirmed {
            deposit_id: deposit.id,
            outcome: deposit.state,
            reason: None,
            replayed: true,
        });
    }
    store::settle_deposit(conn, deposit.id, "failed", now_ms).await?;
    trail::append(
        conn,
        now_ms,
        &Actor::System,
        "deposit_failed",
        json!({"provider": provider, "transaction_id": c.transaction_id, "deposit_id": deposit.id}),
        json!({"state": "failed"}),
    )
    .await?;
    Ok(Confirmed {
        deposit_id: deposit.id,
        outcome: "failed".to_owned(),
        reason: None,
        replayed: false,
    })
}

/// Why a successful payment cannot be credited, if it cannot: counted
/// against the 7-day cap in this job when it can.
async fn refusal(
    conn: &mut Conn,
    deposit: &DepositRow,
    player: &Player,
    c: &Confirmation,
    now_ms: i64,
) -> Result<Option<String>, Error> {
    if deposit.state != "pending" {
        return Ok(Some("deposit_already_settled".to_owned()));
    }
    if deposit.amount_cents != c.amount_cents {
        return Ok(Some("amount_mismatch".to_owned()));
    }
    let refused = match store::refuse_money_in(conn, player.id).await {
        Ok(()) => {
            protect::check_movement(conn, LimitKind::Deposit, player, c.amount_cents, now_ms).await
        }
        Err(error) => Err(error),
    };
    let reason = match refused {
        Ok(()) => return Ok(None),
        Err(Error::AccountClosed) => "account_closed",
        Err(Error::AccountSuspended) => "account_suspended",
        Err(Error::Banned) => "banned",
        Err(Error::DuplicateAccount) => "duplicate_account",
        Err(Error::LimitReached { .. }) => "deposit_limit",
        Err(Error::Excluded { .. }) => "excluded",
        Err(other) => return Err(other),
    };
    Ok(Some(reason.to_owned()))
}

/// Moves the money in (to the player, or to refund for a `refusal`),
/// settles the deposit and records the payment and its trail record.
async fn settle(
    conn: &mut Conn,
    deposit: &DepositRow,
    player: &Player,
    c: &Confirmation,
    provider: &str,
    refusal: Option<String>,
    now_ms: i64,
) -> Result<Confirmed, Error> {
    let (outcome, credit, kind) = match &refusal {
        None => ("credited", player.account_id, "deposit"),
        Some(_) => ("to_refund", TO_REFUND_ACCOUNT, "refund_due"),
    };
    let (_, credited_balance) = store::transfer(
        conn,
        Transfer {
            debit: PROVIDER_ACCOUNT,
            credit,
            amount_cents: c.amount_cents,
            kind,
            deposit_id: Some(deposit.id),
            withdrawal_id: None,
            now_ms,
        },
    )
    .await?;
    store::settle_deposit(conn, deposit.id, outcome, now_ms).await?;
    store::insert_payment(
        conn,
        provider,
        &c.transaction_id,
        deposit.id,
        c.amount_cents,
        outcome,
        refusal.as_deref(),
        now_ms,
    )
    .await?;
    let balance = (outcome == "credited").then_some(credited_balance);
    trail::append(
        conn,
        now_ms,
        &Actor::System,
        "deposit_confirmed",
        json!({
            "provider": provider,
            "transaction_id": c.transaction_id,
            "deposit_id": deposit.id,
            "player_id": player.id,
            "amount_cents": c.amount_cents,
        }),
        json!({"outcome": outcome, "reason": refusal, "balance_cents": balance}),
    )
    .await?;
    Ok(Confirmed {
        deposit_id: deposit.id,
        outcome: outcome.to_owned(),
        reason: refusal,
        replayed: false,
    })
}
