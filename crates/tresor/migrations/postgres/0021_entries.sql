-- Fewer b-tree entries per purchase (issue 34; PostgreSQL, the twin is
-- ../sqlite/0021_entries.sql). A purchase wrote about 27 b-tree entries
-- (rows and index entries) where its facts are one play and one debit:
-- tests/it/entries.rs counts them, BENCHMARKS.md "Entries per purchase".

-- 1. The log's stored hashes by tile: a row per (log, tree level, chunk of
-- 32 hashes at that level), `hashes` their 32-byte values end to end from
-- position `first` of the chunk, appended to once per transaction, where
-- `log_hashes` took a row per stored hash (about 4 per purchase). Hashes
-- stored before this migration stay in `log_hashes`, read where a tile does
-- not hold them (src/trail/log.rs, "Tiles").
CREATE TABLE log_tiles (
    log_id BIGINT NOT NULL REFERENCES logs (id),
    level BIGINT NOT NULL,
    chunk BIGINT NOT NULL,
    first_pos BIGINT NOT NULL,
    hashes BYTEA NOT NULL,
    PRIMARY KEY (log_id, level, chunk)
);

-- 2. Read by no query (0015): the trail screen's search by action is a
-- filter of its newest-first walk, which cannot use it. The one look-up by
-- action it served, the v1 chain's seal at a writer's start, gets an index
-- of its own that no purchase writes.
DROP INDEX trail_by_action;
CREATE INDEX trail_v1_seals ON trail (seq) WHERE action = 'trail_v1_sealed';

-- 3. The per-account indexes of transfers without the writers' own stakes
-- and prizes accounts (-1002 and below, 0016): only a player's statement
-- and the rare jobs read transfers by account, never by a writer's account,
-- and every stake and prize put an entry on one of them. The queries by
-- account say `> -1000` so that the planner may use these indexes (a parameter proves nothing).
DROP INDEX transfers_by_debit;
DROP INDEX transfers_by_credit;
CREATE INDEX transfers_by_debit ON transfers (debit_account_id) WHERE debit_account_id > -1000;
CREATE INDEX transfers_by_credit ON transfers (credit_account_id) WHERE credit_account_id > -1000;

-- 4. A play names its purchase's record (`buy_log_id`, `buy_idx`: its leaf),
-- written in the play's own row, so that its receipt is found by the play's
-- id and trail_by_leaf, and the trail's index by time, which every record
-- put an entry in and which only that look-up used, goes. The console's
-- search by time is a filter of its newest-first walk by `seq`. The plays
-- made before are given their records here (the buy records' play ids,
-- replays left out).
ALTER TABLE plays ADD COLUMN buy_log_id BIGINT;
ALTER TABLE plays ADD COLUMN buy_idx BIGINT;
UPDATE plays SET buy_log_id = b.log_id, buy_idx = b.idx
FROM (SELECT (result::jsonb ->> 'play_id')::bigint AS play_id, log_id, idx FROM trail
      WHERE action = 'buy' AND log_id IS NOT NULL
      AND result NOT LIKE '%"replayed":true%') AS b
WHERE b.play_id = plays.id;
DROP INDEX trail_by_time;
