//! Money at the console: the IBAN reviewed, four eyes on withdrawals, credit limits, the queue.

use super::*;

// ---- Findings of issue 19: the IBAN reviewed, four eyes, TOTP, the queue ----

use crate::common::items;
use crate::common::opening::{OTHER_IBAN, document_of, set_iban};

/// The player's row in the console's queue of provisional accounts.
async fn provisional_row(console: &Console, player: i64) -> Value {
    let (_, queue) = console
        .get("/console/api/accounts?status=provisional")
        .await;
    items(&queue["accounts"], "provisional accounts")
        .iter()
        .find(|a| a["player_id"] == player)
        .unwrap_or_else(|| panic!("player {player} in {queue}"))
        .clone()
}

on_both!(the_iban_verified_is_the_iban_reviewed, |app| {
    let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
    let dora = real_money_player(&app, &alice, "dora", 1_000).await;
    // The operator reads the queue: Dora's IBAN, given at opening.
    let row = provisional_row(&alice, dora).await;
    assert_eq!(row["iban"], IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 0);
    // Then the player changes it.
    app.clock.advance_ms(60_000);
    set_iban(&app, OTHER_IBAN).await;
    // The change shows in the queue and on the player's page.
    let row = provisional_row(&alice, dora).await;
    assert_eq!(row["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(row["iban_changes"], 1);
    assert!(row["iban_set_at"].is_string());
    let (_, detail) = alice.get(&format!("/console/api/players/{dora}")).await;
    assert_eq!(detail["review"]["iban"], OTHER_IBAN.replace(' ', ""));
    assert_eq!(detail["review"]["iban_changes"], 1);
    // Verifying what was reviewed before the change is refused, and changes nothing.
    let before = state_of(&app).await;
    let trail_before = trail(&app).await.len();
    let answer = alice.verify_account(dora, IBAN).await;
    assert_refused(&answer, StatusCode::CONFLICT, "iban_changed");
    assert_eq!(answer.1["error"]["iban"], "DE89 •••• 3000");
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await.len(), trail_before);
    // No IBAN named: refused too.
    let answer = alice.act("players", dora, "verify", json!({})).await;
    assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    // The command line names it as well.
    let output = app
        .db
        .tresor(&["account", "verify", "--username", "dora", "--iban", IBAN]);
    assert_exit(&output, 2);
    assert!(String::from_utf8_lossy(&output.stderr).contains("IBAN changed"));
    assert_eq!(state_of(&app).await, before);
    // The IBAN now on file, reviewed, is verified once its proof, back to
    // review since the change, is checked again.
    let documents = format!("/console/api/players/{dora}/documents");
    let (_, documents) = alice.get(&documents).await;
    let proof = document_of(&documents, "iban_proof");
    assert_eq!(proof["status"], "pending", "{documents}");
    expect(StatusCode::OK, alice.verify_document(&proof["id"]).await);
    let account = expect(StatusCode::OK, alice.verify_account(dora, OTHER_IBAN).await);
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
        expect(StatusCode::OK, bob.verify_account(dora, IBAN).await);
        let id = withdraw(&app, 4_000).await;
        let approve = format!("/console/api/withdrawals/{id}/approve");
        let before = state_of(&app).await;
        for (who, what) in [(&alice, "credited"), (&bob, "verified")] {
            let answer = who.post(&approve, json!({})).await;
            assert_refused(&answer, StatusCode::FORBIDDEN, "four_eyes");
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(
                message.contains(what) && message.contains("--single-operator"),
                "{message}"
            );
        }
        assert_eq!(state_of(&app).await, before, "a refusal changes nothing");
        // The command line is one more operator, who had no hand in it.
        let paid = carol.ok(&approve, json!({})).await;
        assert_eq!(paid["state"], "paid");
        // The approval's record names all of them.
        let request = record(&app, "request", "withdrawal_paid").await;
        let result = record(&app, "result", "withdrawal_paid").await;
        assert_eq!(request["username"], "dora");
        assert_eq!(result["approved_by"], "staff:carol");
        assert_eq!(result["verified_by"], "staff:bob");
        assert_eq!(result["credited_by"], json!(["staff:alice"]));
        let credit = record(&app, "request", "credit").await;
        assert_eq!(credit["by"], "staff:alice");
        assert_eq!(credit["username"], "dora");
        // The command line credits, then cannot approve what it credited.
        app.db
            .tresor_ok(&["player", "credit", "--username", "dora", "--cents", "500"]);
        let id = withdraw(&app, 500).await;
        let refused = app
            .db
            .tresor(&["withdrawal", "approve", "--id", &id.to_string()]);
        assert_exit(&refused, 1);
        assert!(String::from_utf8_lossy(&refused.stderr).contains("operator credited"));
        expect(StatusCode::OK, carol.approve(id).await);
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
        assert_refused(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_cents");
        assert!(
            answer.1["error"]["message"]
                .as_str()
                .unwrap()
                .contains("--credit-max-cents")
        );
        // 1,000 credited already today: 600 more would pass 1,500.
        let answer = alice.post(&credit, json!({"amount_cents": 600})).await;
        assert_refused(&answer, StatusCode::FORBIDDEN, "credit_limit_reached");
        assert_eq!(answer.1["error"]["setting"], "credit_max_per_day_cents");
        assert_eq!(state_of(&app).await, before, "refusals change nothing");
        // Another operator has limits of their own; a day later, so has Alice.
        bob.ok(&credit, json!({"amount_cents": 600})).await;
        alice.ok(&credit, json!({"amount_cents": 500})).await;
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
        assert_exit(&output, 1);
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
        let first = alice.read("/console/api/withdrawals?state=pending").await;
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
            let page = alice.read(&path).await;
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
        let answer = alice.get("/console/api/withdrawals?state=pending&limit=501");
        assert_refused(
            &answer.await,
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
