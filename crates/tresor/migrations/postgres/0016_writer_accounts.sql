-- One stakes and one prizes account per writer (PostgreSQL; the SQLite twin
-- is ../sqlite/0016_writer_accounts.sql). A purchase moves its stake to its
-- writer's own stakes account and a win comes from its writer's own prizes
-- account, so no ledger row is written by every transaction of every server
-- (docs/SCALING.md, "Hot rows"). Reports and the ledger's checks sum every
-- account of the kind. The accounts 2 (stakes) and 3 (prizes) of the first
-- migration stay: their balances are what was staked and won before.

-- The writer an account belongs to (its log's `writer`); NULL for the others.
ALTER TABLE accounts ADD COLUMN writer TEXT;
CREATE UNIQUE INDEX accounts_one_per_writer ON accounts (writer, kind) WHERE writer IS NOT NULL;

-- Ids below the fixed system accounts' (-1 to -5), made from the log's id so
-- that two writers never pick the same: stakes -1000 - 2 * log id, prizes one
-- below. The writer makes its own when it creates its log
-- (`store::writer_accounts`); the logs made before get theirs here.
INSERT INTO accounts (id, kind, writer)
SELECT -1000 - 2 * id, 'stakes', writer FROM logs
UNION ALL
SELECT -1001 - 2 * id, 'prizes', writer FROM logs;
