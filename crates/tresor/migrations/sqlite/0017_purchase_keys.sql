-- Recent purchases' idempotency keys in a small table of their own (sqlite;
-- the twin is ../postgres/0017_purchase_keys.sql), and no index on the hot
-- tables that no query reads (issue 24: a batch of 120 purchases dirtied
-- about 400 pages, most of them index leaves, one per player per index).
--
-- A key is remembered for PURCHASE_KEYS_KEEP_MS (7 days, src/store/batch.rs)
-- after the newest key, then forgotten: the writer prunes older ones every
-- 4,096 batches. `plays` keeps each play's key and request hash (the history
-- and the audit read them), but no longer its UNIQUE (player_id,
-- idempotency_key): its entries were spread over the whole history's leaves.

-- 1. `plays` without the UNIQUE on (player_id, idempotency_key). SQLite drops
-- a constraint only by rebuilding the table (https://www.sqlite.org/lang_altertable.html,
-- "Making Other Kinds Of Table Schema Changes"): a new table with every other
-- column and constraint as they were, the rows copied, the old table dropped,
-- the new renamed, its indexes made again. No table, view or trigger refers
-- to `plays`, so foreign keys need not be turned off (the sqlx migration runs
-- in a transaction, where they could not be): dropping `plays` deletes no
-- row another table points at, and the copy checks its own references.
CREATE TABLE plays_new (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    block_id INTEGER NOT NULL REFERENCES blocks (id),
    unit_index INTEGER NOT NULL CHECK (unit_index BETWEEN 0 AND 449999),
    stake_cents INTEGER NOT NULL,
    level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 9),
    prize_cents INTEGER NOT NULL CHECK (prize_cents >= 0),
    throws_made INTEGER NOT NULL DEFAULT 0 CHECK (throws_made BETWEEN 0 AND 4),
    state TEXT NOT NULL CHECK (state IN ('in_progress', 'finished')),
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    -- No unit is ever sold twice, whatever the code does.
    UNIQUE (block_id, unit_index)
);
INSERT INTO plays_new (id, player_id, block_id, unit_index, stake_cents, level, prize_cents,
    throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms)
SELECT id, player_id, block_id, unit_index, stake_cents, level, prize_cents,
    throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms
FROM plays;
DROP TABLE plays;
ALTER TABLE plays_new RENAME TO plays;
-- A player's history, and their latest play (the one in progress, if any).
CREATE INDEX plays_by_player ON plays (player_id, id);
-- The settler's plays left unfinished.
CREATE INDEX plays_in_progress ON plays (created_at_ms) WHERE state = 'in_progress';
-- Not made again: plays_in_progress_by_player (0004). A player's play in
-- progress is their latest, found as MAX(id) through plays_by_player.

-- 2. The keys of the last 7 days, (player, key) → play.
CREATE TABLE purchase_keys (
    player_id INTEGER NOT NULL,
    key TEXT NOT NULL,
    play_id INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (player_id, key)
) WITHOUT ROWID;
-- The prune's: the newest key, and those older than the window.
CREATE INDEX purchase_keys_by_time ON purchase_keys (at_ms);
INSERT INTO purchase_keys (player_id, key, play_id, at_ms)
SELECT player_id, idempotency_key, id, created_at_ms FROM plays
WHERE created_at_ms >= (SELECT MAX(created_at_ms) FROM plays) - 604800000;

-- 3. Read by no query (0015): the trail screen's search by actor cannot use
-- it (an actor or its prefix, or anything), and a receipt's look-up of its
-- record goes through trail_by_time. Each purchase's record put an entry on
-- its player's leaf.
DROP INDEX trail_by_actor;
