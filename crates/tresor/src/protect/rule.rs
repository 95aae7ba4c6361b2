//! The rule of one cap: lowering applies at once, a raise waits 48 hours
//! (and replaces any raise still waiting).

use super::RAISE_DELAY_MS;
use super::limits::LimitCents;
use crate::clock::rfc3339;
use serde_json::json;

/// One cap as stored: its value, and a raise waiting for its time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cap {
    pub(super) limit_cents: i64,
    /// A raise waiting: (its cents, when it applies).
    pub(super) pending: Option<(i64, i64)>,
}

impl Cap {
    /// A cap of `limit_cents` with no raise waiting.
    pub(super) fn fixed(limit_cents: i64) -> Cap {
        Cap {
            limit_cents,
            pending: None,
        }
    }

    /// The cap in force at `now_ms`: a pending raise whose time has come.
    pub(super) fn settled(self, now_ms: i64) -> Cap {
        match self.pending {
            Some((cents, at_ms)) if at_ms <= now_ms => Cap {
                limit_cents: cents,
                pending: None,
            },
            _ => self,
        }
    }

    /// Lowering (or keeping) applies at once and drops a pending raise; a
    /// raise waits [`RAISE_DELAY_MS`] and replaces any pending one.
    pub(super) fn changed(self, to: LimitCents, now_ms: i64) -> Cap {
        let current = self.settled(now_ms);
        if to.cents() <= current.limit_cents {
            Cap {
                limit_cents: to.cents(),
                pending: None,
            }
        } else {
            Cap {
                limit_cents: current.limit_cents,
                pending: Some((to.cents(), now_ms + RAISE_DELAY_MS)),
            }
        }
    }

    /// The cap as the trail records it.
    pub(super) fn to_json(self) -> serde_json::Value {
        json!({
            "limit_cents": self.limit_cents,
            "pending_cents": self.pending.map(|(c, _)| c),
            "pending_at": self.pending.map(|(_, t)| rfc3339(t)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LimitKind;

    fn cents(cents: i64) -> LimitCents {
        LimitCents::parse(LimitKind::Stake, cents).expect("a cap")
    }

    #[test]
    fn a_lowered_cap_applies_at_once_and_a_raised_one_after_48_hours() {
        let cap = Cap::fixed(10_000);
        let lowered = cap.changed(cents(5_000), 0);
        assert_eq!(lowered.settled(0).limit_cents, 5_000);
        let raised = lowered.changed(cents(20_000), 0);
        assert_eq!(raised.settled(RAISE_DELAY_MS - 1).limit_cents, 5_000);
        assert_eq!(raised.settled(RAISE_DELAY_MS).limit_cents, 20_000);
        // A new change replaces the pending raise.
        assert_eq!(raised.changed(cents(4_000), 1).pending, None);
    }
}
