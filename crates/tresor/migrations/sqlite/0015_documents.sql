-- Identity documents (sqlite; the twin is ../postgres/0015_documents.sql): what
-- the law asks before a first withdrawal, an identity document and a proof
-- that the IBAN is the player's. The file is sealed under the secrets key
-- with the document's id as associated data (src/seal.rs), never stored in
-- clear; the player sees kind, name, size, date and status only.
CREATE TABLE identity_documents (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    kind TEXT NOT NULL CHECK (kind IN ('identity', 'iban_proof')),
    -- The file's name as the player gave it (shown, never used as a path).
    name TEXT NOT NULL,
    -- Found from the file's first bytes, not from what the browser said.
    content_type TEXT NOT NULL CHECK (content_type IN ('image/jpeg', 'image/png', 'application/pdf')),
    size_bytes INTEGER NOT NULL CHECK (size_bytes > 0),
    sha256 TEXT NOT NULL,
    -- Empty only inside the uploading job, between the insert (which gives
    -- the id the seal is bound to) and the update that stores the seal.
    sealed BLOB NOT NULL,
    uploaded_at_ms INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'verified', 'refused')),
    decided_at_ms INTEGER,
    decided_by TEXT,
    -- Why it was refused: the player reads it.
    reason TEXT
);
CREATE INDEX identity_documents_by_player ON identity_documents (player_id, kind, id);
CREATE INDEX identity_documents_by_status ON identity_documents (status, id);

-- The console's trail screen searches by actor and by action, newest first.
CREATE INDEX trail_by_actor ON trail (actor, seq);
CREATE INDEX trail_by_action ON trail (action, seq);
