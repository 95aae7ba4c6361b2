//! Withdrawals: a verified player asks for an amount to their verified IBAN
//! and it leaves the available balance at once (to the pending-withdrawals
//! account); the operator approves it (paid out) or rejects it (back to the
//! player), or the player cancels it while it is pending. Each step is one
//! writer job with its transfer and its trail record; a withdrawal settles
//! once (the job checks it is pending, and a unique index on the transfers
//! holds it whatever the code does). Four eyes: the approver is neither an
//! operator who credited the account nor the one who verified it, unless
//! the installation has a single operator (`super::FourEyes`). A suspended
//! account's withdrawal is not approved (`account_suspended`): it waits
//! until the suspension is lifted, or is rejected.

use super::Service;
use crate::account::{Iban, Status};
use crate::error::Error;
use crate::model::{PAID_OUT_ACCOUNT, PENDING_WITHDRAWALS_ACCOUNT, Player};
use crate::store::accounts::{self as store, Transfer, WithdrawalRow};
use crate::store::{Conn, oversight};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

/// A withdrawal as the API shows it.
#[derive(Debug, Clone, Serialize)]
pub struct WithdrawalView {
    pub id: i64,
    pub amount_cents: i64,
    /// The IBAN, masked.
    pub iban: String,
    /// `pending`, `paid`, `rejected` or `cancelled`.
    pub state: String,
    pub reason: Option<String>,
    /// Asked by the account's closing.
    pub closing: bool,
    pub requested_at: String,
    pub settled_at: Option<String>,
}

impl From<WithdrawalRow> for WithdrawalView {
    fn from(row: WithdrawalRow) -> Self {
        WithdrawalView {
            id: row.id,
            amount_cents: row.amount_cents,
            iban: Iban::masked(&row.iban),
            state: row.state,
            reason: row.reason,
            closing: row.closing,
            requested_at: super::rfc3339(row.requested_at_ms),
            settled_at: row.settled_at_ms.map(super::rfc3339),
        }
    }
}

/// How a pending withdrawal ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// The operator paid it out.
    Paid,
    /// The operator refused it: the money goes back.
    Rejected,
    /// The player took it back.
    Cancelled,
}

impl Settlement {
    fn state(self) -> &'static str {
        match self {
            Settlement::Paid => "paid",
            Settlement::Rejected => "rejected",
            Settlement::Cancelled => "cancelled",
        }
    }
}

impl Service {
    /// Asks to withdraw `amount_cents` to the verified IBAN.
    pub async fn ask_withdrawal(
        &self,
        player: &Player,
        amount_cents: i64,
    ) -> Result<WithdrawalView, Error> {
        super::money::check_amount(amount_cents, 1)?;
        let now_ms = self.now_ms();
        let player = player.clone();
        let row = self
            .write(move |conn| {
                let player = player.clone();
                Box::pin(async move {
                    let account = store::account(conn, player.id).await?;
                    match (account.status, &account.iban) {
                        (Status::Closed, _) => return Err(Error::AccountClosed),
                        (Status::Verified, Some(_)) => {}
                        _ => return Err(Error::NotVerified),
                    }
                    let iban = account.iban.expect("a verified account has an IBAN");
                    let id = store::insert_withdrawal(
                        conn,
                        player.id,
                        amount_cents,
                        &iban,
                        false,
                        now_ms,
                    )
                    .await?;
                    // Refused here, with nothing written, when the balance
                    // (after any purchase of the same batch) is short.
                    let (balance_cents, _) = store::transfer(
                        conn,
                        Transfer {
                            debit: player.account_id,
                            credit: PENDING_WITHDRAWALS_ACCOUNT,
                            amount_cents,
                            kind: "withdrawal",
                            deposit_id: None,
                            withdrawal_id: Some(id),
                            now_ms,
                        },
                    )
                    .await?;
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player.id, &player.username),
                        "withdrawal_requested",
                        json!({"amount_cents": amount_cents, "iban": Iban::masked(&iban)}),
                        json!({"withdrawal_id": id, "balance_cents": balance_cents}),
                    )
                    .await?;
                    store::withdrawal(conn, id).await?.ok_or(Error::NotFound)
                })
            })
            .await?;
        Ok(row.into())
    }

    /// The player's withdrawals, newest first.
    pub async fn withdrawals_of(&self, player: &Player) -> Result<Vec<WithdrawalView>, Error> {
        let rows = store::withdrawals_of_player(&mut *self.db.conn().await?, player.id).await?;
        Ok(rows.into_iter().map(WithdrawalView::from).collect())
    }

    /// A page of the withdrawals in `state` (all when `None`) for the
    /// operator, after `cursor`: pending ones oldest first, the others
    /// newest first; and the next page's cursor.
    pub async fn list_withdrawals(
        &self,
        state: Option<&str>,
        cursor: Option<i64>,
        limit: i64,
    ) -> Result<(Vec<WithdrawalRow>, Option<i64>), Error> {
        store::withdrawal_queue(&mut *self.db.conn().await?, state, cursor, limit).await
    }

    /// The player cancels their pending withdrawal.
    pub async fn cancel_withdrawal(
        &self,
        player: &Player,
        id: i64,
    ) -> Result<WithdrawalView, Error> {
        let actor = Actor::player(player.id, &player.username);
        self.settle_withdrawal(actor, Some(player.id), id, Settlement::Cancelled, None)
            .await
    }

    /// The operator approves (paid) or rejects a pending withdrawal.
    pub async fn decide_withdrawal(
        &self,
        id: i64,
        settlement: Settlement,
        reason: Option<String>,
    ) -> Result<WithdrawalView, Error> {
        self.decide_withdrawal_as(Actor::Operator, id, settlement, reason)
            .await
    }

    /// [`Service::decide_withdrawal`], recorded in the trail as `actor`'s.
    pub async fn decide_withdrawal_as(
        &self,
        actor: Actor,
        id: i64,
        settlement: Settlement,
        reason: Option<String>,
    ) -> Result<WithdrawalView, Error> {
        self.settle_withdrawal(actor, None, id, settlement, reason)
            .await
    }

    async fn settle_withdrawal(
        &self,
        actor: Actor,
        owner: Option<i64>,
        id: i64,
        settlement: Settlement,
        reason: Option<String>,
    ) -> Result<WithdrawalView, Error> {
        let decision = Decision {
            actor,
            owner,
            id,
            settlement,
            reason,
            single_operator: self.settings.four_eyes.single_operator,
            now_ms: self.now_ms(),
        };
        let row = self
            .write(move |conn| {
                let decision = decision.clone();
                Box::pin(async move { decision.apply(conn).await })
            })
            .await?;
        let notice = match settlement {
            Settlement::Paid => Some(super::notify::Notice::WithdrawalPaid {
                amount_cents: row.amount_cents,
            }),
            Settlement::Rejected => Some(super::notify::Notice::WithdrawalRejected {
                amount_cents: row.amount_cents,
                reason: row.reason.clone().unwrap_or_default(),
            }),
            Settlement::Cancelled => None,
        };
        if let Some(notice) = notice {
            self.notify(row.player_id, notice).await;
        }
        Ok(row.into())
    }
}

/// How one pending withdrawal ends, and who decides it.
#[derive(Debug, Clone)]
struct Decision {
    actor: Actor,
    /// The player the withdrawal must be of (their cancelling), or anyone's
    /// (the operator's decision).
    owner: Option<i64>,
    id: i64,
    settlement: Settlement,
    reason: Option<String>,
    single_operator: bool,
    now_ms: i64,
}

/// Who else had a hand on the account's money: named in an approval's
/// record, and never its approver.
#[derive(Debug, Default)]
struct Hands {
    verified_by: Option<String>,
    credited_by: Vec<String>,
}

impl Decision {
    /// The writer job: checks, settles the withdrawal, moves its money and
    /// records it.
    async fn apply(&self, conn: &mut Conn) -> Result<WithdrawalRow, Error> {
        let withdrawal = store::withdrawal(conn, self.id)
            .await?
            .filter(|w| self.owner.is_none_or(|p| p == w.player_id))
            .ok_or(Error::NotFound)?;
        let hands = self.check_payable(conn, &withdrawal).await?;
        if !store::settle_withdrawal(
            conn,
            self.id,
            self.settlement.state(),
            self.reason.as_deref(),
            self.now_ms,
        )
        .await?
        {
            return Err(Error::WithdrawalNotPending {
                state: withdrawal.state,
            });
        }
        let player = store::player_by_id(conn, withdrawal.player_id).await?;
        let reserved = self.move_money(conn, &withdrawal, &player).await?;
        self.record(conn, &withdrawal, &player, &hands, reserved)
            .await?;
        store::withdrawal(conn, self.id)
            .await?
            .ok_or(Error::NotFound)
    }

    /// A payment is refused to a suspended account (the operator lifts the
    /// suspension or rejects the withdrawal) and, four eyes, to an operator
    /// who credited or verified the account; returns who did.
    async fn check_payable(
        &self,
        conn: &mut Conn,
        withdrawal: &WithdrawalRow,
    ) -> Result<Hands, Error> {
        if self.settlement != Settlement::Paid {
            return Ok(Hands::default());
        }
        let pending = withdrawal.state == "pending";
        if pending && withdrawal.suspended_at_ms.is_some() {
            return Err(Error::AccountSuspended);
        }
        let hands = Hands {
            verified_by: store::account(conn, withdrawal.player_id)
                .await?
                .verified_by,
            credited_by: oversight::creditors(conn, withdrawal.player_id).await?,
        };
        let label = self.actor.label();
        if !self.single_operator && pending {
            if hands.credited_by.contains(&label) {
                return Err(Error::FourEyes {
                    actor: label,
                    what: "credited",
                });
            }
            if hands.verified_by.as_deref() == Some(label.as_str()) {
                return Err(Error::FourEyes {
                    actor: label,
                    what: "verified",
                });
            }
        }
        Ok(hands)
    }

    /// Pays the money out, or back to the player; money back to a closed
    /// account cannot stay there: it goes to the reserves, as at closing
    /// (returns whether it did).
    async fn move_money(
        &self,
        conn: &mut Conn,
        withdrawal: &WithdrawalRow,
        player: &Player,
    ) -> Result<bool, Error> {
        let (credit, kind) = match self.settlement {
            Settlement::Paid => (PAID_OUT_ACCOUNT, "withdrawal_paid"),
            Settlement::Rejected => (player.account_id, "withdrawal_rejected"),
            Settlement::Cancelled => (player.account_id, "withdrawal_cancelled"),
        };
        store::transfer(
            conn,
            Transfer {
                debit: PENDING_WITHDRAWALS_ACCOUNT,
                credit,
                amount_cents: withdrawal.amount_cents,
                kind,
                deposit_id: None,
                withdrawal_id: Some(self.id),
                now_ms: self.now_ms,
            },
        )
        .await?;
        if self.settlement == Settlement::Paid
            || store::account(conn, player.id).await?.status != Status::Closed
        {
            return Ok(false);
        }
        super::account::reserve(conn, player, withdrawal.amount_cents, self.now_ms).await?;
        Ok(true)
    }

    /// The decision's trail record.
    async fn record(
        &self,
        conn: &mut Conn,
        withdrawal: &WithdrawalRow,
        player: &Player,
        hands: &Hands,
        reserved: bool,
    ) -> Result<(), Error> {
        let mut result = json!({"amount_cents": withdrawal.amount_cents, "reserved": reserved});
        if self.settlement == Settlement::Paid {
            result["approved_by"] = json!(self.actor.label());
            result["verified_by"] = json!(hands.verified_by);
            result["credited_by"] = json!(hands.credited_by);
            result["single_operator"] = json!(self.single_operator);
        }
        trail::append(
            conn,
            self.now_ms,
            &self.actor,
            &format!("withdrawal_{}", self.settlement.state()),
            json!({"withdrawal_id": self.id, "player_id": player.id,
                   "username": player.username, "reason": self.reason}),
            result,
        )
        .await?;
        Ok(())
    }
}
