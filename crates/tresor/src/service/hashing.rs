//! Passwords: the rule a player's password follows, and argon2id hashing
//! and checking, a few at a time (players, console accounts, the password
//! asked again before a sensitive change). A leaf of `service`.

use crate::error::Error;

/// A player's password: 10 characters at least, 1024 bytes at most;
/// `field` names it in the refusal.
pub(super) fn password_rule(field: &str, password: &str) -> Result<(), Error> {
    if password.chars().count() < 10 {
        return Err(Error::Validation(format!(
            "{field}: at least 10 characters"
        )));
    }
    if password.len() > 1024 {
        return Err(Error::Validation(format!("{field}: at most 1024 bytes")));
    }
    Ok(())
}

/// A valid argon2id hash of a random password, checked against when the
/// username is unknown so that a login takes as long either way.
const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$JtqWGUn4JF+8dWmFSkU+UeL2sbU2hSQyk4Uu6BtLvNY";

/// How much work hashing a password takes (argon2id).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PasswordCost {
    /// argon2's recommended parameters (19 MiB, two passes): every server
    /// and command.
    #[default]
    Standard,
    /// argon2's least (8 KiB, one pass), for the tests' services only: a run
    /// of the suite registers players by the thousand, each some 40 ms of
    /// CPU at the standard cost (BENCHMARKS.md, "The test suite"). Neither
    /// the command line nor the environment can ask for it.
    Least,
}

impl PasswordCost {
    fn argon2(self) -> argon2::Argon2<'static> {
        match self {
            PasswordCost::Standard => argon2::Argon2::default(),
            PasswordCost::Least => {
                let params = argon2::Params::new(
                    argon2::Params::MIN_M_COST,
                    argon2::Params::MIN_T_COST,
                    1,
                    None,
                )
                .expect("argon2's least parameters are valid");
                argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params)
            }
        }
    }

    /// A hash at this cost that no password is known to match: what a
    /// login for an unknown name is checked against, so that it takes as
    /// long as one for a known name.
    pub(super) fn dummy_hash(self) -> String {
        static LEAST: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
            hash_password("an unknown name's password", PasswordCost::Least)
                .expect("a hash at the least cost")
        });
        match self {
            PasswordCost::Standard => DUMMY_HASH.to_owned(),
            PasswordCost::Least => LEAST.clone(),
        }
    }
}

/// Each argon2 hash takes about 19 MiB and tens of milliseconds: a few at a
/// time, so that a burst of logins queues up instead of exhausting memory.
pub(super) async fn with_hashing_permit<T: Send + 'static>(
    work: impl FnOnce() -> T + Send + 'static,
) -> T {
    static HASHING: std::sync::LazyLock<tokio::sync::Semaphore> = std::sync::LazyLock::new(|| {
        tokio::sync::Semaphore::new(std::thread::available_parallelism().map_or(2, |n| n.get()) * 2)
    });
    let _permit = HASHING
        .acquire()
        .await
        .expect("the hashing semaphore is never closed");
    tokio::task::spawn_blocking(work)
        .await
        .expect("password hashing task")
}

/// A new hash of `password` at `cost`, with a random salt.
pub(super) fn hash_password(password: &str, cost: PasswordCost) -> Result<String, Error> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    cost.argon2()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|_| Error::Unavailable("password hashing failed"))
}

/// Whether `password` matches `hash`, at the cost the hash itself names.
pub(super) fn verify_password(password: &str, hash: &str) -> bool {
    use argon2::password_hash::{PasswordHash, PasswordVerifier};
    PasswordHash::new(hash)
        .map(|parsed| {
            argon2::Argon2::default()
                .verify_password(password.as_bytes(), &parsed)
                .is_ok()
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cost_hashes_with_its_own_parameters_and_checks_by_the_hashs() {
        for (cost, params) in [
            (PasswordCost::Standard, "$m=19456,t=2,p=1$"),
            (PasswordCost::Least, "$m=8,t=1,p=1$"),
        ] {
            let hash = hash_password("a long password", cost).unwrap();
            assert!(hash.starts_with("$argon2id$v=19"), "{hash}");
            assert!(hash.contains(params), "{cost:?}: {hash}");
            assert!(verify_password("a long password", &hash));
            assert!(!verify_password("another password", &hash));
            let dummy = cost.dummy_hash();
            assert!(dummy.contains(params), "{cost:?}: {dummy}");
            assert!(!verify_password("a long password", &dummy));
        }
        assert_eq!(
            super::super::Settings::default().password_cost,
            PasswordCost::Standard,
            "every server hashes at the standard cost"
        );
    }
}
