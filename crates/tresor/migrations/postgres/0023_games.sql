-- A catalogue of games (issue 36; PostgreSQL, the twin is ../sqlite/0023_games.sql).
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
-- (the units per block of its game).
ALTER TABLE blocks DROP CONSTRAINT blocks_stake_cents_check;
ALTER TABLE blocks ADD CONSTRAINT blocks_stake_cents_check
    CHECK (stake_cents BETWEEN 1 AND 100000);
ALTER TABLE blocks ADD COLUMN game_id TEXT NOT NULL DEFAULT 'ile-au-tresor';
ALTER TABLE blocks ADD COLUMN units_per_block BIGINT NOT NULL DEFAULT 450000
    CHECK (units_per_block BETWEEN 1 AND 450000);
ALTER TABLE blocks ADD CONSTRAINT blocks_units_sold_within_block
    CHECK (units_sold <= units_per_block);
DROP INDEX blocks_for_sale;
CREATE INDEX blocks_for_sale ON blocks (game_id, stake_cents, state, id);
