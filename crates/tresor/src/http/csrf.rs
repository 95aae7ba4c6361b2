//! The proof that a state-changing request comes from the site's own page
//! (CSRF): a header a cross-site form cannot set, and what the browser says
//! of where the request comes from (`Sec-Fetch-Site`, `Origin`). Asked by
//! the players' site's gate (`gate.rs`) on every `/api/` route but the
//! payment webhook, and by the console's guard.

use super::ApiError;
use axum::extract::Request;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// The header every state-changing request must carry (CSRF proof): a
/// cross-site form cannot set it, and a cross-site script may not without a
/// CORS preflight this server never grants.
pub const CSRF_HEADER: &str = "x-requested-with";
pub const CSRF_VALUE: &str = "tresor";

/// Why a state-changing `request` is refused as cross-site, or `None`: it
/// must carry `X-Requested-With: {value}` (the game's `tresor`, the
/// console's `tresor-console`), which a cross-site form cannot set.
pub(super) fn csrf_refusal(request: &Request, value: &str) -> Option<Response> {
    let safe = matches!(
        *request.method(),
        Method::GET | Method::HEAD | Method::OPTIONS
    );
    if safe {
        return None;
    }
    let headers = request.headers();
    let proven = headers
        .get(CSRF_HEADER)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(value.as_bytes()));
    if !proven {
        return Some(
            ApiError::new(
                StatusCode::FORBIDDEN,
                "csrf",
                format!("state-changing requests must carry the header {CSRF_HEADER}: {value}"),
            )
            .into_response(),
        );
    }
    // A second line of defence: what the browser itself says of where the
    // request comes from (clients that send neither header are not browsers).
    cross_site(headers).map(|why| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            format!("cross-site requests are refused: {why}"),
        )
        .into_response()
    })
}

/// Why a request's `Sec-Fetch-Site` or `Origin` says it comes from another
/// site, if either does.
pub(super) fn cross_site(headers: &HeaderMap) -> Option<String> {
    if let Some(site) = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok())
        && !matches!(site, "same-origin" | "none")
    {
        return Some(format!("Sec-Fetch-Site is {site}"));
    }
    let origin = headers.get(header::ORIGIN)?.to_str().unwrap_or("null");
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    // The origin's authority (scheme://host[:port]) must be the host asked.
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    match (authority, host) {
        (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host) => None,
        (Some(_), None) => None,
        _ => Some(format!("Origin is {origin}")),
    }
}
