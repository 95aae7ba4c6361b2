//! The web page: every static asset of the game (HTML, CSS, JavaScript, SVG,
//! rules text) embedded in the binary and served at `/` and `/assets/...`.
//!
//! Assets live under a version segment, `/assets/{version}/...`, where the
//! version is a hash of all the embedded bytes. The page itself is never
//! cached, so a new binary's page asks for new asset URLs and browsers may
//! keep assets forever. A request naming another version still gets today's
//! asset, but uncached, so a page loaded just before an upgrade keeps working.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The Content-Security-Policy the page is written to work under.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     style-src 'self'; script-src 'self'; frame-ancestors 'none'";

/// One embedded file, by its path under `web/`.
struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

impl Asset {
    /// The path after `/assets/{version}/`: `web/assets/x` is served as `x`,
    /// `web/rules/fr.txt` as `rules/fr.txt`.
    fn url_path(&self) -> &'static str {
        self.path.strip_prefix("assets/").unwrap_or(self.path)
    }
}

macro_rules! asset {
    ($path:literal, $content_type:expr) => {
        Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/web/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the page except `index.html`.
static ASSETS: &[Asset] = &[
    asset!("assets/app.css", "text/css; charset=utf-8"),
    asset!("assets/favicon.svg", "image/svg+xml"),
    asset!("assets/js/main.js", JS),
    asset!("assets/js/api.js", JS),
    asset!("assets/js/i18n.js", JS),
    asset!("assets/js/art.js", JS),
    asset!("assets/js/scene.js", JS),
    asset!("assets/js/game.js", JS),
    asset!("assets/js/screens.js", JS),
    asset!("assets/js/util.js", JS),
    asset!("assets/js/fairness.js", JS),
    asset!("assets/js/account.js", JS),
    asset!("assets/js/playtime.js", JS),
    asset!("rules/fr.txt", "text/plain; charset=utf-8"),
    asset!("rules/en.txt", "text/plain; charset=utf-8"),
];

const INDEX_TEMPLATE: &str = include_str!("../../web/index.html");

/// The routes of the page: `/`, `/index.html` and `/assets/{version}/...`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/index.html", get(index))
        .route("/assets/{version}/{*path}", get(asset))
}

/// A short hash of every embedded byte: changes whenever any asset does.
fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        // FNV-1a: not for security, only to tell two builds' assets apart.
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in ASSETS
            .iter()
            .flat_map(|a| a.path.bytes().chain(a.body.iter().copied()))
        {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        format!("{:012x}", hash & 0xffff_ffff_ffff)
    })
}

fn index_html() -> &'static str {
    static INDEX: OnceLock<String> = OnceLock::new();
    INDEX.get_or_init(|| INDEX_TEMPLATE.replace("{{V}}", version()))
}

async fn index() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
            (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            (header::REFERRER_POLICY, "same-origin"),
        ],
        index_html(),
    )
        .into_response()
}

async fn asset(
    Path((asset_version, path)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    match ASSETS.iter().find(|a| a.url_path() == path) {
        Some(found) => serve(found, asset_version == version(), &headers),
        None => (StatusCode::NOT_FOUND, "not found").into_response(),
    }
}

fn serve(found: &Asset, current: bool, headers: &HeaderMap) -> Response {
    let etag = format!("\"{}-{}\"", version(), found.body.len());
    let cache = if current {
        "public, max-age=31536000, immutable"
    } else {
        "no-cache"
    };
    let etag_value = HeaderValue::from_str(&etag).expect("an ETag is ASCII");
    let common = [
        (header::CACHE_CONTROL, HeaderValue::from_static(cache)),
        (header::ETAG, etag_value),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
    ];
    if headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes())
    {
        return (StatusCode::NOT_MODIFIED, common).into_response();
    }
    (
        common,
        [(header::CONTENT_TYPE, found.content_type)],
        found.body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_only_assets_that_are_embedded() {
        let page = index_html();
        let prefix = format!("/assets/{}/", version());
        for (i, _) in page.match_indices(&prefix) {
            let rest = &page[i + prefix.len()..];
            let end = rest.find('"').unwrap();
            let path = &rest[..end];
            assert!(
                ASSETS.iter().any(|a| a.url_path() == path),
                "{path} is not embedded"
            );
        }
        assert!(!page.contains("{{V}}"));
    }
}
