-- The period report's rollup (SQLite; the twin is
-- ../postgres/0026_report_rollup.sql; issue 45, docs/CONSOLE.md, "Rapports").
-- `tresor report --by` and the console's « Rapports » sum the plays and the
-- ledger's transfers by UTC hour; here they keep those sums for the rows
-- they have already read, so that the next report reads only the rows
-- added since (by primary key) instead of the whole tables. Written by the
-- report alone, never by a purchase: no trigger, no index on `plays` or
-- `transfers`.
--
-- `report_rollup` says which rows the sums hold: the plays with
-- id <= plays_through and the transfers with id <= transfers_through.
-- A report extends them to the rows written more than an hour ago
-- (src/report/period/rollup.rs); rows after the marks are read live.
CREATE TABLE report_rollup (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    plays_through INTEGER NOT NULL,
    transfers_through INTEGER NOT NULL
);
INSERT INTO report_rollup (id, plays_through, transfers_through) VALUES (1, 0, 0);

-- The plays' sums by UTC hour (created_at_ms / 3600000) and block; one row
-- per extension, hour and block (the reader sums them).
CREATE TABLE report_play_hours (
    hour INTEGER NOT NULL,
    block_id INTEGER NOT NULL,
    units INTEGER NOT NULL,
    stakes_cents INTEGER NOT NULL,
    prizes_cents INTEGER NOT NULL
);

-- The transfers' sums by UTC hour, kind and sides (0 for every player's
-- account, -1000 for every writer's stakes and prizes accounts, otherwise
-- the system account's id).
CREATE TABLE report_transfer_hours (
    hour INTEGER NOT NULL,
    kind TEXT NOT NULL,
    debit INTEGER NOT NULL,
    credit INTEGER NOT NULL,
    amount_cents INTEGER NOT NULL
);
