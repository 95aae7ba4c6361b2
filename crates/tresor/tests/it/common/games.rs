//! The definition files the tests sell: the repository's own `games/` and
//! the test games of `tests/it/games/`, and the catalogue made of them.

use super::TestApp;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tresor::games::{Catalog, Entry};
use tresor::service::Settings;
use tresor_game::Game;

/// A file of the repository's `games/` folder.
pub fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../games")
        .join(name)
}

/// The test games' folder: « Pièces d'or » and « Petit coffre ».
pub fn test_games() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/games")
}

/// A definition read and checked as a server's start does.
pub fn entry(path: &Path) -> Entry {
    let text = std::fs::read_to_string(path).unwrap();
    let game = Game::parse(&text).unwrap().leak();
    game.check(7_500).unwrap();
    Entry::new(game, text)
}

/// The test catalogue: the island (built in), « Trésor Express », then the
/// test games.
pub fn catalog() -> Arc<Catalog> {
    Arc::new(Catalog::new(vec![
        entry(&shipped("tresor-express.toml")),
        entry(&test_games().join("pieces-d-or.toml")),
        entry(&test_games().join("petit-coffre.toml")),
    ]))
}

/// The tests' settings, selling the test catalogue.
pub fn settings() -> Settings {
    Settings {
        games: catalog(),
        ..TestApp::settings()
    }
}
