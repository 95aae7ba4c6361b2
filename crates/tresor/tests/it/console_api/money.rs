//! Money at the console: the IBAN reviewed, four eyes on withdrawals, credit limits, the queue.

use super::*;

// ---- Findings of issue 19: the IBAN reviewed, four eyes, TOTP, the queue ----

const OTHER_IBAN: &str = "DE89 3704 0044 0532 0130 00";

on_both!(the_iban_verified_is_the_iban_reviewed, |app| {
    let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
    let dora = real_money_player(&app, &alice, "dora", 1_000).await;
    // The operator reads the queue: Dora's IBAN, given at opening.
    let (_, queue) = alice.get("/console/api/accounts?status=provisional").await;
    let row = queue["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["player_id"] == dora)
        .unwrap()
        .clone();
    assert_eq!(row["iban"], IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 0);
    // Then the player changes it.
    app.clock.advance_ms(60_000);
    let (status, body) = app
        .put_json(
            "/api/account/iban",
            json!({"iban": OTHER_IBAN, "current_password": "a long password"}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    // The change shows in the queue and on the player's page.
    let (_, queue) = alice.get("/console/api/accounts?status=provisional").await;
    let row = queue["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["player_id"] == dora)
        .unwrap()
        .clone();
    assert_eq!(row["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 1);
    assert!(row["iban_set_at"].is_string());
    let (_, detail) = alice.get(&format!("/console/api/players/{dora}")).await;
    assert_eq!(detail["review"]["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(detail["review"]["iban_changes"], 1);
    // Verifying what was reviewed before the change is refused, and changes nothing.
    let before = state_of(&app).await;
    let trail_before = trail(&app).await.len();
    let answer = alice
        .post(
            &format!("/console/api/players/{dora}/verify"),
            json!({"iban": IBAN}),
        )
        .await;
    assert_error(&answer, StatusCode::CONFLICT, "iban_changed");
    assert_eq!(answer.1["error"]["iban"], "DE89 •••• 3000");
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await.len(), trail_before);
    // No IBAN named: refused too.
    assert_error(
        &alice
            .post(&format!("/console/api/players/{dora}/verify"), json!({}))
            .await,
        StatusCode::UNPROCESSABLE_ENTITY,
        "validation",
    );
    // The command line names it as well.
    let output = app
        .db
        .tresor(&["account", "verify", "--username", "dora", "--iban", IBAN]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(String::from_utf8_lossy(&output.stderr).contains("IBAN changed"));
    assert_eq!(state_of(&app).await, before);
    // The IBAN now on file, reviewed, is verified once its proof, back to
    // review since the change, is checked again.
    let (_, documents) = alice
        .get(&format!("/console/api/players/{dora}/documents"))
        .await;
    let proof = documents["documents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["kind"] == "iban_proof")
        .unwrap()
        .clone();
    assert_eq!(proof["status"], "pending", "{documents}");
    let (status, body) = alice
        .post(
            &format!("/console/api/documents/{}/verify", proof["id"]),
            json!({}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, account) = alice
        .post(
            &format!("/console/api/players/{dora}/verify"),
            json!({"iban": OTHER_IBAN}),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{account}");
    assert_eq!(account["status"], "verified");
    assert_eq!(account["iban"], "DE89 •••• 3000");
});

on_both!(
    the_approver_of_a_withdrawal_neither_credited_nor_verified_the_account,
    four_eyes(false, 1_000_000, 5_000_000),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let (carol, _) = logged_in(&app, "carol", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        let (status, _) = bob
            .post(
                &format!("/console/api/players/{dora}/verify"),
                json!({"iban": IBAN}),
            )
            .await;
        assert_eq!(status, StatusCode::OK);
        let id = withdraw(&app, 4_000).await;
        let approve = format!("/console/api/withdrawals/{id}/approve");
        let before = state_of(&app).await;
        for (who, what) in [(&alice, "credited"), (&bob, "verified")] {
            let answer = who.post(&approve, json!({})).await;
            assert_error(&answer, StatusCode::FORBIDDEN, "four_eyes");
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(what) && message.contains("--single-operator"),
                "{message}"
            );
        }
        assert_eq!(state_of(&app).await, before, "a refusal changes nothing");
        // The command line is one more operator, who had no hand in it.
        let (status, paid) = carol.post(&approve, json!({})).await;
        assert_eq!(status, StatusCode::OK, "{paid}");
        assert_eq!(paid["state"], "paid");
        // The approval's record names all of them.
        let (request, result): (String, String) =
            sqlx::query_as("SELECT request, result FROM trail WHERE action = 'withdrawal_paid'")
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        let (request, result): (Value, Value) = (
            serde_json::from_str(&request).unwrap(),
            serde_json::from_str(&result).unwrap(),
        );
        assert_eq!(request["username"], "dora");
        assert_eq!(result["approved_by"], "staff:carol");
        assert_eq!(result["verified_by"], "staff:bob");
        assert_eq!(result["credited_by"], json!(["staff:alice"]));
        let credit: String =
            sqlx::query_scalar("SELECT request FROM trail WHERE action = 'credit'")
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        let credit: Value = serde_json::from_str(&credit).unwrap();
        assert_eq!(credit["by"], "staff:alice");
        assert_eq!(credit["username"], "dora");
        // The command line credits, then cannot approve what it credited.
        app.db
            .tresor_ok(&["player", "credit", "--username", "dora", "--cents", "500"]);
        let id = withdraw(&app, 500).await;
        let id = id.to_string();
        let refused = app.db.tresor(&["withdrawal", "approve", "--id", &id]);
        assert_eq!(refused.status.code(), Some(1), "{}", describe(&refused));
        assert!(String::from_utf8_lossy(&refused.stderr).contains("operator credited"));
        let (status, _) = carol
            .post(&format!("/console/api/withdrawals/{id}/approve"), json!({}))
            .await;
        assert_eq!(status, StatusCode::OK);
        app.assert_ledger_balances().await;
    }
);

on_both!(
    each_operator_credits_within_limits_per_credit_and_per_day,
    four_eyes(false, 1_000, 1_500),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 1_000).await;
        let credit = format!("/console/api/players/{dora}/credit");
        let before = state_of(&app).await;
        let answer = alice.post(&credit, json!({"amount_cents": 1_001})).await;
        assert_error(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_cents");
        assert!(
            answer.1["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--credit-max-cents")
        );
        // 1,000 credited already today: 600 more would pass 1,500.
        let answer = alice.post(&credit, json!({"amount_cents": 600})).await;
        assert_error(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_per_day_cents");
        assert_eq!(state_of(&app).await, before, "refusals change nothing");
        // Another operator has limits of their own; a day later, so has Alice.
        let (status, _) = bob.post(&credit, json!({"amount_cents": 600})).await;
        assert_eq!(status, StatusCode::OK);
        let (status, _) = alice.post(&credit, json!({"amount_cents": 500})).await;
        assert_eq!(status, StatusCode::OK);
        app.clock.advance_ms(24 * 3600 * 1000);
        let player = app.service.player_by_id(dora).await.unwrap();
        app.service
            .credit_as(tresor::trail::Actor::staff("alice"), &player, 1_000)
            .await
            .expect("a day later, Alice's credits start afresh");
        // The command line's limits are its flags (or their variables).
        let output = app.db.tresor(&[
            "player",
            "credit",
            "--username",
            "dora",
            "--cents",
            "700",
            "--credit-max-cents",
            "500",
        ]);
        assert_eq!(output.status.code(), Some(1), "{}", describe(&output));
        assert!(String::from_utf8_lossy(&output.stderr).contains("--credit-max-cents"));
    }
);

on_both!(
    the_withdrawal_queue_reaches_every_pending_one_oldest_first,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 1_000).await;
        // 1,005 pending withdrawals (as rows: the queue reads only them).
        sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1005)          INSERT INTO withdrawals (player_id, amount_cents, iban, state, closing, requested_at_ms)          SELECT $1, 100, 'FR7630006000011234567890189', 'pending', 0, i FROM n",
    )
    .bind(dora)
    .execute(&app.service.db.pool)
    .await
    .unwrap();
        let all: Vec<i64> = sqlx::query_scalar("SELECT id FROM withdrawals ORDER BY id")
            .fetch_all(&app.service.db.pool)
            .await
            .unwrap();
        let (status, first) = alice.get("/console/api/withdrawals?state=pending").await;
        assert_eq!(status, StatusCode::OK, "{first}");
        assert_eq!(first["withdrawals"].as_array().unwrap().len(), 100);
        assert_eq!(
            first["withdrawals"][0]["id"], all[0],
            "the oldest comes first"
        );
        let mut seen = Vec::new();
        let mut cursor: Option<i64> = None;
        loop {
            let path = match cursor {
                None => "/console/api/withdrawals?state=pending&limit=500".to_owned(),
                Some(c) => format!("/console/api/withdrawals?state=pending&limit=500&cursor={c}"),
            };
            let (status, page) = alice.get(&path).await;
            assert_eq!(status, StatusCode::OK, "{page}");
            seen.extend(
                page["withdrawals"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|w| w["id"].as_i64().unwrap()),
            );
            match page["next_cursor"].as_i64() {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
        assert_eq!(seen, all, "every pending withdrawal, once, oldest first");
        assert_error(
            &alice
                .get("/console/api/withdrawals?state=pending&limit=501")
                .await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        // The command line lists them all.
        let output = app.db.tresor_ok(&["withdrawal", "list", "--json"]);
        let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(listed.as_array().unwrap().len(), 1005);
        assert_eq!(listed[0]["id"], all[0]);
    }
);
