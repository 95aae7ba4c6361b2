//! Faults made for real, and what players and operators see of them: a
//! writer that panics mid-load (the fault-injection hook), a database the
//! writer cannot open or cannot reach (`/readyz`), and a full SQLite
//! database (`max_page_count` lowered while the server runs, then raised),
//! and a writer held before its COMMIT past the outage budget.
//! After each: every acknowledged purchase is there, nothing was applied
//! twice, the ledger sums to zero and the trail verifies.

use crate::common::buying::{count_plays, timed_purchase};
use crate::common::metrics;
use crate::common::proxy::Plug;
use crate::common::trail::assert_trail_verifies;
use crate::common::wait::{until, until_true};
use crate::common::{
    Harness, Server, TestApp, TestDb, assert_ledger_balances, buy_at, cookie_client, demo_on_sale,
    get_json, players_at, post, register_and_deposit, unthrottled_flags,
};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::TcpListener;
use tresor::metrics::Metrics;
use tresor::service::{ManualClock, Service, Settings};
use tresor::store::Db;

on_both!(
    a_writer_that_panics_mid_load_fails_its_callers_fast_and_restarts,
    a_held_writer_answers_unavailable_within_the_outage_budget_and_the_same_key_buys_once,
);
on_sqlite!(
    a_writer_that_cannot_open_its_sqlite_file_is_not_ready_and_recovers_by_itself,
    a_full_sqlite_disk_answers_storage_full_loses_nothing_and_serves_again_once_freed,
);
on_postgres!(a_postgresql_cut_off_makes_readyz_fail_within_a_second_and_it_recovers_by_itself);

/// `GET {base}/readyz`: its status and JSON body (0 when no answer came).
async fn readyz(base: &str) -> (u16, Value) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    match client.get(format!("{base}/readyz")).send().await {
        Ok(response) => {
            let status = response.status().as_u16();
            (status, response.json().await.unwrap_or(Value::Null))
        }
        Err(_) => (0, Value::Null),
    }
}

/// `/healthz` still says the process lives.
async fn assert_lives(base: &str) {
    let health = reqwest::get(format!("{base}/healthz")).await.unwrap();
    assert!(health.status().is_success(), "{health:?}");
}

/// Polls `/readyz` every 20 ms until it answers `status`; how long that
/// took. Fails after `limit`: a generous bound on a condition awaited, not a
/// claim about speed (a loaded 2-core machine may be slow; a server that
/// never gets there fails all the same).
async fn readyz_becomes(base: &str, status: u16, limit: Duration) -> Duration {
    let started = Instant::now();
    let body = until(
        format!("/readyz answering {status}"),
        limit,
        || async move {
            let (got, body) = readyz(base).await;
            (got == status).then_some(body)
        },
    )
    .await;
    if status == 503 {
        assert_eq!(body["error"]["code"], "not_ready", "{body}");
    }
    started.elapsed()
}

// ---- A writer that panics mid-load ----

/// One purchase attempt of the load: its key, status, answer and when.
struct Attempt {
    key: String,
    status: u16,
    body: Value,
    answered_at: Duration,
    took: Duration,
}

async fn a_writer_that_panics_mid_load_fails_its_callers_fast_and_restarts(db: &TestDb) {
    // From the 80th batch (well after the setup and the registrations), six
    // batches in a row panic: the writer restarts six times, pausing 50 ms,
    // then 100, 200… (3 s in all), while players keep buying.
    let mut flags = unthrottled_flags();
    for flag in [
        "--fault-writer-panic-at-batch",
        "80",
        "--fault-writer-panics",
        "6",
    ] {
        flags.push(flag.to_owned());
    }
    let server = Server::start(db, &flags).await;
    let base = server.base.clone();
    const PLAYERS: usize = 8;
    let clients = players_at(&base, PLAYERS, 100_000).await;

    let started = Instant::now();
    // The load lasts 8 s and then until the six restarts are counted (a
    // slow machine reaches the 80th batch later), 60 s at most.
    const LOAD: Duration = Duration::from_secs(8);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let ready_samples = Arc::new(Mutex::new(Vec::<(Duration, u16)>::new()));
    let poller = {
        let (base, samples, stop) = (base.clone(), ready_samples.clone(), stop.clone());
        let admin = server.admin_base.clone();
        tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                let (status, _) = readyz(&base).await;
                samples.lock().unwrap().push((started.elapsed(), status));
                let over = started.elapsed() >= Duration::from_secs(60)
                    || started.elapsed() >= LOAD
                        && metrics::read(&admin, "tresor_writer_restarts_total").await >= 6.0;
                stop.store(over, Ordering::SeqCst);
                // Paces the samples: one every 25 ms, all along the load.
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
    };
    let mut tasks = Vec::new();
    for (p, client) in clients.iter().cloned().enumerate() {
        let (base, stop) = (base.clone(), stop.clone());
        tasks.push(tokio::spawn(async move {
            let mut attempts = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::SeqCst) {
                let key = format!("p{p}-n{n}");
                n += 1;
                let sent = Instant::now();
                let (status, body) = buy_at(&client, &base, 50, &key)
                    .await
                    .expect("every purchase is answered");
                attempts.push(Attempt {
                    key,
                    status,
                    body,
                    answered_at: started.elapsed(),
                    took: sent.elapsed(),
                });
                if status != 201 {
                    // A client backs off a little on a 503.
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            attempts
        }));
    }
    let mut per_player = Vec::new();
    for task in tasks {
        per_player.push(task.await.unwrap());
    }
    poller.await.unwrap();
    let attempts: Vec<&Attempt> = per_player.iter().flatten().collect();
    let acknowledged: Vec<&Attempt> = attempts
        .iter()
        .copied()
        .filter(|a| a.status == 201)
        .collect();
    let failed: Vec<&Attempt> = attempts
        .iter()
        .copied()
        .filter(|a| a.status != 201)
        .collect();
    for attempt in &failed {
        assert_eq!(attempt.status, 503, "{}", attempt.body);
        assert_eq!(
            attempt.body["error"]["code"], "unavailable",
            "{}",
            attempt.body
        );
    }
    // Failed fast: each failure is the writer's own refusal (answered at
    // once while it restarts, or at once for the batch that panicked), never
    // a caller left waiting until the server's 30 s time limit (408 timeout)
    // or the client's (no answer, caught above).
    for attempt in &failed {
        let message = attempt.body["error"]["message"].as_str().unwrap_or("");
        assert!(
            message.contains("the writer is restarting")
                || message.contains("the writer failed during this request"),
            "{}",
            attempt.body
        );
    }
    let slowest = attempts.iter().map(|a| a.took).max().unwrap();
    assert!(
        slowest <= Duration::from_secs(6),
        "no caller is left hanging past the outage budget (5 s) and a second (slowest \
         answer: {slowest:?})"
    );
    let first_failure = failed
        .iter()
        .map(|a| a.answered_at)
        .min()
        .expect("the writer panicked: some purchases failed");
    let last_failure = failed.iter().map(|a| a.answered_at).max().unwrap();
    let samples = ready_samples.lock().unwrap().clone();
    // The first unready answer may come before the first failed purchase is
    // answered: a writer busy printing its panic is already seen as stuck.
    let first_unready = samples
        .iter()
        .find(|(_, status)| *status == 503)
        .map(|(at, _)| *at)
        .expect("/readyz failed while the writer was down");
    // /readyz went unready while purchases were still failing: the outage
    // lasts over 3 s (its last pause alone 1.6 s, polled every 25 ms), so a
    // readiness that follows the writer is seen unready well before the last
    // failure, however loaded the machine.
    assert!(
        first_unready < last_failure,
        "/readyz failed while the writer was down ({first_unready:?}, purchases failed from \
         {first_failure:?} to {last_failure:?})"
    );
    // The writer is back: the same process serves again (each player buys
    // again below, retrying its failed keys). Under load the six restarts may
    // outlast the load itself, so a player's last attempt may have failed.
    readyz_becomes(&base, 200, Duration::from_secs(30)).await;
    let restarts = metrics::read(&server.admin_base, "tresor_writer_restarts_total").await;
    assert!(restarts >= 6.0, "six restarts counted ({restarts})");

    // Every acknowledged purchase is there; no failed one was applied.
    let store = db.connect().await;
    assert_eq!(
        count_plays(&store).await as usize,
        acknowledged.len(),
        "exactly the acknowledged purchases are in the database"
    );
    for (client, player) in clients.iter().zip(&per_player) {
        for attempt in player.iter().filter(|a| a.status == 201) {
            let id = attempt.body["id"].as_i64().unwrap();
            let play = get_json(client, &format!("{base}/api/plays/{id}")).await;
            assert_eq!(play["unit"], attempt.body["unit"], "play {id} is there");
        }
    }
    // Retrying the failed keys buys each once; retrying acknowledged ones
    // replays them.
    for (client, player) in clients.iter().zip(&per_player) {
        for attempt in player
            .iter()
            .rev()
            .take(3)
            .chain(player.iter().filter(|a| a.status != 201))
        {
            let (status, play) = buy_at(client, &base, 50, &attempt.key).await.unwrap();
            assert_eq!(status, 201, "{play}");
            if attempt.status == 201 {
                assert_eq!(play["id"], attempt.body["id"], "a replay");
            }
        }
    }
    server.kill();
    assert_eq!(
        count_plays(&store).await as usize,
        attempts.len(),
        "one play per key, none twice"
    );
    assert_ledger_balances(&store).await;
    let records = assert_trail_verifies(&store).await;
    db.tresor_ok(&["audit", "verify"]);
    println!(
        "{:?}: {} purchases, {} acknowledged, {} answered 503 unavailable \
         (from {first_failure:?} to {last_failure:?}); /readyz 503 at {first_unready:?}; \
         {restarts} restarts; slowest answer {slowest:?}; {records} trail records verify",
        db.backend,
        attempts.len(),
        acknowledged.len(),
        failed.len(),
    );
}

// ---- A database the writer cannot open or cannot reach ----

/// Serves `service` over HTTP in-process; the base URL.
async fn serve(service: &Service) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = tresor::http::AppState {
        service: service.clone(),
        metrics: Arc::new(Metrics::new(&service.writer.stats)),
        secure_cookies: false,
    };
    let app =
        tresor::http::app(state).into_make_service_with_connect_info::<std::net::SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

fn settings() -> Settings {
    Settings {
        rate_limits: tresor::protect::RateLimits::unthrottled(),
        ..Settings::default()
    }
}

async fn a_writer_that_cannot_open_its_sqlite_file_is_not_ready_and_recovers_by_itself(
    db: &TestDb,
) {
    let store = db.connect().await;
    // The database file is put aside and a folder takes its name: the
    // writer's open fails (as it would on a lost mount), for real.
    let file = db.data_dir().unwrap().join("tresor.db");
    let aside = file.with_extension("aside");
    std::fs::rename(&file, &aside).unwrap();
    std::fs::create_dir(&file).unwrap();
    let clock = Arc::new(ManualClock::new(crate::common::now_ms()));
    let service = Service::new(store, clock, settings());
    let base = serve(&service).await;
    let became_unready = readyz_becomes(&base, 503, Duration::from_secs(30)).await;
    let (status, body) = readyz(&base).await;
    assert_eq!(status, 503, "{body}");
    // A write is refused at once, not left waiting: refused for the outage
    // (its first read, or the writer, finds no database), answered while the
    // file is still missing (so not after waiting for it), well before the
    // 30 s at which a waiting request would end (the pool's wait for a
    // connection, the server's time limit answering 408 timeout). Within the
    // outage budget (5 s) and a second for a loaded machine, and not by the
    // budget's own timeout: the over-budget count stays 0.
    let budget = service.settings.outage_budget;
    assert_eq!(budget, Duration::from_secs(5));
    let client = cookie_client();
    let asked = Instant::now();
    let (status, body) = post(
        &client,
        &format!("{base}/api/register"),
        &json!({"username": "early", "password": "a long password", "adult": true, "accept_rules": true}),
        None,
    )
    .await
    .unwrap();
    let refused_in = asked.elapsed();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("unavailable")),
        "{body}"
    );
    assert!(
        refused_in < budget + Duration::from_secs(1),
        "refused in {refused_in:?}"
    );
    assert_eq!(
        service.writer.stats.over_budget.get(),
        0,
        "refused for the outage, not at the budget"
    );
    assert_eq!(readyz(&base).await.0, 503, "the writer is still down");
    assert_lives(&base).await;

    // The file comes back: the writer opens it at its next try.
    std::fs::remove_dir(&file).unwrap();
    std::fs::rename(&aside, &file).unwrap();
    let back = Instant::now();
    let recovered_in = readyz_becomes(&base, 200, Duration::from_secs(30)).await;
    demo_on_sale(&service, "Back").await;
    register_and_deposit(&client, &base, "late", 1_000).await;
    let after = timed_purchase(&client, &base, "after").await;
    assert_eq!(after.status, 201, "{}", after.body);
    assert!(service.writer.stats.restarts.get() >= 1);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
    println!(
        "SQLite file unopenable: /readyz 503 after {became_unready:?}, a write refused in \
         {refused_in:?}; file back: ready again in {recovered_in:?}, buying after {:?}, \
         {} writer restarts",
        back.elapsed(),
        service.writer.stats.restarts.get()
    );
}

async fn a_postgresql_cut_off_makes_readyz_fail_within_a_second_and_it_recovers_by_itself(
    db: &TestDb,
) {
    // The test server's address, from its URL (`…@host:port/database`).
    let server = db
        .url
        .rsplit_once('@')
        .and_then(|(_, rest)| rest.split_once('/'));
    let (address, _) = server.expect("a PostgreSQL URL with a host and a database");
    let plug = Plug::start(address).await;
    let url = db
        .url
        .replacen(address, &format!("127.0.0.1:{}", plug.port), 1);
    assert_ne!(url, db.url, "the test database is reached through the plug");
    let store = crate::common::db::signed(
        Db::connect(&url)
            .await
            .unwrap()
            .with_secrets_key(db.secrets_key.clone()),
    )
    .await;
    let clock = Arc::new(ManualClock::new(crate::common::now_ms()));
    let service = Service::new(store, clock, settings());
    service.open_secrets().await.unwrap();
    demo_on_sale(&service, "Plug").await;
    let base = serve(&service).await;
    let client = cookie_client();
    register_and_deposit(&client, &base, "player", 10_000).await;
    readyz_becomes(&base, 200, Duration::from_secs(30)).await;

    // Every connection is cut (closed by the time `unplug` returns): the
    // very next poll answers 503, as a load balancer polling every second
    // would see at its next poll. Each poll is bounded by the server's own
    // probe limit (`READY_WITHIN`, 500 ms), so no clock is read here: a
    // readiness that answered from a stale state, or waited on the pool's
    // 30 s connect, would fail this first poll.
    let cut = Instant::now();
    plug.unplug().await;
    let (status, body) = readyz(&base).await;
    let became_unready = cut.elapsed();
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("not_ready")),
        "the first poll after the cut: {body}"
    );
    // Within a second, as the test's name says (the client's own timeout
    // is 5 s: a poll that waited on the pool would answer 503 too, late).
    assert!(
        became_unready < Duration::from_secs(1),
        "/readyz answered 503 only after {became_unready:?}"
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("the database")),
        "it is the database that does not answer: {body}"
    );
    assert_lives(&base).await;
    // And every poll after it, while cut off (the pool's attempts to
    // reconnect fail too).
    for poll in 0..5 {
        let (status, body) = readyz(&base).await;
        assert_eq!(
            status, 503,
            "still unready while cut off (poll {poll}): {body}"
        );
    }

    plug.plug();
    let recovered_in = readyz_becomes(&base, 200, Duration::from_secs(30)).await;
    let after = timed_purchase(&client, &base, "after").await;
    assert_eq!(after.status, 201, "{}", after.body);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
    println!(
        "PostgreSQL cut off: /readyz 503 after {became_unready:?}; plugged back: ready again in \
         {recovered_in:?}"
    );
}

// ---- A full disk (SQLite) ----

async fn a_full_sqlite_disk_answers_storage_full_loses_nothing_and_serves_again_once_freed(
    h: &Harness,
) {
    let settings = TestApp::settings();
    let page_limit = settings.writer_faults.sqlite_max_page_count.clone();
    let app = h.app_with(settings).await;
    const PLAYERS: usize = 4;
    let mut players = Vec::new();
    for p in 0..PLAYERS {
        let player = app.another_client();
        player.player(&format!("player{p}"), 40_000).await;
        players.push(player);
    }
    let pages: i64 = sqlx::query_scalar("PRAGMA page_count")
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
    // Room for a few dozen purchases more, then the "disk" is full.
    page_limit.store(pages as u64 + 6, Ordering::SeqCst);

    // Every player buys until the disk has refused it ten times.
    let mut tasks = Vec::new();
    for (p, player) in players.into_iter().enumerate() {
        tasks.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut refused = 0;
            for n in 0..2_000 {
                let key = format!("p{p}-full-{n}");
                let (status, body) = player.buy_with_key(50, &key).await;
                if status == 503 {
                    refused += 1;
                }
                answers.push((key, status, body));
                if refused == 10 {
                    break;
                }
            }
            (player, answers)
        }));
    }
    let mut answers = Vec::new();
    let mut players = Vec::new();
    for task in tasks {
        let (player, theirs) = task.await.unwrap();
        players.push(player);
        answers.extend(theirs);
    }
    let mut acknowledged: HashMap<String, i64> = HashMap::new();
    let mut refused = 0;
    for (key, status, body) in &answers {
        match status.as_u16() {
            201 => {
                acknowledged.insert(key.clone(), body["id"].as_i64().unwrap());
            }
            503 => {
                refused += 1;
                assert_eq!(body["error"]["code"], "storage_full", "{body}");
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(
        refused >= 10 * PLAYERS,
        "the disk filled ({refused} refusals)"
    );
    // While full: nothing half-written, the server still reads, and stays ready.
    let found = count_plays(&app.service.db).await;
    assert_eq!(
        found as usize,
        acknowledged.len(),
        "exactly the acknowledged purchases"
    );
    app.assert_ledger_balances().await;
    assert_trail_verifies(&app.service.db).await;
    let (status, _) = players[0].me().await;
    assert_eq!(status, 200, "reads are served on a full disk");
    assert_eq!(
        readyz(&app.address).await.0,
        200,
        "a full disk is not a reason to stop sending players"
    );

    // Space comes back, without a restart: the writer reads the limit before
    // each batch, so the very next purchase buys.
    page_limit.store(0, Ordering::SeqCst);
    let freed = Instant::now();
    let (status, body) = players[0].buy_with_key(50, "after").await;
    assert_eq!(status, 201, "the first purchase once space is back: {body}");
    acknowledged.insert("after".to_owned(), body["id"].as_i64().unwrap());
    let serving_in = freed.elapsed();
    assert_eq!(
        app.service.writer.stats.restarts.get(),
        0,
        "the writer served on without a restart"
    );
    // The keys the disk refused buy now, each once.
    for (key, status, _) in &answers {
        if *status == 503 {
            let player: usize = key[1..key.find('-').unwrap()].parse().unwrap();
            let (status, body) = players[player].buy_with_key(50, key).await;
            assert_eq!(status, 201, "{body}");
            acknowledged.insert(key.clone(), body["id"].as_i64().unwrap());
        }
    }
    for (player, p) in players.iter().zip(0..) {
        for (key, id) in &acknowledged {
            if key.starts_with(&format!("p{p}-")) {
                let (status, play) = player.play(*id).await;
                assert_eq!(status, 200, "acknowledged play {id} is there: {play}");
            }
        }
    }
    let found = count_plays(&app.service.db).await;
    assert_eq!(
        found as usize,
        acknowledged.len(),
        "one play per key, none twice"
    );
    app.assert_ledger_balances().await;
    let records = assert_trail_verifies(&app.service.db).await;
    app.db.tresor_ok(&["audit", "verify"]);
    println!(
        "SQLite full at {} pages: {} purchases acknowledged before, {refused} answered 503 \
         storage_full, {found} plays found in the end (all acknowledged, once each); serving \
         again {serving_in:?} after space came back, without a restart; {records} trail records verify",
        pages + 6,
        answers.len() - refused,
    );
}

// ---- A writer held past the outage budget ----

/// A purchase under `key` as `client`'s player: its status, `Retry-After`,
/// JSON answer and how long it took.
async fn timed_buy(
    client: &reqwest::Client,
    base: &str,
    key: &str,
) -> (u16, Option<String>, Value, Duration) {
    let bought = timed_purchase(client, base, key).await;
    (bought.status, bought.retry_after, bought.body, bought.took)
}

async fn a_held_writer_answers_unavailable_within_the_outage_budget_and_the_same_key_buys_once(
    h: &Harness,
) {
    const BUDGET: Duration = Duration::from_secs(1);
    let faults = tresor::writer::Faults::default();
    let hold = faults.stall_before_commit_ms.clone();
    let app = h
        .app_with(Settings {
            outage_budget: BUDGET,
            writer_faults: faults,
            ..TestApp::settings()
        })
        .await;
    let base = app.address.clone();
    let (held, queued) = (cookie_client(), cookie_client());
    register_and_deposit(&held, &base, "held", 1_000).await;
    register_and_deposit(&queued, &base, "queued", 1_000).await;

    // The writer holds the first purchase's batch before its COMMIT (a
    // COMMIT in doubt, a failover); the second queues behind it.
    hold.store(60_000, Ordering::SeqCst);
    let stats = &app.service.writer.stats;
    let queued_before = stats.queued.get();
    let first = tokio::spawn({
        let (client, base) = (held.clone(), base.clone());
        async move { timed_buy(&client, &base, "held-key").await }
    });
    // The writer took the first purchase from its queue into a batch.
    until_true(
        "the first purchase taken into a batch",
        Duration::from_secs(30),
        || async move { stats.queued.get() > queued_before && stats.queue_depth.get() == 0 },
    )
    .await;
    let second = timed_buy(&queued, &base, "queued-key").await;
    let first = first.await.unwrap();
    for (status, retry_after, body, took) in [&first, &second] {
        assert_eq!(*status, 503, "{body}");
        assert_eq!(body["error"]["code"], "unavailable", "{body}");
        assert_eq!(retry_after.as_deref(), Some("1"), "{body}");
        assert!(
            *took >= BUDGET - Duration::from_millis(50) && *took <= BUDGET + Duration::from_secs(1),
            "answered at the budget ({BUDGET:?}), not before nor long after: {took:?}"
        );
    }

    // Released: the held batch commits. The same keys buy once each: the
    // held purchase is replayed, the queued one (dropped: its caller was
    // gone) is bought now.
    hold.store(0, Ordering::SeqCst);
    let mut plays = Vec::new();
    for (client, key) in [(&held, "held-key"), (&queued, "queued-key")] {
        let (status, _, play, _) = timed_buy(client, &base, key).await;
        assert_eq!(status, 201, "{play}");
        let (status, _, again, _) = timed_buy(client, &base, key).await;
        assert_eq!(status, 201, "{again}");
        assert_eq!(again["id"], play["id"], "a replay names the same play");
        let me = get_json(client, &format!("{base}/api/me")).await;
        assert_eq!(me["balance_cents"], 950, "debited once: {me}");
        plays.push(play["id"].as_i64().unwrap());
    }
    assert_eq!(
        count_plays(&app.service.db).await,
        2,
        "one play per key: {plays:?}"
    );
    app.assert_ledger_balances().await;
    let over_budget = metrics::read(&app.admin_address, "tresor_writer_over_budget_total").await;
    assert!(over_budget >= 2.0, "both counted ({over_budget})");
    println!(
        "{:?}: held purchase answered 503 in {:?}, queued one in {:?} (budget {BUDGET:?}); \
         each key bought once after the release",
        h.backend, first.3, second.3
    );
}
