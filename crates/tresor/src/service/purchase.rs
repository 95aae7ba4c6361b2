//! Buying a unit: the purchase request, its idempotency key and the writer job.

use super::blocks::BlockCache;
use super::money::{STAKES_ACCOUNT, transfer};
use super::players::Player;
use super::plays::{PlayRow, PlayView, settle};
use super::status::setting;
use super::{Service, sha256_hex};
use crate::error::Error;
use crate::protect::{self, LimitKind};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde_json::json;
use tresor_game::{BlockSecret, Stake, UNITS_PER_BLOCK};

/// A purchase's validated request.
#[derive(Debug, Clone)]
pub struct Purchase {
    pub stake: Stake,
    pub idempotency_key: IdempotencyKey,
}

/// An `Idempotency-Key`: 1 to 64 characters among `A-Z a-z 0-9 - _ :`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyKey(String);

impl IdempotencyKey {
    pub fn parse(text: &str) -> Result<Self, Error> {
        let ok = (1..=64).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b':'));
        if ok {
            Ok(IdempotencyKey(text.to_owned()))
        } else {
            Err(Error::InvalidIdempotencyKey)
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a purchase job hands back: the play, and whether it was an earlier
/// purchase replayed by its idempotency key.
#[derive(Debug, Clone, Copy)]
pub struct Bought {
    pub play_id: i64,
    pub replayed: bool,
    /// The play as the purchase wrote it (none for a replay).
    fresh: Option<FreshPlay>,
}

/// What a purchase knows of the play it recorded: all a view needs.
#[derive(Debug, Clone, Copy)]
struct FreshPlay {
    block_id: i64,
    emission_id: i64,
    unit_index: i64,
    stake_cents: i64,
    level: i64,
    prize_cents: i64,
    created_at_ms: i64,
}

impl Service {
    /// Buys the next unit of an open block of the stake for the player: in one
    /// transaction the stake is debited, the unit assigned and the play
    /// recorded with its outcome. A play the player left unfinished is settled
    /// first. The same idempotency key returns the first play again.
    pub async fn buy(&self, player: &Player, purchase: Purchase) -> Result<Bought, Error> {
        let request_hash = sha256_hex(format!("stake_cents={}", purchase.stake.cents()).as_bytes());
        // Make sure the blocks that will be sold from are in memory, so the
        // writer never waits for a shuffle (best effort: the job checks
        // again). Looked up once a second, not on every purchase.
        if self.blocks.due_for_check(purchase.stake.cents()) {
            let candidates: Vec<i64> = sql::query_scalar(
                "SELECT b.id FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                 WHERE b.stake_cents = $1 AND b.state = 'open' AND e.state = 'open' \
                 ORDER BY b.id LIMIT $2",
            )
            .bind(purchase.stake.cents())
            .bind(self.settings.block_offset + 2)
            .fetch_all(&mut *self.db.conn().await?)
            .await?;
            for block_id in candidates {
                self.block_data(block_id).await?;
            }
        }
        let player = player.clone();
        let now_ms = self.now_ms();
        let blocks = self.blocks.clone();
        let block_offset = self.settings.block_offset;
        self.write(move |conn| {
            let player = player.clone();
            let purchase = purchase.clone();
            let request_hash = request_hash.clone();
            let blocks = blocks.clone();
            Box::pin(async move {
                buy_job(
                    conn,
                    &player,
                    &purchase,
                    &request_hash,
                    now_ms,
                    &blocks,
                    block_offset,
                )
                .await
            })
        })
        .await
    }

    /// The view of a play just bought: built from what the purchase wrote,
    /// or read back for a replay.
    pub async fn bought_view(&self, player: &Player, bought: &Bought) -> Result<PlayView, Error> {
        let Some(fresh) = bought.fresh else {
            return self.play(player, bought.play_id).await;
        };
        self.play_view(PlayRow {
            id: bought.play_id,
            block_id: fresh.block_id,
            emission_id: fresh.emission_id,
            unit_index: fresh.unit_index,
            stake_cents: fresh.stake_cents,
            level: fresh.level,
            prize_cents: fresh.prize_cents,
            throws_made: 0,
            state: "in_progress".to_owned(),
            created_at_ms: fresh.created_at_ms,
            finished_at_ms: None,
        })
        .await
    }
}

async fn buy_job(
    conn: &mut Conn,
    player: &Player,
    purchase: &Purchase,
    request_hash: &str,
    now_ms: i64,
    blocks: &BlockCache,
    block_offset: i64,
) -> Result<Bought, Error> {
    let stake_cents = purchase.stake.cents();
    let earlier: Option<(i64, String)> = sql::query_as(
        "SELECT id, request_hash FROM plays WHERE player_id = $1 AND idempotency_key = $2",
    )
    .bind(player.id)
    .bind(purchase.idempotency_key.as_str())
    .fetch_optional(&mut *conn)
    .await?;
    let actor = Actor::player(player.id, &player.username);
    if let Some((play_id, earlier_hash)) = earlier {
        if earlier_hash != request_hash {
            return Err(Error::IdempotencyConflict);
        }
        // A replay changes nothing but shows the play again: recorded too.
        trail::append(
            conn,
            now_ms,
            &actor,
            "buy",
            json!({"stake_cents": stake_cents, "idempotency_key": purchase.idempotency_key.as_str()}),
            json!({"play_id": play_id, "replayed": true}),
        )
        .await?;
        return Ok(Bought {
            play_id,
            replayed: true,
            fresh: None,
        });
    }

    let opens_at_ms: Option<i64> = setting(conn, "sales_open_at_ms")
        .await?
        .and_then(|v| v.parse().ok());
    if opens_at_ms.is_some_and(|t| t > now_ms) {
        return Err(Error::SalesClosed { opens_at_ms });
    }

    protect::check_movement(conn, LimitKind::Stake, player, stake_cents, now_ms).await?;

    // A game the player left mid-way is settled before the next one starts.
    let unfinished: Vec<i64> =
        sql::query_scalar("SELECT id FROM plays WHERE player_id = $1 AND state = 'in_progress'")
            .bind(player.id)
            .fetch_all(&mut *conn)
            .await?;
    for play_id in unfinished {
        settle(conn, play_id, now_ms, &actor, "next_purchase").await?;
    }

    // The server's preferred block first (see `Settings::block_offset`),
    // then the first open one, so sales never stop while any block has
    // units. The outer conditions are checked again on the locked row: on
    // PostgreSQL another server may have sold the block's last unit since
    // the subquery looked, and then the next attempt picks another block.
    let mut unit = None;
    for offset in [block_offset, 0, 0] {
        unit = sql::query(
            "UPDATE blocks SET units_sold = units_sold + 1 WHERE id = ( \
                 SELECT b.id FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                 WHERE b.stake_cents = $1 AND b.state = 'open' AND e.state = 'open' AND b.units_sold < $2 \
                 ORDER BY b.id LIMIT 1 OFFSET $3) \
             AND state = 'open' AND units_sold < $2 \
             RETURNING id, emission_id, units_sold, secret",
        )
        .bind(stake_cents)
        .bind(i64::from(UNITS_PER_BLOCK))
        .bind(offset)
        .fetch_optional(&mut *conn)
        .await?;
        if unit.is_some() {
            break;
        }
    }
    let Some(unit) = unit else {
        let any_block: Option<i64> =
            sql::query_scalar("SELECT id FROM blocks WHERE stake_cents = $1 LIMIT 1")
                .bind(stake_cents)
                .fetch_optional(&mut *conn)
                .await?;
        return Err(if any_block.is_some() {
            Error::SoldOut
        } else {
            Error::SalesClosed { opens_at_ms: None }
        });
    };
    let block_id: i64 = unit.try_get("id")?;
    let emission_id: i64 = unit.try_get("emission_id")?;
    let units_sold: i64 = unit.try_get("units_sold")?;
    let unit_index = units_sold - 1;
    let sold_out = units_sold == i64::from(UNITS_PER_BLOCK);
    if sold_out {
        // The last unit: the block is sold out and its secret is published.
        sql::query("UPDATE blocks SET state = 'sold_out', published_at_ms = $1 WHERE id = $2")
            .bind(now_ms)
            .bind(block_id)
            .execute(&mut *conn)
            .await?;
    }
    let data = match blocks.get(block_id) {
        Some(data) => data,
        None => {
            let secret: Vec<u8> = unit.try_get("secret")?;
            blocks.insert(
                block_id,
                &BlockSecret::from_bytes(secret.try_into().expect("a stored secret is 32 bytes")),
            )
        }
    };
    let level = data.outcomes[unit_index as usize];
    let prize_cents = purchase.stake.prize_cents(level);

    let play_id: i64 = sql::query_scalar(
        "INSERT INTO plays (player_id, block_id, unit_index, stake_cents, level, prize_cents, throws_made, state, \
         idempotency_key, request_hash, created_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, 0, 'in_progress', $7, $8, $9) RETURNING id",
    )
    .bind(player.id)
    .bind(block_id)
    .bind(unit_index)
    .bind(stake_cents)
    .bind(i64::from(level.get()))
    .bind(prize_cents)
    .bind(purchase.idempotency_key.as_str())
    .bind(request_hash)
    .bind(now_ms)
    .fetch_one(&mut *conn)
    .await?;
    let (balance_cents, _) = transfer(
        conn,
        player.account_id,
        STAKES_ACCOUNT,
        stake_cents,
        "stake",
        Some(play_id),
        now_ms,
    )
    .await?;
    trail::append(
        conn,
        now_ms,
        &actor,
        "buy",
        json!({"stake_cents": stake_cents, "idempotency_key": purchase.idempotency_key.as_str()}),
        json!({
            "play_id": play_id,
            "emission_id": emission_id,
            "block_id": block_id,
            "unit_index": unit_index,
            "level": level.get(),
            "prize_cents": prize_cents,
            "balance_cents": balance_cents,
            "block_sold_out": sold_out,
        }),
    )
    .await?;
    Ok(Bought {
        play_id,
        replayed: false,
        fresh: Some(FreshPlay {
            block_id,
            emission_id,
            unit_index,
            stake_cents,
            level: i64::from(level.get()),
            prize_cents,
            created_at_ms: now_ms,
        }),
    })
}
