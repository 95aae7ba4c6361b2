-- Issue 32, findings 1, 7 and 9 (sqlite; the twin is
-- ../postgres/0018_account_guard.sql): a stolen session no longer takes the
-- account. An address change is kept, with a link to undo it that goes to
-- the old address (the change's mails are counted from here too), and each
-- session counts the wrong current passwords given in it.

-- Every change of the address on file: the old address (and whether it was
-- confirmed), the new one, and the undo link's SHA-256, which the old
-- address received and which works until undo_until_ms, once. new_email is
-- kept trimmed and in lower case: the quota of changes per address counts by it.
CREATE TABLE email_changes (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    old_email TEXT,
    old_confirmed_at_ms INTEGER,
    new_email TEXT NOT NULL,
    changed_at_ms INTEGER NOT NULL,
    undo_token_hash TEXT NOT NULL UNIQUE,
    undo_until_ms INTEGER NOT NULL,
    undone_at_ms INTEGER
);
CREATE INDEX email_changes_by_player ON email_changes (player_id, changed_at_ms);
CREATE INDEX email_changes_by_address ON email_changes (new_email, changed_at_ms);

-- Wrong current passwords given in a session (a password, e-mail or IBAN
-- change): the session ends at the fifth.
ALTER TABLE sessions ADD COLUMN wrong_passwords INTEGER NOT NULL DEFAULT 0;
ALTER TABLE staff_sessions ADD COLUMN wrong_passwords INTEGER NOT NULL DEFAULT 0;
