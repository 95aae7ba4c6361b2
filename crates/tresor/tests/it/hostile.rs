//! Hostile input (issue 12), on SQLite and PostgreSQL: usernames that look
//! alike, unknown JSON fields, and a proptest suite that throws generated and
//! mutated requests at every endpoint of the router, in-process. Whatever
//! comes in: no 5xx, every API error in the JSON shape, and a refused request
//! leaves the trail as it was (a failed login adds its one record); at the
//! end the ledger still balances and the trail still verifies.

use crate::common::TestDb;
use axum::body::Body;
use axum::http::{Request, StatusCode, header};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tower::ServiceExt;
use tresor::service::{ManualClock, Service, Settings};
use tresor::trail::Verdict;
use tresor_game::Stake;

// -- Usernames --------------------------------------------------------------

on_both!(
    names_that_look_alike_cannot_coexist_and_log_in_as_one,
    |app| {
        let (status, me) = app.register("ana").await;
        assert_eq!(status, StatusCode::CREATED, "{me}");
        // Cyrillic а (U+0430), full-width ａｎａ, capitals, and a ligature-free
        // mix: each one looks like "ana".
        for name in ["\u{430}na", "ａｎａ", "ANA", "Ana", "\u{430}\u{43d}a"] {
            let (status, error) = app.another_client().register(name).await;
            if name == "\u{430}\u{43d}a" {
                // Cyrillic "н" is not a Latin "n": another name.
                assert_eq!(status, StatusCode::CREATED, "{name}: {error}");
                continue;
            }
            assert_eq!(status, StatusCode::CONFLICT, "{name}: {error}");
            assert_eq!(error["error"]["code"], "username_taken", "{name}");
        }
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 2);
        let other = app.another_client();
        let (status, me) = other.login("ＡＮＡ", "a long password").await;
        assert_eq!(status, StatusCode::OK, "{me}");
        assert_eq!(me["username"], "ana", "the name as registered");
    }
);

on_both!(a_username_is_stored_in_its_normal_form, |app| {
    let (status, me) = app.register("ｂｏｂ_ＢＯＢ").await;
    assert_eq!(status, StatusCode::CREATED, "{me}");
    assert_eq!(me["username"], "bob_BOB");
    let (status, error) = app.another_client().register("a\u{200b}na").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
    assert_eq!(error["error"]["code"], "validation");
});

on_both!(
    skeletons_left_empty_are_filled_at_start_and_a_clash_keeps_none,
    |db: &TestDb| {
        let (service, _) = db.service().await;
        crate::common::player(&service, "ana").await;
        crate::common::player(&service, "bob").await;
        // As before the skeleton column: none, and a name that an older
        // server let in beside "ana".
        sqlx::query("UPDATE players SET username_skeleton = NULL")
            .execute(&service.db.pool)
            .await
            .unwrap();
        let account: i64 = sqlx::query_scalar(
            "INSERT INTO accounts (kind, balance_cents) VALUES ('player', 0) RETURNING id",
        )
        .fetch_one(&service.db.pool)
        .await
        .unwrap();
        sqlx::query(
            "INSERT INTO players (username, username_key, password_hash, account_id, \
             adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
             SELECT 'ＡＮＡ', 'ａｎａ', password_hash, $1, 0, 0, 0 FROM players WHERE username = 'ana'",
        )
        .bind(account)
        .execute(&service.db.pool)
        .await
        .unwrap();
        assert_eq!(service.backfill_username_skeletons().await.unwrap(), 2);
        assert_eq!(service.backfill_username_skeletons().await.unwrap(), 0);
        let skeletons: Vec<(String, Option<String>)> =
            sqlx::query_as("SELECT username, username_skeleton FROM players ORDER BY id")
                .fetch_all(&service.db.pool)
                .await
                .unwrap();
        assert_eq!(skeletons[0].1.as_deref(), Some("ana"));
        assert!(skeletons[1].1.is_some());
        assert_eq!(skeletons[2].1, None, "a clash keeps none");
        assert_eq!(
            service.player_by_username("ANA").await.unwrap().username,
            "ana"
        );
    }
);

// -- Unknown fields -----------------------------------------------------------

on_both!(
    an_unknown_field_is_refused_with_its_name_and_creates_nothing,
    |app| {
        let (status, error) = app
            .post(
                "/api/register",
                json!({"username": "ana", "password": "a long password", "adult": true,
                       "accept_rules": true, "deposit_limit": 1000}),
            )
            .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        assert_eq!(error["error"]["code"], "validation");
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("unknown field `deposit_limit`"),
            "{message}"
        );
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 0, "no account exists");
        app.player("ana", 1_000).await;
        for (path, body, field) in [
            (
                "/api/login",
                json!({"username": "ana", "password": "x", "remember": true}),
                "remember",
            ),
            (
                "/api/demo/deposit",
                json!({"amount_cents": 100, "currency": "EUR"}),
                "currency",
            ),
            (
                "/api/limits",
                json!({"deposit_limit_cents": 100, "stake_limit": 5}),
                "stake_limit",
            ),
            ("/api/exclusion", json!({"period": "7d", "days": 1}), "days"),
        ] {
            let (status, error) = app.post(path, body).await;
            assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{path}: {error}");
            let message = error["error"]["message"].as_str().unwrap();
            assert!(message.contains(&format!("`{field}`")), "{path}: {message}");
        }
        let (status, error) = app.history("?limit=5&offset=10").await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{error}");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .contains("offset")
        );
        assert_eq!(app.balance().await, 1_000, "nothing moved");
    }
);

// -- Generated requests -------------------------------------------------------

const PASSWORD: &str = "correct horse battery";

/// Which session cookie a generated request carries.
#[derive(Debug, Clone)]
enum Cookie {
    None,
    /// The suite's logged-in player's (in the logged-in part; none before).
    Live,
    Garbage(String),
}

/// One generated request.
#[derive(Debug, Clone)]
struct Case {
    method: &'static str,
    path: String,
    csrf: bool,
    cookie: Cookie,
    content_type: Option<&'static str>,
    headers: Vec<(&'static str, String)>,
    body: Option<Vec<u8>>,
    /// Which real play `{play}` in the path names: the player's latest
    /// (`true`) or any of its plays, by index.
    play: Option<(bool, prop::sample::Index)>,
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn arb_id() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        (0i64..20).prop_map(|n| n.to_string()),
        Just("99999999999999999999999999".to_owned()),
        Just("-0".to_owned()),
        Just("1e3".to_owned()),
        Just("%FF%FE".to_owned()),
        Just("%2e%2e".to_owned()),
        Just(String::new()),
        ".{0,12}".prop_map(|s| percent_encode(&s)),
    ]
}

fn arb_path() -> impl Strategy<Value = String> {
    let fixed = prop::sample::select(vec![
        "/api/status",
        "/api/island",
        "/api/register",
        "/api/login",
        "/api/logout",
        "/api/me",
        "/api/demo/deposit",
        "/api/plays",
        "/api/blocks",
        "/api/limits",
        "/api/exclusion",
        "/api/nothing",
        "/healthz",
        "/metrics",
        "/",
        "/app.js",
    ])
    .prop_map(str::to_owned);
    let with_id = (
        arb_id(),
        prop::sample::select(vec!["", "/throws", "/throws/1", "/x"]),
    )
        .prop_map(|(id, tail)| format!("/api/plays/{id}{tail}"));
    let query = prop_oneof![
        3 => Just(String::new()),
        1 => (".{0,10}", ".{0,10}").prop_map(|(limit, cursor)| format!(
            "?limit={}&cursor={}",
            percent_encode(&limit),
            percent_encode(&cursor)
        )),
        1 => (any::<i64>(), any::<i64>()).prop_map(|(l, c)| format!("?limit={l}&cursor={c}")),
        1 => "[a-z]{1,8}".prop_map(|k| format!("?{k}=1&limit=2")),
        1 => Just("?limit=%FF".to_owned()),
    ];
    (prop_oneof![2 => fixed, 3 => with_id], query).prop_map(|(p, q)| format!("{p}{q}"))
}

fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("a finite number", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        ".{0,24}".prop_map(Value::from),
        Just(Value::from("7d")),
        Just(Value::from(100)),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            prop::collection::btree_map("[a-z_]{0,14}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A valid body of each endpoint that takes one, to be mutated.
fn templates() -> Vec<Map<String, Value>> {
    [
        json!({"username": "eve", "password": PASSWORD, "adult": true, "accept_rules": true,
               "deposit_limit_cents": 1000, "stake_limit_cents": 1000}),
        json!({"username": "ana", "password": PASSWORD}),
        json!({"amount_cents": 500}),
        json!({"stake_cents": 100}),
        json!({"deposit_limit_cents": 1000, "stake_limit_cents": 1000}),
        json!({"period": "7d"}),
        json!({"username": "zoe", "password": PASSWORD, "accept_rules": true,
               "identity": {"birth_name": "Martin", "first_names": "Zoé", "birth_date": "1990-02-03",
                            "birth_place": "Lyon", "address": "2 rue du Port, Lyon"},
               "iban": "FR7630006000011234567890189"}),
        json!({"version": 1}),
        json!({"every_minutes": 30}),
        json!({"iban": "FR7630006000011234567890189", "current_password": PASSWORD}),
        json!({"confirm": true}),
        json!({"deposit_id": 1, "transaction_id": "tx-1", "amount_cents": 500, "status": "succeeded"}),
    ]
    .into_iter()
    .map(|v| v.as_object().unwrap().clone())
    .collect()
}

fn huge() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        json!(i64::MAX),
        json!(i64::MIN),
        json!(u64::MAX),
        json!(1e308),
        json!(-1),
        json!(0),
        json!("100"),
        json!("\u{202e}\u{0}💥"),
        json!([100]),
        json!({"cents": 100}),
    ])
}

fn arb_body() -> impl Strategy<Value = Option<Vec<u8>>> {
    let mutated = (
        prop::sample::select(templates()),
        any::<prop::sample::Index>(),
        prop_oneof![arb_json(), huge()],
        "[a-z_]{1,16}",
        0u8..5,
    )
        .prop_map(|(body, index, value, unknown, op)| mutate(body, index, value, unknown, op));
    let raw = prop_oneof![
        Just(br#"{"stake_cents": 1e400}"#.to_vec()),
        Just(br#"{"amount_cents": 99999999999999999999999}"#.to_vec()),
        Just(br#"{"username": "a", "username": "b"}"#.to_vec()),
        Just(b"\xff\xfe{}".to_vec()),
        Just(b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[".to_vec()),
        Just(format!("{}1{}", "[".repeat(200), "]".repeat(200)).into_bytes()),
        "[ -~]{0,40}".prop_map(String::into_bytes),
        prop::collection::vec(any::<u8>(), 0..40),
    ];
    prop_oneof![
        1 => Just(None),
        2 => arb_json().prop_map(|v| Some(v.to_string().into_bytes())),
        4 => mutated.prop_map(Some),
        1 => raw.prop_map(Some),
    ]
}

/// The endpoints of the router: method, path (`{id}` for a play id) and
/// the index of its body template, if it takes one.
const ENDPOINTS: &[(&str, &str, Option<usize>)] = &[
    ("POST", "/api/register", Some(0)),
    ("POST", "/api/login", Some(1)),
    ("POST", "/api/logout", None),
    ("GET", "/api/me", None),
    ("POST", "/api/demo/deposit", Some(2)),
    ("POST", "/api/plays", Some(3)),
    ("GET", "/api/plays", None),
    ("GET", "/api/plays/{id}", None),
    ("POST", "/api/plays/{id}/throws", None),
    ("GET", "/api/limits", None),
    ("PUT", "/api/limits", Some(4)),
    ("POST", "/api/limits", Some(4)),
    ("POST", "/api/exclusion", Some(5)),
    ("GET", "/api/status", None),
    ("GET", "/api/island", None),
    ("GET", "/api/blocks", None),
    ("POST", "/api/account/open", Some(6)),
    ("GET", "/api/account", None),
    ("POST", "/api/account/rules", Some(7)),
    ("PUT", "/api/account/reminder", Some(8)),
    ("PUT", "/api/account/iban", Some(9)),
    ("POST", "/api/account/close", Some(10)),
    ("POST", "/api/account/deposits", Some(2)),
    ("GET", "/api/account/deposits/{id}", None),
    ("POST", "/api/account/withdrawals", Some(2)),
    ("GET", "/api/account/withdrawals", None),
    ("POST", "/api/account/withdrawals/{id}/cancel", None),
    ("GET", "/api/account/statement", None),
    ("GET", "/api/account/statement.csv", None),
    ("POST", "/api/payments/webhook", Some(11)),
    ("GET", "/readyz", None),
    ("GET", "/healthz", None),
    ("GET", "/metrics", None),
    ("GET", "/", None),
];

fn mutate(
    mut body: Map<String, Value>,
    index: prop::sample::Index,
    value: Value,
    unknown: String,
    op: u8,
) -> Vec<u8> {
    let keys: Vec<String> = body.keys().cloned().collect();
    let key = index.get(&keys).clone();
    match op {
        0 | 1 => {
            body.insert(key, value);
        }
        2 => {
            body.remove(&key);
        }
        3 => {
            body.insert(unknown, value);
        }
        _ => {}
    }
    Value::Object(body).to_string().into_bytes()
}

fn arb_hostile_case(logged_in: bool) -> impl Strategy<Value = Case> {
    let any_method = prop::sample::select(vec![
        "GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS",
    ]);
    let cookie = prop_oneof![
        1 => Just(Cookie::None),
        4 => Just(if logged_in { Cookie::Live } else { Cookie::None }),
        1 => "[ -~]{0,70}".prop_map(Cookie::Garbage),
        1 => "[0-9a-f]{64}".prop_map(|t| Cookie::Garbage(format!("tresor_session={t}"))),
    ];
    let content_type = prop_oneof![
        8 => Just(Some("application/json")),
        1 => Just(Some("application/json; charset=utf-8")),
        1 => prop::sample::select(vec![
            Some("text/plain"),
            Some("application/x-www-form-urlencoded"),
            None,
        ]),
    ];
    let header = (
        prop::sample::select(vec![
            "idempotency-key",
            "origin",
            "sec-fetch-site",
            "x-forwarded-for",
            "content-length",
            "x-requested-with",
            "host",
        ]),
        prop_oneof![
            "[ -~]{0,70}",
            "[a-z0-9]{1,20}",
            Just("999999999".to_owned())
        ],
    );
    let key = prop_oneof![
        3 => "[A-Za-z0-9_:-]{1,64}".prop_map(Some),
        1 => "[ -~]{0,80}".prop_map(Some),
        1 => Just(None),
    ];
    let id = prop_oneof![3 => (1i64..12).prop_map(|n| n.to_string()), 2 => arb_id()];
    let endpoint = (
        prop::sample::select(ENDPOINTS.to_vec()),
        prop::bool::weighted(0.8),
        any_method,
        id,
        prop_oneof![4 => Just(String::new()), 1 => arb_path()],
    )
        .prop_map(|((method, path, template), right, other, id, random)| {
            let path = if random.is_empty() {
                path.replace("{id}", &id)
            } else {
                random
            };
            (if right { method } else { other }, path, template)
        });
    let body = (
        prop::bool::weighted(0.8),
        any::<prop::sample::Index>(),
        prop_oneof![arb_json(), huge()],
        "[a-z_]{1,16}",
        0u8..8,
        arb_body(),
    );
    (
        endpoint,
        prop::bool::weighted(0.9),
        cookie,
        content_type,
        prop::collection::vec(header, 0..2),
        key,
        body,
    )
        .prop_map(
            |((method, path, template), csrf, cookie, content_type, mut headers, key, body)| {
                let (templated, index, value, unknown, op, other) = body;
                let body = match template {
                    Some(t) if templated => {
                        Some(mutate(templates()[t].clone(), index, value, unknown, op))
                    }
                    _ => other,
                };
                if let Some(key) = key {
                    headers.push(("idempotency-key", key));
                }
                Case {
                    method,
                    path,
                    csrf,
                    cookie,
                    content_type,
                    headers,
                    body,
                    play: None,
                }
            },
        )
}

/// A well-formed request of the logged-in player (its cookie, the CSRF
/// header, JSON, a real play id): what reaches the business logic, to be
/// sold, refused for want of money, for a finished play, for a cap or for an
/// idempotency key used with another stake.
fn arb_business_case() -> impl Strategy<Value = Case> {
    // Mostly 2 €: 3 € buy one, and the next is refused unless it won.
    let stake =
        prop_oneof![6 => prop::sample::select(vec![50i64, 100, 200, 200, 200]), 1 => Just(300i64)];
    // Mostly fresh keys; a few reused, with the same stake (a replay) or
    // another (a conflict).
    let key = prop_oneof![3 => "[a-z0-9]{16}", 1 => prop::sample::select(vec!["k0", "k1", "k2"]).prop_map(str::to_owned)];
    let buy = (stake, key).prop_map(|(stake, key)| {
        (
            "POST",
            "/api/plays".to_owned(),
            Some(json!({"stake_cents": stake})),
            Some(key),
        )
    });
    let throw = Just((
        "POST",
        "/api/plays/{play}/throws".to_owned(),
        Some(json!({})),
        None,
    ));
    let look = prop::sample::select(vec![
        "/api/plays/{play}",
        "/api/plays?limit=5",
        "/api/me",
        "/api/limits",
        "/api/account",
    ])
    .prop_map(|path| ("GET", path.to_owned(), None, None));
    let deposit = prop::sample::select(vec![100i64, 300]).prop_map(|cents| {
        (
            "POST",
            "/api/demo/deposit".to_owned(),
            Some(json!({"amount_cents": cents})),
            None,
        )
    });
    let limits = (
        // Mostly caps above the 3 € each player has, so that money runs
        // out too; now and then one low enough to be reached.
        prop::sample::select(vec![300i64, 100_000, 100_000]),
        prop::sample::select(vec![800i64, 100_000, 100_000]),
    )
        .prop_map(|(deposit, stake)| {
            (
                "PUT",
                "/api/limits".to_owned(),
                Some(json!({"deposit_limit_cents": deposit, "stake_limit_cents": stake})),
                None,
            )
        });
    (
        prop_oneof![7 => buy, 5 => throw, 2 => look, 1 => deposit, 1 => limits],
        prop::bool::weighted(0.6),
        any::<prop::sample::Index>(),
    )
        .prop_map(|((method, path, body, key), latest, index)| Case {
            method,
            path,
            csrf: true,
            cookie: Cookie::Live,
            content_type: Some("application/json"),
            headers: key
                .map(|k| vec![("idempotency-key", k)])
                .unwrap_or_default(),
            body: body.map(|b: Value| b.to_string().into_bytes()),
            play: Some((latest, index)),
        })
}

/// Logged in, mostly well-formed requests (three in four) among the
/// hostile ones; logged out, only hostile ones.
fn arb_case(logged_in: bool) -> BoxedStrategy<Case> {
    if logged_in {
        prop_oneof![1 => arb_hostile_case(true), 3 => arb_business_case()].boxed()
    } else {
        arb_hostile_case(false).boxed()
    }
}

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
        service.set_demo().await.unwrap();
        service
            .create_emission("Hostile", &Stake::ALL, 1)
            .await
            .unwrap();
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
        let cookie = headers[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_owned();
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

#[test]
fn the_generated_cases_reach_every_endpoint() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = arb_case(true);
    let mut paths = BTreeSet::new();
    for _ in 0..5000 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let path = case.path.split('?').next().unwrap().to_owned();
        let shape = if let Some(rest) = path.strip_prefix("/api/plays/") {
            match rest.split_once('/') {
                Some((_, "throws")) => "/api/plays/{id}/throws".to_owned(),
                Some(_) => "/api/plays/{id}/…".to_owned(),
                None => "/api/plays/{id}".to_owned(),
            }
        } else {
            path
        };
        paths.insert((case.method, shape));
    }
    for needed in [
        ("POST", "/api/register"),
        ("POST", "/api/login"),
        ("POST", "/api/logout"),
        ("POST", "/api/demo/deposit"),
        ("POST", "/api/plays"),
        ("GET", "/api/plays"),
        ("GET", "/api/plays/{id}"),
        ("POST", "/api/plays/{id}/throws"),
        ("PUT", "/api/limits"),
        ("POST", "/api/limits"),
        ("GET", "/api/limits"),
        ("POST", "/api/exclusion"),
        ("GET", "/api/me"),
        ("GET", "/api/status"),
        ("GET", "/api/blocks"),
        ("GET", "/api/island"),
        ("POST", "/api/account/open"),
        ("PUT", "/api/account/reminder"),
        ("POST", "/api/account/withdrawals"),
        ("POST", "/api/payments/webhook"),
        ("GET", "/api/account/statement"),
    ] {
        assert!(
            paths.contains(&(needed.0, needed.1.to_owned())),
            "{needed:?} never generated"
        );
    }
}
