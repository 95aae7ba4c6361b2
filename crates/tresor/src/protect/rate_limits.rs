//! The throttles against abuse that the HTTP edge keeps in memory
//! (`http/throttle.rs`), per server: their settings and defaults.

/// Throttles against abuse, kept in memory by the HTTP edge
/// (`http/throttle.rs`), per server. Each "per minute/hour" figure is a
/// number of requests allowed at once, refilled evenly over the period named;
/// failed logins wait longer after each failure past the free ones
/// ([`FailedLogins`](super::FailedLogins)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimits {
    /// Failed logins per (username typed, address) before each further
    /// attempt of that pair waits (1 s, doubling, up to 15 minutes). The
    /// account itself is never locked.
    pub failed_logins_free_per_name_and_address: u32,
    /// Failed logins per address, whatever the names, before its attempts wait.
    pub failed_logins_free_per_address: u32,
    /// Login attempts per client address per minute.
    pub logins_per_minute_per_address: u32,
    /// Registrations per client address per hour.
    pub registrations_per_hour_per_address: u32,
    /// Purchases per player per minute.
    pub purchases_per_minute_per_player: u32,
    /// Purchases per client address per minute (many players may share an
    /// address behind a NAT, hence higher).
    pub purchases_per_minute_per_address: u32,
    /// Other requests that reach the writer (throws, logouts, deposits, cap
    /// changes, exclusions) per player per minute.
    pub actions_per_minute_per_player: u32,
    /// The same per client address (checked before the session is read).
    pub actions_per_minute_per_address: u32,
    /// Free tries (`POST /api/free/plays`, open to visitors) per client
    /// address per minute: a budget of their own, so that free tries never
    /// use up a player's purchases or actions, nor these the free tries.
    pub free_tries_per_minute_per_address: u32,
    /// Take the client address from the last `X-Forwarded-For` entry (set
    /// only behind a reverse proxy that writes it).
    pub trust_forwarded_for: bool,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            failed_logins_free_per_name_and_address: 5,
            failed_logins_free_per_address: 50,
            logins_per_minute_per_address: 30,
            registrations_per_hour_per_address: 30,
            purchases_per_minute_per_player: 120,
            purchases_per_minute_per_address: 1200,
            // Four throws a purchase, and a little more.
            actions_per_minute_per_player: 600,
            actions_per_minute_per_address: 6000,
            // A try every two seconds from each of many players behind one
            // NAT; nothing reaches the writer.
            free_tries_per_minute_per_address: 1200,
            trust_forwarded_for: false,
        }
    }
}

impl RateLimits {
    /// No practical limit: for load tests where many players share one
    /// address and play as fast as they can.
    pub fn unthrottled() -> Self {
        RateLimits {
            failed_logins_free_per_name_and_address: u32::MAX,
            failed_logins_free_per_address: u32::MAX,
            logins_per_minute_per_address: u32::MAX,
            registrations_per_hour_per_address: u32::MAX,
            purchases_per_minute_per_player: u32::MAX,
            purchases_per_minute_per_address: u32::MAX,
            actions_per_minute_per_player: u32::MAX,
            actions_per_minute_per_address: u32::MAX,
            free_tries_per_minute_per_address: u32::MAX,
            trust_forwarded_for: false,
        }
    }
}
