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
    let gate = hold_writer(service).await;
    let tasks: Vec<_> = everyone
        .iter()
        .map(|player| {
            let (service, player, key) = (service.clone(), player.clone(), key.to_owned());
            tokio::spawn(async move { service.buy(&player, purchase(50, &key)).await })
        })
        .collect();
    queued(service, everyone.len()).await;
    gate.release().await;
    let mut plays = Vec::new();
    for task in tasks {
        plays.push(task.await.expect("a purchase").expect("bought").play_id);
    }
    let after = counter.snapshot(service).await;
    counter.count(&before, &after);
    plays
}

/// One batch of one throw per player, counted.
async fn throw_round(service: &Service, counter: &mut Counter, everyone: &[Player], plays: &[i64]) {
    let before = counter.snapshot(service).await;
    let gate = hold_writer(service).await;
    let tasks: Vec<_> = everyone
        .iter()
        .zip(plays)
        .map(|(player, play)| {
            let (service, player, play) = (service.clone(), player.clone(), *play);
            tokio::spawn(async move { service.throw(&player, play).await })
        })
        .collect();
    queued(service, everyone.len()).await;
    gate.release().await;
    for task in tasks {
        task.await.expect("a throw").expect("thrown");
    }
    let after = counter.snapshot(service).await;
    counter.count(&before, &after);
}

async fn a_purchase_writes_at_most_the_budget_of_btree_entries(db: &TestDb) {
    let (service, _clock) = db.service().await;
    service
        .create_emission("Entries", &Stake::ALL, 1)
        .await
        .expect("an emission");
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
    let verdict = trail::verify(&service.db.pool, |_| {})
        .await
        .expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
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
