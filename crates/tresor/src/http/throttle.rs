//! Throttles against abuse at the HTTP edge, kept in memory (per server):
//! registrations and login attempts per client address, purchases and the
//! other requests that reach the writer (throws, logouts, deposits, caps,
//! exclusions) per player and per address, free tries per address (a budget
//! of their own), witnesses' cosignatures per address, each a keyed GCRA limiter from `governor`; and failed logins
//! per (name typed, address) and per address ([`FailedLogins`], growing
//! waits, the account itself never locked).

use super::AppState;
use crate::error::Error;
use crate::protect::{FailedLogins, RateLimits};
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::convert::Infallible;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::num::NonZeroU32;
use std::time::Duration;

/// The limiters of one server.
#[derive(Debug)]
pub struct Throttles {
    registrations_by_address: DefaultKeyedRateLimiter<IpAddr>,
    logins_by_address: DefaultKeyedRateLimiter<IpAddr>,
    purchases_by_address: DefaultKeyedRateLimiter<IpAddr>,
    purchases_by_player: DefaultKeyedRateLimiter<i64>,
    actions_by_address: DefaultKeyedRateLimiter<IpAddr>,
    actions_by_player: DefaultKeyedRateLimiter<i64>,
    free_tries_by_address: DefaultKeyedRateLimiter<IpAddr>,
    cosignatures_by_address: DefaultKeyedRateLimiter<IpAddr>,
    failed_logins: FailedLogins,
}

/// Cosignatures taken per client address per minute (`POST
/// /log/<writer>/cosignature`, open to anyone): a witness sends one per log
/// at each poll, every minute or so.
pub const COSIGNATURES_PER_MINUTE_PER_ADDRESS: u32 = 60;

fn at_least_one(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

/// A keyed limiter of `n` requests a minute per key (at least one).
fn per_minute<K: Hash + Eq + Clone>(n: u32) -> DefaultKeyedRateLimiter<K> {
    RateLimiter::keyed(Quota::per_minute(at_least_one(n)))
}

fn check<K: Hash + Eq + Clone>(limiter: &DefaultKeyedRateLimiter<K>, key: &K) -> Result<(), Error> {
    limiter.check_key(key).map_err(|not_until| {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        Error::RateLimited {
            retry_after_s: wait.as_secs() + u64::from(wait.subsec_nanos() > 0),
        }
    })
}

impl Throttles {
    pub fn new(limits: &RateLimits) -> Throttles {
        Throttles {
            registrations_by_address: RateLimiter::keyed(Quota::per_hour(at_least_one(
                limits.registrations_per_hour_per_address,
            ))),
            logins_by_address: per_minute(limits.logins_per_minute_per_address),
            purchases_by_address: per_minute(limits.purchases_per_minute_per_address),
            purchases_by_player: per_minute(limits.purchases_per_minute_per_player),
            actions_by_address: per_minute(limits.actions_per_minute_per_address),
            actions_by_player: per_minute(limits.actions_per_minute_per_player),
            free_tries_by_address: per_minute(limits.free_tries_per_minute_per_address),
            cosignatures_by_address: per_minute(COSIGNATURES_PER_MINUTE_PER_ADDRESS),
            failed_logins: FailedLogins::new(
                limits.failed_logins_free_per_name_and_address,
                limits.failed_logins_free_per_address,
            ),
        }
    }

    pub fn registration(&self, address: &ClientAddress) -> Result<(), Error> {
        check(&self.registrations_by_address, &address.0)
    }

    pub fn login(&self, address: &ClientAddress) -> Result<(), Error> {
        check(&self.logins_by_address, &address.0)
    }

    pub fn purchase(&self, address: &ClientAddress, player_id: i64) -> Result<(), Error> {
        check(&self.purchases_by_player, &player_id)?;
        check(&self.purchases_by_address, &address.0)
    }

    /// A throw, logout, deposit, cap change or exclusion from `address`,
    /// checked before the session is even read.
    pub fn action_by_address(&self, address: &ClientAddress) -> Result<(), Error> {
        check(&self.actions_by_address, &address.0)
    }

    /// A free try from `address`, checked before the session is read: its
    /// own budget, apart from purchases and actions (issue 45).
    pub fn free_try(&self, address: &ClientAddress) -> Result<(), Error> {
        check(&self.free_tries_by_address, &address.0)
    }

    /// A witness's cosignature from `address`, checked before its body is
    /// read or anything looked up.
    pub fn cosignature(&self, address: &ClientAddress) -> Result<(), Error> {
        check(&self.cosignatures_by_address, &address.0)
    }

    /// The same request, once its player is known.
    pub fn action_by_player(&self, player_id: i64) -> Result<(), Error> {
        check(&self.actions_by_player, &player_id)
    }

    /// A login of `name` (its skeleton) from `address`: refused while the
    /// pair or the address must wait, else counted as a failure until
    /// [`Throttles::login_succeeded`].
    pub fn login_attempt(
        &self,
        name: &str,
        address: &ClientAddress,
        now_ms: i64,
    ) -> Result<(), Error> {
        self.failed_logins.attempt(name, address.0, now_ms)
    }

    pub fn login_succeeded(&self, name: &str, address: &ClientAddress) {
        self.failed_logins.succeeded(name, address.0);
    }

    /// Forgets keys whose limiters are back to full, so memory follows the
    /// recent clients rather than every client ever seen.
    pub fn forget_idle(&self, now_ms: i64) {
        self.failed_logins.forget_idle(now_ms);
        self.actions_by_address.retain_recent();
        self.actions_by_player.retain_recent();
        self.free_tries_by_address.retain_recent();
        self.cosignatures_by_address.retain_recent();
        self.registrations_by_address.retain_recent();
        self.logins_by_address.retain_recent();
        self.purchases_by_address.retain_recent();
        self.purchases_by_player.retain_recent();
    }
}

/// Forgets idle keys now and then, for as long as the server runs.
pub async fn forget_idle_forever(
    throttles: std::sync::Arc<Throttles>,
    clock: std::sync::Arc<dyn crate::clock::Clock>,
) {
    loop {
        tokio::time::sleep(Duration::from_secs(60)).await;
        throttles.forget_idle(clock.now_ms());
    }
}

/// The client's address: the TCP peer, or the last `X-Forwarded-For` entry
/// when the server is configured to trust its reverse proxy. An IPv6 address
/// counts by its /64, the block one subscriber usually holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddress(pub IpAddr);

impl ClientAddress {
    fn of(parts: &Parts, trust_forwarded_for: bool) -> ClientAddress {
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|info| info.0.ip());
        // The last entry is the one our own proxy appended; earlier ones are
        // whatever the client claimed. A last entry that is not an address
        // is ignored, never an earlier one taken instead.
        let forwarded = trust_forwarded_for
            .then(|| {
                parts
                    .headers
                    .get_all("x-forwarded-for")
                    .iter()
                    .filter_map(|v| v.to_str().ok())
                    .flat_map(|v| v.split(','))
                    .next_back()
                    .and_then(|v| v.trim().parse::<IpAddr>().ok())
            })
            .flatten();
        // Without a peer (a router driven in-process) every request shares
        // one key.
        let address = forwarded
            .or(peer)
            .unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED));
        ClientAddress(match address {
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => IpAddr::V4(v4),
                None => {
                    let prefix = u128::from(v6) & !((1u128 << 64) - 1);
                    IpAddr::V6(Ipv6Addr::from(prefix))
                }
            },
            v4 => v4,
        })
    }
}

impl FromRequestParts<AppState> for ClientAddress {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        Ok(ClientAddress::of(
            parts,
            state.service.settings.rate_limits.trust_forwarded_for,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limiter_refuses_past_its_burst_and_says_when_to_retry() {
        let throttles = Throttles::new(&RateLimits {
            purchases_per_minute_per_player: 2,
            ..RateLimits::default()
        });
        let address = ClientAddress(IpAddr::V4(Ipv4Addr::LOCALHOST));
        assert!(throttles.purchase(&address, 1).is_ok());
        assert!(throttles.purchase(&address, 1).is_ok());
        match throttles.purchase(&address, 1) {
            Err(Error::RateLimited { retry_after_s }) => assert!((1..=30).contains(&retry_after_s)),
            other => panic!("{other:?}"),
        }
        assert!(
            throttles.purchase(&address, 2).is_ok(),
            "another player has its own budget"
        );
    }
}
