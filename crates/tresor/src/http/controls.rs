//! Control characters refused at the edge, once for every route of both
//! listeners, before any handler or query runs (issue 42, finding 10): a
//! NUL sent on to PostgreSQL fails the statement (`invalid byte sequence`),
//! an anonymous request then answered 500 with an ERROR line, and a NUL in
//! a request that reaches the writer failed its whole batch. A path whose
//! segments (percent-decoded) hold one is not found (404); a query string
//! (decoded) or a JSON body's string (escaped or not, nested, keys too)
//! holding one is refused 422 `control_character` ([`json_holds_control`],
//! read by [`super::body::Body`]). Control characters are C0 (U+0000–U+001F),
//! DEL and C1 (U+0080–U+009F); a JSON string may hold a tab or a line break
//! (a ban list's CSV, a reason on several lines), nothing else of them.
//! docs/RELIABILITY.md, "Hostile input".

use super::ApiError;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use std::borrow::Cow;

/// The stable code of a refusal for a control character.
pub const CONTROL_CHARACTER: &str = "control_character";

/// The check of both listeners' one layer (`gate.rs`): a path or a query
/// string holding a control character never reaches a handler.
pub(super) fn uri_refusal(uri: &Uri) -> Option<Response> {
    if holds_control(&percent_decoded(uri.path().as_bytes())) {
        return Some(
            ApiError::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such path: it holds a control character",
            )
            .into_response(),
        );
    }
    let parameter = uri.query().and_then(query_control)?;
    Some(refusal(&parameter).into_response())
}

/// The 422 refusal of a control character in `what` (a field, a parameter).
pub(super) fn refusal(what: &str) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        CONTROL_CHARACTER,
        format!("{what}: a control character (U+0000–U+001F, U+007F–U+009F) is refused"),
    )
}

/// The parameter of a query string whose name or value, decoded, holds a
/// control character: its name, or "the query string" when the name is
/// the one that does.
fn query_control(query: &str) -> Option<String> {
    query.split('&').find_map(|pair| {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name = percent_decoded(name.as_bytes());
        if holds_control(&name) {
            return Some("the query string".to_owned());
        }
        holds_control(&percent_decoded(value.as_bytes()))
            .then(|| String::from_utf8_lossy(&name).into_owned())
    })
}

/// Where in a JSON value a string (or a key) holds a control character,
/// tab and line breaks aside: `identity.birth_name`, `items[2]`.
pub(super) fn control_path(value: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    let held = |text: &str| {
        text.chars()
            .any(|c| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    };
    let within = |path: String, inner: Option<String>| {
        inner.map(|inner| match inner.as_str() {
            "" => path.clone(),
            _ if inner.starts_with('[') => format!("{path}{inner}"),
            _ => format!("{path}.{inner}"),
        })
    };
    match value {
        Value::String(text) => held(text).then(String::new),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .find_map(|(at, item)| within(format!("[{at}]"), control_path(item))),
        Value::Object(fields) => fields.iter().find_map(|(key, field)| {
            if held(key) {
                return Some("a field's name".to_owned());
            }
            within(key.clone(), control_path(field))
        }),
        _ => None,
    }
}

/// `encoded` with its `%XX` escapes decoded (a `%` not followed by two hex
/// digits stays as it is, as the router's own decoding leaves it refused);
/// borrowed when it has none, as most paths: no copy on every request.
fn percent_decoded(encoded: &[u8]) -> Cow<'_, [u8]> {
    if !encoded.contains(&b'%') {
        return Cow::Borrowed(encoded);
    }
    let mut decoded = Vec::with_capacity(encoded.len());
    let mut rest = encoded;
    while let Some((&byte, tail)) = rest.split_first() {
        let escaped = (byte == b'%')
            .then(|| Some((hex_digit(*tail.first()?)?, hex_digit(*tail.get(1)?)?)))
            .flatten();
        match escaped {
            Some((high, low)) => {
                decoded.push(high << 4 | low);
                rest = &tail[2..];
            }
            None => {
                decoded.push(byte);
                rest = tail;
            }
        }
    }
    Cow::Owned(decoded)
}

fn hex_digit(byte: u8) -> Option<u8> {
    (byte as char).to_digit(16).map(|digit| digit as u8)
}

/// Whether `bytes` (UTF-8, or not quite) hold a control character: a C0
/// byte, DEL, or C1 as UTF-8 encodes it (`C2 80`–`C2 9F`).
fn holds_control(bytes: &[u8]) -> bool {
    bytes.iter().enumerate().any(|(at, &byte)| {
        is_control(u32::from(byte))
            && (byte < 0x80 || at > 0 && bytes[at - 1] == 0xC2 && byte <= 0x9F)
    })
}

fn is_control(code: u32) -> bool {
    code < 0x20 || (0x7F..=0x9F).contains(&code)
}

/// Whether a JSON text (already parsed: valid) holds a control character
/// in a string, tab and line breaks aside. A valid text holds none raw
/// below U+0020 inside a string (outside, they are white space); it may
/// hold DEL and C1 raw, and any of them escaped (`\u0000`, `\b`, `\f`).
pub(super) fn json_holds_control(json: &[u8]) -> bool {
    let allowed = |code: u32| matches!(code, 0x09 | 0x0A | 0x0D);
    let mut at = 0;
    while at < json.len() {
        match json[at] {
            b'\\' => match json.get(at + 1) {
                Some(b'b' | b'f') => return true,
                Some(b'u') => {
                    let code = json
                        .get(at + 2..at + 6)
                        .and_then(|hex| std::str::from_utf8(hex).ok())
                        .and_then(|hex| u32::from_str_radix(hex, 16).ok());
                    if code.is_some_and(|code| is_control(code) && !allowed(code)) {
                        return true;
                    }
                    at += 6;
                }
                _ => at += 2,
            },
            0x7F => return true,
            0xC2 if json
                .get(at + 1)
                .is_some_and(|next| (0x80..=0x9F).contains(next)) =>
            {
                return true;
            }
            _ => at += 1,
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_or_query_decoded_holds_a_control() {
        for held in [
            &b"/log/%00/checkpoint"[..],
            b"/log/a%00",
            b"q=%7f",
            b"q=%C2%85",
            b"a\tb",
            b"%0A",
        ] {
            assert!(holds_control(&percent_decoded(held)), "{held:?}");
        }
        for clean in [
            &b"/log/server/checkpoint"[..],
            b"q=ann%20b",
            b"q=%C3%A9",
            b"%",
            b"%zz",
            b"q=%2",
        ] {
            assert!(!holds_control(&percent_decoded(clean)), "{clean:?}");
        }
        // « é » is C3 A9; « Â » followed by C1 would be C3 82 C2 85.
        assert!(!holds_control("é…€".as_bytes()));
    }

    #[test]
    fn a_json_string_holds_a_control_escaped_or_raw() {
        let held = [
            r#"{"username":"ann\u0000"}"#,
            r#"{"a":{"b":["x","\u001F"]}}"#,
            r#"{"a":"\b"}"#,
            r#"{"a":"\f"}"#,
            r#"{"a\u0007":1}"#,
            "{\"a\":\"\u{7f}\"}",
            "{\"a\":\"\u{85}\"}",
            r#"{"a":"\u009f"}"#,
            r#"{"a":"\u007F"}"#,
        ];
        for json in held {
            assert!(json_holds_control(json.as_bytes()), "{json}");
        }
        let clean = [
            "{\n\t\"csv\": \"a,b\\nc,d\\r\\n\\te\"\r\n}",
            r#"{"a":"\\u0000"}"#,
            r#"{"a":"\\b\\f","b":"\"\u00e9\ud83d\ude00"}"#,
            r#"{"a":"€ é ÿ \u00a0"}"#,
            "[1, 2.5e3, true, null]",
        ];
        for json in clean {
            assert!(!json_holds_control(json.as_bytes()), "{json}");
        }
    }

    #[test]
    fn the_refusal_names_where_the_control_is() {
        let found = |json: &str| control_path(&serde_json::from_str(json).unwrap());
        assert_eq!(
            found(r#"{"a":{"b":["x","\u0001"]}}"#).as_deref(),
            Some("a.b[1]")
        );
        assert_eq!(found(r#"{"a":"ok","b":"\u0000"}"#).as_deref(), Some("b"));
        assert_eq!(found(r#"["\u007f"]"#).as_deref(), Some("[0]"));
        assert_eq!(found(r#"{"a\u0007":1}"#).as_deref(), Some("a field's name"));
        assert_eq!(found(r#"{"a":"x\ty\nz"}"#), None);
        assert_eq!(query_control("q=ann&cursor=%01").as_deref(), Some("cursor"));
        assert_eq!(query_control("q%00=1").as_deref(), Some("the query string"));
        assert_eq!(query_control("q=%C3%A9&limit=5"), None);
    }
}
