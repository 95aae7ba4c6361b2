-- The player account for real money (SQLite; the twin is
-- ../postgres/0008_accounts.sql): identity and status, the national ban list,
-- provider deposits, withdrawals, reserves, and the ledger's new accounts and
-- movements.

-- SQLite cannot change a CHECK in place: `accounts` and `transfers` are
-- rebuilt with the wider lists of kinds. sqlx runs a migration inside a
-- transaction, where `foreign_keys` cannot be switched off, so the checks of
-- the rows referring to `accounts` wait for the COMMIT, by which time the
-- same rows are back under the same ids.
PRAGMA defer_foreign_keys = ON;

CREATE TABLE accounts_copy AS SELECT id, kind, balance_cents FROM accounts;
DROP TABLE accounts;
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('player', 'deposits', 'stakes', 'prizes',
        'provider', 'to_refund', 'pending_withdrawals', 'paid_out', 'reserves')),
    balance_cents INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'player' OR balance_cents >= 0)
);
INSERT INTO accounts (id, kind, balance_cents) SELECT id, kind, balance_cents FROM accounts_copy;
DROP TABLE accounts_copy;
-- The new system accounts have negative ids: positive ones are players'.
INSERT INTO accounts (id, kind) VALUES
    (-1, 'provider'), (-2, 'to_refund'), (-3, 'pending_withdrawals'), (-4, 'paid_out'), (-5, 'reserves');

CREATE TABLE transfers_new (
    id INTEGER PRIMARY KEY,
    debit_account_id INTEGER NOT NULL REFERENCES accounts (id),
    credit_account_id INTEGER NOT NULL REFERENCES accounts (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake', 'prize', 'credit', 'refund_due',
        'withdrawal', 'withdrawal_paid', 'withdrawal_rejected', 'withdrawal_cancelled', 'reserve')),
    play_id INTEGER,
    created_at_ms INTEGER NOT NULL,
    deposit_id INTEGER,
    withdrawal_id INTEGER,
    CHECK (debit_account_id <> credit_account_id)
);
INSERT INTO transfers_new (id, debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms)
SELECT id, debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms FROM transfers;
DROP TABLE transfers;
ALTER TABLE transfers_new RENAME TO transfers;
CREATE INDEX transfers_by_debit ON transfers (debit_account_id);
CREATE INDEX transfers_by_credit ON transfers (credit_account_id);
CREATE UNIQUE INDEX transfers_one_stake_per_play ON transfers (play_id) WHERE kind = 'stake';
CREATE UNIQUE INDEX transfers_one_prize_per_play ON transfers (play_id) WHERE kind = 'prize';
-- A deposit is credited once; a withdrawal leaves once and settles once
-- (paid, rejected or cancelled), whatever the code does.
CREATE UNIQUE INDEX transfers_one_credit_per_deposit ON transfers (deposit_id) WHERE kind = 'deposit';
CREATE UNIQUE INDEX transfers_one_request_per_withdrawal ON transfers (withdrawal_id) WHERE kind = 'withdrawal';
CREATE UNIQUE INDEX transfers_one_settlement_per_withdrawal ON transfers (withdrawal_id)
    WHERE kind IN ('withdrawal_paid', 'withdrawal_rejected', 'withdrawal_cancelled');
CREATE INDEX transfers_by_withdrawal ON transfers (withdrawal_id) WHERE withdrawal_id IS NOT NULL;

-- One row per player: the account's status and settings. Players registered
-- before this migration have no identity (as in demo mode).
CREATE TABLE player_accounts (
    player_id INTEGER PRIMARY KEY REFERENCES players (id),
    status TEXT NOT NULL CHECK (status IN ('provisional', 'verified', 'closed')),
    -- A provisional account with an identity may stake until then.
    provisional_until_ms INTEGER,
    rules_version INTEGER NOT NULL,
    marketing_consent INTEGER NOT NULL CHECK (marketing_consent IN (0, 1)),
    reminder_minutes INTEGER CHECK (reminder_minutes > 0),
    -- The bank account the player gave, verified with the identity.
    iban TEXT,
    banned_at_ms INTEGER,
    opened_at_ms INTEGER NOT NULL,
    verified_at_ms INTEGER,
    closed_at_ms INTEGER
);
INSERT INTO player_accounts (player_id, status, rules_version, marketing_consent, opened_at_ms)
SELECT id, 'provisional', 1, 0, created_at_ms FROM players;
CREATE INDEX player_accounts_by_status ON player_accounts (status);

CREATE TABLE identities (
    player_id INTEGER PRIMARY KEY REFERENCES players (id),
    birth_name TEXT NOT NULL,
    first_names TEXT NOT NULL,
    birth_date TEXT NOT NULL,
    birth_place TEXT NOT NULL,
    address TEXT NOT NULL,
    email TEXT,
    -- Birth name and first names folded (case, accents, punctuation) for the ban list.
    name_key TEXT NOT NULL
);
CREATE INDEX identities_by_name ON identities (name_key, birth_date);

-- The national gambling-ban list in force (the last import), and each import.
CREATE TABLE ban_entries (
    name_key TEXT NOT NULL,
    birth_date TEXT NOT NULL,
    PRIMARY KEY (name_key, birth_date)
);
CREATE TABLE ban_imports (
    version INTEGER PRIMARY KEY,
    entries INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    imported_at_ms INTEGER NOT NULL
);

-- A deposit asked by the player, confirmed by the provider's webhook.
CREATE TABLE deposits (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    provider TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'credited', 'to_refund', 'failed')),
    created_at_ms INTEGER NOT NULL,
    settled_at_ms INTEGER
);
CREATE INDEX deposits_by_player ON deposits (player_id, id);
-- Each confirmation the provider sent, once per transaction id.
CREATE TABLE payments (
    provider TEXT NOT NULL,
    transaction_id TEXT NOT NULL,
    deposit_id INTEGER NOT NULL REFERENCES deposits (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    outcome TEXT NOT NULL CHECK (outcome IN ('credited', 'to_refund')),
    reason TEXT,
    received_at_ms INTEGER NOT NULL,
    PRIMARY KEY (provider, transaction_id)
);

CREATE TABLE withdrawals (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    iban TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('pending', 'paid', 'rejected', 'cancelled')),
    reason TEXT,
    -- Asked by the closing of the account rather than by the player.
    closing INTEGER NOT NULL CHECK (closing IN (0, 1)),
    requested_at_ms INTEGER NOT NULL,
    settled_at_ms INTEGER
);
CREATE INDEX withdrawals_by_state ON withdrawals (state, id);
CREATE INDEX withdrawals_by_player ON withdrawals (player_id, id);

-- Balances of closed accounts that could not be paid out: kept six years.
CREATE TABLE reserves (
    player_id INTEGER PRIMARY KEY REFERENCES players (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    kept_until_ms INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);
