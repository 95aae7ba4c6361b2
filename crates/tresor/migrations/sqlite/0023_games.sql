-- A catalogue of games (issue 36; SQLite, the twin is ../postgres/0023_games.sql).
-- 0022 is another change's number: the migrations run in order and skip no
-- gap they do not have (0005, 0011 and 0019 are gaps already).
--
-- 1. An emission sells one game and pins its definition: the game's id, the
-- SHA-256 of the definition file's bytes, and the text itself, so that its
-- blocks are dealt, staged and verified from the text they were committed
-- under, whatever the file says later (docs/GAMES.md, "A definition's
-- identity"). Emissions made before are « L'Ile au Trésor »'s, with the
-- SHA-256 of games/ile-au-tresor.toml as built into the program, and no
-- text: `definition IS NULL` means the built-in island (src/games.rs), whose
-- commitments never covered its definition.
ALTER TABLE emissions ADD COLUMN game_id TEXT NOT NULL DEFAULT 'ile-au-tresor';
ALTER TABLE emissions ADD COLUMN game_sha256 TEXT NOT NULL
    DEFAULT 'e14d91a10d98dbd4d34188fa6f981c7281c01e829394aba8d7ef937c2d095072';
ALTER TABLE emissions ADD COLUMN definition TEXT;

-- 2. `blocks` without the island's stakes in its CHECK, with its game (the
-- purchase picks blocks by game and stake, `blocks_for_sale`) and its size
-- (the units per block of its game). SQLite drops a CHECK only by rebuilding
-- the table. `plays` and `purchase_keys` refer to `blocks`, and foreign
-- keys are on (the migration runs in a transaction, where they cannot be
-- turned off): with their checks deferred to the COMMIT, dropping the old
-- table orphans the plays for a moment and copying its rows back into the
-- new one adopts them again, so the COMMIT finds every reference whole.
PRAGMA defer_foreign_keys = ON;
CREATE TABLE blocks_before_games AS SELECT * FROM blocks;
DROP TABLE blocks;
CREATE TABLE blocks (
    id INTEGER PRIMARY KEY,
    emission_id INTEGER NOT NULL REFERENCES emissions (id),
    game_id TEXT NOT NULL DEFAULT 'ile-au-tresor',
    stake_cents INTEGER NOT NULL CHECK (stake_cents BETWEEN 1 AND 100000),
    units_per_block INTEGER NOT NULL DEFAULT 450000
        CHECK (units_per_block BETWEEN 1 AND 450000),
    secret BLOB NOT NULL,
    commitment TEXT NOT NULL,
    units_sold INTEGER NOT NULL DEFAULT 0 CHECK (units_sold BETWEEN 0 AND units_per_block),
    state TEXT NOT NULL CHECK (state IN ('open', 'suspended', 'sold_out', 'closed')),
    created_at_ms INTEGER NOT NULL,
    published_at_ms INTEGER,
    sealed_secret BLOB
);
INSERT INTO blocks (id, emission_id, stake_cents, secret, commitment, units_sold, state,
    created_at_ms, published_at_ms, sealed_secret)
SELECT id, emission_id, stake_cents, secret, commitment, units_sold, state,
    created_at_ms, published_at_ms, sealed_secret
FROM blocks_before_games;
DROP TABLE blocks_before_games;
CREATE INDEX blocks_for_sale ON blocks (game_id, stake_cents, state, id);
