-- The ledger's transfers name their accounts without foreign keys
-- (PostgreSQL alone; SQLite keeps its own, which lock nothing).
-- Checking them locked each buyer's account row FOR KEY SHARE and ran one
-- query a row: about 30 µs of PostgreSQL's time a purchase, over a third
-- of the batch's statements' time (BENCHMARKS.md, "The ledger's foreign keys"). What
-- they promised still holds, checked where the money moves
-- (ARCHITECTURE.md, "Invariants"): a batch updates every account its
-- transfers name and fails before COMMIT unless each update changed its
-- row; a one-off transfer updates both accounts with RETURNING first.
ALTER TABLE transfers
    DROP CONSTRAINT transfers_debit_account_id_fkey,
    DROP CONSTRAINT transfers_credit_account_id_fkey;
