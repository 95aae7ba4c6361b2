//! Generated hostile and business requests never fail the server nor change anything when refused.

use super::*;

/// The router under attack, its database, and the live cookie.
struct Target {
    router: axum::Router,
    service: Service,
    /// The logged-in player's cookie and how many players were registered.
    live: Mutex<(String, u32)>,
    /// Answers seen, by status and error code (printed, to see what the
    /// generated cases reach).
    seen: Mutex<BTreeMap<(u16, String), u32>>,
    /// Answers seen, by [`Kind`]: the minimum of each is asserted.
    kinds: Mutex<BTreeMap<Kind, u32>>,
    /// Each purchase acknowledged (201): its play, by player number and
    /// idempotency key, and the plays of each player in order.
    bought: Mutex<Bought>,
}

/// The purchases the generated requests made, as they were answered.
#[derive(Debug, Default)]
struct Bought {
    by_key: BTreeMap<(u32, String), i64>,
    plays: BTreeMap<u32, Vec<i64>>,
}

/// What an answer says, for the tally: a success, a business refusal (each
/// of its own kind) or a refusal at the door, before any handler's logic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Success,
    InsufficientFunds,
    FinishedPlay,
    Cap,
    IdempotencyConflict,
    Door,
    Other,
}

impl Kind {
    fn of(status: StatusCode, code: &str) -> Kind {
        match (status.as_u16(), code) {
            (200..=299, _) => Kind::Success,
            (402, "insufficient_funds") => Kind::InsufficientFunds,
            (409, "play_finished") => Kind::FinishedPlay,
            (403, "stake_limit_reached" | "deposit_limit_reached") => Kind::Cap,
            (409, "idempotency_conflict") => Kind::IdempotencyConflict,
            (401, "unauthorized") | (403, "csrf") | (404, _) | (405, _) => Kind::Door,
            _ => Kind::Other,
        }
    }
}

impl Target {
    async fn new(db: &TestDb) -> Target {
        let clock = Arc::new(ManualClock::new(crate::common::START_MS));
        let settings = Settings {
            rate_limits: tresor::protect::RateLimits::unthrottled(),
            ..Settings::default()
        };
        let service = Service::new(db.connect().await, clock, settings);
        demo_on_sale(&service, "Hostile").await;
        let metrics = Arc::new(tresor::metrics::Metrics::new(&service.writer.stats));
        let router = tresor::http::app(tresor::http::AppState {
            service: service.clone(),
            metrics,
            secure_cookies: false,
        });
        Target {
            router,
            service,
            live: Mutex::new((String::new(), 0)),
            seen: Mutex::default(),
            kinds: Mutex::default(),
            bought: Mutex::default(),
        }
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let (status, headers) = (response.status(), response.headers().clone());
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 24)
            .await
            .unwrap();
        (status, headers, bytes.to_vec())
    }

    /// Registers a fresh player with 3 € (soon spent: purchases are then
    /// refused for want of money) and keeps its cookie.
    async fn log_in_someone(&self) {
        let n = self.live.lock().unwrap().1 + 1;
        let body = json!({"username": format!("player{n}"), "password": PASSWORD,
                          "adult": true, "accept_rules": true});
        let post = |path: &str, body: Value, cookie: Option<&str>| {
            let mut request = Request::post(path)
                .header("x-requested-with", "tresor")
                .header(header::CONTENT_TYPE, "application/json");
            if let Some(cookie) = cookie {
                request = request.header(header::COOKIE, cookie);
            }
            request.body(Body::from(body.to_string())).unwrap()
        };
        let (status, headers, _) = self.send(post("/api/register", body, None)).await;
        assert_eq!(status, StatusCode::CREATED);
        let cookie = crate::common::cookie::set_cookie(&headers);
        let (status, _, _) = self
            .send(post(
                "/api/demo/deposit",
                json!({"amount_cents": 300}),
                Some(&cookie),
            ))
            .await;
        assert_eq!(status, StatusCode::OK);
        *self.live.lock().unwrap() = (cookie, n);
    }

    async fn session_is_live(&self) -> bool {
        let cookie = self.live.lock().unwrap().0.clone();
        let request = Request::get("/api/me")
            .header(header::COOKIE, cookie)
            .body(Body::empty())
            .unwrap();
        self.send(request).await.0 == StatusCode::OK
    }

    /// The trail's last record (number and hash; none: 0 and the genesis).
    async fn trail_head(&self) -> (i64, String) {
        sqlx::query_as("SELECT seq, hash FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_optional(&self.service.db.pool)
            .await
            .unwrap()
            .unwrap_or_else(|| (0, tresor::trail::GENESIS_HASH.to_owned()))
    }

    async fn last_action(&self) -> String {
        sqlx::query_scalar("SELECT action FROM trail ORDER BY seq DESC LIMIT 1")
            .fetch_one(&self.service.db.pool)
            .await
            .unwrap()
    }

    /// The case's path, `{play}` replaced by one of the live player's plays
    /// (its latest, or any), or by 1 while it has none.
    fn path(&self, case: &Case) -> String {
        let Some((latest, index)) = &case.play else {
            return case.path.clone();
        };
        let player = self.live.lock().unwrap().1;
        let bought = self.bought.lock().unwrap();
        let id = match bought.plays.get(&player) {
            Some(plays) if *latest => *plays.last().unwrap(),
            Some(plays) => *index.get(plays),
            None => 1,
        };
        case.path.replace("{play}", &id.to_string())
    }

    fn request(&self, case: &Case) -> Option<Request<Body>> {
        let path = self.path(case);
        let mut request = Request::builder().method(case.method).uri(&path);
        if case.csrf {
            request = request.header("x-requested-with", "tresor");
        }
        match &case.cookie {
            Cookie::None => {}
            Cookie::Live => {
                request = request.header(header::COOKIE, self.live.lock().unwrap().0.clone());
            }
            Cookie::Garbage(text) => request = request.header(header::COOKIE, text.as_str()),
        }
        if let Some(content_type) = case.content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        for (name, value) in &case.headers {
            request = request.header(*name, value.as_str());
        }
        let body = case
            .body
            .clone()
            .map(Body::from)
            .unwrap_or_else(Body::empty);
        request.body(body).ok()
    }

    /// Sends one case and checks what must hold whatever it was.
    async fn check(&self, case: &Case) {
        let Some(request) = self.request(case) else {
            return;
        };
        let before = self.trail_head().await;
        let (status, headers, body) = self.send(request).await;
        let after = self.trail_head().await;
        let text = String::from_utf8_lossy(&body);
        assert!(!status.is_server_error(), "{status} for {case:?}: {text}");
        let api = case.path.starts_with("/api/");
        let mut code = String::new();
        if api && status.is_client_error() && case.method != "HEAD" {
            assert!(
                headers[header::CONTENT_TYPE]
                    .to_str()
                    .unwrap()
                    .starts_with("application/json"),
                "{status} for {case:?}"
            );
            let error: Value = serde_json::from_slice(&body)
                .unwrap_or_else(|_| panic!("{status} for {case:?}: not JSON: {text}"));
            code = error["error"]["code"]
                .as_str()
                .unwrap_or_else(|| panic!("{status} for {case:?}: no code: {text}"))
                .to_owned();
            assert!(error["error"]["message"].is_string(), "{case:?}: {text}");
            if status == StatusCode::TOO_MANY_REQUESTS {
                assert!(headers.contains_key(header::RETRY_AFTER), "{case:?}");
            }
        }
        *self
            .seen
            .lock()
            .unwrap()
            .entry((status.as_u16(), code.clone()))
            .or_default() += 1;
        *self
            .kinds
            .lock()
            .unwrap()
            .entry(Kind::of(status, &code))
            .or_default() += 1;
        let purchase = case.method == "POST" && case.path.split('?').next() == Some("/api/plays");
        if status == StatusCode::CREATED && purchase {
            self.acknowledged(case, &body, before, after);
        } else if status.is_success() && matches!(case.method, "GET" | "HEAD") {
            assert_eq!(after, before, "a read wrote to the trail: {case:?}");
        } else if status.is_success() {
            // Accepted (a logout without a session writes nothing): what it
            // wrote, money moved included, keeps the ledger balanced.
            assert!(after.0 >= before.0, "{case:?}");
            if after != before {
                crate::common::assert_ledger_balances(&self.service.db).await;
            }
        } else if code == "invalid_credentials" {
            assert_eq!(
                after.0,
                before.0 + 1,
                "a failed login is one record: {case:?}"
            );
            assert_eq!(self.last_action().await, "login_failed");
        } else {
            assert_eq!(
                after, before,
                "a refusal ({status} {code}) left a record: {case:?}"
            );
        }
    }

    /// A purchase answered 201: a new play, recorded on the trail, under a
    /// new key; or, under a key already used with the same stake, the same
    /// play again.
    fn acknowledged(&self, case: &Case, body: &[u8], before: (i64, String), after: (i64, String)) {
        let play: Value = serde_json::from_slice(body).expect("a play as JSON");
        let id = play["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("a play id: {play}"));
        let key = case
            .headers
            .iter()
            .find(|(name, _)| *name == "idempotency-key")
            .map(|(_, key)| key.clone())
            .expect("a purchase answered 201 had a key");
        assert!(after.0 > before.0, "a purchase is on the trail: {case:?}");
        let player = self.live.lock().unwrap().1;
        let mut bought = self.bought.lock().unwrap();
        match bought.by_key.get(&(player, key.clone())) {
            Some(&earlier) => assert_eq!(earlier, id, "a replay shows the same play: {case:?}"),
            None => {
                assert!(
                    !bought.by_key.values().any(|&other| other == id),
                    "play {id} acknowledged under two keys: {case:?}"
                );
                bought.by_key.insert((player, key), id);
                bought.plays.entry(player).or_default().push(id);
            }
        }
    }

    /// The plays stored are exactly the purchases acknowledged, each the
    /// player's it was sold to.
    async fn plays_are_the_acknowledged_ones(&self) -> usize {
        let stored: BTreeMap<i64, String> = sqlx::query_as::<_, (i64, String)>(
            "SELECT p.id, pl.username FROM plays p JOIN players pl ON pl.id = p.player_id",
        )
        .fetch_all(&self.service.db.pool)
        .await
        .unwrap()
        .into_iter()
        .collect();
        let bought = self.bought.lock().unwrap();
        let acknowledged: BTreeMap<i64, String> = bought
            .by_key
            .iter()
            .map(|((player, _), id)| (*id, format!("player{player}")))
            .collect();
        assert_eq!(
            stored, acknowledged,
            "every acknowledged purchase is stored once, for its player, and nothing else"
        );
        let ids: BTreeSet<i64> = bought.plays.values().flatten().copied().collect();
        assert_eq!(ids.len(), acknowledged.len());
        acknowledged.len()
    }

    async fn ledger_and_trail_hold(&self) -> i64 {
        crate::common::assert_ledger_balances(&self.service.db).await;
        match tresor::trail::verify(&self.service.db.pool, |_| {})
            .await
            .unwrap()
        {
            Verdict::Intact { records, .. } => records,
            broken => panic!("{broken:?}"),
        }
    }
}

/// Runs `cases` generated cases (fixed seed) against `target`, shrinking a
/// failure to a small request.
fn attack(target: &Target, logged_in: bool, cases: u32, seed: u8) {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 64,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    );
    let handle = tokio::runtime::Handle::current();
    #[allow(
        clippy::result_large_err,
        reason = "proptest's own failure type, told once"
    )]
    let result = tokio::task::block_in_place(|| {
        runner.run(&arb_case(logged_in), |case| {
            handle.block_on(async {
                target.check(&case).await;
                if logged_in && !target.session_is_live().await {
                    // A logout, an exclusion or a login ended the session.
                    target.log_in_someone().await;
                }
            });
            Ok(())
        })
    });
    if let Err(failure) = result {
        panic!("{failure}");
    }
}

async fn generated_requests_never_fail_the_server_nor_change_anything_when_refused(db: &TestDb) {
    let started = std::time::Instant::now();
    let target = Target::new(db).await;
    // Someone to log in as, for generated logins that get the password right.
    let (status, _, _) = target
        .send(
            Request::post("/api/register")
                .header("x-requested-with", "tresor")
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(
                    json!({"username": "ana", "password": PASSWORD, "adult": true, "accept_rules": true})
                        .to_string(),
                ))
                .unwrap(),
        )
        .await;
    assert_eq!(status, StatusCode::CREATED);
    attack(&target, false, 200, 7);
    target.log_in_someone().await;
    attack(&target, true, 400, 11);
    let records = target.ledger_and_trail_hold().await;
    let plays = target.plays_are_the_acknowledged_ones().await;
    let kinds = target.kinds.lock().unwrap().clone();
    eprintln!(
        "{:?}: 600 generated requests in {:.1} s, {records} trail records, {plays} plays; \
         kinds: {kinds:?}; answers: {:?}",
        db.backend,
        started.elapsed().as_secs_f64(),
        target.seen.lock().unwrap()
    );
    // The cases reach the business logic, not only the door: each kind of
    // answer at least this often. The seeds are fixed but the answers depend
    // on timing (which purchases land first), so each minimum is at most half
    // the fewest any run has seen (in brackets), and above 0: the kind must
    // be reached.
    for (kind, least) in [
        (Kind::Success, 90),            // [187]
        (Kind::InsufficientFunds, 2),   // [6]
        (Kind::FinishedPlay, 10),       // [45]
        (Kind::Cap, 3),                 // [42]
        (Kind::IdempotencyConflict, 2), // [5]
        (Kind::Door, 50),               // [229]
    ] {
        let seen = kinds.get(&kind).copied().unwrap_or(0);
        assert!(
            seen >= least,
            "{kind:?}: {seen} answers, fewer than {least}: {kinds:?}"
        );
    }
    assert!(plays >= 12, "only {plays} purchases sold"); // [28]
}

on_both!(generated_requests_never_fail_the_server_nor_change_anything_when_refused);
