//! Witnesses' cosignatures of checkpoints (C2SP `tlog-cosignature`,
//! `cosignature/v1`, Ed25519; docs/AUDIT.md, "Witnesses"): the witness's
//! verifier key, the signed message, the signature line added to the note,
//! made and checked. Neither `signed_note` nor `tlog_tiles` has them.

use super::{CheckError, fail};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;

/// A witness's cosignature (C2SP `tlog-cosignature`, `cosignature/v1`,
/// Ed25519): the algorithm byte of its verifier key.
pub const COSIGNATURE_ALG: u8 = 0x04;

/// A witness's verifier key, `<name>+<8 hex key id>+<base64(0x04 || key)>`,
/// checked: its id is the first 4 bytes of SHA-256(name || 0x0A || 0x04 ||
/// key).
#[derive(Clone, PartialEq, Eq)]
pub struct WitnessKey {
    text: String,
    name: String,
    id: u32,
    key: ed25519_dalek::VerifyingKey,
}

impl std::fmt::Debug for WitnessKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("WitnessKey").field(&self.text).finish()
    }
}

fn valid_key_name(name: &str) -> bool {
    !name.is_empty() && !name.contains('+') && !name.chars().any(char::is_whitespace)
}

fn witness_key_id(name: &str, public: &[u8; 32]) -> u32 {
    let mut encoded = vec![COSIGNATURE_ALG];
    encoded.extend_from_slice(public);
    signed_note::key_id(name, &encoded)
}

impl WitnessKey {
    pub fn parse(text: &str) -> Result<WitnessKey, CheckError> {
        let text = text.trim();
        let bad = |why: &str| CheckError(format!("not a witness verifier key ({why}): {text}"));
        // The base64 key may hold `+` itself: the name and id come first.
        let mut parts = text.splitn(3, '+');
        let (Some(name), Some(id), Some(key)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad("name+id+key"));
        };
        if !valid_key_name(name) {
            return Err(bad("an empty name, or spaces in it"));
        }
        if id.len() != 8 {
            return Err(bad("the key id is not 8 hex digits"));
        }
        let id = u32::from_str_radix(id, 16).map_err(|_| bad("the key id is not hexadecimal"))?;
        let bytes = BASE64
            .decode(key)
            .map_err(|_| bad("the key is not base64"))?;
        let Some((&COSIGNATURE_ALG, public)) = bytes.split_first() else {
            return Err(bad("not a cosignature/v1 key, whose first byte is 0x04"));
        };
        let public: [u8; 32] = public
            .try_into()
            .map_err(|_| bad("the key is not 32 bytes"))?;
        let key = ed25519_dalek::VerifyingKey::from_bytes(&public)
            .map_err(|_| bad("not an Ed25519 public key"))?;
        if witness_key_id(name, &public) != id {
            return Err(bad("the key id is not the one of this name and key"));
        }
        Ok(WitnessKey {
            text: text.to_owned(),
            name: name.to_owned(),
            id,
            key,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether a signature line is this witness's (its name and key id),
    /// checked or not.
    pub fn names(&self, line: &str) -> bool {
        parse_signature_line(line).is_some_and(|(name, bytes)| {
            name == self.name && bytes.len() >= 4 && bytes[..4] == self.id.to_be_bytes()
        })
    }

    /// Checks this witness's cosignature line over a checkpoint `body`;
    /// the time it was made (Unix seconds).
    pub fn verify(&self, body: &str, line: &str) -> Result<u64, CheckError> {
        let (name, bytes) = parse_signature_line(line)
            .ok_or_else(|| CheckError(format!("not a signature line: {line}")))?;
        if name != self.name || bytes.len() < 4 || bytes[..4] != self.id.to_be_bytes() {
            return fail(format!(
                "the signature line is not of the witness {}",
                self.text
            ));
        }
        if bytes.len() != 4 + 8 + 64 {
            return fail(format!(
                "the cosignature of {} is {} bytes, not a cosignature/v1 one (76)",
                self.name,
                bytes.len()
            ));
        }
        let time = u64::from_be_bytes(bytes[4..12].try_into().expect("8 bytes"));
        let signature =
            ed25519_dalek::Signature::from_bytes(&bytes[12..].try_into().expect("64 bytes"));
        self.key
            .verify_strict(&cosigned_message(body, time), &signature)
            .map_err(|_| {
                CheckError(format!(
                    "the cosignature of witness {} (time {time}) does not verify over this \
                     checkpoint",
                    self.text
                ))
            })?;
        Ok(time)
    }
}

/// `— <name> <base64>`: the name and the signature's bytes.
fn parse_signature_line(line: &str) -> Option<(&str, Vec<u8>)> {
    let rest = line.trim_end_matches('\n').strip_prefix("— ")?;
    let (name, encoded) = rest.split_once(' ')?;
    Some((name, BASE64.decode(encoded).ok()?))
}

/// What a witness signs: `cosignature/v1\ntime <T>\n` and the checkpoint's
/// body (its origin, size and root lines).
pub fn cosigned_message(body: &str, time: u64) -> Vec<u8> {
    let mut message = format!("cosignature/v1\ntime {time}\n").into_bytes();
    message.extend_from_slice(body.as_bytes());
    message
}

/// A witness: its name and Ed25519 key, cosigning checkpoints it checked.
#[derive(Clone)]
pub struct Witness {
    signing: ed25519_dalek::SigningKey,
    vkey: WitnessKey,
}

impl std::fmt::Debug for Witness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Witness({})", self.vkey.as_str())
    }
}

impl Witness {
    pub fn new(name: &str, seed: &[u8; 32]) -> Result<Witness, CheckError> {
        if !valid_key_name(name) {
            return fail(format!(
                "not a witness name (empty, or a space or a + in it): {name:?}"
            ));
        }
        let signing = ed25519_dalek::SigningKey::from_bytes(seed);
        let public = signing.verifying_key().to_bytes();
        let mut encoded = vec![COSIGNATURE_ALG];
        encoded.extend_from_slice(&public);
        let text = format!(
            "{name}+{:08x}+{}",
            witness_key_id(name, &public),
            BASE64.encode(encoded)
        );
        let vkey = WitnessKey::parse(&text)?;
        Ok(Witness { signing, vkey })
    }

    pub fn vkey(&self) -> &WitnessKey {
        &self.vkey
    }

    /// The cosignature line of checkpoint `body` at `time` (Unix seconds),
    /// without its newline.
    pub fn cosign(&self, body: &str, time: u64) -> String {
        use ed25519_dalek::Signer as _;
        let signature = self.signing.sign(&cosigned_message(body, time));
        let mut bytes = self.vkey.id.to_be_bytes().to_vec();
        bytes.extend_from_slice(&time.to_be_bytes());
        bytes.extend_from_slice(&signature.to_bytes());
        format!("— {} {}", self.vkey.name, BASE64.encode(bytes))
    }
}

/// A signed note's body (its text, ending in a newline) and its signature
/// lines.
pub fn split_note(note: &str) -> Result<(String, Vec<&str>), CheckError> {
    let (text, signatures) = note
        .split_once("\n\n")
        .ok_or_else(|| CheckError("not a signed note (no blank line)".to_owned()))?;
    Ok((format!("{text}\n"), signatures.lines().collect()))
}

/// The time `witness` cosigned the checkpoint `note` at (its cosignature
/// line checked over the note's body); an error when the note carries none
/// of this witness, or a bad one.
pub fn check_cosigned(note: &str, witness: &WitnessKey) -> Result<u64, CheckError> {
    let (body, lines) = split_note(note)?;
    let mut found = lines.iter().filter(|line| witness.names(line)).peekable();
    if found.peek().is_none() {
        return fail(format!(
            "the checkpoint carries no cosignature of the witness {}",
            witness.as_str()
        ));
    }
    let mut last = None;
    for line in found {
        match witness.verify(&body, line) {
            Ok(time) => return Ok(time),
            Err(error) => last = Some(error),
        }
    }
    Err(last.expect("one line at least"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cosignature_is_the_c2sp_one_known_answer() {
        // Computed independently (Python's `cryptography`, Ed25519).
        let seed: [u8; 32] = std::array::from_fn(|i| i as u8);
        let witness = Witness::new("witness.example/w1", &seed).unwrap();
        assert_eq!(
            witness.vkey().as_str(),
            "witness.example/w1+e75f6532+BAOhB7/zzhC+HXDdGOdLwJln5NYwm6UNXx3chmQSVTG4"
        );
        let body = "tresor/abc/server\n42\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n";
        let line = witness.cosign(body, 1_700_000_000);
        assert_eq!(
            line,
            "— witness.example/w1 519lMgAAAABlU/EArWYGyE0NlEZEkZF6kRpA45Wyt9e8o0axS5T0rYfHfhqVdgLBz3n6HciMkZ9TqnqudtTEWeDEVLhqSPoYTk1EBw=="
        );
        let key = WitnessKey::parse(witness.vkey().as_str()).unwrap();
        assert_eq!(key.verify(body, &line), Ok(1_700_000_000));
        // In a note, after the log's own signature: found and checked.
        let note = format!("{body}\n— tresor/abc AAAAAAAA\n{line}\n");
        assert_eq!(check_cosigned(&note, &key), Ok(1_700_000_000));
    }

    #[test]
    fn a_tampered_body_or_time_or_another_witness_fails() {
        let witness = Witness::new("w", &[5; 32]).unwrap();
        let key = witness.vkey().clone();
        let body = "o/server\n3\nBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=\n";
        let line = witness.cosign(body, 1_000);
        assert!(key.verify(body, &line).is_ok());
        let other_body = body.replace("\n3\n", "\n4\n");
        let error = key.verify(&other_body, &line).unwrap_err();
        assert!(error.0.contains("does not verify"), "{error}");
        // The time changed in the line: the signature no longer holds.
        let (name, mut bytes) = parse_signature_line(&line).unwrap();
        bytes[11] ^= 1;
        let retimed = format!("— {name} {}", BASE64.encode(&bytes));
        let error = key.verify(body, &retimed).unwrap_err();
        assert!(error.0.contains("time 1001"), "{error}");
        let note = format!("{other_body}\n{line}\n");
        assert!(check_cosigned(&note, &key).is_err());
        // Another witness's key finds no cosignature of its own.
        let other = Witness::new("w", &[6; 32]).unwrap();
        let note = format!("{body}\n{line}\n");
        let error = check_cosigned(&note, other.vkey()).unwrap_err();
        assert!(error.0.contains("no cosignature"), "{error}");
        // Keys that are not witness keys are refused.
        let log_key = ed25519_dalek::SigningKey::from_bytes(&[7; 32]).verifying_key();
        let log_vkey = signed_note::new_ed25519_verifier_key("x", &log_key);
        assert!(WitnessKey::parse(&log_vkey).is_err());
        let mut text = key.as_str().to_owned();
        text.replace_range(2..3, if &text[2..3] == "0" { "1" } else { "0" });
        assert!(WitnessKey::parse(&text).is_err());
    }
}
