//! Hostile input (issue 12), on SQLite and PostgreSQL: usernames that look
//! alike, unknown JSON fields, and a proptest suite that throws generated and
//! mutated requests at every endpoint of the router, in-process. Whatever
//! comes in: no 5xx, every API error in the JSON shape, and a refused request
//! leaves the trail as it was (a failed login adds its one record); at the
//! end the ledger still balances and the trail still verifies.

use crate::common::TestDb;
use crate::common::demo_on_sale;
use crate::common::expect;

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

mod attack;
mod coverage;
mod names;

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
