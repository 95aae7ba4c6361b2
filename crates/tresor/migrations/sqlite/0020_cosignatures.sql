-- Witnesses' cosignatures of the log's checkpoints (SQLite; the PostgreSQL
-- twin is ../postgres/0020_cosignatures.sql; docs/AUDIT.md, "Witnesses"):
-- a C2SP tlog-cosignature line, checked against the checkpoint kept at that
-- size before it is stored. Written only at a witness's request
-- (`POST /log/<writer>/cosignature`), never by a purchase.
CREATE TABLE cosignatures (
    log_id INTEGER NOT NULL REFERENCES logs (id),
    size INTEGER NOT NULL,
    witness_vkey TEXT NOT NULL,
    line TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    PRIMARY KEY (log_id, size, witness_vkey)
) WITHOUT ROWID;
