-- The game trail (SQLite): every exchange between a player and the platform
-- that changes or reveals game or money state, and every operator action, in
-- one hash chain. The PostgreSQL twin is ../postgres/0002_trail.sql.

-- The chain's head: the number and hash of the last record. Every append
-- takes its number from here and moves the head in the same transaction, so
-- that several writers can never fork the chain or leave a gap.
CREATE TABLE trail_head (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seq INTEGER NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO trail_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- One record per exchange. `hash` is SHA-256 over a canonical encoding of
-- every other column (see src/trail.rs); `prev_hash` is the hash of record
-- seq - 1 (zeros for the first).
CREATE TABLE trail (
    seq INTEGER PRIMARY KEY,
    at_ms INTEGER NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    request TEXT NOT NULL,
    result TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX trail_by_time ON trail (at_ms);

-- The trail is append-only for the application. Someone with the rights to
-- drop these triggers can still edit it, which `tresor audit verify` detects.
CREATE TRIGGER trail_no_update BEFORE UPDATE ON trail
BEGIN
    SELECT RAISE(ABORT, 'the trail is append-only');
END;
CREATE TRIGGER trail_no_delete BEFORE DELETE ON trail
BEGIN
    SELECT RAISE(ABORT, 'the trail is append-only');
END;
