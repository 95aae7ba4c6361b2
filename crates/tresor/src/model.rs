//! Plain data every layer shares: who plays ([`Player`]), an idempotency
//! key as parsed at the edge, the ledger's system accounts, the two kinds of
//! 7-day cap, and how cents are written as euros. It depends on nothing else
//! of the crate, so that the error type, storage, the batch and the service
//! can all use it without depending on each other.

use serde::Serialize;

/// The ledger's system accounts (created by the first migration).
pub const DEPOSITS_ACCOUNT: i64 = 1;
pub const STAKES_ACCOUNT: i64 = 2;
pub const PRIZES_ACCOUNT: i64 = 3;
/// The account module's system accounts (migration 0008), with negative ids
/// because positive ones already belong to players: money the payment
/// provider sent in; confirmations owed back (never credited); withdrawals
/// asked and not yet settled; withdrawals paid out; balances of closed
/// accounts kept in reserve.
pub const PROVIDER_ACCOUNT: i64 = -1;
pub const TO_REFUND_ACCOUNT: i64 = -2;
pub const PENDING_WITHDRAWALS_ACCOUNT: i64 = -3;
pub const PAID_OUT_ACCOUNT: i64 = -4;
pub const RESERVES_ACCOUNT: i64 = -5;

/// A logged-in player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    pub id: i64,
    pub username: String,
    pub account_id: i64,
}

/// An `Idempotency-Key`: 1 to 64 characters among `A-Z a-z 0-9 - _ :`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

/// A text that is not an [`IdempotencyKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidIdempotencyKey;

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self, InvalidIdempotencyKey> {
        let ok = (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
        if ok {
            Ok(IdempotencyKey(text.to_owned()))
        } else {
            Err(InvalidIdempotencyKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    Deposit,
    Stake,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Deposit => "deposit",
            LimitKind::Stake => "stake",
        }
    }
}

/// Formats cents as euros: `12.50 €`.
pub fn euros(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02} €", cents / 100, cents % 100)
}
