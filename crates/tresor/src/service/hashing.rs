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
pub(super) const DUMMY_HASH: &str = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$JtqWGUn4JF+8dWmFSkU+UeL2sbU2hSQyk4Uu6BtLvNY";

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

pub(super) fn hash_password(password: &str) -> Result<String, Error> {
    use argon2::password_hash::{PasswordHasher, SaltString, rand_core::OsRng};
    let salt = SaltString::generate(&mut OsRng);
    argon2::Argon2::default()
        .hash_password(password.as_bytes(), &salt)
        .map(|hash| hash.to_string())
        .map_err(|_| Error::Unavailable("password hashing failed"))
}

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
