//! Issue 32, finding 10: every answer about a player's account or from the
//! console's API is `Cache-Control: no-store` (docs/ACCOUNT.md,
//! docs/CONSOLE.md). The reproduction: `GET`/`POST /api/account/documents`
//! carried none. Every route under `/api/account` and `/console/api` (read
//! from the router's source, so that a route added later is held to it too)
//! is called logged in and logged out, with the refusals at the edge (no
//! such endpoint, another method, a body too large): each answer says
//! `no-store`. On both databases.

use crate::common::opening::{PASSWORD, console, open_account};
use reqwest::{Method, StatusCode};

/// `(method, path)` of every route declared under `prefix` in
/// `src/http/*.rs`, `{param}`s replaced by 1; `any` routes as `GET`.
fn declared_routes(prefix: &str) -> Vec<(Method, String)> {
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
            let path: String = path
                .split('/')
                .map(|segment| {
                    if segment.starts_with('{') {
                        "1"
                    } else {
                        segment
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
        let cache = response
            .headers()
            .get("cache-control")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(
            cache.as_deref().is_some_and(|c| c.contains("no-store")),
            "{who}: {method} {path} answered {status} with Cache-Control {cache:?}"
        );
        statuses.push(status.as_u16());
    }
    statuses
}

fn cookie_client() -> reqwest::Client {
    reqwest::Client::builder()
        .cookie_store(true)
        .build()
        .unwrap()
}

/// Another method and no such endpoint: refused at the edge.
fn edge_refusals(prefix: &str, route: &str) -> Vec<(Method, String)> {
    vec![
        (Method::DELETE, format!("{prefix}/{route}")),
        (Method::PATCH, format!("{prefix}/{route}")),
        (Method::GET, format!("{prefix}/no-such-endpoint")),
    ]
}

on_both!(every_account_and_console_answer_is_no_store, |app| {
    open_account(&app, "nora").await;

    // The report's reproduction first: the documents, listed and sent.
    let player = cookie_client();
    let (status, body) = {
        let response = player
            .post(format!("{}/api/login", app.address))
            .header("x-requested-with", "tresor")
            .json(&serde_json::json!({"username": "nora", "password": PASSWORD}))
            .send()
            .await
            .unwrap();
        (response.status(), response.text().await.unwrap())
    };
    assert_eq!(status, StatusCode::OK, "{body}");
    for request in [
        player.get(format!("{}/api/account/documents", app.address)),
        player
            .post(format!(
                "{}/api/account/documents?kind=identity&name=scan.pdf",
                app.address
            ))
            .header("x-requested-with", "tresor")
            .body(crate::common::opening::PDF.to_vec()),
    ] {
        let response = request.send().await.unwrap();
        let status = response.status();
        assert!(status.is_success(), "{status}");
        assert_eq!(
            response
                .headers()
                .get("cache-control")
                .map(|v| v.to_str().unwrap().to_owned())
                .as_deref(),
            Some("no-store"),
            "the documents' answer ({status})"
        );
    }

    // Then every route of the player's account, logged in then out.
    let mut routes = declared_routes("/api/account");
    assert!(
        routes.len() >= 15
            && routes
                .iter()
                .any(|(m, p)| *m == Method::GET && p == "/api/account/documents"),
        "{routes:?}"
    );
    routes.extend(edge_refusals("/api/account", "documents"));
    let statuses =
        every_answer_is_no_store(&player, &app.address, "tresor", &routes, "player").await;
    assert!(statuses.contains(&200), "{statuses:?}");
    every_answer_is_no_store(
        &cookie_client(),
        &app.address,
        "tresor",
        &routes,
        "no session",
    )
    .await;
    // A body over the site's 64 KiB, refused before any handler.
    let response = player
        .put(format!("{}/api/account/marketing", app.address))
        .header("x-requested-with", "tresor")
        .body(vec![b' '; 100 * 1024])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(response.headers()["cache-control"], "no-store");

    // The console's API, as an operator then with no session.
    let mut routes = declared_routes("/console/api");
    assert!(
        routes.len() >= 30
            && routes
                .iter()
                .any(|(m, p)| *m == Method::GET && p == "/console/api/withdrawals"),
        "{routes:?}"
    );
    routes.extend(edge_refusals("/console/api", "withdrawals"));
    let operator = console(&app, "olga").await;
    let statuses = every_answer_is_no_store(
        &operator,
        &app.admin_address,
        "tresor-console",
        &routes,
        "operator",
    )
    .await;
    assert!(statuses.contains(&200), "{statuses:?}");
    every_answer_is_no_store(
        &cookie_client(),
        &app.admin_address,
        "tresor-console",
        &routes,
        "no console session",
    )
    .await;
});
