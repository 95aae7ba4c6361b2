//! A purchase dirties few pages on a database with history, and its key is
//! kept a week, then forgotten.

use super::*;

on_both!(a_purchase_key_is_kept_a_week_then_forgotten);

/// The pages written to the WAL since the last call: the WAL file's frames
/// (a header of 32 bytes, then a 24-byte header and a page each), then a
/// checkpoint that copies them into the database and empties the file.
async fn wal_pages_since_last_call(db: &TestDb, pool: &sqlx::AnyPool) -> i64 {
    let page_size = scalar(pool, "PRAGMA page_size").await;
    let wal = db
        .data_dir()
        .expect("a SQLite folder")
        .join("tresor.db-wal");
    let bytes = std::fs::metadata(&wal).map_or(0, |m| m.len() as i64);
    let frames = (bytes - 32).max(0) / (page_size + 24);
    let (busy,): (i64,) = sqlx::query_as("PRAGMA wal_checkpoint(TRUNCATE)")
        .fetch_one(pool)
        .await
        .expect("a checkpoint");
    assert_eq!(busy, 0, "the checkpoint ran while nothing else did");
    let left = std::fs::metadata(&wal).map_or(0, |m| m.len());
    assert_eq!(left, 0, "the checkpoint emptied the WAL");
    frames
}

/// An idempotency key shaped like the UUIDs clients send.
fn uuid_like(round: usize, player: usize) -> String {
    format!(
        "{round:08x}-{player:04x}-4000-8000-{:012x}",
        round * 7919 + player
    )
}

// Issue 24: a purchase's index entries on distinct leaf pages made about
// 400 dirty pages per batch of 120. Measured as the WAL frames a series of
// batches writes on a database with a month of history, each batch's frames
// taken by a checkpoint after it (the holding job's small commit counts too).
// Before: 2.04 pages a purchase (every key of the month in a UNIQUE index of
// `plays`, the trail indexed by actor); after: the week's keys alone.
on_sqlite!(
    a_purchase_dirties_few_pages_on_a_database_with_history,
    |db: &TestDb| {
        let (service, clock) = setup(db).await;
        let everyone = players(&service, "h", 240).await;
        let halves = [&everyone[..120], &everyone[120..]];
        // The history: a batch every 12 hours for 32 days, 32 purchases per
        // player, with keys like clients'.
        for round in 0..64 {
            clock.advance_ms(12 * 3600 * 1000);
            buy_keyed(&service, halves[round % 2], round).await;
        }
        let history = scalar(&service.db.pool, "SELECT COUNT(*) FROM plays").await;
        assert_eq!(history, 64 * 120);
        // Started again, the writer forgets the keys past their week.
        let service = restarted(db, service, &clock, &everyone[0]).await;
        wal_pages_since_last_call(db, &service.db.pool).await;
        let (mut pages, mut purchases) = (0, 0);
        for round in 64..72 {
            clock.advance_ms(1_000);
            let buyers = halves[round % 2];
            buy_keyed(&service, buyers, round).await;
            pages += wal_pages_since_last_call(db, &service.db.pool).await;
            purchases += buyers.len() as i64;
        }
        let per_purchase = pages as f64 / purchases as f64;
        eprintln!("{pages} pages written for {purchases} purchases: {per_purchase:.2} a purchase");
        // 1.26-1.28 measured (five runs); 2.07 before. The bound leaves
        // room for the trail's records, whose size varies a little.
        assert!(
            per_purchase < 1.5,
            "{per_purchase:.2} pages written a purchase ({pages} for {purchases})"
        );
        assert_ledger_balances(&service.db).await;
    }
);

/// `service` stopped and started again on the same database and clock, with
/// a first batch that writes (a deposit of `player`'s): the one where the
/// new writer prunes the purchase keys past their window.
async fn restarted(
    db: &TestDb,
    service: Service,
    clock: &Arc<ManualClock>,
    player: &Player,
) -> Service {
    drop(service);
    let service = Service::new(db.connect().await, clock.clone(), Settings::default());
    service.open_secrets().await.expect("open the secrets");
    service
        .deposit(player, 100)
        .await
        .expect("a deposit, written in a batch");
    service
}

/// One purchase per player in one batch, each with its own key of `round`.
async fn buy_keyed(service: &Service, players: &[Player], round: usize) {
    let gate = hold_writer(service).await;
    let tasks: Vec<_> = players
        .iter()
        .enumerate()
        .map(|(n, player)| {
            let (service, player, key) = (service.clone(), player.clone(), uuid_like(round, n));
            tokio::spawn(async move { service.buy(&player, purchase(50, &key)).await })
        })
        .collect();
    queued(service, players.len()).await;
    gate.release().await;
    for task in tasks {
        task.await.expect("a purchase task").expect("bought");
    }
}

/// Issue 24: purchase keys are remembered for a week at least, then
/// forgotten by the writer's prune (at its first batch, here after a
/// restart, and every 4,096 batches) once the newest purchase is two weeks
/// (of the epoch's) after theirs (issue 34: kept by week, no index by time);
/// the forgotten key buys anew, as ARCHITECTURE.md says.
async fn a_purchase_key_is_kept_a_week_then_forgotten(db: &TestDb) {
    let (service, clock) = setup(db).await;
    let ana = players(&service, "ana", 1).await.remove(0);
    let bought_at_ms = service.now_ms();
    let first = service
        .buy(&ana, purchase(50, "week-key"))
        .await
        .expect("bought");
    clock.advance_ms(PURCHASE_KEYS_KEEP_MS - 60_000);
    let within = service
        .buy(&ana, purchase(50, "week-key"))
        .await
        .expect("replayed");
    assert!(within.replayed, "the same key within the week replays");
    assert_eq!(within.play_id, first.play_id);

    // A newer purchase leaves the first key two weeks behind.
    let week = tresor::store::batch::WEEK_MS;
    let two_weeks_on = (bought_at_ms.div_euclid(week) + 2) * week + 60_000;
    clock.advance_ms(two_weeks_on - service.now_ms());
    let later = service
        .buy(&ana, purchase(50, "later-key"))
        .await
        .expect("bought");
    let service = restarted(db, service, &clock, &ana).await;
    let keys = |key: &str| {
        format!(
            "SELECT COUNT(*) FROM (SELECT player_id, key FROM purchase_keys_0 \
             UNION ALL SELECT player_id, key FROM purchase_keys_1 \
             UNION ALL SELECT player_id, key FROM purchase_keys_2) k \
             WHERE player_id = {} AND key = '{key}'",
            ana.id
        )
    };
    let pool = &service.db.pool;
    assert_eq!(scalar(pool, &keys("week-key")).await, 0, "forgotten");
    assert_eq!(scalar(pool, &keys("later-key")).await, 1, "kept");

    let kept = service
        .buy(&ana, purchase(50, "later-key"))
        .await
        .expect("replayed");
    assert!(kept.replayed);
    assert_eq!(kept.play_id, later.play_id);
    let forgotten = service
        .buy(&ana, purchase(50, "week-key"))
        .await
        .expect("a new purchase");
    assert!(!forgotten.replayed, "a forgotten key buys anew");
    assert!(forgotten.play_id > later.play_id);
    let stakes = format!(
        "SELECT COUNT(*) FROM transfers WHERE kind = 'stake' AND play_id = {}",
        forgotten.play_id
    );
    assert_eq!(
        scalar(pool, &stakes).await,
        1,
        "the new purchase is paid for"
    );
    assert_eq!(scalar(pool, &keys("week-key")).await, 1, "remembered again");
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}
