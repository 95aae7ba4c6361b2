//! A block sold out by players buying at once: each buys until the service
//! says sold out, and the units they bought add up to the block's (the
//! durability and whole-block tests).

use tokio::task::JoinHandle;
use tresor::error::Error;
use tresor::model::{IdempotencyKey, Player};
use tresor::service::{Purchase, Service};
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
