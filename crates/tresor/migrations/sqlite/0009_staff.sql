-- The operator's console (SQLite; the twin is ../postgres/0009_staff.sql):
-- console accounts (staff), apart from players, and their sessions.

CREATE TABLE staff (
    id INTEGER PRIMARY KEY,
    -- Lower case a-z 0-9 . _ - (staff::StaffName).
    username TEXT NOT NULL UNIQUE,
    role TEXT NOT NULL CHECK (role IN ('viewer', 'operator', 'auditor')),
    -- argon2id, as the players'.
    password_hash TEXT NOT NULL,
    -- The TOTP secret, sealed under the secrets key (as block secrets are);
    -- NULL until enrolled, and again after `tresor operator reset-totp`.
    totp_sealed BLOB,
    -- The last TOTP step accepted: a code is accepted once.
    totp_last_step INTEGER,
    enrolled_at_ms INTEGER,
    disabled_at_ms INTEGER,
    created_at_ms INTEGER NOT NULL
);

CREATE TABLE staff_sessions (
    token_hash TEXT PRIMARY KEY,
    staff_id INTEGER NOT NULL REFERENCES staff (id),
    created_at_ms INTEGER NOT NULL,
    last_seen_at_ms INTEGER NOT NULL,
    ended_at_ms INTEGER
);
CREATE INDEX staff_sessions_by_staff ON staff_sessions (staff_id);

-- The console reads back the last verification of the trail, a trail
-- record itself: only those records are in this index.
CREATE INDEX trail_verifications ON trail (seq) WHERE action = 'trail_verify';
