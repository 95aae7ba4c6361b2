-- The first schema of Tresor (SQLite). The PostgreSQL twin is in
-- ../postgres/0001_init.sql: keep the two identical but for column types.

-- Double-entry ledger: every movement is a transfer between two accounts.
-- Balances are a cache of the transfers, updated in the same transaction; a
-- player's balance can never go below zero, enforced here as well as in code.
CREATE TABLE accounts (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('player', 'deposits', 'stakes', 'prizes')),
    balance_cents INTEGER NOT NULL DEFAULT 0,
    CHECK (kind <> 'player' OR balance_cents >= 0)
);
INSERT INTO accounts (id, kind) VALUES (1, 'deposits'), (2, 'stakes'), (3, 'prizes');

CREATE TABLE transfers (
    id INTEGER PRIMARY KEY,
    debit_account_id INTEGER NOT NULL REFERENCES accounts (id),
    credit_account_id INTEGER NOT NULL REFERENCES accounts (id),
    amount_cents INTEGER NOT NULL CHECK (amount_cents > 0),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake', 'prize')),
    play_id INTEGER,
    created_at_ms INTEGER NOT NULL,
    CHECK (debit_account_id <> credit_account_id)
);
CREATE INDEX transfers_by_debit ON transfers (debit_account_id);
CREATE INDEX transfers_by_credit ON transfers (credit_account_id);
-- A play is paid for once and wins once, whatever the code does.
CREATE UNIQUE INDEX transfers_one_stake_per_play ON transfers (play_id) WHERE kind = 'stake';
CREATE UNIQUE INDEX transfers_one_prize_per_play ON transfers (play_id) WHERE kind = 'prize';

CREATE TABLE players (
    id INTEGER PRIMARY KEY,
    username TEXT NOT NULL,
    username_key TEXT NOT NULL UNIQUE,
    password_hash TEXT NOT NULL,
    account_id INTEGER NOT NULL UNIQUE REFERENCES accounts (id),
    adult_declared_at_ms INTEGER NOT NULL,
    rules_accepted_at_ms INTEGER NOT NULL,
    created_at_ms INTEGER NOT NULL
);

CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    created_at_ms INTEGER NOT NULL,
    last_seen_at_ms INTEGER NOT NULL,
    ended_at_ms INTEGER
);
CREATE INDEX sessions_by_player ON sessions (player_id);

CREATE TABLE emissions (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'closed')),
    created_at_ms INTEGER NOT NULL,
    closed_at_ms INTEGER
);

CREATE TABLE blocks (
    id INTEGER PRIMARY KEY,
    emission_id INTEGER NOT NULL REFERENCES emissions (id),
    stake_cents INTEGER NOT NULL CHECK (stake_cents IN (50, 100, 200)),
    secret BLOB NOT NULL,
    commitment TEXT NOT NULL,
    units_sold INTEGER NOT NULL DEFAULT 0 CHECK (units_sold BETWEEN 0 AND 450000),
    state TEXT NOT NULL CHECK (state IN ('open', 'suspended', 'sold_out', 'closed')),
    created_at_ms INTEGER NOT NULL,
    published_at_ms INTEGER
);
CREATE INDEX blocks_for_sale ON blocks (stake_cents, state, id);

CREATE TABLE plays (
    id INTEGER PRIMARY KEY,
    player_id INTEGER NOT NULL REFERENCES players (id),
    block_id INTEGER NOT NULL REFERENCES blocks (id),
    unit_index INTEGER NOT NULL CHECK (unit_index BETWEEN 0 AND 449999),
    stake_cents INTEGER NOT NULL,
    level INTEGER NOT NULL CHECK (level BETWEEN 0 AND 9),
    prize_cents INTEGER NOT NULL CHECK (prize_cents >= 0),
    throws_made INTEGER NOT NULL DEFAULT 0 CHECK (throws_made BETWEEN 0 AND 4),
    state TEXT NOT NULL CHECK (state IN ('in_progress', 'finished')),
    idempotency_key TEXT NOT NULL,
    request_hash TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    finished_at_ms INTEGER,
    -- No unit is ever sold twice, whatever the code does.
    UNIQUE (block_id, unit_index),
    UNIQUE (player_id, idempotency_key)
);
CREATE INDEX plays_by_player ON plays (player_id, id);
CREATE INDEX plays_in_progress ON plays (created_at_ms) WHERE state = 'in_progress';

-- Operator settings: the sales opening time and the site message.
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
