-- Player protection (PostgreSQL): the 7-day caps on deposits and stakes each player
-- sets (décret n° 2010-518, art. 16) and self-exclusion. The twin is
-- ../sqlite/0003_protect.sql.

-- One row per player, written at registration. A raised cap waits in
-- *_pending_cents until *_pending_at_ms (48 hours after the request); readers
-- apply a pending cap whose time has come, and the next change folds it in.
CREATE TABLE protections (
    player_id BIGINT PRIMARY KEY REFERENCES players (id),
    deposit_limit_cents BIGINT NOT NULL CHECK (deposit_limit_cents > 0),
    deposit_pending_cents BIGINT CHECK (deposit_pending_cents > 0),
    deposit_pending_at_ms BIGINT,
    stake_limit_cents BIGINT NOT NULL CHECK (stake_limit_cents > 0),
    stake_pending_cents BIGINT CHECK (stake_pending_cents > 0),
    stake_pending_at_ms BIGINT,
    -- Play, deposits and login are refused until then.
    excluded_until_ms BIGINT,
    updated_at_ms BIGINT NOT NULL,
    CHECK ((deposit_pending_cents IS NULL) = (deposit_pending_at_ms IS NULL)),
    CHECK ((stake_pending_cents IS NULL) = (stake_pending_at_ms IS NULL))
);
-- Players registered before the caps existed get the default caps (500 €).
INSERT INTO protections (player_id, deposit_limit_cents, stake_limit_cents, updated_at_ms)
SELECT id, 50000, 50000, created_at_ms FROM players;

-- What each player deposited and staked, per hour: the caps sum the last
-- seven days of it. Buckets keep that sum to at most 169 rows however much a
-- player plays, inside the single writer's transaction; an hour's movements
-- leave the window together, when the last of them is seven days old.
CREATE TABLE movement_hours (
    player_id BIGINT NOT NULL REFERENCES players (id),
    kind TEXT NOT NULL CHECK (kind IN ('deposit', 'stake')),
    hour_ms BIGINT NOT NULL,
    amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
    PRIMARY KEY (player_id, kind, hour_ms)
);
-- The ledger's earlier deposits and stakes count from the start.
INSERT INTO movement_hours (player_id, kind, hour_ms, amount_cents)
SELECT p.id, t.kind, (t.created_at_ms / 3600000) * 3600000, CAST(SUM(t.amount_cents) AS BIGINT)
FROM transfers t JOIN players p
    ON (t.kind = 'deposit' AND p.account_id = t.credit_account_id)
    OR (t.kind = 'stake' AND p.account_id = t.debit_account_id)
GROUP BY p.id, t.kind, (t.created_at_ms / 3600000) * 3600000;

-- Failed logins per account over the last hour are counted from the trail.
CREATE INDEX trail_failed_logins ON trail (actor, at_ms) WHERE action = 'login_failed';
