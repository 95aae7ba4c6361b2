-- The installation's identity: a random id made once, kept by every backup
-- and restore of this database, so that a backup or a published checkpoint
-- of another installation is told apart (crate::backup).
INSERT INTO settings (key, value)
SELECT 'installation_id', md5(random()::text || clock_timestamp()::text || pg_backend_pid()::text)
WHERE NOT EXISTS (SELECT 1 FROM settings WHERE key = 'installation_id');
