//! Identity documents (issue 22) through the HTTP API on both databases:
//! bad uploads refused with nothing stored (wrong type, too large, empty,
//! an unknown kind, no CSRF header); the whole review — sent, listed in the
//! console's queue beside the identity, opened on the console only, refused
//! with a reason the player reads, sent again, verified — before the
//! account may be verified; a demo account never in the queue; the bytes
//! sealed at rest and never served on the players' listener.

mod browser;

use crate::common::TestApp;
use crate::common::opening::{IBAN, JPEG, PDF, PNG, assert_refused, count, open_account};
use crate::common::staff::{Console, console};
use crate::common::{expect, maybe_header};
use reqwest::StatusCode;
use serde_json::Value;

/// A small limit, so that "too large" needs no megabytes.
fn small_limit() -> tresor::service::Settings {
    tresor::service::Settings {
        max_document_bytes: 1024,
        ..TestApp::settings()
    }
}

/// What a refused upload must not have left: no row, no trail record.
async fn nothing_stored(app: &TestApp) {
    assert_eq!(
        count(app, "SELECT COUNT(*) FROM identity_documents").await,
        0
    );
    assert_eq!(
        count(
            app,
            "SELECT COUNT(*) FROM trail WHERE action = 'document_uploaded'"
        )
        .await,
        0
    );
}

/// The player's documents, newest first, as the player's page reads them.
async fn my_documents(app: &TestApp) -> Vec<Value> {
    let body = expect(StatusCode::OK, app.get("/api/account/documents").await);
    body["documents"].as_array().unwrap().clone()
}

/// The console's queue row of `username`, if it is in the queue.
async fn queue_row(console: &Console, username: &str) -> Option<Value> {
    let queue = console
        .read("/console/api/accounts?status=provisional")
        .await;
    queue["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["username"] == username)
        .cloned()
}

on_both!(
    bad_uploads_are_refused_and_store_nothing,
    small_limit(),
    |app| {
        open_account(&app, "ana").await;
        let text = b"just some text, named like a photo".to_vec();
        let cases: Vec<(&str, Vec<u8>, StatusCode, &str)> = vec![
            (
                "identity",
                text,
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "document_type",
            ),
            (
                "identity",
                [b"GIF89a".as_slice(), &[0u8; 10][..]].concat(),
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "document_type",
            ),
            (
                "identity",
                [PDF, &[b' '; 2048][..]].concat(),
                StatusCode::PAYLOAD_TOO_LARGE,
                "document_too_large",
            ),
            (
                "iban_proof",
                Vec::new(),
                StatusCode::BAD_REQUEST,
                "document_empty",
            ),
            (
                "passport",
                JPEG.to_vec(),
                StatusCode::UNPROCESSABLE_ENTITY,
                "document_kind",
            ),
        ];
        for (kind, bytes, status, code) in cases {
            let answer = app.upload(kind, "photo.jpg", &bytes).await;
            assert_refused(&answer, status, code);
            nothing_stored(&app).await;
        }
        // Without the CSRF header a browser's cross-site form cannot send.
        let answer = app
            .post_bytes(
                "/api/account/documents?kind=identity&name=a.jpg",
                JPEG.to_vec(),
                &[],
            )
            .await;
        assert_refused(&answer, StatusCode::FORBIDDEN, "csrf");
        // Logged out: refused too.
        let stranger = app.another_client();
        let answer = stranger.upload("identity", "a.jpg", JPEG).await;
        assert_eq!(answer.0, StatusCode::UNAUTHORIZED, "{}", answer.1);
        nothing_stored(&app).await;
        assert!(my_documents(&app).await.is_empty());
    }
);

on_both!(
    a_document_is_refused_sent_again_and_verified_before_the_account,
    |app| {
        let ana = open_account(&app, "ana").await.id;
        let alice = console(&app, "alice").await;

        // Ana sends her identity document and the proof of her IBAN.
        let (status, identity) = app.upload("identity", "passport.jpg", JPEG).await;
        assert_eq!(status, StatusCode::CREATED, "{identity}");
        assert_eq!(identity["status"], "pending");
        assert_eq!(identity["name"], "passport.jpg");
        assert_eq!(identity["size_bytes"], JPEG.len());
        // A second identity document while the first waits is refused.
        assert_refused(
            &app.upload("identity", "again.jpg", JPEG).await,
            StatusCode::CONFLICT,
            "document_already_sent",
        );
        let (status, proof) = app.upload("iban_proof", "rib.pdf", PDF).await;
        assert_eq!(status, StatusCode::CREATED, "{proof}");
        // The player sees kind, name, size, date and status: never the bytes.
        let mine = my_documents(&app).await;
        assert_eq!(mine.len(), 2);
        for d in &mine {
            let mut keys: Vec<&str> = d.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(
                keys,
                [
                    "decided_at",
                    "id",
                    "kind",
                    "name",
                    "reason",
                    "size_bytes",
                    "status",
                    "uploaded_at"
                ]
            );
        }

        // Sealed at rest: the stored bytes are not the file, and open only
        // under the secrets key for this document's id.
        let sealed: Vec<u8> =
            sqlx::query_scalar("SELECT sealed FROM identity_documents WHERE id = $1")
                .bind(identity["id"].as_i64().unwrap())
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap();
        assert_eq!(sealed.len(), JPEG.len() + 24 + 16);
        assert!(!sealed.windows(JPEG.len()).any(|w| w == JPEG));

        // The console's queue: who the person is, beside the documents.
        let row = queue_row(&alice, "ana").await.expect("ana in the queue");
        assert_eq!(row["identity"]["birth_name"], "Name of ana");
        assert_eq!(row["identity"]["first_names"], "Anne Marie");
        assert_eq!(row["identity"]["birth_place"], "Nantes");
        assert_eq!(row["identity"]["address"], "1 rue de la Paix, 75002 Paris");
        assert!(row["identity"]["birth_date"].is_string());
        assert_eq!(row["documents"].as_array().unwrap().len(), 2);

        // The operator opens the identity document: the file itself, inline,
        // its type from its bytes, nothing sniffed or run.
        let id = identity["id"].as_i64().unwrap();
        let response = alice
            .response(&format!("/console/api/documents/{id}"))
            .await;
        assert_eq!(response.status(), StatusCode::OK);
        let header = |name: &str| maybe_header(&response, name).unwrap_or_default();
        assert_eq!(header("content-type"), "image/jpeg");
        assert!(header("content-disposition").starts_with("inline"));
        assert_eq!(header("x-content-type-options"), "nosniff");
        assert!(header("content-security-policy").starts_with("default-src 'none'"));
        assert!(header("cache-control").contains("no-store"));
        assert_eq!(response.bytes().await.unwrap().as_ref(), JPEG);

        // The seal binds the bytes to their document's id: two rows' sealed
        // bytes swapped (by someone with the database) open as neither.
        let proof_id = proof["id"].as_i64().unwrap();
        let swap = |a: i64, b: i64| {
            let pool = app.service.db.pool.clone();
            async move {
                let read = |id: i64| {
                    sqlx::query_scalar::<_, Vec<u8>>(
                        "SELECT sealed FROM identity_documents WHERE id = $1",
                    )
                    .bind(id)
                    .fetch_one(&pool)
                };
                let (sealed_a, sealed_b) = (read(a).await.unwrap(), read(b).await.unwrap());
                for (id, sealed) in [(a, sealed_b), (b, sealed_a)] {
                    sqlx::query("UPDATE identity_documents SET sealed = $1 WHERE id = $2")
                        .bind(sealed)
                        .bind(id)
                        .execute(&pool)
                        .await
                        .unwrap();
                }
            }
        };
        swap(id, proof_id).await;
        for document in [id, proof_id] {
            let response = alice
                .response(&format!("/console/api/documents/{document}"))
                .await;
            assert_ne!(
                response.status(),
                StatusCode::OK,
                "document {document} swapped"
            );
            let body = response.bytes().await.unwrap();
            assert!(
                !body
                    .windows(PDF.len().min(8))
                    .any(|w| w == &PDF[..PDF.len().min(8)])
                    && !body.windows(JPEG.len()).any(|w| w == JPEG),
                "no file is served for a swapped document"
            );
        }
        swap(id, proof_id).await;

        // Verifying the account before its documents are is refused.
        let answer = alice.verify_account(ana, IBAN).await;
        assert_refused(&answer, StatusCode::CONFLICT, "documents_required");

        // Refused, with a reason the player reads.
        let answer = alice.refuse_document(id, "").await;
        assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
        let refused = expect(
            StatusCode::OK,
            alice.refuse_document(id, "The photo is blurred").await,
        );
        assert_eq!(refused["document"]["status"], "refused");
        assert_eq!(refused["document"]["decided_by"], "staff:alice");
        // Decided once: reviewing it again is refused.
        let answer = alice.verify_document(id).await;
        assert_refused(&answer, StatusCode::CONFLICT, "document_decided");
        let mine = my_documents(&app).await;
        let seen = mine.iter().find(|d| d["id"] == id).unwrap();
        assert_eq!(seen["status"], "refused");
        assert_eq!(seen["reason"], "The photo is blurred");

        // Sent again (a PNG this time), then both verified.
        let again = expect(
            StatusCode::CREATED,
            app.upload("identity", "passport.png", PNG).await,
        );
        for document in [&again, &proof] {
            let body = expect(StatusCode::OK, alice.verify_document(&document["id"]).await);
            assert_eq!(body["document"]["status"], "verified");
        }
        let statuses: Vec<(String, String)> = my_documents(&app)
            .await
            .iter()
            .map(|d| {
                (
                    d["kind"].as_str().unwrap().to_owned(),
                    d["status"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        assert_eq!(
            statuses,
            [
                ("identity".to_owned(), "verified".to_owned()),
                ("iban_proof".to_owned(), "verified".to_owned()),
                ("identity".to_owned(), "refused".to_owned()),
            ]
        );
        // A verified kind is not sent again.
        assert_refused(
            &app.upload("iban_proof", "rib.pdf", PDF).await,
            StatusCode::CONFLICT,
            "document_already_sent",
        );
        // Now the account is verified, as before.
        let account = expect(StatusCode::OK, alice.verify_account(ana, IBAN).await);
        assert_eq!(account["status"], "verified");

        // Each step is in the trail, by whom it was done.
        let records: Vec<(String, String)> = sqlx::query_as(
            "SELECT actor, action FROM trail WHERE action LIKE 'document%' ORDER BY seq",
        )
        .fetch_all(&app.service.db.pool)
        .await
        .unwrap();
        let player = format!("player:{ana}:ana");
        let expected: Vec<(String, String)> = [
            (player.as_str(), "document_uploaded"),
            (player.as_str(), "document_uploaded"),
            ("staff:alice", "document_refused"),
            (player.as_str(), "document_uploaded"),
            ("staff:alice", "document_verified"),
            ("staff:alice", "document_verified"),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
        assert_eq!(records, expected);
        app.db.tresor_ok(&["audit", "verify"]);
    }
);

on_both!(
    a_demo_account_is_never_in_the_queue_and_sends_no_document,
    |app| {
        let alice = console(&app, "alice").await;
        app.player("dan", 0).await;
        assert!(queue_row(&alice, "dan").await.is_none());
        let all = alice.read("/console/api/accounts").await;
        assert!(
            !all["accounts"]
                .as_array()
                .unwrap()
                .iter()
                .any(|a| a["username"] == "dan"),
            "{all}"
        );
        assert_refused(
            &app.upload("identity", "id.jpg", JPEG).await,
            StatusCode::UNPROCESSABLE_ENTITY,
            "validation",
        );
        nothing_stored(&app).await;
    }
);

on_both!(the_players_listener_never_serves_a_document, |app| {
    open_account(&app, "ana").await;
    let document = expect(
        StatusCode::CREATED,
        app.upload("identity", "id.jpg", JPEG).await,
    );
    let id = document["id"].as_i64().unwrap();
    // Neither under the player's API nor the console's path on this listener.
    for path in [
        format!("/api/account/documents/{id}"),
        format!("/console/api/documents/{id}"),
    ] {
        let (status, body) = app.get(&path).await;
        assert!(
            status == StatusCode::NOT_FOUND || status == StatusCode::METHOD_NOT_ALLOWED,
            "{path}: {status} {body}"
        );
        assert!(!body.to_string().contains("JFIF"), "{path}: {body}");
    }
    // Nor to a console session without one (the console's own cookie).
    let response = reqwest::get(format!("{}/console/api/documents/{id}", app.admin_address))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
    // The player's list says what was sent, never its content.
    let text = app.get("/api/account/documents").await.1.to_string();
    assert!(!text.contains("JFIF") && !text.contains("sealed"), "{text}");
});

on_both!(
    the_command_line_reviews_documents_before_it_verifies_the_account,
    |app| {
        open_account(&app, "ana").await;
        let (_, identity) = app.upload("identity", "passport.jpg", JPEG).await;
        let (_, proof) = app.upload("iban_proof", "rib.png", PNG).await;
        let (identity, proof) = (
            identity["id"].as_i64().unwrap().to_string(),
            proof["id"].as_i64().unwrap().to_string(),
        );
        let text =
            |output: std::process::Output| String::from_utf8_lossy(&output.stdout).into_owned();

        // Listed, then opened to a new file: the bytes sent.
        let listed = text(app.db.tresor_ok(&["document", "list", "--username", "ana"]));
        assert!(
            listed.contains("passport.jpg") && listed.contains("pending"),
            "{listed}"
        );
        let folder = tempfile::tempdir().unwrap();
        let out = folder.path().join("passport.jpg");
        let out_arg = out.to_str().unwrap();
        app.db
            .tresor_ok(&["document", "show", &identity, "--out", out_arg]);
        assert_eq!(std::fs::read(&out).unwrap(), JPEG);
        // An existing file is never overwritten.
        let again = app
            .db
            .tresor(&["document", "show", &identity, "--out", out_arg]);
        assert_ne!(again.status.code(), Some(0));

        // Documents not verified yet: the account is not verified.
        let early = app
            .db
            .tresor(&["account", "verify", "--username", "ana", "--iban", IBAN]);
        assert_ne!(early.status.code(), Some(0), "verified without documents");

        // A reason too short is a usage error, nothing changed.
        let short = app
            .db
            .tresor(&["document", "refuse", &proof, "--reason", "no"]);
        assert_eq!(short.status.code(), Some(2));
        assert_eq!(my_documents(&app).await[0]["status"], "pending");
        app.db.tresor_ok(&[
            "document",
            "refuse",
            &proof,
            "--reason",
            "The IBAN on this page is not yours",
        ]);
        let refused = my_documents(&app).await;
        let refused = refused.iter().find(|d| d["kind"] == "iban_proof").unwrap();
        assert_eq!(refused["status"], "refused");
        assert_eq!(refused["reason"], "The IBAN on this page is not yours");
        // A decided document is not reviewed again.
        assert_ne!(
            app.db.tresor(&["document", "verify", &proof]).status.code(),
            Some(0)
        );

        // Sent again, both verified: the account is verified.
        let (_, proof) = app.upload("iban_proof", "rib.pdf", PDF).await;
        let proof = proof["id"].as_i64().unwrap().to_string();
        app.db.tresor_ok(&["document", "verify", &identity]);
        app.db.tresor_ok(&["document", "verify", &proof]);
        app.db
            .tresor_ok(&["account", "verify", "--username", "ana", "--iban", IBAN]);
        assert_eq!(
            count(
                &app,
                "SELECT COUNT(*) FROM trail WHERE action IN ('document_verified', 'document_refused') AND actor = 'operator'"
            )
            .await,
            3
        );
    }
);
