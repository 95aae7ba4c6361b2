-- Recent purchases' idempotency keys in a small table of their own
-- (PostgreSQL; the twin is ../sqlite/0017_purchase_keys.sql, which says why),
-- and no index on the hot tables that no query reads (issue 24).
--
-- A key is remembered for PURCHASE_KEYS_KEEP_MS (7 days, src/store/batch.rs)
-- after the newest key, then forgotten: the writer prunes older ones every
-- 4,096 batches. `plays` keeps each play's key and request hash, but no
-- longer its UNIQUE (player_id, idempotency_key).
ALTER TABLE plays DROP CONSTRAINT plays_player_id_idempotency_key_key;
-- A player's play in progress is their latest, found as MAX(id) through
-- plays_by_player.
DROP INDEX plays_in_progress_by_player;

CREATE TABLE purchase_keys (
    player_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    play_id BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (player_id, key)
);
-- The prune's: the newest key, and those older than the window.
CREATE INDEX purchase_keys_by_time ON purchase_keys (at_ms);
INSERT INTO purchase_keys (player_id, key, play_id, at_ms)
SELECT player_id, idempotency_key, id, created_at_ms FROM plays
WHERE created_at_ms >= (SELECT MAX(created_at_ms) FROM plays) - 604800000;

-- Read by no query (0015): the trail screen's search by actor cannot use it,
-- and a receipt's look-up of its record goes through trail_by_time.
DROP INDEX trail_by_actor;
