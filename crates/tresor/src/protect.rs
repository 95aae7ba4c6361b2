//! Player protection (décret n° 2010-518, art. 16): the 7-day caps on
//! deposits and on stakes that each player sets, and self-exclusion; and
//! the throttles against abuse that the HTTP edge applies.
//!
//! The caps are checked, and the movement counted, inside the writer job
//! that moves the money, so that two concurrent requests cannot both slip
//! under a cap. Lowering a cap is immediate; raising
//! it waits 48 hours. An exclusion ends every session of the player at once
//! and can only be lengthened.
//!
//! Its rooms: `limits` (the caps as asked), `rule` (one cap's change over
//! time), `stored` (the `protections` row), `window` (the movements of the
//! last seven days and the refusals they decide), `allowance` (the same
//! for a whole batch of purchases), `view` (what the player sees and
//! changes), `exclusion`, `logins` (failed logins' waits) and `rate_limits`.

pub use crate::model::{LimitKind, euros};

mod allowance;
mod exclusion;
mod limits;
mod logins;
mod rate_limits;
mod rule;
mod stored;
mod view;
mod window;

pub(crate) use allowance::{StakeAllowance, read_stake_allowances, stake_allowances};
pub use exclusion::ExclusionLength;
pub(crate) use exclusion::exclude;
pub use limits::{LimitCents, LimitChange, Limits};
pub use logins::FailedLogins;
pub use rate_limits::RateLimits;
pub(crate) use stored::insert_limits;
pub use view::{CapView, LimitsView, PendingView};
pub(crate) use view::{change_limits, protection};
pub(crate) use window::{check_movement, refuse_if_excluded, refuse_past_cap};

/// The caps are rolling: a movement counts for seven days.
pub const WINDOW_MS: i64 = 7 * 24 * 3600 * 1000;
/// A raised cap applies this long after it is asked for.
pub const RAISE_DELAY_MS: i64 = 48 * 3600 * 1000;
/// The cap of a player who registers without choosing one: 500 €.
pub const DEFAULT_LIMIT_CENTS: i64 = 50_000;
/// The highest cap a player may choose: 100,000 € in 7 days, a guard against
/// typing mistakes rather than a policy.
pub const MAX_LIMIT_CENTS: i64 = 10_000_000;
/// The longest exclusion the operator may type in days (ten years).
pub const MAX_EXCLUSION_DAYS: i64 = 3650;
