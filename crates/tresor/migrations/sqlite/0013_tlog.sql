-- The trail as a signed transparency log (SQLite; the PostgreSQL twin is
-- ../postgres/0013_tlog.sql; docs/AUDIT.md): one Merkle log per writer (a
-- server, the operator's command line), each record a leaf, every signed
-- checkpoint kept. The v1 chain (trail_head, prev_hash) stays as it was for
-- the records made before; nobody writes trail_head any more.

-- One log per writer. A writer's transaction locks its own row only, so no
-- row is written by every transaction of every server. `size`: its leaves.
CREATE TABLE logs (
    id INTEGER PRIMARY KEY,
    writer TEXT NOT NULL UNIQUE,
    origin TEXT NOT NULL UNIQUE,
    size INTEGER NOT NULL,
    created_ms INTEGER NOT NULL
);

-- The tree's stored hashes (Go's sumdb/tlog `StoredHashIndex`), 32 bytes.
CREATE TABLE log_hashes (
    log_id INTEGER NOT NULL REFERENCES logs (id),
    idx INTEGER NOT NULL,
    hash BLOB NOT NULL,
    PRIMARY KEY (log_id, idx)
) WITHOUT ROWID;

-- Every signed checkpoint (C2SP tlog-checkpoint in a signed note), kept.
CREATE TABLE checkpoints (
    log_id INTEGER NOT NULL REFERENCES logs (id),
    size INTEGER NOT NULL,
    at_ms INTEGER NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (log_id, size)
) WITHOUT ROWID;

-- Every key the installation has signed with, in order; the record that
-- announced it (NULL for the first).
CREATE TABLE log_keys (
    id INTEGER PRIMARY KEY,
    vkey TEXT NOT NULL UNIQUE,
    since_ms INTEGER NOT NULL,
    log_id INTEGER,
    idx INTEGER
);

-- A v2 record's place in its log and the salt its leaf covers (NULL: v1).
-- `seq` is now only the order of insertion (SQLite gives the next rowid).
ALTER TABLE trail ADD COLUMN log_id INTEGER;
ALTER TABLE trail ADD COLUMN idx INTEGER;
ALTER TABLE trail ADD COLUMN salt TEXT;
CREATE UNIQUE INDEX trail_by_leaf ON trail (log_id, idx) WHERE log_id IS NOT NULL;
