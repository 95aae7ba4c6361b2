//! Failed logins, counted per (name typed, client address) and per address,
//! each pair waiting longer after every failure past its free ones. The name
//! is the typed one's confusable skeleton, whether or not an account has it,
//! so the answers (and their waits) never tell which usernames exist; and
//! the account itself is never locked, so attackers at other addresses
//! cannot keep its owner out. Kept in memory, per server, with times from
//! the service's clock.

use crate::error::Error;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;

/// A pair's or an address's failures are forgotten this long after the last.
pub const FORGET_AFTER_MS: i64 = 3600 * 1000;
/// The longest wait between two attempts of one pair (or one address).
pub const MAX_WAIT_MS: i64 = 15 * 60 * 1000;
/// Beyond this many keys, forgotten ones are dropped at once; if none is,
/// the oldest half goes (an attacker spraying names cannot grow memory).
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Pair(String, IpAddr),
    Address(IpAddr),
    /// A name whatever the address (the console's codes, per account).
    Name(String),
}

#[derive(Debug, Clone, Copy)]
struct Failures {
    count: u32,
    last_ms: i64,
}

/// The failed logins one server has seen lately.
#[derive(Debug)]
pub struct FailedLogins {
    free_per_pair: u32,
    free_per_address: u32,
    seen: Mutex<HashMap<Key, Failures>>,
}

/// `RateLimited` (in whole seconds, rounded up) while `now_ms` is before
/// `wait_until`.
fn wait_for(wait_until: i64, now_ms: i64) -> Result<(), Error> {
    if wait_until > now_ms {
        let wait_ms = (wait_until - now_ms) as u64;
        return Err(Error::RateLimited {
            retry_after_s: wait_ms.div_ceil(1000),
        });
    }
    Ok(())
}

/// One more failure of `key` at `now_ms`, its count started afresh when
/// the last one is old enough to forget.
fn count_failure(seen: &mut HashMap<Key, Failures>, key: Key, now_ms: i64) {
    let failures = seen.entry(key).or_insert(Failures {
        count: 0,
        last_ms: now_ms,
    });
    if now_ms - failures.last_ms >= FORGET_AFTER_MS {
        failures.count = 0;
    }
    failures.count = failures.count.saturating_add(1);
    failures.last_ms = now_ms;
}

/// How long after `failures` (the last at `last_ms`) the next attempt may
/// come: at once for the first `free`, then 1 s, 2 s, 4 s… up to
/// [`MAX_WAIT_MS`].
fn not_before(failures: Failures, free: u32) -> i64 {
    if failures.count < free {
        return i64::MIN;
    }
    let doublings = (failures.count - free).min(20);
    failures.last_ms + (1000i64 << doublings).min(MAX_WAIT_MS)
}

impl FailedLogins {
    pub fn new(free_per_pair: u32, free_per_address: u32) -> FailedLogins {
        FailedLogins {
            free_per_pair,
            free_per_address,
            seen: Mutex::default(),
        }
    }

    /// Refuses an attempt of `name` from `address` that comes too soon
    /// (`RateLimited`, with the seconds to wait); otherwise counts it as a
    /// failure until [`FailedLogins::succeeded`] says otherwise — counted
    /// before the password is checked, so parallel attempts cannot all pass.
    pub fn attempt(&self, name: &str, address: IpAddr, now_ms: i64) -> Result<(), Error> {
        let mut seen = self.seen.lock().expect("failed logins lock");
        let pair = Key::Pair(name.to_owned(), address);
        let by_address = Key::Address(address);
        let mut wait_until = i64::MIN;
        for (key, free) in [
            (&pair, self.free_per_pair),
            (&by_address, self.free_per_address),
        ] {
            if let Some(failures) = seen.get(key)
                && now_ms - failures.last_ms < FORGET_AFTER_MS
            {
                wait_until = wait_until.max(not_before(*failures, free));
            }
        }
        wait_for(wait_until, now_ms)?;
        if seen.len() >= MAX_KEYS {
            shrink(&mut seen, now_ms);
        }
        for key in [pair, by_address] {
            count_failure(&mut seen, key, now_ms);
        }
        Ok(())
    }

    /// Refuses an attempt for `name` alone, whatever the address, that
    /// comes too soon (`RateLimited`); otherwise counts it as a failure until
    /// [`FailedLogins::succeeded_alone`]. The console counts TOTP codes so,
    /// per account: an attacker holding the password waits however many
    /// addresses they use, and giving the password again clears nothing.
    pub fn attempt_alone(&self, name: &str, now_ms: i64) -> Result<(), Error> {
        let mut seen = self.seen.lock().expect("failed logins lock");
        let key = Key::Name(name.to_owned());
        if let Some(failures) = seen.get(&key)
            && now_ms - failures.last_ms < FORGET_AFTER_MS
        {
            wait_for(not_before(*failures, self.free_per_pair), now_ms)?;
        }
        if seen.len() >= MAX_KEYS {
            shrink(&mut seen, now_ms);
        }
        count_failure(&mut seen, key, now_ms);
        Ok(())
    }

    /// The attempt for `name` alone succeeded: its count starts afresh.
    pub fn succeeded_alone(&self, name: &str) {
        let mut seen = self.seen.lock().expect("failed logins lock");
        seen.remove(&Key::Name(name.to_owned()));
    }

    /// The attempt was the right password: the pair starts afresh, and the
    /// address's count loses the attempt [`FailedLogins::attempt`] counted.
    pub fn succeeded(&self, name: &str, address: IpAddr) {
        let mut seen = self.seen.lock().expect("failed logins lock");
        seen.remove(&Key::Pair(name.to_owned(), address));
        if let Some(failures) = seen.get_mut(&Key::Address(address)) {
            failures.count = failures.count.saturating_sub(1);
        }
    }

    /// Drops what is forgotten anyway.
    pub fn forget_idle(&self, now_ms: i64) {
        let mut seen = self.seen.lock().expect("failed logins lock");
        seen.retain(|_, failures| now_ms - failures.last_ms < FORGET_AFTER_MS);
    }

    /// Keys held (for tests and diagnosis).
    pub fn len(&self) -> usize {
        self.seen.lock().expect("failed logins lock").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn shrink(seen: &mut HashMap<Key, Failures>, now_ms: i64) {
    seen.retain(|_, failures| now_ms - failures.last_ms < FORGET_AFTER_MS);
    if seen.len() >= MAX_KEYS {
        let mut times: Vec<i64> = seen.values().map(|f| f.last_ms).collect();
        let (_, median, _) = times.select_nth_unstable(seen.len() / 2);
        let median = *median;
        seen.retain(|_, failures| failures.last_ms > median);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    const ATTACKER: IpAddr = IpAddr::V4(Ipv4Addr::new(203, 0, 113, 7));
    const OWNER: IpAddr = IpAddr::V4(Ipv4Addr::new(198, 51, 100, 1));

    fn retry(result: Result<(), Error>) -> Option<u64> {
        match result {
            Ok(()) => None,
            Err(Error::RateLimited { retry_after_s }) => Some(retry_after_s),
            Err(other) => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_pair_waits_longer_after_each_failure_past_its_free_ones() {
        let logins = FailedLogins::new(3, 1000);
        for _ in 0..3 {
            assert_eq!(retry(logins.attempt("ana", ATTACKER, 0)), None);
        }
        assert_eq!(retry(logins.attempt("ana", ATTACKER, 0)), Some(1));
        assert_eq!(retry(logins.attempt("ana", ATTACKER, 1000)), None);
        assert_eq!(retry(logins.attempt("ana", ATTACKER, 1000)), Some(2));
        assert_eq!(retry(logins.attempt("ana", ATTACKER, 3000)), None);
        assert_eq!(retry(logins.attempt("ana", ATTACKER, 3000)), Some(4));
        assert_eq!(
            retry(logins.attempt("ana", OWNER, 3000)),
            None,
            "another address is not slowed"
        );
        assert_eq!(
            retry(logins.attempt("bob", ATTACKER, 3000)),
            None,
            "another name from the attacker's address is not slowed"
        );
    }

    #[test]
    fn the_wait_stops_growing_and_is_forgotten_after_an_hour() {
        let logins = FailedLogins::new(1, 1000);
        let mut now = 0;
        let mut failures = 0;
        while failures < 30 {
            match retry(logins.attempt("ana", ATTACKER, now)) {
                Some(wait) => {
                    assert!(wait * 1000 <= MAX_WAIT_MS as u64);
                    now += wait as i64 * 1000;
                }
                None => failures += 1,
            }
        }
        assert_eq!(
            retry(logins.attempt("ana", ATTACKER, now)),
            Some(MAX_WAIT_MS as u64 / 1000)
        );
        now += FORGET_AFTER_MS;
        assert_eq!(retry(logins.attempt("ana", ATTACKER, now)), None);
        logins.forget_idle(now + FORGET_AFTER_MS);
        assert!(logins.is_empty());
    }

    #[test]
    fn the_right_password_clears_the_pair() {
        let logins = FailedLogins::new(2, 1000);
        logins.attempt("ana", OWNER, 0).unwrap();
        logins.attempt("ana", OWNER, 0).unwrap();
        logins.succeeded("ana", OWNER);
        assert_eq!(retry(logins.attempt("ana", OWNER, 0)), None);
    }

    #[test]
    fn a_name_alone_waits_whatever_the_address_until_it_succeeds() {
        let codes = FailedLogins::new(2, u32::MAX);
        assert_eq!(retry(codes.attempt_alone("staff:1", 0)), None);
        assert_eq!(retry(codes.attempt_alone("staff:1", 0)), None);
        assert_eq!(retry(codes.attempt_alone("staff:1", 0)), Some(1));
        // A password given right (another key) clears nothing here.
        codes.succeeded("staff:1", OWNER);
        assert_eq!(retry(codes.attempt_alone("staff:1", 0)), Some(1));
        assert_eq!(retry(codes.attempt_alone("staff:2", 0)), None);
        codes.succeeded_alone("staff:1");
        assert_eq!(retry(codes.attempt_alone("staff:1", 0)), None);
    }

    #[test]
    fn an_address_failing_on_many_names_waits_too() {
        let logins = FailedLogins::new(1000, 5);
        for name in ["a", "b", "c", "d", "e"] {
            assert_eq!(retry(logins.attempt(name, ATTACKER, 0)), None);
        }
        assert_eq!(retry(logins.attempt("f", ATTACKER, 0)), Some(1));
        assert_eq!(retry(logins.attempt("f", OWNER, 0)), None);
    }
}
