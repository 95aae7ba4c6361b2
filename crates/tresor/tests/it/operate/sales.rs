//! Sales closed before the opening, announcements, the public block list and the audit export.

mod browser;

use super::*;

on_both!(
    purchases_before_the_sales_opening_are_refused_with_sales_closed,
    an_announcement_is_shown_by_the_status_api_until_cleared,
    the_public_block_list_never_shows_the_secret_of_a_block_on_sale,
    audit_export_writes_json_lines_within_the_window,
);

async fn purchases_before_the_sales_opening_are_refused_with_sales_closed(db: &TestDb) {
    let (service, clock) = db.service_selling("Test").await;
    let api = Api::new(&service);
    let cookie = api.register("alice").await;
    let alice = service.player_by_username("alice").await.expect("alice");
    service.credit(&alice, 10_000).await.expect("credit");

    let opening = rfc3339(crate::common::START_MS + 600_000);
    db.tresor_ok(&["sales", "open-at", &opening]);
    let status = api.get("/api/status").await;
    assert_eq!(status.body["sales_open"], json!(false), "{}", status.text);
    assert_eq!(status.body["opens_at"], json!(opening));
    let answer = api.buy(&cookie, 50, "a").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.text);
    assert_eq!(answer.body["error"]["code"], "sales_closed");
    assert_eq!(
        service
            .balance_cents(alice.account_id)
            .await
            .expect("balance"),
        10_000
    );

    // At the opening time, sales open by themselves.
    clock.advance_ms(600_000);
    assert_eq!(api.get("/api/status").await.body["sales_open"], json!(true));
    let answer = api.buy(&cookie, 50, "b").await;
    assert_eq!(answer.status, StatusCode::CREATED, "{}", answer.text);

    // Set far ahead then cleared: open again.
    db.tresor_ok(&["sales", "open-at", "2099-01-01T00:00:00+01:00"]);
    assert_eq!(
        api.get("/api/status").await.body["sales_open"],
        json!(false)
    );
    db.tresor_ok(&["sales", "open-at", "--clear"]);
    let status = api.get("/api/status").await;
    assert_eq!(status.body["sales_open"], json!(true));
    assert_eq!(status.body["opens_at"], Value::Null);

    for args in [
        &["sales", "open-at", "tomorrow"][..],
        &["sales", "open-at"][..],
        &["sales", "open-at", "2099-01-01T00:00:00Z", "--clear"][..],
    ] {
        let out = db.tresor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
    let actions = actions(&service).await;
    assert_eq!(actions.iter().filter(|a| *a == "sales_open_at").count(), 3);
}

async fn an_announcement_is_shown_by_the_status_api_until_cleared(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let api = Api::new(&service);
    assert_eq!(api.get("/api/status").await.body["message"], Value::Null);
    let text = "Maintenance ce soir à 22 h — « L'Ile au Trésor » revient demain";
    db.tresor_ok(&["announce", text]);
    assert_eq!(api.get("/api/status").await.body["message"], json!(text));
    db.tresor_ok(&["announce", "--clear"]);
    assert_eq!(api.get("/api/status").await.body["message"], Value::Null);
    for args in [&["announce"][..], &["announce", "   "][..]] {
        let out = db.tresor(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", describe(&out));
    }
    let records = trail::all(&service.db.pool).await.expect("the trail");
    let announces: Vec<&str> = records
        .iter()
        .filter(|r| r.action == "announce")
        .map(|r| r.actor.as_str())
        .collect();
    assert_eq!(announces, ["operator", "operator"]);
}

async fn the_public_block_list_never_shows_the_secret_of_a_block_on_sale(db: &TestDb) {
    let (service, _clock) = db.service().await;
    let emission = service
        .create_emission("Test", &Stake::ALL, 2)
        .await
        .expect("create an emission");
    let ids = block_ids(&service).await;
    service.suspend_block(ids[1]).await.expect("suspend");
    let alice = player(&service, "alice").await;
    service.credit(&alice, 1_000).await.expect("credit");
    service.buy(&alice, purchase(100, "a")).await.expect("buy");
    let secrets: Vec<Vec<u8>> = crate::common::block_secrets(&service.db)
        .await
        .iter()
        .map(|(_, secret)| secret.as_bytes().to_vec())
        .collect();
    let api = Api::new(&service);
    let answer = api.get("/api/blocks").await;
    assert_eq!(answer.status, StatusCode::OK);
    for secret in &secrets {
        assert!(
            !answer.text.contains(&hex::encode(secret)),
            "a secret leaked"
        );
        assert!(
            !answer
                .text
                .to_lowercase()
                .contains(&hex::encode_upper(secret).to_lowercase())
        );
    }
    for block in crate::common::items(&answer.body["blocks"], "blocks") {
        assert_eq!(block["secret"], Value::Null, "{block}");
    }
    // Nor does the trail or its export hold any secret.
    let out = db.tresor_ok(&["audit", "export"]);
    let export = String::from_utf8_lossy(&out.stdout);
    assert!(export.lines().count() >= 5, "{export}");
    for secret in &secrets {
        assert!(
            !export.contains(&hex::encode(secret)),
            "a secret is in the trail"
        );
    }

    // Closing the emission publishes every secret, each matching its
    // commitment.
    db.tresor_ok(&["emission", "close", &emission.to_string()]);
    let answer = api.get("/api/blocks").await;
    for block in crate::common::items(&answer.body["blocks"], "blocks") {
        let secret = block["secret"].as_str().expect("published");
        assert_eq!(
            tresor::service::sha256_hex(&hex::decode(secret).expect("hex")),
            block["commitment"].as_str().expect("a commitment")
        );
    }
}

async fn audit_export_writes_json_lines_within_the_window(db: &TestDb) {
    let (service, clock) = db.service().await;
    service
        .set_announcement(Some("one".to_owned()))
        .await
        .expect("announce");
    clock.advance_ms(60_000);
    service
        .set_announcement(Some("two".to_owned()))
        .await
        .expect("announce");
    clock.advance_ms(60_000);
    service
        .set_announcement(Some("three".to_owned()))
        .await
        .expect("announce");
    let from = rfc3339(crate::common::START_MS + 30_000);
    let to = rfc3339(crate::common::START_MS + 90_000);
    let out = db.tresor_ok(&["audit", "export", "--from", &from, "--to", &to]);
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    let line = &lines[0];
    assert_eq!(line["action"], "announce");
    assert_eq!(line["at"], json!(rfc3339(crate::common::START_MS + 60_000)));
    // An export carries what is needed to re-check each leaf and its place
    // in the signed log: its receipt (salt, proof, checkpoint).
    let receipt: trail::Receipt =
        serde_json::from_value(line["receipt"].clone()).expect("a receipt");
    assert_eq!(receipt.record.salt, line["salt"].as_str().expect("salt"));
    assert_eq!(line["hash"], json!(hex::encode(receipt.leaf().hash().0)));
    let vkey: String = sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC LIMIT 1")
        .fetch_one(&service.db.pool)
        .await
        .expect("the key");
    receipt
        .check(&vkey)
        .expect("the exported record is in the signed log");
}
