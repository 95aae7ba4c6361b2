//! The operator's console page: `console/` embedded as a
//! [`Bundle`](super::web::Bundle), served at `/console` and
//! `/console/assets/{version}/...` on the operator listener only (mounted by
//! [`super::admin`]), under the game's Content-Security-Policy. Its API is
//! `docs/CONSOLE.md`.

use super::web::{Asset, Bundle, JS, asset};
use axum::Router;

/// Every file of the console except `index.html`.
static ASSETS: &[Asset] = &[
    asset!(in "console", "assets/console.css", "text/css; charset=utf-8"),
    asset!(in "console", "assets/favicon.svg", "image/svg+xml"),
    asset!(in "console", "assets/js/main.js", JS),
    asset!(in "console", "assets/js/api.js", JS),
    asset!(in "console", "assets/js/i18n.js", JS),
    asset!(in "console", "assets/js/util.js", JS),
    asset!(in "console", "assets/js/chart.js", JS),
    asset!(in "console", "assets/js/login.js", JS),
    asset!(in "console", "assets/js/dashboard.js", JS),
    asset!(in "console", "assets/js/emissions.js", JS),
    asset!(in "console", "assets/js/games.js", JS),
    asset!(in "console", "assets/js/sheet.js", JS),
    asset!(in "console", "assets/js/players.js", JS),
    asset!(in "console", "assets/js/queues.js", JS),
    asset!(in "console", "assets/js/trail.js", JS),
    asset!(in "console", "assets/js/site.js", JS),
    asset!(in "console", "assets/js/reports.js", JS),
    asset!(in "shared", "assets/js/server.js", JS),
    asset!(in "shared", "assets/js/language.js", JS),
];

/// The console's page.
pub static CONSOLE: Bundle = Bundle::new(
    "/console/assets",
    ASSETS,
    include_str!("../../console/index.html"),
);

/// `/console`, `/console/` and `/console/assets/{version}/...`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    CONSOLE.routes(&["/console", "/console/"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_console_names_only_assets_that_are_embedded() {
        CONSOLE.assert_names_only_embedded_assets();
    }

    #[test]
    fn every_module_the_scripts_import_is_embedded() {
        for asset in ASSETS.iter().filter(|a| a.path.ends_with(".js")) {
            let text = std::str::from_utf8(asset.body).unwrap();
            for (i, _) in text.match_indices("from './") {
                let rest = &text[i + "from './".len()..];
                let name = &rest[..rest.find('\'').unwrap()];
                assert!(
                    ASSETS.iter().any(|a| a.path == format!("assets/js/{name}")),
                    "{} imports {name}, which is not embedded",
                    asset.path
                );
            }
        }
    }
}
