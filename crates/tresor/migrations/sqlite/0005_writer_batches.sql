-- Each writer batch's identity, written in the batch's own transaction
-- (SQLite). When the answer to a COMMIT is lost, the writer looks the batch
-- up here to learn whether it committed, instead of running it again. The
-- twin is ../postgres/0005_writer_batches.sql.
CREATE TABLE writer_batches (
    id TEXT PRIMARY KEY,
    committed_at_ms INTEGER NOT NULL
);
CREATE INDEX writer_batches_by_time ON writer_batches (committed_at_ms);
