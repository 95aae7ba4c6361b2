-- A purchase looks up its player's unfinished play (to settle it first), and
-- so does `GET /api/me`. Without this index that look-up reads the player's
-- whole history through `plays_by_player`: a purchase got slower with every
-- play the player had made (found selling a whole block to 256 players).
-- At most one play per player is in progress, so the index stays tiny.
CREATE INDEX plays_in_progress_by_player ON plays (player_id) WHERE state = 'in_progress';
