//! Buying a unit: the purchase request, its idempotency key, and handing it
//! to the writer's hot batch (`crate::batch`).

use super::plays::PlayView;
use super::session_cache::Buyer;
use super::{Service, sha256_hex};
use crate::batch::{self, BuyCommand, Command, Reply};
use crate::error::Error;
use crate::model::{IdempotencyKey, Player};
use crate::store::sql;
use tresor_game::{Game, ISLAND_ID};

/// A purchase's validated request: a stake the game sells (see
/// `Service::game` and `Service::sold_stake`).
#[derive(Debug, Clone)]
pub struct Purchase {
    pub game: &'static Game,
    pub stake_cents: i64,
    pub idempotency_key: IdempotencyKey,
}

/// What a purchase hands back: the play, and whether it was an earlier
/// purchase replayed by its idempotency key.
#[derive(Debug, Clone)]
pub struct Bought {
    pub play_id: i64,
    pub replayed: bool,
    /// The play as the purchase wrote it (none for a replay).
    fresh: Option<batch::PlayState>,
    /// The receipt of its `buy` record, proven by the writer (none for a
    /// replay: read back with the play).
    pub receipt: Option<Box<crate::trail::Receipt>>,
}

impl Service {
    /// Buys the next unit of an open block of the stake for the player: in one
    /// transaction the stake is debited, the unit assigned and the play
    /// recorded with its outcome. A play the player left unfinished is settled
    /// first. The same idempotency key returns the first play again.
    pub async fn buy(&self, player: &Player, purchase: Purchase) -> Result<Bought, Error> {
        self.buy_as(player, None, purchase).await
    }

    /// [`Service::buy`] for the player of a session resolved from the cache
    /// (`session_cache.rs`): the batch that sells refuses it, `session_ended`,
    /// if the session ended meanwhile, here or on another server.
    pub async fn buy_in_session(&self, buyer: &Buyer, purchase: Purchase) -> Result<Bought, Error> {
        let bought = self
            .buy_as(&buyer.player, Some(buyer.token_hash.clone()), purchase)
            .await;
        if let Err(Error::SessionEnded(_)) = &bought {
            self.sessions.forget(&buyer.token_hash);
        }
        bought
    }

    async fn buy_as(
        &self,
        player: &Player,
        session: Option<String>,
        purchase: Purchase,
    ) -> Result<Bought, Error> {
        let game_id = purchase.game.id();
        let stake_cents = self.sold_stake(purchase.game, purchase.stake_cents)?;
        // The island's requests hash as before the catalogue, so that a key
        // used before it replays the same purchase.
        let request = match game_id {
            ISLAND_ID => format!("stake_cents={stake_cents}"),
            _ => format!("stake_cents={stake_cents}&game={game_id}"),
        };
        let request_hash = sha256_hex(request.as_bytes());
        // Make sure the blocks that will be sold from are in memory, so the
        // writer never waits for a shuffle (best effort: the job checks
        // again). Looked up once a second, not on every purchase.
        if self.blocks.due_for_check(game_id, stake_cents) {
            let candidates: Vec<i64> = sql::query_scalar(
                "SELECT b.id FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                 WHERE b.game_id = $1 AND b.stake_cents = $2 AND b.state = 'open' \
                 AND e.state = 'open' ORDER BY b.id LIMIT $3",
            )
            .bind(game_id)
            .bind(stake_cents)
            .bind(self.settings.block_offset + 2)
            .fetch_all(&mut *self.db.conn().await?)
            .await?;
            for block_id in candidates {
                self.block_data(block_id).await?;
            }
        }
        let command = Command::Buy(BuyCommand {
            player: player.clone(),
            game: purchase.game,
            stake_cents,
            idempotency_key: purchase.idempotency_key,
            request_hash,
            session,
            now_ms: self.now_ms(),
        });
        match self.writer.hot(command).await? {
            Reply::Bought {
                play_id,
                fresh,
                receipt,
            } => Ok(Bought {
                play_id,
                replayed: fresh.is_none(),
                fresh,
                receipt,
            }),
            other => unreachable!("a purchase is answered as one: {other:?}"),
        }
    }

    /// The view of a play just bought: built from what the purchase wrote,
    /// or read back for a replay.
    pub async fn bought_view(&self, player: &Player, bought: &Bought) -> Result<PlayView, Error> {
        match &bought.fresh {
            Some(fresh) => {
                let mut view = self.play_view(fresh).await?;
                view.receipt = bought.receipt.as_deref().cloned();
                Ok(view)
            }
            None => {
                let mut view = self.play(player, bought.play_id).await?;
                view.receipt = self.play_receipt(player, bought.play_id).await?;
                Ok(view)
            }
        }
    }
}
