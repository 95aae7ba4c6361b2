//! The console's staff, pure: their names, roles and permissions
//! (`docs/CONSOLE.md`), and the second factor, TOTP (RFC 6238: HMAC-SHA1,
//! 6 digits, 30-second steps, one step of drift either way, each step's code
//! accepted once), its `otpauth://` URI and its QR code as SVG. No I/O.

use hmac::{Hmac, Mac};
use serde::Serialize;

/// What a console account may do. Each endpoint needs one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Permission {
    /// The dashboard, the report, emissions and blocks (read).
    Dashboard,
    /// Create and close emissions, suspend and resume blocks.
    Emissions,
    /// Search players, their account and statement, caps, exclusion,
    /// credit, verification.
    Players,
    /// The withdrawal queue: approve, reject.
    Withdrawals,
    /// The sales opening time, the announcement, the ban list.
    Site,
    /// Verify the trail, its head, its export, closed blocks re-checked.
    Trail,
}

impl Permission {
    pub const ALL: [Permission; 6] = [
        Permission::Dashboard,
        Permission::Emissions,
        Permission::Players,
        Permission::Withdrawals,
        Permission::Site,
        Permission::Trail,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Permission::Dashboard => "dashboard",
            Permission::Emissions => "emissions",
            Permission::Players => "players",
            Permission::Withdrawals => "withdrawals",
            Permission::Site => "site",
            Permission::Trail => "trail",
        }
    }
}

/// A console account's role.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Reads the dashboard, the report, emissions and blocks.
    Viewer,
    /// Runs the game: emissions, players, withdrawals, the site.
    Operator,
    /// Checks it: the trail and the published blocks.
    Auditor,
}

impl Role {
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Auditor];

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "viewer" => Some(Role::Viewer),
            "operator" => Some(Role::Operator),
            "auditor" => Some(Role::Auditor),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Auditor => "auditor",
        }
    }

    /// The table of `docs/CONSOLE.md`.
    pub fn can(self, permission: Permission) -> bool {
        use Permission::*;
        match self {
            Role::Viewer => matches!(permission, Dashboard),
            Role::Operator => matches!(
                permission,
                Dashboard | Emissions | Players | Withdrawals | Site
            ),
            Role::Auditor => matches!(permission, Dashboard | Trail),
        }
    }

    /// The role's permissions, in the table's order.
    pub fn permissions(self) -> Vec<Permission> {
        Permission::ALL
            .into_iter()
            .filter(|p| self.can(*p))
            .collect()
    }
}

/// A console account's name: 1 to 32 of `a-z 0-9 . _ -`, lower-cased (staff
/// are few and named by the operator: no look-alike Unicode to fold).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaffName(String);

impl StaffName {
    pub const RULE: &'static str =
        "username: 1 to 32 characters among a-z 0-9 . _ - (upper case is lowered)";

    pub fn parse(text: &str) -> Option<StaffName> {
        let name = text.trim().to_ascii_lowercase();
        let ok = (1..=32).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        ok.then_some(StaffName(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A TOTP step lasts this many seconds.
pub const TOTP_STEP_S: i64 = 30;
/// The length of a fresh TOTP secret, in bytes (160 bits, RFC 4226's advice).
pub const TOTP_SECRET_LEN: usize = 20;

/// The step a time falls in.
pub fn totp_step(unix_s: i64) -> i64 {
    unix_s.div_euclid(TOTP_STEP_S)
}

/// HOTP (RFC 4226) of `counter`, as `digits` decimal digits.
fn hotp(secret: &[u8], counter: u64, digits: u32) -> String {
    let mut mac = Hmac::<sha1::Sha1>::new_from_slice(secret).expect("HMAC takes any key length");
    mac.update(&counter.to_be_bytes());
    let hash = mac.finalize().into_bytes();
    let offset = usize::from(hash[19] & 0x0f);
    let binary = (u32::from(hash[offset] & 0x7f) << 24)
        | (u32::from(hash[offset + 1]) << 16)
        | (u32::from(hash[offset + 2]) << 8)
        | u32::from(hash[offset + 3]);
    let code = binary % 10u32.pow(digits);
    format!("{code:0width$}", width = digits as usize)
}

/// The 6-digit TOTP code of `secret` at `unix_s` (RFC 6238, SHA-1, 30 s).
pub fn totp_code(secret: &[u8], unix_s: i64) -> String {
    hotp(secret, totp_step(unix_s).max(0) as u64, 6)
}

/// The step whose code `code` is, at `unix_s` with one step of drift
/// either way, if it is later than `last_step` (each step's code is
/// accepted once). Compared without early exit.
pub fn accept_code(secret: &[u8], code: &str, unix_s: i64, last_step: Option<i64>) -> Option<i64> {
    let code = code.trim();
    if code.len() != 6 || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = totp_step(unix_s);
    let mut found = None;
    for step in [now - 1, now, now + 1] {
        if step < 0 {
            continue;
        }
        let expected = hotp(secret, step as u64, 6);
        let same = expected
            .bytes()
            .zip(code.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
        if same && last_step.is_none_or(|last| step > last) {
            found = Some(step);
        }
    }
    found
}

/// RFC 4648 base32, upper case, without padding (what authenticator apps
/// read in an `otpauth://` URI).
pub fn base32(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &byte in bytes {
        buffer = (buffer << 8) | u32::from(byte);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(ALPHABET[((buffer >> bits) & 31) as usize]));
        }
    }
    if bits > 0 {
        out.push(char::from(ALPHABET[((buffer << (5 - bits)) & 31) as usize]));
    }
    out
}

/// The URI an authenticator app enrols from.
pub fn otpauth_uri(username: &str, secret: &[u8]) -> String {
    format!(
        "otpauth://totp/Tresor:{username}?secret={}&issuer=Tresor&algorithm=SHA1&digits=6&period=30",
        base32(secret)
    )
}

/// `text` as a QR code, an SVG document.
pub fn qr_svg(text: &str) -> String {
    use qrcode::render::svg;
    match qrcode::QrCode::new(text.as_bytes()) {
        Ok(code) => code
            .render::<svg::Color<'_>>()
            .min_dimensions(240, 240)
            .quiet_zone(true)
            .build(),
        // An otpauth URI is far below a QR code's capacity.
        Err(error) => unreachable!("a short URI fits a QR code: {error}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238, appendix B: the SHA-1 secret and its 8-digit codes.
    const RFC_SECRET: &[u8] = b"12345678901234567890";
    const RFC_VECTORS: [(i64, &str); 6] = [
        (59, "94287082"),
        (1_111_111_109, "07081804"),
        (1_111_111_111, "14050471"),
        (1_234_567_890, "89005924"),
        (2_000_000_000, "69279037"),
        (20_000_000_000, "65353130"),
    ];

    #[test]
    fn the_rfc_6238_test_vectors_hold() {
        for (time, code) in RFC_VECTORS {
            assert_eq!(hotp(RFC_SECRET, totp_step(time) as u64, 8), code, "{time}");
            // Six digits are the last six of the same number.
            assert_eq!(totp_code(RFC_SECRET, time), code[2..], "{time}");
        }
    }

    #[test]
    fn a_code_is_accepted_one_step_either_way_and_only_once() {
        let now = 1_234_567_890;
        let code = totp_code(RFC_SECRET, now);
        assert_eq!(
            accept_code(RFC_SECRET, &code, now, None),
            Some(totp_step(now))
        );
        assert_eq!(
            accept_code(RFC_SECRET, &code, now + 30, None),
            Some(totp_step(now))
        );
        assert_eq!(
            accept_code(RFC_SECRET, &code, now - 30, None),
            Some(totp_step(now))
        );
        assert_eq!(accept_code(RFC_SECRET, &code, now + 60, None), None);
        assert_eq!(
            accept_code(RFC_SECRET, &code, now, Some(totp_step(now))),
            None,
            "a code used once is refused"
        );
        assert_eq!(accept_code(RFC_SECRET, "12345", now, None), None);
        assert_eq!(accept_code(RFC_SECRET, "abcdef", now, None), None);
    }

    #[test]
    fn base32_is_rfc_4648_without_padding() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"fo"), "MZXQ");
        assert_eq!(base32(b"foo"), "MZXW6");
        assert_eq!(base32(b"foob"), "MZXW6YQ");
        assert_eq!(base32(b"fooba"), "MZXW6YTB");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(base32(RFC_SECRET), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    }

    #[test]
    fn the_roles_have_the_permissions_of_the_table() {
        use Permission::*;
        assert_eq!(Role::Viewer.permissions(), vec![Dashboard]);
        assert_eq!(
            Role::Operator.permissions(),
            vec![Dashboard, Emissions, Players, Withdrawals, Site]
        );
        assert_eq!(Role::Auditor.permissions(), vec![Dashboard, Trail]);
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
    }

    #[test]
    fn staff_names_are_plain_and_lowered() {
        assert_eq!(StaffName::parse(" Alice ").unwrap().as_str(), "alice");
        assert!(StaffName::parse("a.b_c-9").is_some());
        assert!(StaffName::parse("").is_none());
        assert!(StaffName::parse("al ice").is_none());
        assert!(StaffName::parse("élise").is_none());
        assert!(StaffName::parse(&"a".repeat(33)).is_none());
    }

    #[test]
    fn the_enrolment_uri_and_qr_code_carry_the_secret() {
        let uri = otpauth_uri("alice", RFC_SECRET);
        assert_eq!(
            uri,
            "otpauth://totp/Tresor:alice?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=Tresor&algorithm=SHA1&digits=6&period=30"
        );
        let svg = qr_svg(&uri);
        assert!(svg.contains("<svg") && svg.ends_with("</svg>"), "{svg}");
    }
}
