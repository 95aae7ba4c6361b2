//! Deposits through a payment provider: the player asks for a deposit (the
//! server keeps it, pending, under its own id, and sends the player to the
//! provider's page); the provider confirms by a webhook signed with a shared
//! secret — HMAC-SHA256 over `timestamp.body`, refused outside a 5-minute
//! window — idempotent on the provider's transaction id (applied in
//! `confirmations.rs`). Nothing here knows which provider it is.

use super::Service;
use super::confirmations::{Confirmation, Confirmed};
use crate::error::Error;
use crate::model::Player;
use crate::protect::{self, LimitKind};
use crate::store::accounts::{self as store, DepositRow};
use crate::store::sql;
use crate::trail::{self, Actor};
use hmac::{Hmac, Mac};
use serde::Serialize;
use serde_json::json;
use sha2::Sha256;
use std::fmt;

/// The webhook's timestamp may be this far from the server's clock.
pub const WEBHOOK_WINDOW_S: i64 = 300;
/// The headers of the webhook: the Unix time in seconds, and the hex HMAC.
pub const TIMESTAMP_HEADER: &str = "tresor-timestamp";
pub const SIGNATURE_HEADER: &str = "tresor-signature";

/// The payment provider's settings.
#[derive(Clone)]
pub struct Payments {
    /// The provider's name, stored with each deposit and confirmation.
    pub provider: String,
    /// Where the player is sent to pay; `{deposit_id}` and `{amount_cents}`
    /// are filled in.
    pub pay_url: String,
    /// The secret shared with the provider; `None` at start becomes a random
    /// one (then only the demo's sandbox, which asks the server, can sign).
    pub webhook_secret: Option<Vec<u8>>,
}

impl fmt::Debug for Payments {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Payments")
            .field("provider", &self.provider)
            .field("pay_url", &self.pay_url)
            .finish_non_exhaustive()
    }
}

impl Default for Payments {
    fn default() -> Self {
        Payments {
            provider: "sandbox".to_owned(),
            pay_url: "/sandbox/pay?deposit={deposit_id}".to_owned(),
            webhook_secret: None,
        }
    }
}

/// The signature of a webhook body sent at `timestamp_s`: hex HMAC-SHA256
/// of `"{timestamp_s}.{body}"` under the shared secret.
pub fn sign(secret: &[u8], timestamp_s: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, timestamp_s, body).finalize().into_bytes())
}

/// The HMAC-SHA256 of `"{timestamp_s}.{body}"` under `secret`.
fn mac(secret: &[u8], timestamp_s: i64, body: &[u8]) -> Hmac<Sha256> {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(timestamp_s.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// Checks a webhook's signature (in constant time) and its window.
pub fn verify(
    secret: &[u8],
    timestamp: &str,
    signature: &str,
    body: &[u8],
    now_ms: i64,
) -> Result<(), Error> {
    let timestamp_s: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| Error::InvalidSignature)?;
    let signature = hex::decode(signature.trim()).map_err(|_| Error::InvalidSignature)?;
    mac(secret, timestamp_s, body)
        .verify_slice(&signature)
        .map_err(|_| Error::InvalidSignature)?;
    // Checked after the signature, so that only the provider learns the window.
    if (now_ms / 1000 - timestamp_s).abs() > WEBHOOK_WINDOW_S {
        return Err(Error::StaleSignature);
    }
    Ok(())
}

/// A deposit as its player sees it.
#[derive(Debug, Clone, Serialize)]
pub struct DepositView {
    pub id: i64,
    pub amount_cents: i64,
    pub provider: String,
    /// `pending`, `credited`, `to_refund` or `failed`.
    pub state: String,
    pub created_at: String,
    pub settled_at: Option<String>,
    /// Where to send the player to pay.
    pub pay_url: String,
    /// Why a deposit is to refund (`deposit_limit`, `amount_mismatch`, …).
    pub reason: Option<String>,
}

impl Service {
    /// The webhook's shared secret (random unless configured).
    pub fn webhook_secret(&self) -> &[u8] {
        self.settings
            .payments
            .webhook_secret
            .as_deref()
            .expect("set when the service starts")
    }

    fn deposit_view(&self, row: DepositRow) -> DepositView {
        DepositView {
            pay_url: self
                .settings
                .payments
                .pay_url
                .replace("{deposit_id}", &row.id.to_string())
                .replace("{amount_cents}", &row.amount_cents.to_string()),
            id: row.id,
            amount_cents: row.amount_cents,
            provider: row.provider,
            state: row.state,
            created_at: super::rfc3339(row.created_at_ms),
            settled_at: row.settled_at_ms.map(super::rfc3339),
            reason: None,
        }
    }

    /// The player asks to deposit `amount_cents` through the provider: a
    /// pending deposit, credited when the provider confirms it.
    pub async fn ask_deposit(
        &self,
        player: &Player,
        amount_cents: i64,
    ) -> Result<DepositView, Error> {
        super::money::check_amount(amount_cents, 100)?;
        let now_ms = self.now_ms();
        let provider = self.settings.payments.provider.clone();
        let player_id = player.id;
        let player = player.clone();
        let id = self
            .write(move |conn| {
                let player = player.clone();
                let provider = provider.clone();
                Box::pin(async move {
                    store::refuse_money_in(conn, player.id).await?;
                    if !store::account(conn, player.id).await?.has_identity {
                        return Err(Error::IdentityRequired);
                    }
                    // Past what is left of the 7-day cap, refused now rather
                    // than paid and refunded (it is counted when confirmed).
                    protect::refuse_past_cap(
                        conn,
                        LimitKind::Deposit,
                        player.id,
                        amount_cents,
                        now_ms,
                    )
                    .await?;
                    let id =
                        store::insert_deposit(conn, player.id, amount_cents, &provider, now_ms)
                            .await?;
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player.id, &player.username),
                        "deposit_asked",
                        json!({"amount_cents": amount_cents, "provider": provider}),
                        json!({"deposit_id": id}),
                    )
                    .await?;
                    Ok(id)
                })
            })
            .await?;
        self.deposit_of(Some(player_id), id).await
    }

    /// A deposit of the player (`None`: anyone's, for the sandbox).
    pub async fn deposit_of(&self, player_id: Option<i64>, id: i64) -> Result<DepositView, Error> {
        let row = store::deposit(&mut *self.db.conn().await?, id)
            .await?
            .filter(|row| player_id.is_none_or(|p| p == row.player_id))
            .ok_or(Error::NotFound)?;
        let mut view = self.deposit_view(row);
        if view.state == "to_refund" {
            view.reason = sql::query_scalar(
                "SELECT reason FROM payments WHERE deposit_id = $1 AND outcome = 'to_refund' \
                 ORDER BY received_at_ms LIMIT 1",
            )
            .bind(view.id)
            .fetch_optional(&mut *self.db.conn().await?)
            .await?
            .flatten();
        }
        Ok(view)
    }

    /// The provider's webhook: checks the signature, then applies the
    /// confirmation once per transaction id.
    pub async fn confirm_payment(
        &self,
        timestamp: &str,
        signature: &str,
        body: &[u8],
    ) -> Result<Confirmed, Error> {
        verify(
            self.webhook_secret(),
            timestamp,
            signature,
            body,
            self.now_ms(),
        )?;
        let confirmation: Confirmation = serde_json::from_slice(body)
            .map_err(|error| Error::Validation(format!("the webhook's body: {error}")))?;
        self.apply_confirmation(confirmation).await
    }

    /// The demo's sandbox provider pays (`succeeded: true`) or declines the
    /// deposit `deposit_id` of `player` (another player's is not found), as
    /// the provider's webhook would, in-process: no request leaves the
    /// server, so no Host header or redirect can send it elsewhere.
    pub async fn sandbox_confirm(
        &self,
        player: &Player,
        deposit_id: i64,
        succeeded: bool,
    ) -> Result<Confirmed, Error> {
        if !self.is_demo().await? {
            return Err(Error::DemoOnly);
        }
        let deposit = self.deposit_of(Some(player.id), deposit_id).await?;
        self.apply_confirmation(Confirmation {
            deposit_id,
            transaction_id: format!("sandbox-{}", hex::encode(&super::os_random_32()[..12])),
            amount_cents: deposit.amount_cents,
            status: if succeeded { "succeeded" } else { "failed" }.to_owned(),
        })
        .await
    }
}
