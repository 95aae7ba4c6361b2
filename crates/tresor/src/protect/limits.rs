//! The caps as a player asks for them: a weekly cap in cents, parsed at the
//! edge, the two caps a player registers with, and a change of one or both.

use super::{DEFAULT_LIMIT_CENTS, MAX_LIMIT_CENTS};
use crate::error::Error;
use crate::model::LimitKind;

/// A weekly cap in cents, from 1 to [`MAX_LIMIT_CENTS`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitCents(i64);

impl LimitCents {
    pub fn parse(kind: LimitKind, cents: i64) -> Result<Self, Error> {
        if (1..=MAX_LIMIT_CENTS).contains(&cents) {
            Ok(LimitCents(cents))
        } else {
            Err(Error::Validation(format!(
                "{}_limit_cents: between 1 and {MAX_LIMIT_CENTS}",
                kind.as_str()
            )))
        }
    }

    pub fn cents(self) -> i64 {
        self.0
    }
}

/// The two caps a player starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub deposit: LimitCents,
    pub stake: LimitCents,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            deposit: LimitCents(DEFAULT_LIMIT_CENTS),
            stake: LimitCents(DEFAULT_LIMIT_CENTS),
        }
    }
}

impl Limits {
    /// The caps chosen at registration; an absent one is the default.
    pub fn parse(deposit_cents: Option<i64>, stake_cents: Option<i64>) -> Result<Self, Error> {
        let default = Limits::default();
        Ok(Limits {
            deposit: deposit_cents
                .map(|c| LimitCents::parse(LimitKind::Deposit, c))
                .transpose()?
                .unwrap_or(default.deposit),
            stake: stake_cents
                .map(|c| LimitCents::parse(LimitKind::Stake, c))
                .transpose()?
                .unwrap_or(default.stake),
        })
    }

    /// The highest caps, for accounts that move large sums (tests, bulk
    /// simulations).
    pub fn highest() -> Self {
        Limits {
            deposit: LimitCents(MAX_LIMIT_CENTS),
            stake: LimitCents(MAX_LIMIT_CENTS),
        }
    }
}

/// A requested change of one cap or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitChange {
    pub deposit: Option<LimitCents>,
    pub stake: Option<LimitCents>,
}

impl LimitChange {
    pub fn parse(deposit_cents: Option<i64>, stake_cents: Option<i64>) -> Result<Self, Error> {
        if deposit_cents.is_none() && stake_cents.is_none() {
            return Err(Error::Validation(
                "deposit_limit_cents or stake_limit_cents: give at least one".to_owned(),
            ));
        }
        Ok(LimitChange {
            deposit: deposit_cents
                .map(|c| LimitCents::parse(LimitKind::Deposit, c))
                .transpose()?,
            stake: stake_cents
                .map(|c| LimitCents::parse(LimitKind::Stake, c))
                .transpose()?,
        })
    }
}
