-- Issue 22, what players and operators need next (sqlite; the twin is
-- ../postgres/0014_account_care.sql): the operator's suspension of an
-- account, e-mail (tokens sent by mail, the address confirmed) and where a
-- session was opened from.

-- Suspended by the operator, apart from an exclusion: stakes, deposits and
-- logins are refused while suspended_at_ms is set. The reason is the staff's
-- only (the player is told neutrally).
ALTER TABLE player_accounts ADD COLUMN suspended_at_ms INTEGER;
ALTER TABLE player_accounts ADD COLUMN suspended_by TEXT;
ALTER TABLE player_accounts ADD COLUMN suspended_reason TEXT;

-- When the e-mail address on file was confirmed (NULL: not yet).
ALTER TABLE identities ADD COLUMN email_confirmed_at_ms INTEGER;

-- Single-use, expiring tokens sent by mail: a password reset, an address to
-- confirm. Only the token's SHA-256 is kept.
CREATE TABLE mail_tokens (
    token_hash TEXT PRIMARY KEY,
    purpose TEXT NOT NULL CHECK (purpose IN ('password_reset', 'email_confirm')),
    player_id INTEGER NOT NULL REFERENCES players (id),
    -- The address it was sent to: a confirmation confirms this one only.
    email TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER NOT NULL,
    used_at_ms INTEGER
);
CREATE INDEX mail_tokens_by_player ON mail_tokens (player_id);

-- Where a session was opened from, for the player's list of sessions.
ALTER TABLE sessions ADD COLUMN user_agent TEXT;
ALTER TABLE sessions ADD COLUMN address TEXT;
