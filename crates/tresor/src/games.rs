//! The catalogue a server sells (issue 36, docs/GAMES.md): the games read and
//! checked at start, island first, and every definition an emission pinned,
//! by its SHA-256. A leaf like `model`: definitions come in as text.
//!
//! An emission sells from the definition it pinned, never from the file as
//! it is now: a file changed after an emission exists is a new version, for
//! new emissions only. The catalogue's games are what players may buy (by
//! id); the pinned versions are what their blocks deal and stage. The
//! island is the exception: its commitments cover no file, so its only
//! version is the built-in one (`refuse_another_island`).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use tresor_game::{
    DefinitionError, Game, ISLAND_DEFINITION, ISLAND_ID, Rule, SceneRules, ile_au_tresor,
};

/// One game of the catalogue and the text it was read from (an emission
/// pins the text).
#[derive(Debug, Clone, Copy)]
pub struct Entry {
    pub game: &'static Game,
    pub text: &'static str,
}

impl Entry {
    /// The built-in « L'Ile au Trésor ».
    pub fn island() -> Entry {
        Entry {
            game: ile_au_tresor(),
            text: ISLAND_DEFINITION,
        }
    }

    /// A checked definition's text, kept for the life of the process.
    pub fn new(game: &'static Game, text: String) -> Entry {
        Entry {
            game,
            text: Box::leak(text.into_boxed_str()),
        }
    }
}

/// The games on sale, and the pinned versions of every emission seen.
pub struct Catalog {
    entries: Vec<Entry>,
    pinned: Mutex<HashMap<String, &'static Game>>,
}

impl fmt::Debug for Catalog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<&str> = self.entries.iter().map(|e| e.game.id()).collect();
        f.debug_struct("Catalog").field("games", &ids).finish()
    }
}

impl Default for Catalog {
    /// The island alone, built in.
    fn default() -> Self {
        Catalog::new(Vec::new())
    }
}

/// Refuses a file of the island's id that is not the built-in island byte
/// for byte (docs/GAMES.md, "A definition's identity"). The island's block
/// commitments are `sha256(secret)` (SPEC §7): they bind no file, so a
/// published island block must have one table only, the built-in one —
/// else it verifies under every table a file of its id could give. A
/// changed island is another game, with another id, whose commitments then
/// cover its file. Called wherever a file comes in: `tresor game check`,
/// `--game FILE` and a catalogue's folder.
pub fn refuse_another_island(game: &Game, text: &str) -> Result<(), DefinitionError> {
    let built_in = ile_au_tresor();
    if game.id() != ISLAND_ID || text.as_bytes() == ISLAND_DEFINITION.as_bytes() {
        return Ok(());
    }
    Err(DefinitionError {
        line: id_line(text),
        rule: Rule::DuplicateId,
        message: format!(
            "the id {ISLAND_ID:?} is the built-in « {} », whose block commitments are \
             sha256(secret) and cover no file: a file of it must be games/{ISLAND_ID}.toml \
             byte for byte (sha256 {}), not this one (sha256 {}); give a changed island \
             another id, whose commitments will cover its file",
            built_in.name_fr(),
            built_in.sha256_hex(),
            game.sha256_hex()
        ),
    })
}

/// The line of a definition's top-level `id` key (1 when not found: a
/// quoted key, say).
fn id_line(text: &str) -> usize {
    text.lines()
        .position(|line| {
            line.strip_prefix("id")
                .is_some_and(|rest| rest.trim_start().starts_with('='))
        })
        .map_or(1, |index| index + 1)
}

/// How many reveals a scene kind's play takes: four throws of the totem,
/// or the one scratch that uncovers the card.
pub fn reveals(game: &Game) -> i64 {
    match game.scene() {
        SceneRules::Island(_) => 4,
        SceneRules::Scratch(_) => 1,
    }
}

impl Catalog {
    /// The catalogue of `entries` (checked, distinct ids, an island entry
    /// only as built in: `refuse_another_island`), island first: the
    /// built-in island when no entry is the island, so that a database made
    /// before the catalogue keeps its game. The others keep their order.
    pub fn new(entries: Vec<Entry>) -> Catalog {
        let mut ordered: Vec<Entry> = Vec::with_capacity(entries.len() + 1);
        let island = entries
            .iter()
            .copied()
            .find(|e| e.game.id() == ISLAND_ID)
            .unwrap_or_else(Entry::island);
        ordered.push(island);
        ordered.extend(entries.into_iter().filter(|e| e.game.id() != ISLAND_ID));
        let mut pinned = HashMap::new();
        pinned.insert(ile_au_tresor().sha256_hex(), ile_au_tresor());
        for entry in &ordered {
            pinned.insert(entry.game.sha256_hex(), entry.game);
        }
        Catalog {
            entries: ordered,
            pinned: Mutex::new(pinned),
        }
    }

    /// The games on sale, island first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The game `id` as the catalogue has it now.
    pub fn entry(&self, id: &str) -> Option<Entry> {
        self.entries.iter().copied().find(|e| e.game.id() == id)
    }

    pub fn get(&self, id: &str) -> Option<&'static Game> {
        self.entry(id).map(|e| e.game)
    }

    /// The version of SHA-256 `sha256_hex` if this catalogue has it
    /// already (the built-in island, a file on sale, a version parsed
    /// before), without its text.
    pub fn known(&self, sha256_hex: &str) -> Option<&'static Game> {
        let pinned = self.pinned.lock().expect("catalogue lock");
        pinned.get(sha256_hex).copied()
    }

    /// The version an emission pinned: by its SHA-256, parsed from the
    /// pinned text the first time (no text: the built-in island, as
    /// emissions made before the catalogue are). Refused when the text's
    /// SHA-256 is not the one pinned: the row was changed.
    pub fn pinned(
        &self,
        sha256_hex: &str,
        definition: Option<&str>,
    ) -> Result<&'static Game, String> {
        let mut pinned = self.pinned.lock().expect("catalogue lock");
        if let Some(game) = pinned.get(sha256_hex) {
            return Ok(game);
        }
        let Some(text) = definition else {
            // An emission made before the catalogue: the island as built in
            // (its commitments never covered its definition).
            return Ok(ile_au_tresor());
        };
        let game = Game::parse(text)
            .map_err(|e| format!("a pinned definition does not read: {e}"))?
            .leak();
        if game.sha256_hex() != sha256_hex {
            return Err(format!(
                "a pinned definition's SHA-256 is {}, not the {sha256_hex} its emission pinned",
                game.sha256_hex()
            ));
        }
        pinned.insert(sha256_hex.to_owned(), game);
        Ok(game)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_island_is_first_and_built_in_when_no_file_gives_it() {
        let catalog = Catalog::default();
        assert_eq!(catalog.entries().len(), 1);
        assert_eq!(catalog.entries()[0].game.id(), ISLAND_ID);
        assert_eq!(reveals(catalog.entries()[0].game), 4);
    }

    /// Migration 0023 pins emissions made before it to this SHA-256: the
    /// built-in island's. The island's commitments cover no file, so its
    /// file never changes: a changed island is a game of another id.
    #[test]
    fn migration_0023_pins_the_built_in_island() {
        let migration = include_str!("../migrations/sqlite/0023_games.sql");
        assert!(migration.contains(&ile_au_tresor().sha256_hex()));
        let migration = include_str!("../migrations/postgres/0023_games.sql");
        assert!(migration.contains(&ile_au_tresor().sha256_hex()));
    }

    #[test]
    fn a_file_of_the_island_s_id_must_be_the_built_in_one() {
        let island = Game::parse(ISLAND_DEFINITION).unwrap();
        assert_eq!(refuse_another_island(&island, ISLAND_DEFINITION), Ok(()));
        // One comment more is another file: refused, on its `id` line.
        let text = format!("# a comment\n{ISLAND_DEFINITION}");
        let edited = Game::parse(&text).unwrap();
        let error = refuse_another_island(&edited, &text).unwrap_err();
        assert_eq!((error.line, error.rule), (7, Rule::DuplicateId), "{error}");
        assert!(error.message.contains(&island.sha256_hex()), "{error}");
        assert!(error.message.contains(&edited.sha256_hex()), "{error}");
        // The same file under another id is another game: accepted.
        let text = ISLAND_DEFINITION.replacen("id = \"ile-au-tresor\"", "id = \"ile-2\"", 1);
        let other = Game::parse(&text).unwrap();
        assert!(other.commitment_covers_definition());
        assert_eq!(refuse_another_island(&other, &text), Ok(()));
    }

    #[test]
    fn a_pinned_text_is_refused_under_another_sha() {
        let catalog = Catalog::default();
        let text = "id = \"x\"";
        assert!(catalog.pinned(&"00".repeat(32), Some(text)).is_err());
        assert_eq!(
            catalog.pinned(&"00".repeat(32), None).unwrap().id(),
            ISLAND_ID
        );
    }
}
