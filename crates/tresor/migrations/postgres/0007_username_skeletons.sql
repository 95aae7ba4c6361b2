-- Usernames are one name when their confusable skeletons (Unicode TR39:
-- NFKC, case folded, then each character by its prototype) are equal, so
-- "ana", "ANA", full-width "ａｎａ" and Cyrillic "аna" cannot coexist. SQL
-- cannot compute a skeleton: the server fills the rows left NULL when it
-- starts (`Service::backfill_username_skeletons`). A NULL skeleton (a row
-- from before, or one whose skeleton another player already holds) is found
-- by its `username_key`, as before.
ALTER TABLE players ADD COLUMN username_skeleton TEXT;
CREATE UNIQUE INDEX players_by_username_skeleton ON players (username_skeleton);
