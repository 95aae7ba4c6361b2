//! Issue 32, finding 12, on both databases: what a player or a console
//! account sends is taken in safely.
//!
//! - A document's name loses Unicode format characters (category Cf): a
//!   right-to-left override showed `passwd\u{202E}fdp.exe` as
//!   "passwdexe.pdf"; a control character is refused at the edge (issue 42).
//! - An upload announcing a body over the limit (`Content-Length`) is
//!   refused 413 at once: it waited 30 s for a body that never came.
//! - A viewer's refused console requests are recorded in the trail once per
//!   account and minute (the others counted in the next record): each wrote
//!   a record, with no throttle.

mod browser;

use crate::common::expect;
use crate::common::items;
use crate::common::opening::{PDF, count, open_account};
use crate::common::players::session_cookie;
use crate::common::staff::logged_in;
use crate::common::texts;
use reqwest::StatusCode;
use serde_json::json;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tresor::staff::Role;

on_both!(a_documents_name_loses_its_format_characters, |app| {
    open_account(&app, "rlo").await;
    let sent = expect(
        StatusCode::CREATED,
        app.upload("identity", "passwd\u{202E}fdp.exe", PDF).await,
    );
    assert_eq!(sent["name"], "passwdfdp.exe", "{sent}");
    let name = "\u{2067}rib\u{200B}\u{00AD}\u{FEFF}.pdf\u{2069}";
    expect(
        StatusCode::CREATED,
        app.upload("iban_proof", name, PDF).await,
    );
    // A control character in the name is refused at the edge (issue 42,
    // finding 10).
    let refused = expect(
        StatusCode::UNPROCESSABLE_ENTITY,
        app.upload("iban_proof", "rib\u{0007}.pdf", PDF).await,
    );
    assert_eq!(refused["error"]["code"], "control_character", "{refused}");
    let (_, listed) = app.get("/api/account/documents").await;
    let mut names: Vec<&str> = items(&listed["documents"], "documents")
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["passwdfdp.exe", "rib.pdf"], "{listed}");
    // Stored without them: what the console and the trail show.
    let stored = texts(
        &app.service.db.pool,
        "SELECT name FROM identity_documents ORDER BY name",
    )
    .await;
    assert_eq!(stored, ["passwdfdp.exe", "rib.pdf"]);
    for name in &stored {
        assert!(
            !name
                .chars()
                .any(|c| c.is_control() || ('\u{200B}'..='\u{206F}').contains(&c)),
            "{name:?}"
        );
    }
});

on_both!(
    an_upload_announcing_too_large_a_body_is_refused_at_once,
    |app| {
        open_account(&app, "big").await;
        let cookie = session_cookie(&app, "big").await;
        let host = app.address.trim_start_matches("http://").to_owned();
        let max = app.service.max_document_bytes();
        for announced in [max as u64 + 1, 10_000_000_000, 1_000_000_000_000_000] {
            let mut stream = tokio::net::TcpStream::connect(&host).await.unwrap();
            // The headers and the body's first bytes; the rest never comes.
            let request = format!(
                "POST /api/account/documents?kind=identity HTTP/1.1\r\nHost: {host}\r\n\
             Cookie: {cookie}\r\nX-Requested-With: tresor\r\n\
             Content-Length: {announced}\r\n\r\n%PDF-1.4\n"
            );
            stream.write_all(request.as_bytes()).await.unwrap();
            let started = Instant::now();
            let mut answer = vec![0u8; 4096];
            let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut answer))
                .await
                .expect("an answer within 10 s, not at the 30 s timeout")
                .unwrap();
            let answer = String::from_utf8_lossy(&answer[..read]).into_owned();
            assert!(answer.starts_with("HTTP/1.1 413"), "{announced}: {answer}");
            assert!(answer.contains("document_too_large"), "{answer}");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{:?}",
                started.elapsed()
            );
        }
        assert_eq!(
            count(&app, "SELECT COUNT(*) FROM identity_documents").await,
            0
        );
        // A file within the limit is still taken.
        expect(
            StatusCode::CREATED,
            app.upload("identity", "scan.pdf", PDF).await,
        );
    }
);

on_both!(a_viewers_refusals_are_recorded_once_a_minute, |app| {
    app.player("bob", 1_000).await;
    let bob = app.service.player_by_username("bob").await.unwrap();
    let (viewer, _) = logged_in(&app, "vic", Role::Viewer).await;
    let records = || {
        count(
            &app,
            "SELECT COUNT(*) FROM trail WHERE actor = 'staff:vic' AND action = 'console_forbidden'",
        )
    };
    let before = count(&app, "SELECT COUNT(*) FROM trail").await;
    let credit = format!("/console/api/players/{}/credit", bob.id);
    for _ in 0..50 {
        let (status, body) = viewer.post(&credit, json!({"amount_cents": 100})).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{body}");
        assert_eq!(body["error"]["code"], "forbidden");
    }
    // One record for the 50, and nothing else written.
    assert_eq!(records().await, 1);
    assert_eq!(count(&app, "SELECT COUNT(*) FROM trail").await, before + 1);
    // A minute on, the next refusal is recorded, with the 49 left out.
    app.clock.advance_ms(60_000);
    let (status, _) = viewer
        .act("players", bob.id, "exclude", json!({"period": "7d"}))
        .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(records().await, 2);
    let last: String = sqlx::query_scalar(
        "SELECT result FROM trail WHERE action = 'console_forbidden' ORDER BY seq DESC LIMIT 1",
    )
    .fetch_one(&app.service.db.pool)
    .await
    .unwrap();
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["refusals_not_recorded_before"], 49, "{last}");
    // Another account's refusals are its own.
    let (other, _) = logged_in(&app, "val", Role::Viewer).await;
    let (status, _) = other.post(&credit, json!({"amount_cents": 100})).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(
        count(
            &app,
            "SELECT COUNT(*) FROM trail WHERE actor = 'staff:val' AND action = 'console_forbidden'"
        )
        .await,
        1
    );
    // The balance never moved, and the trail verifies.
    assert_eq!(
        app.service.balance_cents(bob.account_id).await.unwrap(),
        1_000
    );
    app.db.tresor_ok(&["audit", "verify"]);
});
