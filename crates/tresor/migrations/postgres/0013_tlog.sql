-- The trail as a signed transparency log (PostgreSQL; the SQLite twin is
-- ../sqlite/0013_tlog.sql; docs/AUDIT.md): one Merkle log per writer (a
-- server, the operator's command line), each record a leaf, every signed
-- checkpoint kept. The v1 chain (trail_head, prev_hash) stays as it was for
-- the records made before; nobody writes trail_head any more.

-- One log per writer. A writer's transaction locks its own row only, so no
-- row is written by every transaction of every server. `size`: its leaves.
CREATE TABLE logs (
    id BIGSERIAL PRIMARY KEY,
    writer TEXT NOT NULL UNIQUE,
    origin TEXT NOT NULL UNIQUE,
    size BIGINT NOT NULL,
    created_ms BIGINT NOT NULL
);

-- The tree's stored hashes (Go's sumdb/tlog `StoredHashIndex`), 32 bytes.
CREATE TABLE log_hashes (
    log_id BIGINT NOT NULL REFERENCES logs (id),
    idx BIGINT NOT NULL,
    hash BYTEA NOT NULL,
    PRIMARY KEY (log_id, idx)
);

-- Every signed checkpoint (C2SP tlog-checkpoint in a signed note), kept.
CREATE TABLE checkpoints (
    log_id BIGINT NOT NULL REFERENCES logs (id),
    size BIGINT NOT NULL,
    at_ms BIGINT NOT NULL,
    note TEXT NOT NULL,
    PRIMARY KEY (log_id, size)
);

-- Every key the installation has signed with, in order; the record that
-- announced it (NULL for the first).
CREATE TABLE log_keys (
    id BIGSERIAL PRIMARY KEY,
    vkey TEXT NOT NULL UNIQUE,
    since_ms BIGINT NOT NULL,
    log_id BIGINT,
    idx BIGINT
);

-- A v2 record's place in its log and the salt its leaf covers (NULL: v1).
ALTER TABLE trail ADD COLUMN log_id BIGINT;
ALTER TABLE trail ADD COLUMN idx BIGINT;
ALTER TABLE trail ADD COLUMN salt TEXT;
CREATE UNIQUE INDEX trail_by_leaf ON trail (log_id, idx) WHERE log_id IS NOT NULL;

-- `seq` is now only the order of insertion, from a sequence (no row lock
-- shared by the writers): numbers may come out of commit order across
-- servers, the log position (log_id, idx) is the record's identity.
CREATE SEQUENCE trail_seq_seq OWNED BY trail.seq;
SELECT setval('trail_seq_seq', COALESCE((SELECT MAX(seq) FROM trail), 0) + 1, false);
ALTER TABLE trail ALTER COLUMN seq SET DEFAULT nextval('trail_seq_seq');
