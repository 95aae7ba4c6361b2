-- The game trail (PostgreSQL): every exchange between a player and the
-- platform that changes or reveals game or money state, and every operator
-- action, in one hash chain. The SQLite twin is ../sqlite/0002_trail.sql.

-- The chain's head: the number and hash of the last record. Every append
-- takes its number from here and moves the head in the same transaction (the
-- row lock serialises appends across servers), so the chain never forks and
-- its numbers have no gap.
CREATE TABLE trail_head (
    id BIGINT PRIMARY KEY CHECK (id = 1),
    seq BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO trail_head (id, seq, hash)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');

-- One record per exchange. `hash` is SHA-256 over a canonical encoding of
-- every other column (see src/trail.rs); `prev_hash` is the hash of record
-- seq - 1 (zeros for the first).
CREATE TABLE trail (
    seq BIGINT PRIMARY KEY,
    at_ms BIGINT NOT NULL,
    actor TEXT NOT NULL,
    action TEXT NOT NULL,
    request TEXT NOT NULL,
    result TEXT NOT NULL,
    prev_hash TEXT NOT NULL,
    hash TEXT NOT NULL
);
CREATE INDEX trail_by_time ON trail (at_ms);

-- The trail is append-only for the application. Someone with the rights to
-- drop this trigger can still edit it, which `tresor audit verify` detects.
CREATE FUNCTION trail_append_only() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'the trail is append-only';
END;
$$ LANGUAGE plpgsql;
CREATE TRIGGER trail_append_only BEFORE UPDATE OR DELETE ON trail
    FOR EACH ROW EXECUTE FUNCTION trail_append_only();
CREATE TRIGGER trail_no_truncate BEFORE TRUNCATE ON trail
    FOR EACH STATEMENT EXECUTE FUNCTION trail_append_only();
