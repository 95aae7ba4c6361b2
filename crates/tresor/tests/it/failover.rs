//! PostgreSQL failing under load, with two real `tresor serve` processes:
//! the primary killed and its synchronous standby promoted, PostgreSQL
//! restarted as after a crash, and one of the two servers killed. Players
//! buy under idempotency keys and try a purchase again (on either server)
//! until it is acknowledged, so every key ends acknowledged once: the plays
//! found must be exactly the acknowledged ones — none lost, none doubled —
//! the ledger must balance and the trail verify. However long the outage
//! (a standby promoted 20 s after the primary died included), every request
//! is answered within the outage budget (5 s) and a little: its result, or
//! 503 `unavailable`. Each test prints its figures: purchases acknowledged
//! and found, answers "unavailable", the longest wait of any request, and
//! the time from the fault to the first purchase served again.

use crate::common::cluster::Cluster;
use crate::common::metrics;
use crate::common::process::own_blocks_flags;
use crate::common::wait::{until, until_blocking, until_true};
use crate::common::{
    Harness, Server, TestDb, assert_ledger_balances, cookie_client, post, register_and_deposit,
};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tresor::store::Db;

on_postgres!(
    the_primary_killed_under_load_and_its_synchronous_standby_promoted_loses_nothing_acknowledged,
    a_commit_whose_answer_the_killed_primary_never_sent_is_found_on_the_promoted_standby,
    postgresql_restarted_mid_load_resumes_by_itself_and_loses_nothing_acknowledged,
    a_tresor_server_killed_mid_load_leaves_the_other_serving_and_loses_nothing_acknowledged,
    a_standby_promoted_20_s_after_the_primary_died_keeps_every_request_within_the_outage_budget,
);

const PLAYERS: usize = 12;
/// Load before the fault, and after the service is back: purchases each
/// server acknowledges (the checks ask for `PLAYERS * 4` in all).
const STEADY: usize = PLAYERS * 3;
/// The longest the service may take to serve again by itself.
const RESUME_WITHIN: Duration = Duration::from_secs(30);
/// The longest any request may wait for its answer: the servers' outage
/// budget (5 s, the default) and two seconds for a loaded machine (a clean
/// CI run at load 9 saw 6.2 s). Without the budget a request waits out the
/// whole outage, 20 s and more: this still fails on that.
const LONGEST_WAIT: Duration = Duration::from_secs(7);
/// How long the slow failover leaves the service without a primary.
const SLOW_PROMOTION: Duration = Duration::from_secs(20);

/// One acknowledged purchase: which server answered, when it was asked and
/// when the answer came.
#[derive(Debug, Clone, Copy)]
struct Served {
    server: usize,
    sent: Instant,
    received: Instant,
}

/// Players buying on two servers until told to stop.
struct Load {
    stop: Arc<AtomicBool>,
    served: Arc<Mutex<Vec<Served>>>,
    tasks: Vec<tokio::task::JoinHandle<Tally>>,
}

/// What one player saw.
#[derive(Debug, Default)]
struct Tally {
    /// Each idempotency key with the play its 201 named.
    acknowledged: BTreeMap<String, i64>,
    /// Answers 503 `unavailable` (or 408) and requests that got no answer.
    unavailable: usize,
    unanswered: usize,
    /// The longest any request waited for its answer (or for the error
    /// that it would get none).
    longest_wait: Duration,
}

impl Load {
    /// Registers the players (alternately on each server) and starts them.
    async fn start(bases: &[String]) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for p in 0..PLAYERS {
            let client = cookie_client();
            register_and_deposit(&client, &bases[p % 2], &format!("player{p}"), 50_000).await;
            let (bases, stop, served) = (bases.to_vec(), stop.clone(), served.clone());
            tasks.push(tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    n += 1;
                    let key = format!("p{p}-n{n}");
                    if !buy_until_acknowledged(&client, &bases, p, &key, &served, &mut tally).await
                    {
                        break;
                    }
                }
                tally
            }));
        }
        Load {
            stop,
            served,
            tasks,
        }
    }

    /// The first purchase acknowledged by `server` among those asked after
    /// `fault`: how long after the fault its answer came.
    fn resumed_after(&self, server: usize, fault: Instant) -> Option<Duration> {
        self.served
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.server == server && s.sent >= fault)
            .map(|s| s.received - fault)
            .min()
    }

    /// Waits until `servers` each served a purchase asked after `fault`;
    /// returns the time to serve again of each.
    async fn wait_resumed(&self, servers: &[usize], fault: Instant) -> Vec<Duration> {
        let what = format!("servers {servers:?} serving again by themselves after the fault");
        let within = RESUME_WITHIN.saturating_sub(fault.elapsed());
        until(what, within, || {
            let times: Option<Vec<Duration>> = servers
                .iter()
                .map(|&s| self.resumed_after(s, fault))
                .collect();
            async move { times }
        })
        .await
    }

    /// Waits until `servers` each acknowledged [`STEADY`] purchases asked
    /// from now on: the load steady on them (before a fault, after the
    /// service is back).
    async fn steady_on(&self, servers: &[usize]) {
        let from = Instant::now();
        let what = format!("servers {servers:?} each acknowledging {STEADY} purchases");
        until_true(what, RESUME_WITHIN, || {
            let served = self.served.lock().unwrap();
            let steady = servers.iter().all(|&server| {
                served
                    .iter()
                    .filter(|s| s.server == server && s.sent >= from)
                    .count()
                    >= STEADY
            });
            async move { steady }
        })
        .await;
    }

    async fn stop(self) -> Vec<Tally> {
        self.stop.store(true, Ordering::Relaxed);
        let mut tallies = Vec::new();
        for task in self.tasks {
            tallies.push(task.await.expect("a player's task"));
        }
        tallies
    }
}

/// Buys under `key` until a 201 (true) or out of money (false), on the
/// player's server first and then alternately on each.
async fn buy_until_acknowledged(
    client: &reqwest::Client,
    bases: &[String],
    p: usize,
    key: &str,
    served: &Mutex<Vec<Served>>,
    tally: &mut Tally,
) -> bool {
    let give_up = Instant::now() + Duration::from_secs(60);
    for attempt in 0.. {
        assert!(
            Instant::now() < give_up,
            "purchase {key} never acknowledged"
        );
        let server = (p + attempt) % bases.len();
        let sent = Instant::now();
        let answer = post(
            client,
            &format!("{}/api/plays", bases[server]),
            &json!({"stake_cents": 50}),
            Some(key),
        )
        .await;
        tally.longest_wait = tally.longest_wait.max(sent.elapsed());
        match answer {
            Some((201, play)) => {
                let id = play["id"].as_i64().expect("a play id");
                tally.acknowledged.insert(key.to_owned(), id);
                served.lock().unwrap().push(Served {
                    server,
                    sent,
                    received: Instant::now(),
                });
                return true;
            }
            Some((402, _)) => return false,
            Some((503 | 408, body)) => {
                assert!(
                    body["error"]["code"] == "unavailable" || body["error"]["code"] == "timeout",
                    "a clean JSON error: {body}"
                );
                tally.unavailable += 1;
            }
            None => tally.unanswered += 1,
            Some((status, body)) => panic!("purchase {key} answered {status}: {body}"),
        }
        // Paces a player's retries, as a client backs off after a refusal.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    unreachable!()
}

/// `tresor serve` on `url`, unthrottled, selling first from its own block.
/// Two servers on `url`, selling from blocks of their own, under load until
/// it is steady.
async fn two_servers_under_load(url: &str) -> ([Server; 2], Load) {
    let servers = [serve(url, ANY_PORT, 0).await, serve(url, ANY_PORT, 1).await];
    let bases: Vec<String> = servers.iter().map(|s| s.base.clone()).collect();
    let load = Load::start(&bases).await;
    load.steady_on(&[0, 1]).await;
    (servers, load)
}

/// A PostgreSQL primary and its synchronous standby of the test's own
/// (`None` as [`Harness::cluster_with_standby`] says), its read-write URL,
/// and two servers on it under steady load.
async fn standby_pair_under_load(h: &Harness) -> Option<(Cluster, String, [Server; 2], Load)> {
    let cluster = h.cluster_with_standby()?;
    let url = cluster.url("read-write");
    let (servers, load) = two_servers_under_load(&url).await;
    Some((cluster, url, servers, load))
}

/// A port the kernel gives.
const ANY_PORT: u16 = 0;

/// `tresor serve` on `url` at `port` (where a killed one listened, or
/// [`ANY_PORT`]), selling first from its `block_offset`-th block.
async fn serve(url: &str, port: u16, block_offset: u32) -> Server {
    Server::start_on_url_at(url, port, &own_blocks_flags(block_offset, None)).await
}

/// What the players must have been answered through a fault.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Answers {
    /// The servers stayed up: every request answered (none cut), 503s or not.
    AllAnswered,
    /// An outage longer than the budget: every request answered, and some
    /// of them 503 `unavailable` at the budget.
    SomeUnavailable,
    /// A server killed: the requests sent to it got no answer.
    SomeUnanswered,
}

/// Checks what the database holds against what the players were told, and
/// prints the figures and checks them (`answers`); `audit` runs `tresor
/// audit verify` on it.
async fn check(
    name: &str,
    db: &Db,
    (tallies, answers): (&[Tally], Answers),
    resumed: &[Duration],
    audit: impl FnOnce() -> std::process::Output,
) {
    let acknowledged: Vec<i64> = tallies
        .iter()
        .flat_map(|t| t.acknowledged.values().copied())
        .collect();
    let distinct: BTreeSet<i64> = acknowledged.iter().copied().collect();
    assert_eq!(
        distinct.len(),
        acknowledged.len(),
        "no play acknowledged under two keys"
    );
    let found: BTreeSet<i64> = sqlx::query_scalar("SELECT id FROM plays")
        .fetch_all(&db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
    let lost = distinct.difference(&found).count();
    let unacknowledged = found.difference(&distinct).count();
    let unavailable: usize = tallies.iter().map(|t| t.unavailable).sum();
    let unanswered: usize = tallies.iter().map(|t| t.unanswered).sum();
    let longest_wait = tallies
        .iter()
        .map(|t| t.longest_wait)
        .max()
        .unwrap_or_default();
    println!(
        "{name}: {} purchases acknowledged, {} plays found ({lost} lost, {unacknowledged} never acknowledged); \
         {unavailable} answers 503 unavailable, {unanswered} unanswered; longest wait {longest_wait:?}; \
         time to serve again: {:?}",
        acknowledged.len(),
        found.len(),
        resumed
    );
    assert!(
        longest_wait <= LONGEST_WAIT,
        "every request is answered within the outage budget: one waited {longest_wait:?}"
    );
    match answers {
        Answers::AllAnswered | Answers::SomeUnavailable => assert_eq!(
            unanswered, 0,
            "the servers stayed up: every request got an answer"
        ),
        Answers::SomeUnanswered => assert!(unanswered > 0, "the killed server's requests"),
    }
    if answers == Answers::SomeUnavailable {
        assert!(
            unavailable > 0,
            "an outage past the budget is answered 503 unavailable"
        );
    }
    assert!(
        acknowledged.len() >= PLAYERS * 4,
        "the servers sold under load"
    );
    assert_eq!(lost, 0, "no acknowledged purchase is lost");
    assert_eq!(
        unacknowledged, 0,
        "every purchase's key was tried until acknowledged, so no play is doubled or unknown"
    );
    assert_ledger_balances(db).await;
    let said = crate::common::process::stdout_ok(audit());
    assert!(said.contains("intact"), "{said}");
}

/// [`check`] on the promoted standby: the old primary is gone, the same
/// `url` finds the new one.
async fn check_promoted(
    name: &str,
    cluster: &Cluster,
    url: &str,
    answered: (&[Tally], Answers),
    resumed: &[Duration],
) {
    let db = Db::connect(url).await.expect("connect to the new primary");
    assert_eq!(cluster.psql(true, "SELECT pg_is_in_recovery()"), "f");
    check(name, &db, answered, resumed, || audit_verify(url)).await;
}

/// Polls `condition` until it holds, for at most 30 s.
fn poll(what: &str, condition: impl Fn() -> bool) {
    until_blocking(what, Duration::from_secs(30), || condition().then_some(()));
}

/// `tresor audit verify` on the PostgreSQL `url`.
fn audit_verify(url: &str) -> std::process::Output {
    crate::common::tresor(&["audit", "verify", "--database-url", url])
}

async fn the_primary_killed_under_load_and_its_synchronous_standby_promoted_loses_nothing_acknowledged(
    h: &Harness,
) {
    let Some((cluster, url, _servers, load)) = standby_pair_under_load(h).await else {
        return;
    };

    let fault = Instant::now();
    tokio::task::block_in_place(|| {
        cluster.kill(false);
        cluster.promote();
    });
    let promoted = fault.elapsed();
    assert!(!cluster.answers(false), "the old primary is down");
    let resumed = load.wait_resumed(&[0, 1], fault).await;
    load.steady_on(&[0, 1]).await;
    let tallies = load.stop().await;
    println!("failover: primary killed, standby promoted after {promoted:?}");

    let answered = (&tallies[..], Answers::AllAnswered);
    check_promoted("failover", &cluster, &url, answered, &resumed).await;
}

async fn a_commit_whose_answer_the_killed_primary_never_sent_is_found_on_the_promoted_standby(
    h: &Harness,
) {
    let Some((cluster, url, servers, load)) = standby_pair_under_load(h).await else {
        return;
    };

    // The standby stops taking WAL: every COMMIT waits for it, so each
    // server's writer is soon waiting on one. The primary's sessions are
    // frozen, then the standby takes the WAL, COMMITs included: they are
    // durable on the standby, but their answers are never sent.
    let fault = Instant::now();
    tokio::task::block_in_place(|| {
        assert_eq!(
            cluster.signal(true, "postgres: walreceiver", "STOP"),
            1,
            "one WAL receiver"
        );
        poll("a COMMIT waiting for the standby", || {
            cluster.psql(
                false,
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'SyncRep'",
            ) != "0"
        });
        assert!(cluster.signal(false, "postgres: postgres postgres", "STOP") > 0);
        // Nothing writes now: the standby is to have all the primary wrote.
        let written = cluster.psql(false, "SELECT pg_current_wal_flush_lsn()");
        assert!(!written.is_empty(), "the primary's WAL position");
        cluster.signal(true, "postgres: walreceiver", "CONT");
        poll("the standby has the primary's WAL", || {
            cluster.psql(
                true,
                &format!("SELECT pg_last_wal_receive_lsn() >= '{written}'::pg_lsn"),
            ) == "t"
        });
        cluster.kill(false);
        cluster.promote();
    });
    assert!(!cluster.answers(false), "the old primary is down");
    let resumed = load.wait_resumed(&[0, 1], fault).await;
    load.steady_on(&[0, 1]).await;
    let tallies = load.stop().await;
    // Every writer transaction locks the trail's head first, so one
    // server's writer waits on a COMMIT while the other waits on that lock.
    let mut resolved_total = 0.0;
    for server in &servers {
        let resolved =
            metrics::read(&server.admin_base, "tresor_writer_commits_resolved_total").await;
        println!(
            "lost commit: {} resolved {resolved} COMMITs found on the new primary",
            server.base
        );
        resolved_total += resolved;
    }
    assert!(
        resolved_total >= 1.0,
        "a writer found its lost COMMIT on the new primary and answered from it"
    );

    let db = Db::connect(&url).await.expect("connect to the new primary");
    let answered = (&tallies[..], Answers::AllAnswered);
    check("lost commit", &db, answered, &resumed, || {
        audit_verify(&url)
    })
    .await;
}

async fn postgresql_restarted_mid_load_resumes_by_itself_and_loses_nothing_acknowledged(
    h: &Harness,
) {
    let Some(cluster) = h.cluster_primary() else {
        return;
    };
    let url = format!("postgres://postgres@{}/postgres", cluster.primary.host());
    let (_servers, load) = two_servers_under_load(&url).await;

    let fault = Instant::now();
    tokio::task::block_in_place(|| cluster.restart_immediate());
    let restarted = fault.elapsed();
    let resumed = load.wait_resumed(&[0, 1], fault).await;
    load.steady_on(&[0, 1]).await;
    let tallies = load.stop().await;
    println!("restart: PostgreSQL back after {restarted:?}");

    let db = Db::connect(&url).await.expect("connect");
    let answered = (&tallies[..], Answers::AllAnswered);
    check("restart", &db, answered, &resumed, || audit_verify(&url)).await;
}

async fn a_tresor_server_killed_mid_load_leaves_the_other_serving_and_loses_nothing_acknowledged(
    h: &Harness,
) {
    let db: &TestDb = h;
    let mut servers = [
        Some(serve(&db.url, ANY_PORT, 0).await),
        Some(serve(&db.url, ANY_PORT, 1).await),
    ];
    let first_port = servers[0].as_ref().expect("the first server").port();
    let bases: Vec<String> = servers.iter().flatten().map(|s| s.base.clone()).collect();
    let load = Load::start(&bases).await;
    load.steady_on(&[0, 1]).await;

    let fault = Instant::now();
    servers[0].take().expect("the first server").kill();
    let other = load.wait_resumed(&[1], fault).await;
    // The other server carries the load alone for a while.
    load.steady_on(&[1]).await;
    servers[0] = Some(serve(&db.url, first_port, 0).await);
    let restart = Instant::now();
    let back = load.wait_resumed(&[0], restart).await;
    load.steady_on(&[0, 1]).await;
    let tallies = load.stop().await;
    println!(
        "server kill: the other server served {:?} after the kill; the restarted one {:?} after its start",
        other[0], back[0]
    );

    let store = db.connect().await;
    let answered = (&tallies[..], Answers::SomeUnanswered);
    check("server kill", &store, answered, &other, || {
        audit_verify(&db.url)
    })
    .await;
}

async fn a_standby_promoted_20_s_after_the_primary_died_keeps_every_request_within_the_outage_budget(
    h: &Harness,
) {
    let Some((cluster, url, _servers, load)) = standby_pair_under_load(h).await else {
        return;
    };

    // No primary for 20 s: COMMITs in doubt, batches failing and run again,
    // requests queued behind them; each is answered within the budget.
    let fault = Instant::now();
    tokio::task::block_in_place(|| cluster.kill(false));
    // The outage itself: no primary for this long, by design (no event to
    // wait for; the test proves what the players see meanwhile).
    tokio::time::sleep(SLOW_PROMOTION).await;
    tokio::task::block_in_place(|| cluster.promote());
    let promoted = Instant::now();
    assert!(!cluster.answers(false), "the old primary is down");
    let resumed = load.wait_resumed(&[0, 1], promoted).await;
    load.steady_on(&[0, 1]).await;
    let tallies = load.stop().await;
    println!(
        "slow failover: primary killed, standby promoted after {:?}; served again {resumed:?} after the promotion",
        promoted - fault
    );

    let answered = (&tallies[..], Answers::SomeUnavailable);
    check_promoted("slow failover", &cluster, &url, answered, &resumed).await;
}
