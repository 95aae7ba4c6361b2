//! Each game's odds sheet beside the catalogue (`GET /api/games`, the
//! console's games; docs/GAMES.md, "The odds sheet"): computed by the game
//! crate from the definition the game's newest open emission pinned — what
//! its blocks deal — or, with none open, from the catalogue's file. A sheet
//! is computed once per definition (by its SHA-256), off the async threads.

use super::Service;
use super::games::GameView;
use crate::error::Error;
use crate::store::sql;
use serde::Serialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use tresor_game::{Game, StakeSheetView, sheet};

/// A game's sheet: the definition it was computed from and each stake's.
#[derive(Debug, Clone, Serialize)]
pub struct SheetView {
    /// The SHA-256 of the definition the figures are exact for.
    pub sha256: String,
    pub stakes: Arc<Vec<StakeSheetView>>,
}

/// A game of the catalogue with its sheet.
#[derive(Debug, Clone, Serialize)]
pub struct GameWithSheet {
    #[serde(flatten)]
    pub view: GameView,
    pub sheet: SheetView,
}

/// The sheets computed so far, by definition SHA-256.
type Sheets = Mutex<HashMap<[u8; 32], Arc<Vec<StakeSheetView>>>>;

fn cache() -> &'static Sheets {
    static CACHE: OnceLock<Sheets> = OnceLock::new();
    CACHE.get_or_init(Mutex::default)
}

/// `game`'s sheet, computed once per definition.
async fn sheet_of(game: &'static Game) -> SheetView {
    let key = game.sha256();
    let known = cache().lock().expect("sheet cache").get(&key).cloned();
    let stakes = match known {
        Some(stakes) => stakes,
        None => {
            let stakes = tokio::task::spawn_blocking(move || {
                let sheets = sheet(game.tables(), game.units_per_block());
                Arc::new(sheets.iter().map(|s| s.view()).collect::<Vec<_>>())
            })
            .await
            .expect("odds sheet task");
            cache()
                .lock()
                .expect("sheet cache")
                .insert(key, stakes.clone());
            stakes
        }
    };
    SheetView {
        sha256: game.sha256_hex(),
        stakes,
    }
}

impl Service {
    /// The catalogue (`Service::games`), each game with the sheet of the
    /// definition its newest open emission pinned, else of its file.
    pub async fn games_with_sheets(&self) -> Result<Vec<GameWithSheet>, Error> {
        let views = self.games().await?;
        let pinned = self.selling_versions().await?;
        let mut games = Vec::with_capacity(views.len());
        for view in views {
            let game = match pinned.get(view.game.id) {
                Some(game) => *game,
                None => self.game(Some(view.game.id))?,
            };
            games.push(GameWithSheet {
                sheet: sheet_of(game).await,
                view,
            });
        }
        Ok(games)
    }

    /// The version each game's newest open emission pinned, by game id.
    /// Only ids and SHA-256s are read: the catalogue knows most versions
    /// (its files, the built-in island, every version met since start), and
    /// the text of another is read once, by its SHA-256, and parsed once.
    async fn selling_versions(&self) -> Result<HashMap<String, &'static Game>, Error> {
        let rows: Vec<(String, String)> = sql::query_as(
            "SELECT game_id, game_sha256 FROM emissions WHERE state = 'open' ORDER BY id",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let mut versions = HashMap::new();
        for (game_id, sha) in rows {
            let game = match self.settings.games.known(&sha) {
                Some(game) => Some(game),
                None => self.pinned_by_sha(&sha).await?,
            };
            // A pinned text that does not read back is said at start
            // (`pinned_versions`); here the catalogue's file stands in.
            if let Some(game) = game {
                versions.insert(game_id, game);
            }
        }
        Ok(versions)
    }

    /// The version of SHA-256 `sha` from the text an emission pinned;
    /// `None` when that text does not read back as it.
    async fn pinned_by_sha(&self, sha: &str) -> Result<Option<&'static Game>, Error> {
        let definition: Option<Option<String>> = sql::query_scalar(
            "SELECT definition FROM emissions WHERE game_sha256 = $1 ORDER BY id LIMIT 1",
        )
        .bind(sha)
        .fetch_optional(&mut *self.db.conn().await?)
        .await?;
        Ok(self
            .settings
            .games
            .pinned(sha, definition.flatten().as_deref())
            .ok())
    }
}
