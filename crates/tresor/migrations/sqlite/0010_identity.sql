-- People, identities and four eyes (SQLite; the twin is
-- ../postgres/0010_identity.sql).

-- One account per person. `person_key` is the identity's names normalised
-- (`account::names`: NFKC, format characters and marks removed, case
-- folded, the TR39 confusable skeleton, first names in order) and its birth
-- date. SQL cannot compute it: the server fills the rows left NULL when it
-- starts (`Service::rematch_identities`), and matches them against the ban
-- list again. Accounts that already shared a person before this migration
-- keep existing: the later ones point at the first (`duplicate_of`) and may
-- no longer take money in or stake. The unique index holds one account per
-- person for every opening, whatever the code does.
ALTER TABLE identities ADD COLUMN person_key TEXT;
ALTER TABLE identities ADD COLUMN duplicate_of INTEGER REFERENCES players (id);
CREATE UNIQUE INDEX identities_one_per_person ON identities (person_key) WHERE duplicate_of IS NULL;
CREATE INDEX identities_by_person ON identities (person_key);

-- The ban list's names as imported (for re-keying when the normalisation
-- changes); entries imported before this migration have only their old
-- folded key (key_version 1) and are keyed again from it at start.
ALTER TABLE ban_entries ADD COLUMN birth_name TEXT;
ALTER TABLE ban_entries ADD COLUMN first_names TEXT;
ALTER TABLE ban_entries ADD COLUMN key_version INTEGER NOT NULL DEFAULT 1;

-- What the verification reviewed: when the IBAN was last given and how
-- many times it changed, and who verified the account (an actor label:
-- `operator` for the command line, `staff:NAME` for the console).
ALTER TABLE player_accounts ADD COLUMN iban_set_at_ms INTEGER;
ALTER TABLE player_accounts ADD COLUMN iban_changes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE player_accounts ADD COLUMN verified_by TEXT;
UPDATE player_accounts SET iban_set_at_ms = opened_at_ms WHERE iban IS NOT NULL;

-- Each operator's credit, by whom: the per-operator limits sum them, and
-- the approver of a withdrawal may not be one who credited the account.
CREATE TABLE operator_credits (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    actor TEXT NOT NULL,
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    at_ms INTEGER NOT NULL
);
CREATE INDEX operator_credits_by_actor ON operator_credits (actor, at_ms);
CREATE INDEX operator_credits_by_player ON operator_credits (player_id);
-- Credits made before this migration, by whom the trail says.
INSERT INTO operator_credits (player_id, actor, amount_cents, at_ms)
SELECT CAST(json_extract(request, '$.player_id') AS INTEGER), actor,
       CAST(json_extract(request, '$.amount_cents') AS INTEGER), at_ms
FROM trail WHERE action = 'credit'
  AND CAST(json_extract(request, '$.player_id') AS INTEGER) IN (SELECT id FROM players)
  AND CAST(json_extract(request, '$.amount_cents') AS INTEGER) > 0;
UPDATE player_accounts SET verified_by = (
    SELECT t.actor FROM trail t WHERE t.action = 'account_verified'
      AND CAST(json_extract(t.request, '$.player_id') AS INTEGER) = player_accounts.player_id
    ORDER BY t.seq DESC LIMIT 1)
WHERE status = 'verified';
