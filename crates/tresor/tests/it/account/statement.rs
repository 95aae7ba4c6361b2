//! Every movement is in the statement and the trail with running balances.

use super::*;

on_both!(
    every_movement_is_in_the_statement_and_the_trail_with_running_balances,
    |app| {
        let player = player("ana")
            .verified()
            .deposit(3000)
            .on(&app)
            .await
            .service_player;
        // Credited at the console, approved at the command line: four eyes.
        app.service
            .credit_as(tresor::trail::Actor::staff("cleo"), &player, 400)
            .await
            .unwrap();
        let (_, play) = app.buy(200).await;
        app.finish(play["id"].as_i64().unwrap()).await;
        let ask = |cents: i64| app.ask_withdrawal(cents);
        let (_, w1) = ask(300).await;
        app.post(
            &format!("/api/account/withdrawals/{}/cancel", w1["id"]),
            json!({}),
        )
        .await;
        let (_, w2) = ask(400).await;
        settle(&app, &w2, Settlement::Paid, None).await;
        let (_, w3) = ask(500).await;
        settle(&app, &w3, Settlement::Rejected, Some("no")).await;
        let (status, page) = app.get("/api/account/statement?limit=100").await;
        assert_eq!(status, StatusCode::OK, "{page}");
        let movements = page["movements"].as_array().unwrap();
        let names: Vec<&str> = movements
            .iter()
            .rev()
            .map(|m| m["movement"].as_str().unwrap())
            .collect();
        let expected_start = ["deposit", "operator_credit", "stake"];
        assert_eq!(&names[..3], expected_start);
        for wanted in [
            "withdrawal_requested",
            "withdrawal_cancelled",
            "withdrawal_paid",
            "withdrawal_rejected",
        ] {
            assert!(names.contains(&wanted), "{wanted} in {names:?}");
        }
        // Running balances: each is the one before plus the movement.
        let mut running = 0;
        for m in movements.iter().rev() {
            running += m["delta_cents"].as_i64().unwrap();
            assert_eq!(m["balance_cents"].as_i64().unwrap(), running, "{m}");
        }
        assert_eq!(running, app.balance().await);
        assert_eq!(page["balance_cents"].as_i64().unwrap(), running);
        // Paged: two at a time, the same movements.
        let mut paged = Vec::new();
        let mut cursor = String::new();
        loop {
            let (_, page) = app
                .get(&format!("/api/account/statement?limit=2&cursor={cursor}"))
                .await;
            paged.extend(page["movements"].as_array().unwrap().iter().cloned());
            match page["next_cursor"].as_str() {
                Some(next) => cursor = next.to_owned(),
                None => break,
            }
        }
        // Each page's balances are exact too (they are computed from the
        // balance now, page by page, not summed over the whole history).
        assert_eq!(paged, *movements);
        // The CSV: a header, then the same movements, oldest first.
        let response = reqwest::Client::new()
            .get(format!("{}/api/account/statement.csv", app.address))
            .header("cookie", session_cookie(&app, "ana").await)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::OK);
        assert!(header(&response, "content-type").starts_with("text/csv"));
        assert!(header(&response, "content-disposition").contains("attachment"));
        let csv = response.text().await.unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert!(lines[0].starts_with("id,at,movement,amount_cents,delta_cents,balance_cents"));
        assert_eq!(lines.len(), movements.len() + 1);
        assert!(
            lines[1].contains(",deposit,3000,3000,3000,"),
            "{}",
            lines[1]
        );
        assert!(lines.last().unwrap().contains(&format!(",{running},")));
        // Every step is in the trail.
        let actions = trail_actions(&app).await;
        for wanted in [
            "account_opened",
            "account_verified",
            "deposit_asked",
            "deposit_confirmed",
            "credit",
            "withdrawal_requested",
            "withdrawal_cancelled",
            "withdrawal_paid",
            "withdrawal_rejected",
        ] {
            assert!(actions.iter().any(|a| a == wanted), "{wanted} in the trail");
        }
        app.assert_ledger_balances().await;
        audit_holds(&app);
    }
);
