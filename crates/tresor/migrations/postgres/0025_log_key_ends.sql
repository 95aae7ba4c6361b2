-- The last checkpoint each retired log key signed of each log (PostgreSQL;
-- the SQLite twin is ../sqlite/0025_log_key_ends.sql; docs/AUDIT.md,
-- "Keys: custody and rotation"). `GET /log/` publishes it with the key, and
-- a receipt's checkpoint signed with a retired key is checked only up to
-- that size (trail/retired.rs). A row is written when a writer first takes
-- a log whose last checkpoint another key signed: once per log and
-- rotation, never by a purchase; read whole by `GET /log/` (a few rows).
CREATE TABLE log_key_ends (
    vkey TEXT NOT NULL,
    log_id BIGINT NOT NULL REFERENCES logs (id),
    size BIGINT NOT NULL,
    PRIMARY KEY (vkey, log_id)
);

-- A database whose key was rotated before: its checkpoints are read once,
-- at the next start of a command that writes, to find each retired key's
-- last size (trail::retired::backfill).
INSERT INTO settings (key, value)
SELECT 'log_key_ends_backfill', 'due' WHERE (SELECT COUNT(*) FROM log_keys) > 1;
