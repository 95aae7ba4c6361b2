//! A block sold out by players buying at once: each buys until the service
//! says sold out, and the units they bought add up to the block's (the
//! durability and whole-block tests); and a whole block of a game sold so
//! and checked against its table.

use super::{TestDb, player, scalar};
use serde_json::Value;
use tokio::task::JoinHandle;
use tresor::error::Error;
use tresor::model::{IdempotencyKey, Player};
use tresor::service::{Purchase, Service};
use tresor::trail::Actor;
use tresor_game::Game;

/// `buyer` buys units of `game` at `stake_cents` (keys `k0`, `k1`, …) until
/// the service answers sold out: how many it bought. With `reveal`, each
/// play is finished by its throw as soon as it is bought.
pub async fn buy_until_sold_out(
    service: &Service,
    buyer: &Player,
    game: &'static Game,
    stake_cents: i64,
    reveal: bool,
) -> usize {
    let mut bought = 0;
    loop {
        let purchase = Purchase {
            game,
            stake_cents,
            idempotency_key: IdempotencyKey::parse(&format!("k{bought}")).unwrap(),
        };
        match service.buy(buyer, purchase).await {
            Ok(play) => {
                bought += 1;
                if reveal {
                    let revealed = service.throw(buyer, play.play_id).await.unwrap();
                    assert_eq!(revealed.state, "finished");
                }
            }
            Err(Error::SoldOut) => return bought,
            Err(error) => panic!("{error}"),
        }
    }
}

/// The units the buyers' `tasks` bought, all of them.
pub async fn sold(tasks: Vec<JoinHandle<usize>>) -> usize {
    let each = futures_util::future::try_join_all(tasks).await;
    each.expect("every buyer finishes").into_iter().sum()
}

/// Whether each card is revealed as soon as it is bought.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reveal {
    Each,
    /// Left to the buyer's next purchase, and the last ones to the settler.
    Never,
}

/// What a block must pay, as its definition file writes it: units per
/// block, prizes in all, units at each level (0 the losing ones) and the
/// payout rate the report shows.
pub struct Table {
    pub units: usize,
    pub prizes_cents: i64,
    pub counts: &'static [i64],
    pub payout_percent: &'static str,
}

/// Sells one whole block of `game_id` at `stake_cents` through the service
/// to `players` concurrent players, then checks what a block must pay: its
/// units sold once each, its prizes exactly its table level by level, the
/// report's figures and the ledger.
pub async fn sell_a_whole_block(
    db: &TestDb,
    game_id: &'static str,
    stake_cents: i64,
    players: usize,
    reveal: Reveal,
    expected: &Table,
) -> Service {
    let (service, clock) = db.service_with(super::games::settings()).await;
    service
        .create_game_emission(Actor::Operator, "A whole block", game_id, &[stake_cents], 1)
        .await
        .unwrap();
    let game = service.game(Some(game_id)).unwrap();
    let units = expected.units;
    let mut tasks = Vec::new();
    for p in 0..players {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let buyer = player(&service, &format!("player{p}")).await;
            let cards = (units / players + 1) as i64;
            service.deposit(&buyer, stake_cents * cards).await.unwrap();
            let each = reveal == Reveal::Each;
            buy_until_sold_out(&service, &buyer, game, stake_cents, each).await
        }));
    }
    assert_eq!(
        sold(tasks).await,
        units,
        "exactly the block's units were sold"
    );
    if reveal == Reveal::Never {
        clock.advance_ms(service.settings.auto_settle_after_s * 1000 + 1);
        while service.settle_abandoned().await.unwrap() > 0 {}
    }
    let pool = &service.db.pool;
    assert_eq!(
        scalar(
            pool,
            "SELECT CAST(SUM(amount_cents) AS BIGINT) FROM transfers WHERE kind = 'prize'"
        )
        .await,
        expected.prizes_cents,
        "the block paid exactly its table"
    );
    for (level, &count) in expected.counts.iter().enumerate() {
        let units = scalar(
            pool,
            &format!("SELECT COUNT(*) FROM plays WHERE level = {level}"),
        )
        .await;
        assert_eq!(units, count, "level {level}");
    }
    assert_eq!(
        scalar(pool, "SELECT COUNT(*) FROM plays").await,
        expected.counts.iter().sum::<i64>(),
        "no play at a level the table does not have"
    );
    assert_eq!(
        scalar(
            pool,
            &format!(
                "SELECT COUNT(*) FROM blocks WHERE state = 'sold_out' AND units_sold = {units}"
            )
        )
        .await,
        1
    );
    let report: Value =
        serde_json::from_slice(&db.tresor_ok(&["report", "--format", "json"]).stdout).unwrap();
    let figures = &report["emissions"][0]["figures"];
    assert_eq!(figures["units_left"], 0);
    assert_eq!(figures["wins_won_cents"], expected.prizes_cents);
    assert_eq!(figures["wins_credited_cents"], expected.prizes_cents);
    assert_eq!(figures["prizes_left_cents"], 0);
    assert_eq!(figures["payout_percent"], expected.payout_percent);
    super::assert_ledger_balances(&service.db).await;
    service
}
