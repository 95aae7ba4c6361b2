//! The payment sandbox pays and declines only the player's own deposit, ignores a forged host,
//! and refuses another provider's confirmation.

use super::*;

/// A client without cookies or redirects, carrying `cookie` if given.
fn sandbox_client() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The sandbox's page for `deposit` with `cookie`: its status and text.
async fn sandbox_page(app: &TestApp, cookie: Option<&str>, deposit: i64) -> (StatusCode, String) {
    let mut request =
        sandbox_client().get(format!("{}/sandbox/pay?deposit={deposit}", app.address));
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    let response = request.send().await.unwrap();
    (response.status(), response.text().await.unwrap())
}

/// The proof the sandbox's page carries in its form.
fn proof_of(page: &str) -> String {
    let at = page
        .find("name=\"proof\" value=\"")
        .expect("the form's proof")
        + 20;
    page[at..at + 64].to_owned()
}

/// Posts the sandbox's form (`proof` empty: none) with `cookie` and extra headers.
async fn sandbox_post(
    app: &TestApp,
    cookie: Option<&str>,
    deposit: i64,
    outcome: &str,
    proof: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut form = vec![
        ("deposit", deposit.to_string()),
        ("outcome", outcome.to_owned()),
    ];
    if !proof.is_empty() {
        form.push(("proof", proof.to_owned()));
    }
    let mut request = sandbox_client()
        .post(format!("{}/sandbox/pay", app.address))
        .form(&form);
    if let Some(cookie) = cookie {
        request = request.header("cookie", cookie);
    }
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap()
}

async fn deposit_state(app: &TestApp, id: i64) -> String {
    app.service.deposit_of(None, id).await.unwrap().state
}

on_both!(
    the_sandbox_pays_and_declines_only_the_players_own_deposit_with_its_session_and_proof,
    |app| {
        player("ana").real_money().on(&app).await;
        let ana = session_cookie(&app, "ana").await;
        let mine = ask_deposit(&app, 1500).await;
        let declined = ask_deposit(&app, 700).await;
        let bea = app.another_client();
        player("bea").real_money().on(&bea).await;
        let hers = ask_deposit(&bea, 2500).await;
        let before = snapshot(&app).await;
        // No session: neither the page (nor its amount) nor the form.
        let (status, page) = sandbox_page(&app, None, hers).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{page}");
        assert!(!page.contains("25,00") && !page.contains("25.00"), "{page}");
        for outcome in ["succeeded", "failed"] {
            let answer = sandbox_post(&app, None, hers, outcome, "00", &[]).await;
            assert_eq!(answer.status(), StatusCode::UNAUTHORIZED);
        }
        // Another player's deposit: not found, to read, pay or decline.
        let (status, page) = sandbox_page(&app, Some(&ana), hers).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{page}");
        let (_, own_page) = sandbox_page(&app, Some(&ana), mine).await;
        for outcome in ["succeeded", "failed"] {
            let answer =
                sandbox_post(&app, Some(&ana), hers, outcome, &proof_of(&own_page), &[]).await;
            assert_eq!(answer.status(), StatusCode::NOT_FOUND);
        }
        // The player's own, without the form's proof, or from another site.
        let answer = sandbox_post(&app, Some(&ana), mine, "succeeded", "", &[]).await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        let answer = sandbox_post(&app, Some(&ana), mine, "succeeded", &"0".repeat(64), &[]).await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        let answer = sandbox_post(
            &app,
            Some(&ana),
            mine,
            "succeeded",
            &proof_of(&own_page),
            &[("sec-fetch-site", "cross-site")],
        )
        .await;
        assert_eq!(answer.status(), StatusCode::FORBIDDEN);
        assert_eq!(snapshot(&app).await, before, "nothing changed");
        assert_eq!(deposit_state(&app, hers).await, "pending");
        // With all three: paid, and the other declined.
        assert!(own_page.contains("<form method=\"post\" action=\"/sandbox/pay\">"));
        let own = proof_of(&own_page);
        let answer = sandbox_post(&app, Some(&ana), mine, "succeeded", &own, &[]).await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        let (_, decline_page) = sandbox_page(&app, Some(&ana), declined).await;
        let declines = proof_of(&decline_page);
        let answer = sandbox_post(&app, Some(&ana), declined, "failed", &declines, &[]).await;
        assert_eq!(answer.status(), StatusCode::SEE_OTHER);
        assert_eq!(deposit_state(&app, mine).await, "credited");
        assert_eq!(deposit_state(&app, declined).await, "failed");
        assert_eq!(deposit_state(&app, hers).await, "pending");
        assert_eq!(app.balance().await, 1500);
        assert_eq!(bea.balance().await, 0);
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);

on_both!(
    a_forged_host_header_sends_the_sandbox_confirmation_nowhere,
    |app| {
        player("ana").real_money().on(&app).await;
        let ana = session_cookie(&app, "ana").await;
        let id = ask_deposit(&app, 1500).await;
        let (_, page) = sandbox_page(&app, Some(&ana), id).await;
        // A listener of the attacker's choosing, named by the Host header.
        let trap = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let forged = format!("{}/any?", trap.local_addr().unwrap());
        let proof = proof_of(&page);
        let headers = [("host", forged.as_str())];
        let post = sandbox_post(&app, Some(&ana), id, "succeeded", &proof, &headers);
        tokio::select! {
            answer = post => {
                assert_eq!(answer.status(), StatusCode::SEE_OTHER);
            }
            accepted = trap.accept() => {
                panic!("the sandbox sent its signed confirmation to {forged}: {accepted:?}");
            }
        }
        // The answer came after the confirmation: had anything been sent, it
        // would be waiting on the trap.
        let waiting = tokio::time::timeout(std::time::Duration::ZERO, trap.accept()).await;
        assert!(waiting.is_err(), "nothing reached the trap");
        assert_eq!(deposit_state(&app, id).await, "credited");
        assert_eq!(app.balance().await, 1500);
    }
);

on_both!(
    a_confirmation_for_a_deposit_of_another_provider_is_refused_and_credits_nothing,
    |app| {
        player("ana").real_money().on(&app).await;
        let id = ask_deposit(&app, 1500).await;
        // The deposit was asked through another provider (before a change).
        sqlx::query("UPDATE deposits SET provider = 'acme' WHERE id = $1")
            .bind(id)
            .execute(&app.service.db.pool)
            .await
            .unwrap();
        let before = snapshot(&app).await;
        let answer = webhook(&app, &confirmation(id, "tx-acme", 1500), 0, true).await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        assert_eq!(snapshot(&app).await, before, "nothing recorded or credited");
        assert_eq!(deposit_state(&app, id).await, "pending");
        assert_eq!(app.balance().await, 0);
        app.assert_ledger_balances().await;
    }
);
