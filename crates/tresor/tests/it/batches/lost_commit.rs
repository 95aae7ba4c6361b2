//! A COMMIT whose answer is lost is resolved, never replayed; one that
//! never arrived or failed runs its requests again once.

use super::*;

/// What a COMMIT whose outcome is unknown must leave: each buyer's request
/// applied exactly once and answered as such: one play each, the one it was
/// answered, and each buyer's exact balance (`ana` credited 25 € too).
async fn assert_applied_once(
    service: &Service,
    buyers: &[Player],
    bought: &[Result<Bought, Error>],
) {
    assert_eq!(bought.len(), buyers.len(), "one answer per buyer");
    assert_eq!(buyers.len(), 5, "ana and four others");
    let pool = &service.db.pool;
    for (n, (buyer, result)) in buyers.iter().zip(bought).enumerate() {
        let answered = result
            .as_ref()
            .unwrap_or_else(|e| {
                panic!("{}'s purchase is answered as bought: {e:?}", buyer.username)
            })
            .play_id;
        let plays: Vec<i64> = sqlx::query_scalar("SELECT id FROM plays WHERE player_id = $1")
            .bind(buyer.id)
            .fetch_all(pool)
            .await
            .expect("plays");
        assert_eq!(
            plays,
            vec![answered],
            "{}: one purchase, one play, the one answered",
            buyer.username
        );
        let credited = if n == 0 { 2_500 } else { 0 };
        assert_eq!(
            service
                .balance_cents(buyer.account_id)
                .await
                .expect("balance"),
            10_000 + credited - 50,
            "{}: debited once",
            buyer.username
        );
    }
    let plays: i64 = scalar(pool, "SELECT COUNT(*) FROM plays").await;
    assert_eq!(plays, 5, "five purchases, five plays");
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}

/// A credit to `ana` (a rare job) and a purchase by `ana` and each of
/// `others` (hot commands), queued behind the held writer after `ahead`
/// requests already queued.
struct CreditAndPurchases {
    credit: tokio::task::JoinHandle<Result<i64, Error>>,
    purchases: Vec<tokio::task::JoinHandle<Result<Bought, Error>>>,
}

impl CreditAndPurchases {
    async fn queue(service: &Service, ana: &Player, others: Vec<Player>, ahead: usize) -> Self {
        let credit = {
            let (service, ana) = (service.clone(), ana.clone());
            tokio::spawn(async move { service.credit(&ana, 2_500).await })
        };
        queued(service, ahead + 1).await;
        let mut buyers = vec![ana.clone()];
        buyers.extend(others);
        let purchases: Vec<_> = buyers
            .iter()
            .map(|player| {
                let (service, player) = (service.clone(), player.clone());
                tokio::spawn(async move { service.buy(&player, purchase(50, "k")).await })
            })
            .collect();
        queued(service, ahead + 1 + buyers.len()).await;
        CreditAndPurchases { credit, purchases }
    }

    /// The purchases' results, once the credit is checked: answered as
    /// done, its balance before or after the purchase as the writer ordered
    /// them, and `ana` credited once and debited once.
    async fn answers(self, service: &Service, ana: &Player) -> Vec<Result<Bought, Error>> {
        let credited = self
            .credit
            .await
            .expect("a task")
            .expect("the credit is answered as done");
        assert!([10_000 + 2_500, 10_000 + 2_500 - 50].contains(&credited));
        let mut bought = Vec::new();
        for task in self.purchases {
            bought.push(task.await.expect("a task"));
        }
        let balance = service
            .balance_cents(ana.account_id)
            .await
            .expect("balance");
        assert_eq!(balance, 10_000 + 2_500 - 50, "credited once, debited once");
        bought
    }
}

/// A batch with a credit (a rare job) and purchases whose COMMIT goes
/// through a proxy that cuts it. Returns the service, the credited player
/// and the purchases' results, and the proxy (the service's connections go
/// through it).
async fn batch_through_a_cut(
    h: &Harness,
    cut: Cut,
) -> (Service, Vec<Player>, Vec<Result<Bought, Error>>, Proxy) {
    let (service, proxy) = through_proxy(h, "Cut", "").await;
    let ana = players(&service, "ana", 1).await.remove(0);
    let others = players(&service, "other", 4).await;

    let mut buyers = vec![ana.clone()];
    buyers.extend(others.iter().cloned());
    let gate = hold_writer(&service).await;
    let queue = CreditAndPurchases::queue(&service, &ana, others, 0).await;
    // The holding job's own batch commits first (a job that succeeds is a
    // write): it is let through, and the purchases' batch is the one cut.
    // Cutting the first COMMIT would cut the holding job's batch, leaving the
    // purchases' batch to commit normally and the claims below untested.
    proxy.arm_after(cut, 1);
    gate.release().await;
    let bought = queue.answers(&service, &ana).await;
    assert_eq!(proxy.cuts(), 1, "the COMMIT was cut");
    (service, buyers, bought, proxy)
}

/// A batch whose COMMIT is cut (`cut`) ends with its requests applied
/// once: `resolved` COMMITs looked up and found, `retries` batches run
/// again request by request.
async fn applied_once_after_a_cut(h: &Harness, cut: Cut, resolved: u64, retries: u64) {
    let (service, buyers, bought, _proxy) = batch_through_a_cut(h, cut).await;
    assert_eq!(service.writer.stats.commits_resolved.get(), resolved);
    assert_eq!(service.writer.stats.batch_retries.get(), retries);
    assert_applied_once(&service, &buyers, &bought).await;
}

// The COMMIT is resolved as committed: nothing runs again.
on_postgres!(
    a_commit_whose_answer_is_lost_is_resolved_and_applied_once,
    |h: &Harness| { applied_once_after_a_cut(h, Cut::AfterCommit, 1, 0).await }
);

// The COMMIT never came: the batch runs again, request by request, once.
on_postgres!(
    a_commit_that_never_arrived_is_resolved_and_run_again_once,
    |h: &Harness| { applied_once_after_a_cut(h, Cut::BeforeCommit, 0, 1).await }
);

// On SQLite the writer's connection is in the process: a COMMIT fails for
// real (here a foreign key checked only at COMMIT) and is then resolved as
// not committed; every other request of the batch runs again once.
on_sqlite!(
    a_commit_that_fails_is_resolved_and_its_requests_run_again_once,
    |db: &TestDb| {
        let (service, _clock) = setup(db).await;
        let ana = players(&service, "ana", 1).await.remove(0);
        let others = players(&service, "other", 4).await;
        let mut buyers = vec![ana.clone()];
        buyers.extend(others.iter().cloned());
        let gate = hold_writer(&service).await;
        let poison = {
            let service = service.clone();
            tokio::spawn(async move {
                service
                .write(|conn| {
                    Box::pin(async move {
                        tresor::store::sql::query("PRAGMA defer_foreign_keys = ON")
                            .execute(&mut *conn)
                            .await?;
                        tresor::store::sql::query(
                            "INSERT INTO sessions (token_hash, player_id, created_at_ms, last_seen_at_ms) \
                             VALUES ('orphan', 999999, 0, 0)",
                        )
                        .execute(&mut *conn)
                        .await?;
                        Ok(())
                    })
                })
                .await
            })
        };
        queued(&service, 1).await;
        let queue = CreditAndPurchases::queue(&service, &ana, others, 1).await;
        gate.release().await;
        poison
            .await
            .expect("a task")
            .expect_err("the job whose COMMIT fails is refused");
        let bought = queue.answers(&service, &ana).await;
        assert_eq!(service.writer.stats.batch_retries.get(), 1);
        let orphans: i64 = scalar(
            &service.db.pool,
            "SELECT COUNT(*) FROM sessions WHERE token_hash = 'orphan'",
        )
        .await;
        assert_eq!(orphans, 0);
        assert_applied_once(&service, &buyers, &bought).await;
    }
);
