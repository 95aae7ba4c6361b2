//! A purchase writes at most the budget of B-tree entries.

use super::*;

on_both!(a_purchase_writes_at_most_the_budget_of_btree_entries);

/// One batch of one purchase per player (each settling the player's
/// previous play), counted.
async fn buy_round(
    service: &Service,
    counter: &mut Counter,
    everyone: &[Player],
    key: &str,
) -> Vec<i64> {
    let before = counter.snapshot(service).await;
    let bought = buy_in_one_batch(service, everyone, key).await;
    let after = counter.snapshot(service).await;
    counter.count(&before, &after);
    bought
        .into_iter()
        .map(|result| result.expect("bought").play_id)
        .collect()
}

/// One batch of one throw per player, counted.
async fn throw_round(service: &Service, counter: &mut Counter, everyone: &[Player], plays: &[i64]) {
    let before = counter.snapshot(service).await;
    let thrown = in_one_batch(service, everyone, |service, player, n| {
        let play = plays[n];
        async move { service.throw(&player, play).await }
    })
    .await;
    for result in thrown {
        result.expect("thrown");
    }
    let after = counter.snapshot(service).await;
    counter.count(&before, &after);
}

async fn a_purchase_writes_at_most_the_budget_of_btree_entries(db: &TestDb) {
    let (service, _clock) = setup(db).await;
    let everyone = players(&service, "e", PLAYERS).await;
    let postgres = db.backend == Backend::Postgres;

    // A first purchase each (nothing to settle yet), not counted.
    let mut scratch = Counter::new(&service).await;
    buy_round(&service, &mut scratch, &everyone, "warm-up").await;

    // The bench's loop: every purchase settles the player's previous play.
    let mut counter = Counter::new(&service).await;
    let pg_before = if postgres {
        Some(counter.pg_tuples(&service, None).await)
    } else {
        None
    };
    for round in 0..ROUNDS {
        buy_round(&service, &mut counter, &everyone, &format!("round-{round}")).await;
    }
    let pg_after = match &pg_before {
        Some(before) => Some(counter.pg_tuples(&service, Some(before)).await),
        None => None,
    };
    let purchases = PLAYERS * ROUNDS;
    let pg = pg_before.as_ref().zip(pg_after.as_ref());
    let (logical, breakdown) = counter.report("entries", "purchase", purchases, None);
    eprintln!("{breakdown}");
    let mut per_purchase = logical;
    if pg.is_some() {
        let (physical, breakdown) =
            counter.report("heap and index tuples", "purchase", purchases, pg);
        eprintln!("{breakdown}");
        per_purchase = physical;
    }

    // A full game, measured (not held to the budget): a purchase (settling
    // the previous play) and its four throws, each a batch of its own.
    let mut game = Counter::new(&service).await;
    let plays = buy_round(&service, &mut game, &everyone, "game").await;
    for _ in 0..4 {
        throw_round(&service, &mut game, &everyone, &plays).await;
    }
    let pg_game = match &pg_after {
        Some(before) => Some(game.pg_tuples(&service, Some(before)).await),
        None => None,
    };
    let (_, breakdown) = game.report(
        "a full game (purchase and four throws)",
        "game",
        PLAYERS,
        None,
    );
    eprintln!("{breakdown}");
    if let Some(pg) = pg_after.as_ref().zip(pg_game.as_ref()) {
        let (_, breakdown) = game.report(
            "a full game, heap and index tuples",
            "game",
            PLAYERS,
            Some(pg),
        );
        eprintln!("{breakdown}");
    }

    // Whatever the schema, the trail and the ledger hold.
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
    let budget = if postgres {
        BUDGET_POSTGRES
    } else {
        BUDGET_SQLITE
    };
    assert!(
        per_purchase <= budget,
        "{:?}: {per_purchase:.2} b-tree entries per purchase, over the budget of {budget}",
        db.backend
    );
}
