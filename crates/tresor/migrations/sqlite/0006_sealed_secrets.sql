-- Block secrets at rest are sealed (XChaCha20-Poly1305, src/seal.rs) under
-- a key kept outside the database. The server seals the clear secrets of an
-- older database at its first start and empties `secret`, in one writer
-- job recorded in the trail; `secret` stays only because SQLite cannot
-- drop a NOT NULL column in place. The key check (a known text sealed under
-- the key) is kept in `settings` under 'secrets_key_check'.
ALTER TABLE blocks ADD COLUMN sealed_secret BLOB;
