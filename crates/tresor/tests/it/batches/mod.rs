//! The writer's batches, on SQLite and PostgreSQL: a batch's statements do
//! not grow with its requests; refusals are decided in memory and make
//! nothing run again; a request whose caller is gone never runs; a COMMIT
//! whose answer is lost is resolved, never replayed.
//!
//! To make a batch of exactly the requests a test wants, the test first
//! holds the writer inside a batch with a job that waits ([`hold_writer`]),
//! queues its requests, then lets the writer go: they all form the next
//! batch.

use crate::common::proxy::{Cut, Proxy};
use crate::common::{Harness, START_MS, TestDb, assert_ledger_balances, player, purchase, scalar};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Semaphore;
use tresor::error::Error;
use tresor::service::{Bought, ManualClock, Player, Service, Settings};
use tresor::store::Db;
use tresor::store::batch::PURCHASE_KEYS_KEEP_MS;
use tresor::trail::{self, Verdict};
use tresor::writer::BatchCost;
use tresor_game::Stake;

mod keys;
mod lost_commit;
mod pipelined;
mod statements;

/// The writer held inside a batch by a job that waits for [`Gate::release`].
pub(crate) struct Gate {
    open: Arc<Semaphore>,
    task: tokio::task::JoinHandle<()>,
}

pub(crate) async fn hold_writer(service: &Service) -> Gate {
    let started = Arc::new(Semaphore::new(0));
    let open = Arc::new(Semaphore::new(0));
    let (started_in, open_in, service) = (started.clone(), open.clone(), service.clone());
    let task = tokio::spawn(async move {
        service
            .write(move |_conn| {
                let (started, open) = (started_in.clone(), open_in.clone());
                Box::pin(async move {
                    started.add_permits(1);
                    let _permit = open.acquire().await.expect("the gate stays");
                    Ok(())
                })
            })
            .await
            .expect("the holding job");
    });
    started.acquire().await.expect("the gate stays").forget();
    Gate { open, task }
}

impl Gate {
    pub(crate) async fn release(self) {
        self.open.add_permits(1_000);
        self.task.await.expect("the holding job ends");
    }
}

/// Waits until `count` requests wait in the writer's queue.
pub(crate) async fn queued(service: &Service, count: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while service.writer.queued() < count {
        assert!(Instant::now() < deadline, "{count} requests never queued");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// The cost of the batch that ran last.
fn last_batch(service: &Service) -> BatchCost {
    *service
        .writer
        .stats
        .recent_batches()
        .last()
        .expect("a batch ran")
}

/// A service whose every connection to this test's PostgreSQL goes
/// through a [`Proxy`], its URL ending with `params`, with an emission
/// named `name` on sale.
async fn through_proxy(h: &Harness, name: &str, params: &str) -> (Service, Proxy) {
    let (proxy, url) = h.proxy().await;
    let database = crate::common::db::signed(
        Db::connect(&format!("{url}{params}"))
            .await
            .expect("connect through the proxy")
            .with_secrets_key(h.secrets_key.clone()),
    )
    .await;
    let clock = Arc::new(ManualClock::new(START_MS));
    let service = Service::new(database, clock, Settings::default());
    service.open_secrets().await.expect("open the secrets");
    service
        .create_emission(name, &Stake::ALL, 1)
        .await
        .expect("an emission");
    (service, proxy)
}

/// A service on `db` with an emission on sale.
pub(crate) async fn setup(db: &TestDb) -> (Service, Arc<ManualClock>) {
    let (service, clock) = db.service().await;
    service
        .create_emission("Batches", &Stake::ALL, 1)
        .await
        .expect("an emission");
    (service, clock)
}

/// `count` players named `prefix-N`, each with 100 € to play.
pub(crate) async fn players(service: &Service, prefix: &str, count: usize) -> Vec<Player> {
    let mut registered = Vec::with_capacity(count);
    for chunk in (0..count).collect::<Vec<_>>().chunks(8) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|n| {
                let service = service.clone();
                let name = format!("{prefix}-{n}");
                tokio::spawn(async move {
                    let player = player(&service, &name).await;
                    service.deposit(&player, 10_000).await.expect("deposit");
                    player
                })
            })
            .collect();
        for task in tasks {
            registered.push(task.await.expect("registered"));
        }
    }
    registered
}

/// Runs `request` for each of `players` (with its position) in one batch:
/// queued behind the held writer, which is then let go; returns their
/// results in order.
pub(crate) async fn in_one_batch<T, R>(
    service: &Service,
    players: &[Player],
    request: impl Fn(Service, Player, usize) -> R,
) -> Vec<T>
where
    R: Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let gate = hold_writer(service).await;
    let tasks: Vec<_> = players
        .iter()
        .enumerate()
        .map(|(n, player)| tokio::spawn(request(service.clone(), player.clone(), n)))
        .collect();
    queued(service, players.len()).await;
    gate.release().await;
    let mut results = Vec::with_capacity(tasks.len());
    for task in tasks {
        results.push(task.await.expect("a request's task"));
    }
    results
}

/// One purchase per player with `key`, in one batch ([`in_one_batch`]).
pub(crate) async fn buy_in_one_batch(
    service: &Service,
    players: &[Player],
    key: &str,
) -> Vec<Result<Bought, Error>> {
    in_one_batch(service, players, |service, player, _| {
        let key = key.to_owned();
        async move { service.buy(&player, purchase(50, &key)).await }
    })
    .await
}

pub(crate) async fn assert_trail_verifies(db: &Db) {
    let verdict = trail::verify(&db.pool, |_| {}).await.expect("verify");
    assert!(matches!(verdict, Verdict::Intact { .. }), "{verdict:?}");
}
