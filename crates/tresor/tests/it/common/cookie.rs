//! The session cookie an answer sets, as a request sends it back.

use reqwest::header::HeaderMap;

/// The `name=value` of the answer's `Set-Cookie` (its attributes dropped),
/// for requests made by hand; panics without one.
pub fn set_cookie(headers: &HeaderMap) -> String {
    let cookie = headers
        .get("set-cookie")
        .expect("a session cookie")
        .to_str()
        .unwrap();
    cookie.split(';').next().unwrap().to_owned()
}
