-- Fewer b-tree entries per purchase, the second cut (issue 34; PostgreSQL, the
-- twin is ../sqlite/0022_entries.sql). tests/it/entries.rs counts them,
-- BENCHMARKS.md "Entries per purchase" has the table. Also without a schema
-- change: the play a purchase settles is recorded in the purchase's own
-- record (its result's `settled`), not in a record of its own.

-- 1. No index of plays in progress: every purchase put its play in it and
-- took the play it settled out. The settler of abandoned plays walks the
-- plays by id from a mark instead (src/service/settler.rs); a player's play
-- in progress is their latest, found through plays_by_player.
DROP INDEX plays_in_progress;

-- 2. A player's latest hour of stakes in their account's row, which every
-- stake rewrites for its balance anyway: (hour, stakes in it), moved to
-- movement_hours by the first stake of another hour (src/protect.rs). The
-- hours counted before stay in movement_hours.
ALTER TABLE accounts ADD COLUMN stake_hour_ms BIGINT;
ALTER TABLE accounts ADD COLUMN stake_hour_cents BIGINT;

-- 3. Stakes out of the index of transfers by debited account: only a
-- player's statement read them there, and it finds them through the
-- player's plays and transfers_one_stake_per_play (src/store/accounts.rs).
DROP INDEX transfers_by_debit;
CREATE INDEX transfers_by_debit ON transfers (debit_account_id)
    WHERE debit_account_id > -1000 AND kind <> 'stake';

-- 4. Purchase keys by week, with no index by time: a table per week modulo
-- 3 (the week counted from the epoch), and the prune empties the table of
-- the week two before the newest purchase's, whole (src/store/batch.rs,
-- PURCHASE_KEYS_KEEP_MS). purchase_keys_by_time, which every purchase wrote
-- for the prune alone, goes with the old table; its keys move to the table
-- of their week, and still replay.
CREATE TABLE purchase_keys_0 (
    player_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    play_id BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (player_id, key)
);
INSERT INTO purchase_keys_0 (player_id, key, play_id, at_ms)
SELECT player_id, key, play_id, at_ms FROM purchase_keys WHERE (at_ms / 604800000) % 3 = 0;
CREATE TABLE purchase_keys_1 (
    player_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    play_id BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (player_id, key)
);
INSERT INTO purchase_keys_1 (player_id, key, play_id, at_ms)
SELECT player_id, key, play_id, at_ms FROM purchase_keys WHERE (at_ms / 604800000) % 3 = 1;
CREATE TABLE purchase_keys_2 (
    player_id BIGINT NOT NULL,
    key TEXT NOT NULL,
    play_id BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    PRIMARY KEY (player_id, key)
);
INSERT INTO purchase_keys_2 (player_id, key, play_id, at_ms)
SELECT player_id, key, play_id, at_ms FROM purchase_keys WHERE (at_ms / 604800000) % 3 = 2;
DROP TABLE purchase_keys;

-- 5. Room in each page of plays for the updates of its plays (their
-- throws and settlement), so that an update stays on its page and, no
-- indexed column changing (plays_in_progress gone), writes no index tuple
-- (a HOT update): a full page made every update of a settled play a new
-- tuple in each of plays' three indexes. Pages written from now on.
ALTER TABLE plays SET (fillfactor = 50);
