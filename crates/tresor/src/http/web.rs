//! The web pages: every static asset of a page (HTML, CSS, JavaScript, SVG,
//! text) embedded in the binary as a [`Bundle`] and served at its page path
//! and `{prefix}/{version}/...`. The game's bundle ([`GAME`], `web/`) is
//! served at `/` and `/assets/...`; the operator's console
//! (`console_web.rs`, `console/`) at `/console` on the operator
//! listener.
//!
//! Assets live under a version segment, `/assets/{version}/...`, where the
//! version is a hash of all the bundle's embedded bytes. The page itself is
//! never cached, so a new binary's page asks for new asset URLs and browsers
//! may keep assets forever. A request naming another version still gets
//! today's asset, but uncached, so a page loaded just before an upgrade keeps
//! working.

use std::sync::OnceLock;

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tower_http::compression::CompressionLayer;

/// The Content-Security-Policy the pages are written to work under.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; img-src 'self' data:; \
     style-src 'self'; script-src 'self'; frame-ancestors 'none'";

/// One embedded file, by its path under its bundle's folder.
#[derive(Debug)]
pub struct Asset {
    pub path: &'static str,
    pub content_type: &'static str,
    pub body: &'static [u8],
}

impl Asset {
    /// The path after `{prefix}/{version}/`: `web/assets/x` is served as `x`,
    /// `web/rules/fr.txt` as `rules/fr.txt`.
    fn url_path(&self) -> &'static str {
        self.path.strip_prefix("assets/").unwrap_or(self.path)
    }
}

/// An embedded file: `asset!("assets/app.css", type)` under `web/` (the
/// game's), `asset!(in "console", "assets/console.css", type)` under another
/// folder of the crate (`shared/` holds the modules both pages embed).
macro_rules! asset {
    (in $dir:literal, $path:literal, $content_type:expr) => {
        $crate::http::web::Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/", $dir, "/", $path)),
        }
    };
    ($path:literal, $content_type:expr) => {
        asset!(in "web", $path, $content_type)
    };
}
pub(crate) use asset;

pub(crate) const JS: &str = "text/javascript; charset=utf-8";

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
    asset!("assets/js/lobby.js", JS),
    asset!("assets/js/odds.js", JS),
    asset!("assets/js/scratch.js", JS),
    asset!("assets/js/scratch-scene.js", JS),
    asset!("assets/js/screens.js", JS),
    asset!("assets/js/util.js", JS),
    asset!("assets/js/fairness.js", JS),
    asset!("assets/js/proof.js", JS),
    asset!("assets/js/play-screen.js", JS),
    asset!("assets/js/account.js", JS),
    asset!("assets/js/playtime.js", JS),
    asset!("assets/js/security.js", JS),
    asset!("assets/js/documents.js", JS),
    asset!("assets/js/free.js", JS),
    asset!(in "shared", "assets/js/server.js", JS),
    asset!(in "shared", "assets/js/language.js", JS),
    asset!("rules/fr.txt", "text/plain; charset=utf-8"),
    asset!("rules/en.txt", "text/plain; charset=utf-8"),
];

const INDEX_TEMPLATE: &str = include_str!("../../web/index.html");

/// The game's page.
pub static GAME: Bundle = Bundle::new("/assets", ASSETS, INDEX_TEMPLATE);

/// A page and its assets, embedded: its `index.html` (where `{{V}}` stands
/// for the version) and every other file, served under `prefix`.
#[derive(Debug)]
pub struct Bundle {
    /// Where the assets are served: `{prefix}/{version}/{path}`.
    prefix: &'static str,
    assets: &'static [Asset],
    index_template: &'static str,
    version: OnceLock<String>,
    index: OnceLock<String>,
}

impl Bundle {
    pub const fn new(
        prefix: &'static str,
        assets: &'static [Asset],
        index_template: &'static str,
    ) -> Bundle {
        Bundle {
            prefix,
            assets,
            index_template,
            version: OnceLock::new(),
            index: OnceLock::new(),
        }
    }

    /// The routes of the page: each of `pages` answers `index.html`, and
    /// `{prefix}/{version}/...` the assets, compressed (gzip or brotli) for
    /// a browser that accepts it. Only the page and its assets: answers
    /// that carry a secret beside what a request reflects (the API) are not,
    /// so compression tells nothing of the secret (BREACH).
    pub fn routes<S: Clone + Send + Sync + 'static>(
        &'static self,
        pages: &[&'static str],
    ) -> Router<S> {
        let mut router = Router::new();
        for page in pages {
            router = router.route(page, get(move || async move { self.index_response() }));
        }
        router
            .route(
                &format!("{}/{{version}}/{{*path}}", self.prefix),
                get(
                    move |Path((version, path)): Path<(String, String)>, headers: HeaderMap| async move {
                        self.asset_response(&version, &path, &headers)
                    },
                ),
            )
            .layer(CompressionLayer::new().gzip(true).br(true))
    }

    /// A short hash of every embedded byte: changes whenever any asset does.
    pub fn version(&self) -> &str {
        self.version.get_or_init(|| {
            // FNV-1a: not for security, only to tell two builds' assets apart.
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in self
                .assets
                .iter()
                .flat_map(|a| a.path.bytes().chain(a.body.iter().copied()))
            {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
            format!("{:012x}", hash & 0xffff_ffff_ffff)
        })
    }

    /// The page, its asset URLs naming today's version.
    pub fn index_html(&'static self) -> &'static str {
        self.index
            .get_or_init(|| self.index_template.replace("{{V}}", self.version()))
    }

    fn index_response(&'static self) -> Response {
        (
            [
                (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                (header::CACHE_CONTROL, "no-cache"),
                (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
                (header::X_FRAME_OPTIONS, "DENY"),
                (header::REFERRER_POLICY, "same-origin"),
            ],
            self.index_html(),
        )
            .into_response()
    }

    fn asset_response(&self, asset_version: &str, path: &str, headers: &HeaderMap) -> Response {
        match self.assets.iter().find(|a| a.url_path() == path) {
            Some(found) => self.serve(found, asset_version == self.version(), headers),
            None => (StatusCode::NOT_FOUND, "not found").into_response(),
        }
    }

    fn serve(&self, found: &Asset, current: bool, headers: &HeaderMap) -> Response {
        let etag = format!("\"{}-{}\"", self.version(), found.body.len());
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

    /// Every asset URL the page names is embedded, and no `{{V}}` is left
    /// (the bundles' unit tests).
    #[cfg(test)]
    pub(crate) fn assert_names_only_embedded_assets(&'static self) {
        let page = self.index_html();
        let prefix = format!("{}/{}/", self.prefix, self.version());
        let mut named = 0;
        for (i, _) in page.match_indices(&prefix) {
            let rest = &page[i + prefix.len()..];
            let end = rest.find('"').unwrap();
            let path = &rest[..end];
            assert!(
                self.assets.iter().any(|a| a.url_path() == path),
                "{path} is not embedded"
            );
            named += 1;
        }
        assert!(named > 0, "the page names no asset under {prefix}");
        assert!(!page.contains("{{V}}"));
    }
}

/// The routes of the game's page: `/`, `/index.html` and `/assets/{version}/...`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    GAME.routes(&["/", "/index.html"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_only_assets_that_are_embedded() {
        GAME.assert_names_only_embedded_assets();
    }
}
