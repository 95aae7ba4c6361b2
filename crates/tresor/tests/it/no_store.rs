//! Issue 32, finding 10: every answer under `/api/` or from the console's
//! API is `Cache-Control: no-store` (docs/ACCOUNT.md, docs/CONSOLE.md). The
//! reproduction: `GET`/`POST /api/account/documents` carried none. Every
//! route under `/api/` and `/console/api` (read from the router's source,
//! so that a route added later is held to it too) is called logged in and
//! logged out, with the refusals at the edge (no such endpoint, another
//! method, a body too large): each answer says `no-store`. Each route that
//! reads is asked with a real id (a play, a deposit, a document…) and must
//! answer: 404s alone would prove little (issue 44). On both databases.

use crate::common::expect;
use crate::common::opening::{PASSWORD, deposit, open_account};
use crate::common::staff::{console, logged_in};
use crate::common::{TestApp, cookie_client, get_json, maybe_header, post, scalar};
use reqwest::{Method, StatusCode};
use tresor::staff::Role;

/// `(method, path)` of every route declared under `prefix` in
/// `src/http/*.rs`, each `{param}` replaced by the real id `ids` gives for
/// the segment before it (`plays` → a play's id), 1 where none is given;
/// `any` routes as `GET`.
fn declared_routes(prefix: &str, ids: &[(&str, String)]) -> Vec<(Method, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/http");
    let mut routes = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find(".route(") {
            rest = &rest[at + ".route(".len()..];
            // The call's text, up to its closing parenthesis.
            let mut depth = 1;
            let end = rest
                .char_indices()
                .find_map(|(i, c)| {
                    match c {
                        '(' => depth += 1,
                        ')' => depth -= 1,
                        _ => {}
                    }
                    (depth == 0).then_some(i)
                })
                .unwrap();
            let call = &rest[..end];
            let Some(path) = call
                .trim_start()
                .strip_prefix('"')
                .and_then(|p| p.split_once('"'))
                .map(|(p, _)| p)
            else {
                continue;
            };
            if !path.starts_with(prefix) || path.contains('*') {
                continue;
            }
            let segments: Vec<&str> = path.split('/').collect();
            let path: String = segments
                .iter()
                .enumerate()
                .map(|(i, segment)| {
                    if segment.starts_with('{') {
                        let before = segments[i - 1];
                        ids.iter()
                            .find(|(s, _)| *s == before)
                            .map_or("1".to_owned(), |(_, id)| id.clone())
                    } else {
                        (*segment).to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            for (word, method) in [
                ("get(", Method::GET),
                ("post(", Method::POST),
                ("put(", Method::PUT),
                ("delete(", Method::DELETE),
                ("any(", Method::GET),
            ] {
                let found = call.match_indices(word).any(|(i, _)| {
                    i == 0
                        || !call.as_bytes()[i - 1].is_ascii_alphanumeric()
                            && call.as_bytes()[i - 1] != b'_'
                });
                if found {
                    routes.push((method, path.clone()));
                }
            }
        }
    }
    routes.sort_by_key(|(method, path)| {
        // What ends the session or the account goes last.
        let ending = ["logout", "end", "close"]
            .iter()
            .any(|word| path.split('/').any(|s| s == *word || s.starts_with("end-")));
        (ending, path.clone(), method.to_string())
    });
    routes.dedup();
    routes
}

/// Every `GET` route of `routes` answers a success to one of `clients`
/// (each role reads its own part), each data route asked with a real id:
/// not a 404 of an id that does not exist.
async fn every_read_answers(clients: &[&reqwest::Client], base: &str, routes: &[(Method, String)]) {
    let reads: Vec<(Method, String)> = routes
        .iter()
        .filter(|(method, _)| *method == Method::GET)
        .cloned()
        .collect();
    let mut answered = vec![Vec::new(); reads.len()];
    for client in clients {
        let statuses = every_answer_is_no_store(client, base, "tresor", &reads, "reads").await;
        for (seen, status) in answered.iter_mut().zip(statuses) {
            seen.push(status);
        }
    }
    let failed: Vec<(&String, &Vec<u16>)> = reads
        .iter()
        .zip(&answered)
        .filter(|(_, seen)| !seen.iter().any(|s| matches!(s, 200 | 204)))
        .map(|((_, path), seen)| (path, seen))
        .collect();
    assert!(
        reads.len() >= 10 && failed.is_empty(),
        "reads not answered: {failed:?} of {reads:?}"
    );
}

/// Calls every route and checks each answer's `Cache-Control`.
async fn every_answer_is_no_store(
    client: &reqwest::Client,
    base: &str,
    csrf: &str,
    routes: &[(Method, String)],
    who: &str,
) -> Vec<u16> {
    let mut statuses = Vec::new();
    for (method, path) in routes {
        let response = client
            .request(method.clone(), format!("{base}{path}"))
            .header("x-requested-with", csrf)
            .json(&serde_json::json!({}))
            .send()
            .await
            .unwrap();
        let status = response.status();
        let cache = maybe_header(&response, "cache-control");
        assert!(
            cache.as_deref().is_some_and(|c| c.contains("no-store")),
            "{who}: {method} {path} answered {status} with Cache-Control {cache:?}"
        );
        statuses.push(status.as_u16());
    }
    statuses
}

/// Another method and no such endpoint: refused at the edge.
fn edge_refusals(prefix: &str, route: &str) -> Vec<(Method, String)> {
    vec![
        (Method::DELETE, format!("{prefix}/{route}")),
        (Method::PATCH, format!("{prefix}/{route}")),
        (Method::GET, format!("{prefix}/no-such-endpoint")),
    ]
}

/// The player `nora`, logged in on a client of its own, with something
/// behind each data route (a deposit, a play, a document, another
/// session); the documents' answers checked on the way (the report's
/// reproduction). Returns the client and the real id of each route's
/// segment (`plays` → the play's id).
async fn player_with_data(app: &TestApp) -> (reqwest::Client, Vec<(&'static str, String)>) {
    let player_id = open_account(app, "nora").await.id;
    let deposit_id = deposit(app, 5000).await;
    let play = expect(StatusCode::CREATED, app.buy(100).await);
    let player = cookie_client();
    let (status, body) = post(
        &player,
        &format!("{}/api/login", app.address),
        &serde_json::json!({"username": "nora", "password": PASSWORD}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let mut document_id = None;
    for request in [
        player
            .post(format!(
                "{}/api/account/documents?kind=identity&name=scan.pdf",
                app.address
            ))
            .header("x-requested-with", "tresor")
            .body(crate::common::opening::PDF.to_vec()),
        player.get(format!("{}/api/account/documents", app.address)),
    ] {
        let response = request.send().await.unwrap();
        let status = response.status();
        assert!(status.is_success(), "{status}");
        let cache = response.headers().get("cache-control").cloned();
        assert_eq!(
            cache.as_ref().map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "the documents' answer ({status})"
        );
        let body: serde_json::Value = response.json().await.unwrap();
        document_id = document_id.or(body["id"].as_i64());
    }
    let sessions = get_json(&player, &format!("{}/api/account/sessions", app.address)).await;
    // The app's own session, not the one asking (ended last).
    let session_id = crate::common::items(&sessions["sessions"], "sessions")
        .iter()
        .find(|s| s["current"] != true)
        .and_then(|s| s["id"].as_str())
        .unwrap_or_else(|| panic!("another session: {sessions}"))
        .to_owned();
    let pool = &app.service.db.pool;
    let ids = vec![
        ("plays", play["id"].as_i64().unwrap().to_string()),
        ("deposits", deposit_id.to_string()),
        ("sessions", session_id),
        ("players", player_id.to_string()),
        (
            "documents",
            document_id.expect("the document's id").to_string(),
        ),
        (
            "blocks",
            scalar(pool, "SELECT MIN(id) FROM blocks").await.to_string(),
        ),
        (
            "emissions",
            scalar(pool, "SELECT MIN(id) FROM emissions")
                .await
                .to_string(),
        ),
    ];
    (player, ids)
}

/// The id `ids` gives for `segment`.
fn id_of<'a>(ids: &'a [(&str, String)], segment: &str) -> &'a str {
    &ids.iter().find(|(s, _)| *s == segment).unwrap().1
}

/// The console's API, as an operator (and an auditor for the trail's
/// reads) then with no session.
async fn the_console_answers_no_store(app: &TestApp, ids: &[(&str, String)]) {
    let mut routes = declared_routes("/console/api", ids);
    let document = format!("/console/api/documents/{}", id_of(ids, "documents"));
    assert!(
        routes.len() >= 30
            && routes
                .iter()
                .any(|(m, p)| *m == Method::GET && *p == document),
        "{routes:?}"
    );
    let operator = console(app, "olga").await;
    let (auditor, _) = logged_in(app, "aude", Role::Auditor).await;
    every_read_answers(
        &[&operator.client, &auditor.client],
        &app.admin_address,
        &routes,
    )
    .await;
    routes.extend(edge_refusals("/console/api", "withdrawals"));
    every_answer_is_no_store(
        &operator.client,
        &app.admin_address,
        "tresor-console",
        &routes,
        "operator",
    )
    .await;
    every_answer_is_no_store(
        &cookie_client(),
        &app.admin_address,
        "tresor-console",
        &routes,
        "no console session",
    )
    .await;
}

on_both!(every_account_and_console_answer_is_no_store, |app| {
    let (player, ids) = player_with_data(&app).await;

    // Every route under /api/, logged in then out: each read answers (its
    // data asked by a real id), and every answer is no-store.
    let mut routes = declared_routes("/api/", &ids);
    for read in [
        "/api/account/documents".to_owned(),
        format!("/api/plays/{}/receipt", id_of(&ids, "plays")),
        format!("/api/account/deposits/{}", id_of(&ids, "deposits")),
        "/api/games".to_owned(),
    ] {
        assert!(
            routes.iter().any(|(m, p)| *m == Method::GET && *p == read),
            "{read}: {routes:?}"
        );
    }
    assert!(routes.len() >= 35, "{routes:?}");
    every_read_answers(&[&player], &app.address, &routes).await;
    routes.extend(edge_refusals("/api/account", "documents"));
    routes.extend(edge_refusals("/api", "plays"));
    every_answer_is_no_store(&player, &app.address, "tresor", &routes, "player").await;
    every_answer_is_no_store(
        &cookie_client(),
        &app.address,
        "tresor",
        &routes,
        "no session",
    )
    .await;
    // A body over the site's 64 KiB, refused before any handler.
    let response = cookie_client()
        .put(format!("{}/api/account/marketing", app.address))
        .header("x-requested-with", "tresor")
        .body(vec![b' '; 100 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(response.headers()["cache-control"], "no-store");

    the_console_answers_no_store(&app, &ids).await;
});
