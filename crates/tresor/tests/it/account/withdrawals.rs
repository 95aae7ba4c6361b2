//! Withdrawals never exceed the balance, a cancel racing an approval settles one way, closing
//! pays a verified balance out.

use super::*;

on_both!(
    a_withdrawal_never_exceeds_the_balance_even_with_concurrent_purchases,
    |app| {
        player("ana").verified().deposit(1000).on(&app).await;
        let buys = futures_util::future::join_all((0..6).map(|_| app.buy(100)));
        let withdrawals = futures_util::future::join_all((0..3).map(|_| app.ask_withdrawal(600)));
        let (buys, withdrawals) = tokio::join!(buys, withdrawals);
        let bought = buys
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count() as i64;
        let withdrawn = withdrawals
            .iter()
            .filter(|(s, _)| *s == StatusCode::CREATED)
            .count() as i64;
        // A refused withdrawal saw a balance too short for it, purchases of the
        // same batch counted.
        for (status, body) in withdrawals
            .iter()
            .filter(|(s, _)| *s != StatusCode::CREATED)
        {
            assert_eq!(*status, StatusCode::PAYMENT_REQUIRED, "{body}");
            assert_eq!(body["error"]["code"], "insufficient_funds");
        }
        for (status, body) in buys.iter().filter(|(s, _)| *s != StatusCode::CREATED) {
            assert_eq!(*status, StatusCode::PAYMENT_REQUIRED, "{body}");
        }
        assert!(bought >= 1 || withdrawn >= 1);
        let player = app.service.player_by_username("ana").await.unwrap();
        let balance = balance_of(&app, player.account_id).await;
        assert!(balance >= 0);
        assert_eq!(
            balance_of(&app, tresor::model::PENDING_WITHDRAWALS_ACCOUNT).await,
            withdrawn * 600
        );
        // Prizes of settled plays aside, 10 € cover every stake and withdrawal.
        let prizes: i64 = sqlx::query_scalar(
        "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers WHERE kind = 'prize'",
    )
    .fetch_one(&app.service.db.pool)
    .await
    .unwrap();
        assert_eq!(balance, 1000 + prizes - bought * 100 - withdrawn * 600);
        app.assert_ledger_balances().await;
    }
);

on_both!(a_cancel_racing_an_approval_settles_one_way, |app| {
    player("ana").verified().deposit(3000).on(&app).await;
    for round in 0..3 {
        let (status, withdrawal) = app.ask_withdrawal(500).await;
        assert_eq!(status, StatusCode::CREATED, "{withdrawal}");
        let id = withdrawal["id"].as_i64().unwrap();
        let path = format!("/api/account/withdrawals/{id}/cancel");
        let cancel = app.post(&path, json!({}));
        let approve = app.service.decide_withdrawal(id, Settlement::Paid, None);
        let ((status, cancelled), approved) = tokio::join!(cancel, approve);
        match (status, approved) {
            (StatusCode::OK, Err(tresor::error::Error::WithdrawalNotPending { state })) => {
                assert_eq!(state, "cancelled");
                assert_eq!(cancelled["state"], "cancelled");
            }
            (StatusCode::CONFLICT, Ok(paid)) => {
                assert_eq!(paid.state, "paid");
                assert_eq!(cancelled["error"]["code"], "withdrawal_not_pending");
                assert_eq!(cancelled["error"]["state"], "paid");
            }
            (status, approved) => panic!("round {round}: {status} {cancelled} and {approved:?}"),
        }
        let settlements: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM transfers WHERE withdrawal_id = $1 AND kind <> 'withdrawal'",
        )
        .bind(id)
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
        assert_eq!(settlements, 1, "settled once");
    }
    assert_eq!(
        balance_of(&app, tresor::model::PENDING_WITHDRAWALS_ACCOUNT).await,
        0
    );
    // A rejection gives the money back.
    let (_, withdrawal) = app.ask_withdrawal(700).await;
    let before = app.balance().await;
    let rejected = settle(&app, &withdrawal, Settlement::Rejected, Some("wrong bank")).await;
    assert_eq!(rejected.state, "rejected");
    assert_eq!(app.balance().await, before + 700);
    app.assert_ledger_balances().await;
    audit_holds(&app);
});

on_both!(
    closing_pays_a_verified_balance_out_and_keeps_an_unverified_one_in_reserve,
    |app| {
        player("ana").verified().deposit(1200).on(&app).await;
        assert_refused(
            &app.post("/api/account/close", json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        let closed = expect(
            StatusCode::OK,
            app.post("/api/account/close", json!({"confirm": true}))
                .await,
        );
        assert_eq!(closed["balance_cents"], 1200);
        assert!(closed["withdrawal_id"].is_i64());
        assert_eq!(closed["reserved_cents"], 0);
        assert_eq!(
            app.me().await.0,
            StatusCode::UNAUTHORIZED,
            "the sessions ended"
        );
        app.login("ana", "a long password").await;
        assert_refused(&app.buy(100).await, StatusCode::FORBIDDEN, "account_closed");
        assert_refused(
            &app.ask_deposit(1000).await,
            StatusCode::FORBIDDEN,
            "account_closed",
        );
        let ana = app.service.player_by_username("ana").await.unwrap();
        assert_eq!(balance_of(&app, ana.account_id).await, 0);

        let bea = app.another_client();
        player("bea").real_money().deposit(800).on(&bea).await;
        let (_, closed) = bea
            .post("/api/account/close", json!({"confirm": true}))
            .await;
        assert_eq!(closed["reserved_cents"], 800);
        assert_eq!(closed["withdrawal_id"], Value::Null);
        let reserves = app.db.tresor_ok(&["reserves", "--json"]);
        let reserves: Value = serde_json::from_slice(&reserves.stdout).unwrap();
        assert_eq!(reserves[0]["username"], "bea");
        assert_eq!(reserves[0]["amount_cents"], 800);
        let money = money(&app).await;
        assert_eq!(money.reserves_cents, 800);
        assert_eq!(money.withdrawals_pending_cents, 1200);
        assert_eq!(money.ledger_sum_cents, 0);
        let table = app.db.tresor_ok(&["report"]);
        assert!(String::from_utf8_lossy(&table.stdout).contains("kept in reserve"));
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);
