//! The log's signing key (docs/AUDIT.md, "Keys"): an Ed25519 key kept
//! outside the database, as the secrets key is (a file made 0600, or the
//! environment). Its C2SP note key name is `tresor/<installation id>`; its
//! verifier key ("vkey") is `<name>+<8 hex key id>+<base64(0x01 || public key)>`.

use base64::Engine as _;
use signed_note::{Note, Signer, StandardSigner};
use std::path::{Path, PathBuf};
use tlog_tiles::{Checkpoint, Hash};

/// An Ed25519 signing key's 32-byte seed, before it is named.
#[derive(Clone)]
pub struct LogSeed([u8; 32]);

impl std::fmt::Debug for LogSeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LogSeed(…)")
    }
}

impl LogSeed {
    pub fn generate() -> LogSeed {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).expect("the operating system's random generator works");
        LogSeed(seed)
    }

    /// 64 hex digits.
    pub fn parse_hex(text: &str) -> Result<LogSeed, String> {
        let bytes = hex::decode(text.trim()).map_err(|_| "not hexadecimal".to_owned())?;
        let seed: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "not 32 bytes (64 hex digits)".to_owned())?;
        Ok(LogSeed(seed))
    }

    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The seed's 32 bytes (a witness's key: `tresor audit watch
    /// --witness-key`).
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// This seed as the signing key of `installation`.
    pub fn named(&self, installation: &str) -> LogKey {
        LogKey::new(&key_name(installation), self)
    }
}

/// The installation's key name: `tresor/<installation id>`.
pub fn key_name(installation: &str) -> String {
    format!("tresor/{installation}")
}

/// A signing key with its name, ready to sign checkpoints.
#[derive(Clone)]
pub struct LogKey {
    signer: StandardSigner,
    vkey: String,
}

impl std::fmt::Debug for LogKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LogKey({})", self.vkey)
    }
}

impl LogKey {
    fn new(name: &str, seed: &LogSeed) -> LogKey {
        let signing = ed25519_dalek::SigningKey::from_bytes(&seed.0);
        let vkey = signed_note::new_ed25519_verifier_key(name, &signing.verifying_key());
        let mut encoded = vec![1u8];
        encoded.extend_from_slice(&seed.0);
        let id = vkey.split('+').nth(1).expect("name+id+key");
        let skey = format!(
            "PRIVATE+KEY+{name}+{id}+{}",
            base64::engine::general_purpose::STANDARD.encode(encoded)
        );
        let signer = StandardSigner::new(&skey).expect("a well-formed Ed25519 signer key");
        LogKey { signer, vkey }
    }

    /// The verifier key anyone checks checkpoints with.
    pub fn vkey(&self) -> &str {
        &self.vkey
    }

    /// The signed note of the C2SP checkpoint `origin`, `size`, `root`.
    pub fn sign_checkpoint(&self, origin: &str, size: u64, root: Hash) -> String {
        let body = Checkpoint::new(origin, size, root, "")
            .expect("an origin line")
            .to_bytes();
        let mut note = Note::new(&body, &[]).expect("a checkpoint is a valid note text");
        note.add_sigs(&[&self.signer as &dyn Signer])
            .expect("Ed25519 signing does not fail");
        String::from_utf8(note.to_bytes()).expect("a note is UTF-8")
    }
}

/// Where the log key comes from: the environment (hex) or a file.
#[derive(Debug, Clone)]
pub enum LogKeySource {
    Hex(String),
    File(PathBuf),
}

impl LogKeySource {
    /// Reads the seed; `Ok(None)` when the file does not exist.
    pub fn load(&self) -> Result<Option<LogSeed>, String> {
        match self {
            LogKeySource::Hex(text) => LogSeed::parse_hex(text)
                .map(Some)
                .map_err(|e| format!("TRESOR_LOG_KEY: {e}")),
            LogKeySource::File(path) => match std::fs::read_to_string(path) {
                Ok(text) => LogSeed::parse_hex(&text)
                    .map(Some)
                    .map_err(|e| format!("{}: {e}", path.display())),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(error) => Err(format!(
                    "cannot read the log key {}: {error}",
                    path.display()
                )),
            },
        }
    }
}

/// Writes `seed` to a new file readable by its owner only; refuses to
/// overwrite an existing file.
pub fn write_key_file(path: &Path, seed: &LogSeed) -> Result<(), String> {
    let fail =
        |error: std::io::Error| format!("cannot write the log key {}: {error}", path.display());
    crate::private::write_key_file(path, &seed.to_hex()).map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use signed_note::{StandardVerifier, VerifierList};

    #[test]
    fn a_checkpoint_verifies_with_its_vkey_only() {
        let key = LogSeed::generate().named("abc");
        assert!(key.vkey().starts_with("tresor/abc+"));
        let note = key.sign_checkpoint("tresor/abc/server", 3, Hash([7; 32]));
        assert!(note.starts_with("tresor/abc/server\n3\nBwcH"));
        let parsed = Note::from_bytes(note.as_bytes()).unwrap();
        let good = VerifierList::new(vec![Box::new(StandardVerifier::new(key.vkey()).unwrap())]);
        assert!(parsed.verify(&good).is_ok());
        let other = LogSeed::generate().named("abc");
        let bad = VerifierList::new(vec![Box::new(StandardVerifier::new(other.vkey()).unwrap())]);
        assert!(parsed.verify(&bad).is_err());
    }
}
