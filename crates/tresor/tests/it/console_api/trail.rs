//! The trail: each console action under the staff name, its export and its search.

use super::*;

on_both!(
    each_console_action_is_in_the_trail_under_the_staff_name,
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let (bob, _) = logged_in(&app, "bob", Role::Operator).await;
        let (carol, _) = logged_in(&app, "carol", Role::Auditor).await;

        // Emissions and blocks.
        let emission = expect(
            StatusCode::CREATED,
            alice
                .post(
                    "/console/api/emissions",
                    json!({"stake_cents": 200, "blocks": 2, "name": "Spring"}),
                )
                .await,
        );
        assert_eq!(emission["name"], "Spring");
        let blocks = emission["blocks"].as_array().unwrap();
        assert_eq!(blocks.len(), 2);
        let block = blocks[0]["id"].as_i64().unwrap();
        assert_eq!(blocks[0]["secret"], Value::Null);
        let suspended = expect(
            StatusCode::OK,
            alice.act("blocks", block, "suspend", json!({})).await,
        );
        assert_eq!(suspended["state"], "suspended");
        let resumed = expect(
            StatusCode::OK,
            alice.act("blocks", block, "resume", json!({})).await,
        );
        assert_eq!(resumed["state"], "open");
        // A refusal of the service is a JSON error that changes nothing.
        let before = state_of(&app).await;
        assert_refused(
            &alice.act("blocks", block, "resume", json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        assert_eq!(state_of(&app).await, before);

        // Players: credit, verify, exclude; withdrawals approved and rejected.
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        let found = alice.read("/console/api/players?q=DOR").await;
        assert_eq!(found["players"][0]["username"], "dora");
        assert_eq!(found["players"][0]["balance_cents"], 5_000);
        let queue = alice.read("/console/api/accounts?status=provisional").await;
        assert!(
            queue["accounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["username"] == "dora")
        );
        let account = expect(StatusCode::OK, alice.verify_account(dora, IBAN).await);
        assert_eq!(account["status"], "verified");
        let mut ids = Vec::new();
        for cents in [1_000, 700] {
            let w = expect(StatusCode::CREATED, app.ask_withdrawal(cents).await);
            ids.push(w["id"].as_i64().unwrap());
        }
        let pending = alice.read("/console/api/withdrawals?state=pending").await;
        assert_eq!(pending["withdrawals"].as_array().unwrap().len(), 2);
        // Alice credited and verified Dora: another operator approves.
        assert_refused(
            &alice.approve(ids[0]).await,
            StatusCode::FORBIDDEN,
            "four_eyes",
        );
        let paid = expect(StatusCode::OK, bob.approve(ids[0]).await);
        assert_eq!(paid["state"], "paid");
        let rejected = expect(
            StatusCode::OK,
            alice
                .reject(ids[1], "the IBAN is not in the player's name")
                .await,
        );
        assert_eq!(rejected["state"], "rejected");
        let detail = alice.read(&format!("/console/api/players/{dora}")).await;
        assert_eq!(detail["account"]["balance_cents"], 5_000 - 1_000);
        let statement = alice
            .read(&format!("/console/api/players/{dora}/statement?limit=2"))
            .await;
        assert_eq!(statement["movements"].as_array().unwrap().len(), 2);
        let excluded = expect(
            StatusCode::OK,
            alice
                .act("players", dora, "exclude", json!({"period": "7d"}))
                .await,
        );
        assert!(excluded["excluded_until"].is_string());

        // The site.
        let opens = json!({"opens_at": "2030-03-01T09:00:00+01:00"});
        let site = expect(
            StatusCode::OK,
            alice.put("/console/api/site/sales", opens).await,
        );
        assert_eq!(site["sales_open_at"], "2030-03-01T08:00:00.000Z");
        let message = json!({"message": "Maintenance at noon"});
        let answer = alice.put("/console/api/site/announcement", message).await;
        let site = expect(StatusCode::OK, answer);
        assert_eq!(site["announcement"], "Maintenance at noon");
        let (_, status_page) = app.get("/api/status").await;
        assert_eq!(status_page["message"], "Maintenance at noon");
        let site = expect(
            StatusCode::OK,
            alice
                .put("/console/api/site/sales", json!({"opens_at": null}))
                .await,
        );
        assert_eq!(site["sales_open_at"], Value::Null);

        // Closing publishes the secrets; the auditor re-checks a block.
        let emission_id = emission["id"].as_i64().unwrap();
        let closed = expect(
            StatusCode::OK,
            alice
                .act("emissions", emission_id, "close", json!({}))
                .await,
        );
        assert_eq!(closed["state"], "closed");
        assert!(closed["blocks"][0]["secret"].is_string());
        let recheck = expect(
            StatusCode::OK,
            carol.act("blocks", block, "recheck", json!({})).await,
        );
        assert_eq!(recheck["ok"], true, "{recheck}");
        assert_eq!(recheck["commitment_ok"], true);
        assert_eq!(recheck["table_ok"], true);
        assert_eq!(recheck["units"], 450_000);
        // A block still on sale has no published secret to re-check.
        let open_block = app
            .service
            .blocks()
            .await
            .unwrap()
            .into_iter()
            .find(|b| b.state == "open")
            .unwrap()
            .id;
        assert_refused(
            &carol.act("blocks", open_block, "recheck", json!({})).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );

        // The auditor verifies the trail: itself a record, read back.
        let trail_before = carol.read("/console/api/trail").await;
        assert_eq!(trail_before["last_verification"], Value::Null);
        let verified = carol.ok("/console/api/trail/verify", json!({})).await;
        assert_eq!(verified["ok"], true, "{verified}");
        let trail_now = expect(StatusCode::OK, carol.get("/console/api/trail").await);
        assert_eq!(trail_now["last_verification"]["by"], "carol");
        assert_eq!(trail_now["last_verification"]["ok"], true);
        assert_eq!(
            trail_now["last_verification"]["records"],
            verified["records"]
        );
        assert_eq!(
            trail_now["head"]["seq"],
            verified["records"].as_i64().unwrap() + 1
        );

        let records = trail(&app).await;
        for (actor, action) in [
            ("staff:alice", "emission_create"),
            ("staff:alice", "block_suspend"),
            ("staff:alice", "block_resume"),
            ("staff:alice", "credit"),
            ("staff:alice", "account_verified"),
            ("staff:bob", "withdrawal_paid"),
            ("staff:alice", "withdrawal_rejected"),
            ("staff:alice", "exclude"),
            ("staff:alice", "sales_open_at"),
            ("staff:alice", "announce"),
            ("staff:alice", "emission_close"),
            ("staff:carol", "trail_verify"),
        ] {
            assert!(
                records.iter().any(|(a, b)| a == actor && b == action),
                "no {action} by {actor} in {records:?}"
            );
        }
        // From the console's first action on, none is the command line's.
        let first = records
            .iter()
            .position(|(a, b)| a == "staff:alice" && b == "emission_create")
            .unwrap();
        assert!(
            !records[first..].iter().any(|(a, _)| a == "operator"),
            "{records:?}"
        );

        // The export is the whole trail, one JSON line per record.
        let response = carol.response("/console/api/trail/export").await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(header(&response, "content-disposition").starts_with("attachment"));
        let text = response.text().await.unwrap();
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), trail(&app).await.len());
        assert_eq!(lines[0]["seq"], 1);
        assert!(lines.last().unwrap()["at"].is_string());

        let output = app.db.tresor_ok(&["audit", "verify"]);
        assert!(output.status.success(), "{}", describe(&output));
    }
);

/// Rows of the trail PostgreSQL has read, by index or by scan, as its
/// statistics tell once the backends that read them have flushed theirs
/// (within a second of their going idle): polled until they stop moving.
async fn trail_rows_read_settled(pool: &sqlx::AnyPool) -> i64 {
    let read = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT CAST(COALESCE(seq_tup_read, 0) + COALESCE(idx_tup_fetch, 0) AS BIGINT) \
             FROM pg_stat_user_tables WHERE relname = 'trail'",
        )
        .fetch_one(pool)
        .await
        .unwrap()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let mut last = read().await;
    let mut still_since = std::time::Instant::now();
    loop {
        // The poll's pace: PostgreSQL's statistics tell no one when they flush.
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        let now = read().await;
        if now != last {
            (last, still_since) = (now, std::time::Instant::now());
        } else if still_since.elapsed() >= std::time::Duration::from_secs(3) {
            return now;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the trail's statistics never settled"
        );
    }
}

on_postgres!(
    the_trail_export_reads_as_the_client_takes_it_and_stops_when_it_leaves,
    |app| {
        // A trail of 200,000 records (~60 MB of JSON lines): far more than
        // the sockets between the server and a client can hold. The rows
        // are made in SQL (their hashes are not a chain: the export does
        // not verify, it copies).
        const ADDED: i64 = 200_000;
        let pool = &app.service.db.pool;
        let (aude, _) = logged_in(&app, "aude", Role::Auditor).await;
        sqlx::query(
            "INSERT INTO trail (seq, at_ms, actor, action, request, result, prev_hash, hash) \
             SELECT s, 0, 'test', 'filler', '{}', '{\"pad\":\"' || repeat('x', 200) || '\"}', '', '' \
             FROM generate_series((SELECT MAX(seq) FROM trail) + 1, \
                                  (SELECT MAX(seq) FROM trail) + $1) AS s",
        )
        .bind(ADDED)
        .execute(pool)
        .await
        .unwrap();
        // Appends after them (the console's own records) follow on.
        execute(
            pool,
            &["UPDATE trail_head SET seq = (SELECT MAX(seq) FROM trail)"],
        )
        .await;
        let before = trail_rows_read_settled(pool).await;

        // The client takes the first bytes, then reads no more.
        let mut response = aude.response("/console/api/trail/export").await;
        assert_eq!(response.status(), StatusCode::OK);
        let first = response.chunk().await.unwrap().expect("a first chunk");
        assert!(first.starts_with(b"{"), "a JSON line first");
        let stalled = trail_rows_read_settled(pool).await - before;
        assert!(
            stalled > 0 && stalled < ADDED / 2,
            "{stalled} records read for a client that took one chunk of {ADDED}: \
             the export must read as the client takes it"
        );

        // The client leaves: nothing more is read.
        drop(response);
        let left = trail_rows_read_settled(pool).await - before;
        assert!(
            left < ADDED / 2,
            "{left} records read after the client left, of {ADDED}"
        );
    }
);

// ---- Issue 22: the trail screen browses and searches the records ----

/// The (seq, actor, action) of a page of `/console/api/trail/records`.
fn page_of(body: &Value) -> Vec<(i64, String, String)> {
    body["records"]
        .as_array()
        .unwrap_or_else(|| panic!("{body}"))
        .iter()
        .map(|r| {
            (
                r["seq"].as_i64().unwrap(),
                r["actor"].as_str().unwrap().to_owned(),
                r["action"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

on_both!(the_trail_is_browsed_by_actor_action_and_time, |app| {
    let (aude, _) = logged_in(&app, "aude", Role::Auditor).await;
    let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
    let mut credited_at = Vec::new();
    // Three players credited by Alice, five minutes apart.
    for name in ["pia", "pol", "pam"] {
        app.player(name, 0).await;
        let id = app.service.player_by_username(name).await.unwrap().id;
        expect(StatusCode::OK, alice.credit(id, 100).await);
        credited_at.push(app.service.now_ms());
        app.clock.advance_ms(5 * 60 * 1000);
    }
    let everything = trail(&app).await;
    let before = state_of(&app).await;

    // Newest first, every record when nothing is asked.
    let all = aude.read("/console/api/trail/records?limit=200").await;
    let all = page_of(&all);
    assert_eq!(all.len(), everything.len());
    assert!(all.windows(2).all(|w| w[0].0 > w[1].0), "newest first");

    // By action, then a page at a time with `before`.
    let (_, credits) = aude.get("/console/api/trail/records?action=credit").await;
    let credits = page_of(&credits);
    assert_eq!(credits.len(), 3);
    assert!(
        credits
            .iter()
            .all(|(_, a, b)| a == "staff:alice" && b == "credit")
    );
    let (_, first) = aude
        .get("/console/api/trail/records?action=credit&limit=2")
        .await;
    assert_eq!(page_of(&first), credits[..2].to_vec());
    let next = first["next_before"].as_i64().expect("a next page");
    let (_, second) = aude
        .get(&format!(
            "/console/api/trail/records?action=credit&limit=2&before={next}"
        ))
        .await;
    assert_eq!(page_of(&second), credits[2..].to_vec());
    assert_eq!(second["next_before"], Value::Null);
    // The request and the result are JSON, as recorded.
    assert_eq!(first["records"][0]["request"]["amount_cents"], 100);

    // By actor: exactly, or every console account with `staff`.
    let (_, by_alice) = aude
        .get("/console/api/trail/records?actor=staff:alice&limit=200")
        .await;
    let by_alice = page_of(&by_alice);
    assert!(by_alice.iter().all(|(_, a, _)| a == "staff:alice"));
    assert_eq!(
        by_alice.len(),
        everything
            .iter()
            .filter(|(a, _)| a == "staff:alice")
            .count()
    );
    let (_, by_staff) = aude
        .get("/console/api/trail/records?actor=staff&limit=200")
        .await;
    let by_staff = page_of(&by_staff);
    assert!(by_staff.iter().any(|(_, a, _)| a == "staff:aude"));
    assert!(by_staff.iter().all(|(_, a, _)| a.starts_with("staff:")));
    // `staff:ali` is not `staff:alice`.
    let (_, none) = aude.get("/console/api/trail/records?actor=staff:ali").await;
    assert!(page_of(&none).is_empty());

    // By time: RFC 3339 bounds around the second credit only (from
    // included, to excluded).
    let at = |ms: i64| tresor::service::rfc3339(ms);
    let window = aude
        .read(&format!(
            "/console/api/trail/records?action=credit&from={}&to={}",
            at(credited_at[1]),
            at(credited_at[1] + 1)
        ))
        .await;
    assert_eq!(page_of(&window), credits[1..2].to_vec());
    // Days (UTC, both included): the days of the credits hold all three;
    // the day after, none.
    let day = |ms: i64| {
        let t = time::OffsetDateTime::from_unix_timestamp(ms / 1000).unwrap();
        format!("{}", t.date())
    };
    let second_day = day(credited_at[0]);
    let (_, days) = aude
        .get(&format!(
            "/console/api/trail/records?action=credit&from={}&to={}",
            day(credited_at[0]),
            day(credited_at[2])
        ))
        .await;
    assert_eq!(page_of(&days), credits);
    let (_, later) = aude
        .get(&format!(
            "/console/api/trail/records?from={}",
            day(app.service.now_ms() + 24 * 3600 * 1000)
        ))
        .await;
    assert!(page_of(&later).is_empty());
    assert_eq!(later["next_before"], Value::Null);

    // Bad input: a clear refusal.
    for query in [
        "from=yesterday",
        "limit=0",
        "limit=201",
        "before=x",
        "colour=red",
    ] {
        let answer = aude
            .get(&format!("/console/api/trail/records?{query}"))
            .await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    }
    let answer = aude
        .get(&format!(
            "/console/api/trail/records?from={second_day}&to=2020-01-01"
        ))
        .await;
    assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    // Read-only: nothing changed, no record added by reading.
    assert_eq!(state_of(&app).await, before);
    assert_eq!(trail(&app).await, everything);
});
