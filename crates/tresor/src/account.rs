//! The player account's rules, as pure functions and checked newtypes: the
//! identity given at opening (and the age it proves), the IBAN (country
//! format and mod-97), the names as the ban list and the one account per
//! person compare them (`names.rs`), the ban list's CSV, the reminder setting, and the gate a stake must pass
//! (closed, banned, provisional past its period, rules not accepted). Time
//! comes in as an argument; nothing here reads a clock or a database.

use crate::error::Error;
use serde::Serialize;

pub mod device;
pub mod documents;
mod names;
pub use names::{check_name, name_key, name_part_key, person_key};

/// How old a player must be.
pub const ADULT_AGE: i32 = 18;
/// How long a provisional account may stake unverified, by default.
pub const DEFAULT_PROVISIONAL_DAYS: i64 = 30;
/// How long the balance of a closed account is kept in reserve (six years).
pub const RESERVE_KEEP_MS: i64 = 6 * 365 * 24 * 3600 * 1000 + 2 * 24 * 3600 * 1000;

/// The identity a player gives to open an account for real money.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Identity {
    pub birth_name: String,
    pub first_names: String,
    /// `YYYY-MM-DD`.
    pub birth_date: String,
    pub birth_place: String,
    pub address: String,
    pub email: Option<String>,
}

fn field(name: &str, text: &str, max: usize) -> Result<String, Error> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() || text.chars().count() > max || text.chars().any(char::is_control) {
        return Err(Error::Validation(format!(
            "{name}: 1 to {max} characters, no control characters"
        )));
    }
    Ok(text)
}

impl Identity {
    /// Checks each field; the age is checked by [`Identity::refuse_minor`].
    pub fn parse(
        birth_name: &str,
        first_names: &str,
        birth_date: &str,
        birth_place: &str,
        address: &str,
        email: Option<&str>,
    ) -> Result<Identity, Error> {
        birth_date_of(birth_date)?;
        let email = match email.map(str::trim).filter(|e| !e.is_empty()) {
            None => None,
            Some(email) => {
                let ok = email.len() <= 254
                    && email.split_once('@').is_some_and(|(local, domain)| {
                        !local.is_empty() && domain.contains('.') && !domain.contains('@')
                    })
                    && !email.chars().any(|c| c.is_whitespace() || c.is_control());
                if !ok {
                    return Err(Error::Validation(
                        "email: an address such as ana@example.org, or nothing".to_owned(),
                    ));
                }
                Some(email.to_owned())
            }
        };
        Ok(Identity {
            birth_name: check_name("birth_name", birth_name, 100)?,
            first_names: check_name("first_names", first_names, 200)?,
            birth_date: birth_date.to_owned(),
            birth_place: field("birth_place", birth_place, 200)?,
            address: field("address", address, 500)?,
            email,
        })
    }

    /// The birth name and first names as the ban list compares them.
    pub fn name_key(&self) -> String {
        name_key(&self.birth_name, &self.first_names)
    }

    /// The person this identity is: its name key and birth date. One
    /// account per person (`docs/ACCOUNT.md`).
    pub fn person_key(&self) -> String {
        person_key(&self.name_key(), &self.birth_date)
    }

    /// Refuses a player under [`ADULT_AGE`] on the day `now_ms` falls on (UTC).
    pub fn refuse_minor(&self, now_ms: i64) -> Result<(), Error> {
        let born = birth_date_of(&self.birth_date)?;
        let today = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now_ms) * 1_000_000)
            .map_err(|_| Error::Validation("the clock is out of range".to_owned()))?
            .date();
        let mut age = today.year() - born.year();
        if (today.month() as u8, today.day()) < (born.month() as u8, born.day()) {
            age -= 1;
        }
        if age < ADULT_AGE {
            return Err(Error::Minor);
        }
        Ok(())
    }
}

fn birth_date_of(text: &str) -> Result<time::Date, Error> {
    let format = time::macros::format_description!("[year]-[month]-[day]");
    time::Date::parse(text, &format)
        .ok()
        .filter(|d| d.year() >= 1900)
        .ok_or_else(|| Error::Validation("birth_date: a date as YYYY-MM-DD".to_owned()))
}

/// One line of the ban list: a name key and a birth date, and the names
/// as the list gives them (kept to key them again if the normalisation
/// changes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BanEntry {
    pub name_key: String,
    pub birth_date: String,
    pub birth_name: String,
    pub first_names: String,
}

/// Parses the ban list's CSV: a header `birth_name,first_names,birth_date`,
/// then one person a line (fields may be double-quoted). Entries of one
/// key and birth date are folded together.
pub fn parse_ban_csv(text: &str) -> Result<Vec<BanEntry>, Error> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let header = lines.next().map(|(_, l)| csv_fields(l)).unwrap_or_default();
    let expected = ["birth_name", "first_names", "birth_date"];
    if header.iter().map(|h| h.trim().to_lowercase()).ne(expected) {
        return Err(Error::Validation(
            "the ban list's first line must be: birth_name,first_names,birth_date".to_owned(),
        ));
    }
    let mut entries = Vec::new();
    for (number, line) in lines {
        let fields = csv_fields(line);
        let [birth_name, first_names, birth_date] = fields.as_slice() else {
            return Err(Error::Validation(format!(
                "ban list line {}: three fields expected",
                number + 1
            )));
        };
        let birth_date = birth_date.trim();
        birth_date_of(birth_date).map_err(|_| {
            Error::Validation(format!(
                "ban list line {}: birth_date must be YYYY-MM-DD",
                number + 1
            ))
        })?;
        entries.push(BanEntry {
            name_key: name_key(birth_name, first_names),
            birth_date: birth_date.to_owned(),
            birth_name: birth_name.trim().to_owned(),
            first_names: first_names.trim().to_owned(),
        });
    }
    entries.sort();
    entries.dedup_by(|a, b| a.name_key == b.name_key && a.birth_date == b.birth_date);
    Ok(entries)
}

fn csv_fields(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                fields.last_mut().expect("a field").push('"');
            }
            '"' => quoted = !quoted,
            ',' if !quoted => fields.push(String::new()),
            c => fields.last_mut().expect("a field").push(c),
        }
    }
    fields
}

/// An IBAN whose country format and mod-97 check digits hold, kept without
/// spaces, in capitals.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Iban(String);

/// The IBAN lengths of the SEPA countries.
const IBAN_LENGTHS: &[(&str, usize)] = &[
    ("AD", 24),
    ("AT", 20),
    ("BE", 16),
    ("BG", 22),
    ("CH", 21),
    ("CY", 28),
    ("CZ", 24),
    ("DE", 22),
    ("DK", 18),
    ("EE", 20),
    ("ES", 24),
    ("FI", 18),
    ("FR", 27),
    ("GB", 22),
    ("GI", 23),
    ("GR", 27),
    ("HR", 21),
    ("HU", 28),
    ("IE", 22),
    ("IS", 26),
    ("IT", 27),
    ("LI", 21),
    ("LT", 20),
    ("LU", 20),
    ("LV", 21),
    ("MC", 27),
    ("MT", 31),
    ("NL", 18),
    ("NO", 15),
    ("PL", 28),
    ("PT", 25),
    ("RO", 24),
    ("SE", 24),
    ("SI", 19),
    ("SK", 24),
    ("SM", 27),
    ("VA", 22),
];

impl Iban {
    pub fn parse(text: &str) -> Result<Iban, Error> {
        let iban: String = text
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_uppercase();
        let invalid = |why: &str| Error::Validation(format!("iban: {why}"));
        if !iban.is_ascii() || iban.len() < 5 {
            return Err(invalid("not an IBAN"));
        }
        let country = &iban[..2];
        let Some(&(_, length)) = IBAN_LENGTHS.iter().find(|(code, _)| *code == country) else {
            return Err(invalid("the country is not one of the SEPA countries"));
        };
        if iban.len() != length {
            return Err(invalid(&format!(
                "an IBAN of {country} has {length} characters"
            )));
        }
        if !iban[2..4].bytes().all(|b| b.is_ascii_digit())
            || !iban[4..].bytes().all(|b| b.is_ascii_alphanumeric())
        {
            return Err(invalid("two check digits, then letters and digits"));
        }
        // ISO 13616: the first four characters moved to the end, letters as
        // 10..35, the number modulo 97 is 1.
        let rearranged = iban[4..].bytes().chain(iban[..4].bytes());
        let mut remainder = 0u32;
        for b in rearranged {
            let value = if b.is_ascii_digit() {
                u32::from(b - b'0')
            } else {
                u32::from(b - b'A') + 10
            };
            remainder = if value >= 10 {
                (remainder * 100 + value) % 97
            } else {
                (remainder * 10 + value) % 97
            };
        }
        if remainder != 1 {
            return Err(invalid("the check digits do not match (mod 97)"));
        }
        Ok(Iban(iban))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The IBAN as shown back: the country, then only the last four characters.
    pub fn masked(text: &str) -> String {
        let tail = &text[text.len().saturating_sub(4)..];
        format!("{} •••• {tail}", &text[..text.len().min(4)])
    }
}

/// A time reminder every N minutes of play, 5 to 240, or none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReminderMinutes(Option<i64>);

impl ReminderMinutes {
    pub fn parse(minutes: Option<i64>) -> Result<Self, Error> {
        match minutes {
            Some(m) if !(5..=240).contains(&m) => Err(Error::Validation(
                "every_minutes: from 5 to 240, or null for no reminder".to_owned(),
            )),
            m => Ok(ReminderMinutes(m)),
        }
    }

    pub fn minutes(self) -> Option<i64> {
        self.0
    }
}

/// An account's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Provisional,
    Verified,
    Closed,
}

impl Status {
    pub fn parse(text: &str) -> Status {
        match text {
            "verified" => Status::Verified,
            "closed" => Status::Closed,
            _ => Status::Provisional,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Provisional => "provisional",
            Status::Verified => "verified",
            Status::Closed => "closed",
        }
    }
}

/// What a stake must pass on the account's side, read with the caps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StakeGate {
    pub closed: bool,
    /// Suspended by the operator.
    pub suspended: bool,
    pub banned: bool,
    /// A person's second account (opened before one account per person).
    pub duplicate: bool,
    /// A provisional account with an identity stakes until then.
    pub provisional_until_ms: Option<i64>,
    /// When the account became provisional (its opening).
    pub provisional_since_ms: i64,
    /// The rules version the player accepted, and the one in force.
    pub rules_accepted: i64,
    pub rules_current: i64,
}

impl StakeGate {
    /// Refuses a stake at `now_ms` that the account's state forbids.
    pub fn check(&self, now_ms: i64) -> Result<(), Error> {
        if self.closed {
            return Err(Error::AccountClosed);
        }
        if self.suspended {
            return Err(Error::AccountSuspended);
        }
        if self.banned {
            return Err(Error::Banned);
        }
        if self.duplicate {
            return Err(Error::DuplicateAccount);
        }
        if let Some(until_ms) = self.provisional_until_ms.filter(|&t| t <= now_ms) {
            return Err(Error::VerificationRequired {
                since_ms: self.provisional_since_ms,
                until_ms,
            });
        }
        if self.rules_accepted < self.rules_current {
            return Err(Error::RulesNotAccepted {
                version: self.rules_current,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ibans_with_good_check_digits_parse_and_others_do_not() {
        assert!(Iban::parse("FR76 3000 6000 0112 3456 7890 189").is_ok());
        assert!(Iban::parse("DE89370400440532013000").is_ok());
        assert!(Iban::parse("FR76 3000 6000 0112 3456 7890 188").is_err());
        assert!(Iban::parse("FR76 3000 6000 0112 3456 7890 18").is_err());
        assert!(Iban::parse("XX00 1234").is_err());
    }

    #[test]
    fn a_player_is_of_age_from_their_eighteenth_birthday() {
        let identity = |born: &str| Identity::parse("A", "B", born, "C", "D", None).unwrap();
        // 2026-01-01T00:00:00Z
        let now = 1_767_225_600_000;
        assert!(identity("2008-01-01").refuse_minor(now).is_ok());
        assert!(matches!(
            identity("2008-01-02").refuse_minor(now),
            Err(Error::Minor)
        ));
    }

    #[test]
    fn the_ban_list_reads_quoted_fields_and_refuses_a_bad_header() {
        let list = parse_ban_csv(
            "birth_name,first_names,birth_date\n\"Martin, dit Bob\",Paul,1970-05-01\n",
        )
        .unwrap();
        assert_eq!(list[0].name_key, name_key("Martin dit Bob", "Paul"));
        assert_eq!(list[0].birth_name, "Martin, dit Bob");
        assert!(parse_ban_csv("name,date\n").is_err());
    }
}
