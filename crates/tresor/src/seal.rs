//! Block secrets at rest: sealed with XChaCha20-Poly1305 under a key kept
//! outside the database, so that whoever reads the database file, a backup or
//! a replica cannot compute the outcomes of units still on sale.
//!
//! A sealed secret is `nonce (24 bytes) || ciphertext and tag (48 bytes)`;
//! its associated data is the block's id, so a sealed secret copied onto
//! another block does not open. The database also keeps a *key check*: a
//! known text sealed under the key, so that a wrong key is refused at start,
//! before anything is read or written with it.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use std::path::{Path, PathBuf};
use tresor_game::BlockSecret;

const NONCE_LEN: usize = 24;
/// The associated data's prefix: a sealed secret is a block secret of this
/// format, never anything else sealed under the same key.
const BLOCK_CONTEXT: &[u8] = b"tresor block secret v1:";
const CHECK_CONTEXT: &[u8] = b"tresor key check v1";
const CHECK_TEXT: &[u8] = b"L'Ile au Tresor: the secrets key";

/// Why a secret or the key could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error(
        "wrong secrets key: the block secrets of this database were sealed with another key \
         (give the right one with --secrets-key-file or TRESOR_SECRETS_KEY)"
    )]
    WrongKey,
    #[error("the sealed secret of block {0} does not open: it was changed or moved")]
    Corrupt(i64),
    #[error("{0}")]
    Key(String),
}

/// The 32-byte key that seals block secrets. `Debug` hides it.
#[derive(Clone)]
pub struct SecretsKey(chacha20poly1305::Key);

impl std::fmt::Debug for SecretsKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretsKey(..)")
    }
}

impl SecretsKey {
    pub fn from_bytes(bytes: [u8; 32]) -> SecretsKey {
        SecretsKey(bytes.into())
    }

    /// A fresh key from the operating system's CSPRNG.
    pub fn generate() -> SecretsKey {
        let mut bytes = [0u8; 32];
        getrandom::fill(&mut bytes).expect("the operating system's random generator works");
        SecretsKey::from_bytes(bytes)
    }

    /// A key written as 64 hexadecimal digits (surrounding spaces ignored).
    pub fn parse_hex(text: &str) -> Result<SecretsKey, SealError> {
        let bytes = hex::decode(text.trim())
            .ok()
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or_else(|| {
                SealError::Key("a secrets key is 64 hexadecimal digits (32 bytes)".to_owned())
            })?;
        Ok(SecretsKey::from_bytes(bytes))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    fn cipher(&self) -> XChaCha20Poly1305 {
        XChaCha20Poly1305::new(&self.0)
    }

    fn seal_raw(&self, aad: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system's random generator works");
        let sealed = self
            .cipher()
            .encrypt(XNonce::from_slice(&nonce), Payload { msg, aad })
            .expect("XChaCha20-Poly1305 seals any short message");
        [nonce.as_slice(), &sealed].concat()
    }

    fn open_raw(&self, aad: &[u8], sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, msg) = sealed.split_at(NONCE_LEN);
        self.cipher()
            .decrypt(XNonce::from_slice(nonce), Payload { msg, aad })
            .ok()
    }

    /// `secret` sealed for block `block_id` (a fresh random nonce each time).
    pub fn seal(&self, block_id: i64, secret: &BlockSecret) -> Vec<u8> {
        self.seal_raw(&block_aad(block_id), secret.as_bytes())
    }

    /// Opens what [`SecretsKey::seal`] sealed for the same block.
    pub fn open(&self, block_id: i64, sealed: &[u8]) -> Result<BlockSecret, SealError> {
        let bytes = self
            .open_raw(&block_aad(block_id), sealed)
            .and_then(|b| <[u8; 32]>::try_from(b).ok())
            .ok_or(SealError::Corrupt(block_id))?;
        Ok(BlockSecret::from_bytes(bytes))
    }

    /// `secret` sealed for row `id` of what `purpose` names (`b"staff totp"`:
    /// a console account's TOTP secret), never openable as a block secret.
    pub fn seal_for(&self, purpose: &[u8], id: i64, secret: &[u8]) -> Vec<u8> {
        self.seal_raw(&purpose_aad(purpose, id), secret)
    }

    /// Opens what [`SecretsKey::seal_for`] sealed for the same purpose and row.
    pub fn open_for(&self, purpose: &[u8], id: i64, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        self.open_raw(&purpose_aad(purpose, id), sealed)
            .ok_or(SealError::Corrupt(id))
    }

    /// The key check the database keeps (hex): a known text sealed under this key.
    pub fn check_value(&self) -> String {
        hex::encode(self.seal_raw(CHECK_CONTEXT, CHECK_TEXT))
    }

    /// Whether `check` (from [`SecretsKey::check_value`]) was made with this key.
    pub fn verify_check(&self, check: &str) -> Result<(), SealError> {
        let sealed = hex::decode(check.trim()).map_err(|_| SealError::WrongKey)?;
        match self.open_raw(CHECK_CONTEXT, &sealed) {
            Some(text) if text == CHECK_TEXT => Ok(()),
            _ => Err(SealError::WrongKey),
        }
    }
}

fn purpose_aad(purpose: &[u8], id: i64) -> Vec<u8> {
    [b"tresor sealed v1:", purpose, b":", &id.to_be_bytes()].concat()
}

fn block_aad(block_id: i64) -> Vec<u8> {
    [BLOCK_CONTEXT, &block_id.to_be_bytes()].concat()
}

/// Where the key comes from: given as hex (the environment), or a file.
#[derive(Debug, Clone)]
pub enum KeySource {
    Hex(String),
    File(PathBuf),
}

impl KeySource {
    /// Reads the key. A missing file is created (mode 0600) with a fresh key
    /// only when `may_create` says so: the database has no key check yet (it
    /// is new, or from before secrets were sealed). Otherwise a missing file
    /// is an error, never a new key that would not open the secrets.
    pub fn load(&self, may_create: bool) -> Result<SecretsKey, SealError> {
        match self {
            KeySource::Hex(text) => SecretsKey::parse_hex(text)
                .map_err(|e| SealError::Key(format!("TRESOR_SECRETS_KEY: {e}"))),
            KeySource::File(path) => match std::fs::read_to_string(path) {
                Ok(text) => {
                    warn_if_readable_by_others(path);
                    SecretsKey::parse_hex(&text)
                        .map_err(|e| SealError::Key(format!("{}: {e}", path.display())))
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound && may_create => {
                    let key = SecretsKey::generate();
                    write_key_file(path, &key)?;
                    tracing::warn!(
                        path = %path.display(),
                        "created a new secrets key: keep it safe and out of the database's backups; \
                         without it no block secret can be read"
                    );
                    Ok(key)
                }
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                    Err(SealError::Key(format!(
                        "no secrets key at {}: this database's block secrets are sealed; \
                         give its key with --secrets-key-file or TRESOR_SECRETS_KEY",
                        path.display()
                    )))
                }
                Err(error) => Err(SealError::Key(format!(
                    "cannot read the secrets key {}: {error}",
                    path.display()
                ))),
            },
        }
    }
}

/// Writes `key` to a new file readable by its owner only; refuses to
/// overwrite an existing file.
pub fn write_key_file(path: &Path, key: &SecretsKey) -> Result<(), SealError> {
    let fail = |error: std::io::Error| {
        SealError::Key(format!(
            "cannot write the secrets key {}: {error}",
            path.display()
        ))
    };
    crate::private::write_key_file(path, &key.to_hex()).map_err(fail)
}

fn warn_if_readable_by_others(path: &Path) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if let Ok(meta) = std::fs::metadata(path)
            && meta.permissions().mode() & 0o077 != 0
        {
            tracing::warn!(path = %path.display(), "the secrets key file is readable by others: chmod 600 it");
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_secret_opens_only_with_its_key_and_on_its_block() {
        let key = SecretsKey::generate();
        let secret = BlockSecret::from_bytes([7; 32]);
        let sealed = key.seal(3, &secret);
        assert_eq!(sealed.len(), 72);
        assert!(!sealed.windows(32).any(|w| w == secret.as_bytes()));
        assert_eq!(key.open(3, &sealed).unwrap().as_bytes(), secret.as_bytes());
        assert!(key.open(4, &sealed).is_err(), "moved to another block");
        assert!(
            SecretsKey::generate().open(3, &sealed).is_err(),
            "another key"
        );
    }

    #[test]
    fn the_key_check_tells_the_right_key_from_a_wrong_one() {
        let key = SecretsKey::generate();
        let check = key.check_value();
        assert!(key.verify_check(&check).is_ok());
        assert!(matches!(
            SecretsKey::generate().verify_check(&check),
            Err(SealError::WrongKey)
        ));
    }
}
