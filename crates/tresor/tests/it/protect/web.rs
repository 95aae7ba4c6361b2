//! A cross-site POST is refused; the security headers are on the page and on API answers.

use super::*;

// -- The web side -----------------------------------------------------------

on_both!(
    a_cross_site_post_is_refused_with_or_without_the_csrf_proof,
    |app| {
        let body = || {
            Some(
                json!({"username": "ana", "password": "a long password", "adult": true, "accept_rules": true}),
            )
        };
        let post = "POST /api/register";
        let (status, _, error) = raw(&app, post, body(), &[]).await;
        assert_eq!(
            (status, &error["error"]["code"]),
            (StatusCode::FORBIDDEN, &json!("csrf"))
        );
        let host = app.address.trim_start_matches("http://").to_owned();
        for header in [
            ("sec-fetch-site", "cross-site"),
            ("sec-fetch-site", "same-site"),
            ("origin", "https://evil.example"),
            ("origin", "null"),
        ] {
            let proven = [("x-requested-with", "tresor"), header];
            let (status, _, error) = raw(&app, post, body(), &proven).await;
            assert_eq!(status, StatusCode::FORBIDDEN, "{header:?}: {error}");
            assert_eq!(error["error"]["code"], "csrf");
        }
        let players: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM players")
            .fetch_one(&app.service.db.pool)
            .await
            .unwrap();
        assert_eq!(players, 0, "nothing was created");
        let origin = format!("http://{host}");
        let same_origin = [
            ("x-requested-with", "tresor"),
            ("sec-fetch-site", "same-origin"),
            ("origin", origin.as_str()),
        ];
        let (status, _, me) = raw(&app, post, body(), &same_origin).await;
        assert_eq!(status, StatusCode::CREATED, "{me}");
    }
);

on_both!(
    the_security_headers_are_on_the_page_and_on_api_responses,
    |app| {
        for path in ["/", "/api/status", "/api/me"] {
            let (_, headers, _) = raw(&app, &format!("GET {path}"), None, &[]).await;
            let csp = headers["content-security-policy"].to_str().unwrap();
            assert!(
                csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
                "no inline script: {csp}"
            );
            assert!(csp.contains("frame-ancestors 'none'"), "{path}: {csp}");
            assert_eq!(headers["x-content-type-options"], "nosniff", "{path}");
            assert_eq!(headers["x-frame-options"], "DENY", "{path}");
            assert_eq!(headers["referrer-policy"], "same-origin", "{path}");
            assert!(
                headers.get("strict-transport-security").is_none(),
                "no HSTS over plain http"
            );
            if path.starts_with("/api") {
                assert_eq!(headers["cache-control"], "no-store", "{path}");
            }
        }
        // Over https (secure cookies), browsers are told to stay on https.
        let metrics = std::sync::Arc::new(tresor::metrics::Metrics::new(&app.service.writer.stats));
        let state = tresor::http::AppState {
            service: app.service.clone(),
            metrics,
            secure_cookies: true,
        };
        let router = tresor::http::app(state);
        let request = axum::http::Request::get("/api/status")
            .body(axum::body::Body::empty())
            .unwrap();
        let response = tower::ServiceExt::oneshot(router, request).await.unwrap();
        assert_eq!(
            response.headers()["strict-transport-security"],
            "max-age=31536000; includeSubDomains"
        );
        // The body-size limit answers in JSON too.
        let big = "x".repeat(70 * 1024);
        let (status, _, error) = raw(
            &app,
            "POST /api/login",
            Some(json!({"username": big, "password": "p"})),
            &[("x-requested-with", "tresor")],
        )
        .await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(error["error"]["code"], "payload_too_large");
    }
);
