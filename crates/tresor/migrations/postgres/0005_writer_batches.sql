-- Each writer batch's identity, written in the batch's own transaction
-- (PostgreSQL). When the answer to a COMMIT is lost (the connection dropped
-- after COMMIT was sent), the writer looks the batch up here on a fresh
-- connection to learn whether it committed, instead of running it again.
-- SQLite needs no such table: its COMMIT runs in the server's process, and
-- one that fails was not committed.
CREATE TABLE writer_batches (
    id TEXT PRIMARY KEY,
    committed_at_ms BIGINT NOT NULL
);
CREATE INDEX writer_batches_by_time ON writer_batches (committed_at_ms);
