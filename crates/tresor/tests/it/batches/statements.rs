//! A batch's statements do not grow with its requests; refusals are
//! decided in memory and make nothing run again; a request whose caller is
//! gone never runs.

use super::*;

on_both!(
    a_batch_runs_as_many_statements_for_a_hundred_purchases_as_for_one,
    refusals_cost_their_batch_no_statement_and_run_nothing_again,
    a_purchase_whose_caller_is_gone_is_dropped_before_it_runs,
    a_stake_never_on_sale_is_closed_and_one_without_units_left_sold_out,
);

async fn a_batch_runs_as_many_statements_for_a_hundred_purchases_as_for_one(db: &TestDb) {
    let (service, _clock) = setup(db).await;
    let everyone = players(&service, "p", 111).await;
    let groups = [&everyone[0..1], &everyone[1..11], &everyone[11..111]];
    // The first round buys; the second also settles each player's first play.
    for round in ["first", "second"] {
        let mut costs = Vec::new();
        for group in groups {
            for result in buy_in_one_batch(&service, group, round).await {
                result.expect("bought");
            }
            costs.push(last_batch(&service));
        }
        eprintln!("{:?} {round} round: {costs:?}", db.backend);
        let requests: Vec<usize> = costs.iter().map(|c| c.requests).collect();
        assert_eq!(requests, [1, 10, 100], "{round} round: {costs:?}");
        assert!(
            costs.iter().all(|c| c.statements == costs[0].statements),
            "{round} round: the statements do not grow with the batch: {costs:?}"
        );
        // 21 since the batch remembers its purchase keys in a statement of
        // their own (issue 24: `purchase_keys`, beside the plays' insert).
        assert!(
            costs[0].statements <= 21,
            "{round} round: a handful of statements per batch: {costs:?}"
        );
    }
    assert_eq!(service.writer.stats.batch_retries.get(), 0);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}

async fn refusals_cost_their_batch_no_statement_and_run_nothing_again(db: &TestDb) {
    let (service, _clock) = setup(db).await;
    let alone = players(&service, "alone", 20).await;
    let flooded = players(&service, "flooded", 20).await;
    // Twenty good purchases alone: the yardstick.
    for result in buy_in_one_batch(&service, &alone, "k").await {
        result.expect("bought");
    }
    let yardstick = last_batch(&service);

    // Refusals of every kind: throws on a finished play and on another
    // player's play, purchases past a stake cap, without money, and with a
    // key used before for another stake.
    let finisher = players(&service, "finisher", 1).await.remove(0);
    let finished = service
        .buy(&finisher, purchase(50, "done"))
        .await
        .expect("bought");
    for _ in 0..4 {
        service
            .throw(&finisher, finished.play_id)
            .await
            .expect("a throw");
    }
    let capped = {
        let registration =
            tresor::service::Registration::parse("capped", "correct horse battery", true, true)
                .expect("a registration")
                .with_limits(tresor::protect::Limits::parse(None, Some(100)).expect("caps"));
        let capped = service.register(registration).await.expect("registered");
        service.deposit(&capped, 1_000).await.expect("deposit");
        for key in ["c1", "c2"] {
            service
                .buy(&capped, purchase(50, key))
                .await
                .expect("bought");
        }
        capped
    };
    let broke = player(&service, "broke").await;
    service.deposit(&broke, 100).await.expect("deposit");
    let stranger = alone[0].clone();

    let retries = service.writer.stats.batch_retries.get();
    let gate = hold_writer(&service).await;
    let mut good = Vec::new();
    for player in &flooded {
        let (service, player) = (service.clone(), player.clone());
        good.push(tokio::spawn(async move {
            service.buy(&player, purchase(50, "k")).await
        }));
    }
    let mut refused = Vec::new();
    for n in 0..30 {
        refused.push(spawn_throw(&service, &finisher, finished.play_id));
        refused.push(spawn_buy(&service, &capped, 50, format!("over-{n}")));
    }
    for n in 0..10 {
        refused.push(spawn_buy(&service, &broke, 200, format!("broke-{n}")));
        refused.push(spawn_throw(&service, &stranger, finished.play_id));
    }
    refused.push(spawn_buy(&service, &finisher, 100, "done".to_owned()));
    queued(&service, good.len() + refused.len()).await;
    gate.release().await;
    for task in good {
        task.await
            .expect("a task")
            .expect("a good purchase is bought");
    }
    let mut codes = std::collections::BTreeMap::new();
    for task in refused {
        let error = task.await.expect("a task").expect_err("refused");
        *codes.entry(error_name(&error)).or_insert(0) += 1;
    }
    let flood = last_batch(&service);
    assert_eq!(flood.requests, 20 + 60 + 20 + 1, "{flood:?}");
    assert_eq!(
        flood.statements, yardstick.statements,
        "refusals add no statement to their batch"
    );
    assert_eq!(
        service.writer.stats.batch_retries.get(),
        retries,
        "no refusal made the batch run again"
    );
    let expected: std::collections::BTreeMap<&str, i32> = [
        ("play_finished", 30),
        ("limit_reached", 30),
        ("not_found", 10),
        ("idempotency_conflict", 1),
    ]
    .into_iter()
    .collect();
    let broke_count = codes.remove("insufficient_funds").unwrap_or(0);
    assert_eq!(broke_count, 10, "{codes:?}");
    assert_eq!(codes, expected);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}

type Task = tokio::task::JoinHandle<Result<(), Error>>;

fn spawn_throw(service: &Service, player: &Player, play_id: i64) -> Task {
    let (service, player) = (service.clone(), player.clone());
    tokio::spawn(async move { service.throw(&player, play_id).await.map(|_| ()) })
}

fn spawn_buy(service: &Service, player: &Player, stake_cents: i64, key: String) -> Task {
    let (service, player) = (service.clone(), player.clone());
    tokio::spawn(async move {
        service
            .buy(&player, purchase(stake_cents, &key))
            .await
            .map(|_| ())
    })
}

fn error_name(error: &Error) -> &'static str {
    match error {
        Error::PlayFinished => "play_finished",
        Error::LimitReached { .. } => "limit_reached",
        Error::NotFound => "not_found",
        Error::IdempotencyConflict => "idempotency_conflict",
        Error::InsufficientFunds { .. } => "insufficient_funds",
        _ => "other",
    }
}

async fn a_purchase_whose_caller_is_gone_is_dropped_before_it_runs(db: &TestDb) {
    let (service, _clock) = setup(db).await;
    let ana = players(&service, "ana", 1).await.remove(0);
    let gate = hold_writer(&service).await;
    let gone = {
        let (service, ana) = (service.clone(), ana.clone());
        tokio::spawn(async move { service.buy(&ana, purchase(50, "gone")).await })
    };
    queued(&service, 1).await;
    // The caller gives up (its request timed out, its client left).
    gone.abort();
    assert!(gone.await.expect_err("aborted").is_cancelled());
    gate.release().await;

    let after = service
        .buy(&ana, purchase(50, "after"))
        .await
        .expect("bought");
    assert!(!after.replayed);
    assert_eq!(service.writer.stats.dropped.get(), 1);
    let plays: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plays WHERE player_id = $1")
        .bind(ana.id)
        .fetch_one(&service.db.pool)
        .await
        .expect("plays");
    assert_eq!(plays, 1, "the dropped purchase left nothing");
    assert_eq!(
        service
            .balance_cents(ana.account_id)
            .await
            .expect("balance"),
        10_000 - 50
    );
    // Its key was never used: a retry with it buys, it does not replay.
    let retry = service
        .buy(&ana, purchase(50, "gone"))
        .await
        .expect("bought");
    assert!(!retry.replayed);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}

async fn a_stake_never_on_sale_is_closed_and_one_without_units_left_sold_out(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let fifty = Stake::try_from(50).expect("a stake");
    service
        .create_emission("Fifty only", &[fifty], 1)
        .await
        .expect("an emission");
    let ana = players(&service, "ana", 1).await.remove(0);
    let never = service.buy(&ana, purchase(100, "never")).await;
    assert!(
        matches!(never, Err(Error::SalesClosed { opens_at_ms: None })),
        "{never:?}"
    );
    let block_id = service.blocks().await.expect("blocks")[0].id;
    service.suspend_block(block_id).await.expect("suspended");
    let none_left = service.buy(&ana, purchase(50, "none-left")).await;
    assert!(matches!(none_left, Err(Error::SoldOut)), "{none_left:?}");
    assert_eq!(
        service
            .balance_cents(ana.account_id)
            .await
            .expect("balance"),
        10_000
    );
    assert_ledger_balances(&service.db).await;
}
