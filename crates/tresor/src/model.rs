//! Plain data every layer shares: who plays ([`Player`]), a username and its
//! confusable skeleton ([`Username`]), an idempotency key as parsed at the edge, the ledger's system accounts, the two kinds of
//! 7-day cap, and how cents are written as euros. It depends on nothing else
//! of the crate, so that the error type, storage, the batch and the service
//! can all use it without depending on each other.

use serde::Serialize;

/// The ledger's system accounts (created by the first migration).
pub const DEPOSITS_ACCOUNT: i64 = 1;
/// The stakes and prizes accounts of databases made before migration 0016:
/// their balances are what was staked and won before it. Since then each
/// writer stakes into and pays prizes from accounts of its own
/// (`store::writer_accounts`), and whoever wants the stakes or prizes
/// figure sums every account of the kind, these two included.
pub const STAKES_ACCOUNT: i64 = 2;
pub const PRIZES_ACCOUNT: i64 = 3;
/// The account module's system accounts (migration 0008), with negative ids
/// because positive ones already belong to players: money the payment
/// provider sent in; confirmations owed back (never credited); withdrawals
/// asked and not yet settled; withdrawals paid out; balances of closed
/// accounts kept in reserve.
pub const PROVIDER_ACCOUNT: i64 = -1;
pub const TO_REFUND_ACCOUNT: i64 = -2;
pub const PENDING_WITHDRAWALS_ACCOUNT: i64 = -3;
pub const PAID_OUT_ACCOUNT: i64 = -4;
pub const RESERVES_ACCOUNT: i64 = -5;

/// A logged-in player.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Player {
    pub id: i64,
    pub username: String,
    pub account_id: i64,
}

/// A username as typed, normalised: NFKC (full-width letters, ligatures and
/// other compatibility forms become their plain letters), trimmed. Two names
/// are the same account when their [`Username::skeleton`]s are equal, so
/// "ana", "ANA", full-width "ａｎａ" and Cyrillic "аna" are one name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Username {
    display: String,
    key: String,
    skeleton: String,
}

/// A text that is not a [`Username`] (what it must be is in the message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidUsername;

impl InvalidUsername {
    pub const RULE: &'static str = "username: 3 to 32 letters, digits, '.', '-' or '_'";
}

impl Username {
    /// Checks a username typed at registration.
    pub fn parse(text: &str) -> Result<Self, InvalidUsername> {
        let username = Username::normalise(text);
        let count = username.display.chars().count();
        let ok = (3..=32).contains(&count)
            && username
                .display
                .chars()
                .all(|c| c.is_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if ok {
            Ok(username)
        } else {
            Err(InvalidUsername)
        }
    }

    /// Any text typed at login, normalised the same way as at registration
    /// but never refused: a login with a name that could not be registered
    /// answers like any unknown name. Long texts are cut (no name is longer
    /// than 32 characters) so that normalising them costs little.
    pub fn normalise(text: &str) -> Username {
        use unicode_normalization::UnicodeNormalization;
        let cut: String = text.trim().chars().take(64).collect();
        let display: String = cut.nfkc().collect::<String>().trim().to_owned();
        // NFKC, then a full case fold ("ß" is "ss", final sigma is sigma),
        // then NFKC again, since folding can undo a normal form.
        let key: String = caseless::default_case_fold_str(&display).nfkc().collect();
        let skeleton = unicode_security::skeleton(&key).collect();
        Username {
            display,
            key,
            skeleton,
        }
    }

    /// The name as the player wrote it (NFKC, case kept).
    pub fn as_str(&self) -> &str {
        &self.display
    }

    /// The name folded: NFKC, case folded.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The confusable skeleton of the folded name (Unicode TR39): equal for
    /// names that look alike.
    pub fn skeleton(&self) -> &str {
        &self.skeleton
    }
}

/// An `Idempotency-Key`: 1 to 64 characters among `A-Z a-z 0-9 - _ :`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

/// A text that is not an [`IdempotencyKey`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidIdempotencyKey;

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self, InvalidIdempotencyKey> {
        let ok = (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
        if ok {
            Ok(IdempotencyKey(text.to_owned()))
        } else {
            Err(InvalidIdempotencyKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    Deposit,
    Stake,
}

impl LimitKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LimitKind::Deposit => "deposit",
            LimitKind::Stake => "stake",
        }
    }
}

/// Formats cents as euros: `12.50 €`.
pub fn euros(cents: i64) -> String {
    let sign = if cents < 0 { "-" } else { "" };
    let cents = cents.unsigned_abs();
    format!("{sign}{}.{:02} €", cents / 100, cents % 100)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_look_alike_have_one_skeleton() {
        let ana = Username::parse("ana").unwrap();
        for alike in ["ANA", "ａｎａ", "\u{430}na", " Ana "] {
            let other = Username::parse(alike).unwrap();
            assert_eq!(other.skeleton(), ana.skeleton(), "{alike}");
        }
        assert_eq!(Username::parse("ａｎａ").unwrap().as_str(), "ana");
        assert_eq!(Username::parse("Straße").unwrap().key(), "strasse");
        assert_ne!(Username::parse("bob").unwrap().skeleton(), ana.skeleton());
    }

    #[test]
    fn a_username_is_three_to_thirty_two_plain_characters() {
        assert!(Username::parse("ab").is_err());
        assert!(Username::parse(&"a".repeat(33)).is_err());
        assert!(Username::parse("a b c").is_err());
        assert!(
            Username::parse("a\u{200b}na").is_err(),
            "no invisible characters"
        );
        assert!(Username::parse("jean-luc.d_1").is_ok());
    }
}
