-- The installation's identity: a random id made once, kept by every backup
-- and restore of this database, so that a backup or a published checkpoint
-- of another installation is told apart (crate::backup).
INSERT INTO settings (key, value)
SELECT 'installation_id', lower(hex(randomblob(16)))
WHERE NOT EXISTS (SELECT 1 FROM settings WHERE key = 'installation_id');
