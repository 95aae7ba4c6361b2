//! The link that undoes an address change, mailed to the old address
//! (issue 32), through the HTTP API on both databases, reading the mail the
//! server writes to its outbox. The owner undoes a thief's change within
//! seven days; and (issue 42, finding 1) the link no longer hands the
//! account to whoever holds a mailbox the owner left: it goes only to an
//! address that was confirmed, an undo puts the old address back as it was
//! (never confirming one), and a later change made with the password (a new
//! address, a new password, a reset) spends it. Each attack as the review
//! told it: the attacker's login fails, the owner's works.

mod browser;

use crate::account_guard::trail_count;
use crate::common::TestApp;
use crate::common::expect;
use crate::common::opening::{
    DAY_MS, PASSWORD, assert_refused, confirm_address, count, latest_token, link_in, mails_to,
    open_account, token_of,
};
use crate::common::players::player;
use reqwest::StatusCode;
use serde_json::{Value, json};

const THIEF: &str = "thief@example.net";
const MISTYPED: &str = "maud@gmial.example";
const OWNERS_NEW: &str = "the owner's new password";
const ATTACKERS: &str = "the attacker's password";

/// Reset links stored for the player `username`, used or not.
async fn reset_links(app: &TestApp, username: &str) -> i64 {
    count(
        app,
        &format!(
            "SELECT COUNT(*) FROM mail_tokens t JOIN players p ON p.id = t.player_id \
             WHERE t.purpose = 'password_reset' AND p.username = '{username}'"
        ),
    )
    .await
}

/// Reset links stored for `address`, used or not.
async fn resets_to(app: &TestApp, address: &str) -> i64 {
    count(
        app,
        &format!(
            "SELECT COUNT(*) FROM mail_tokens WHERE purpose = 'password_reset' \
             AND email = '{address}'"
        ),
    )
    .await
}

/// What whoever holds the mailbox `address` does: uses the undo link it
/// received, if any (its answer), then asks a reset to it and, if a link
/// comes, sets [`ATTACKERS`] with it (its answer).
async fn take_back_through(
    app: &TestApp,
    attacker: &TestApp,
    address: &str,
) -> (Option<(StatusCode, Value)>, Option<(StatusCode, Value)>) {
    let undo = match latest_token(app, address, 1, "/#/undo-email/").await {
        Some(token) => Some(
            attacker
                .post("/api/email/undo", json!({"token": token}))
                .await,
        ),
        None => None,
    };
    let (before, mails) = (
        resets_to(app, address).await,
        mails_to(app, address, 0).await.len(),
    );
    let (status, _) = attacker.ask_reset(address).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let reset = if resets_to(app, address).await > before {
        let token = latest_token(app, address, mails + 1, "/#/reset/").await;
        let body = json!({"token": token.expect("the reset mail"), "new_password": ATTACKERS});
        Some(attacker.post("/api/password/reset/confirm", body).await)
    } else {
        None
    };
    (undo, reset)
}

/// The attacker's logins fail; the owner's (`username`, [`OWNERS_NEW`])
/// works, and the address on file is `email`, confirmed.
async fn owner_keeps_the_account(app: &TestApp, username: &str, email: &str) {
    for password in [ATTACKERS, PASSWORD] {
        let answer = app.another_client().login(username, password).await;
        assert_refused(&answer, StatusCode::UNAUTHORIZED, "invalid_credentials");
    }
    let owner = app.another_client();
    let (status, body) = owner.login(username, OWNERS_NEW).await;
    assert_eq!(status, StatusCode::OK, "the owner's login: {body}");
    let (_, account) = owner.get("/api/account").await;
    assert_eq!(account["identity"]["email"], email, "{account}");
    assert!(account["email_confirmed_at"].is_string(), "{account}");
}

on_both!(
    a_mistyped_address_never_confirmed_gets_no_undo_link_and_takes_nothing,
    |app| {
        // (a) The owner opens the account with a mistyped address, never
        // confirmed, then sets the right one, confirms it and changes the
        // password.
        player("maud").email(MISTYPED).on(&app).await;
        expect(
            StatusCode::OK,
            app.change_email("maud@example.org", PASSWORD).await,
        );
        confirm_address(&app, "maud@example.org").await;
        expect(
            StatusCode::OK,
            app.change_password(PASSWORD, OWNERS_NEW).await,
        );

        // Whoever holds the mistyped mailbox tries what the review did.
        let attacker = app.another_client();
        let (undo, reset) = take_back_through(&app, &attacker, MISTYPED).await;
        owner_keeps_the_account(&app, "maud", "maud@example.org").await;
        // No undo link went to the address never confirmed, nor any reset.
        assert_eq!(undo, None, "an undo link went to {MISTYPED}");
        assert_eq!(reset, None, "a reset went to {MISTYPED}");
        let said: String = sqlx::query_scalar(
            "SELECT result FROM trail WHERE action = 'email_set' ORDER BY seq DESC",
        )
        .fetch_one(&app.service.db.pool)
        .await
        .unwrap();
        let said: Value = serde_json::from_str(&said).unwrap();
        assert_eq!(said["undo_until"], Value::Null, "{said}");
        assert_eq!(trail_count(&app, "email_change_undone").await, 0);
    }
);

/// (b) A thief who phished the password sets their address (and confirms
/// it, when `thief_confirms`); the owner sets their own back, confirms it
/// and sets a new password; the thief tries the undo link and a reset.
async fn phished_then_taken_back(app: &TestApp, thief_confirms: bool) {
    open_account(app, "bea").await;
    confirm_address(app, "bea@example.org").await;
    let thief = app.another_client();
    assert_eq!(thief.login("bea", PASSWORD).await.0, StatusCode::OK);
    expect(StatusCode::OK, thief.change_email(THIEF, PASSWORD).await);
    if thief_confirms {
        confirm_address(app, THIEF).await;
    }
    let owner = app.another_client();
    assert_eq!(owner.login("bea", PASSWORD).await.0, StatusCode::OK);
    expect(
        StatusCode::OK,
        owner.change_email("bea@example.org", PASSWORD).await,
    );
    // The opening's confirmation, the first change's notice, this one's link.
    let token = latest_token(app, "bea@example.org", 3, "/#/confirm-email/").await;
    expect(
        StatusCode::OK,
        owner
            .post("/api/email/confirm", json!({"token": token.unwrap()}))
            .await,
    );
    expect(
        StatusCode::OK,
        owner.change_password(PASSWORD, OWNERS_NEW).await,
    );

    let (undo, reset) = take_back_through(app, &thief, THIEF).await;
    owner_keeps_the_account(app, "bea", "bea@example.org").await;
    if thief_confirms {
        // The link went to the thief's confirmed address, and the owner's
        // password change, made after it, spent it.
        let undo = undo.expect("an undo link to a confirmed address");
        assert_refused(&undo, StatusCode::BAD_REQUEST, "invalid_token");
    } else {
        assert_eq!(undo, None, "an undo link went to {THIEF}, never confirmed");
    }
    assert_eq!(reset, None, "a reset went to {THIEF}");
    assert_eq!(trail_count(app, "email_change_undone").await, 0);
}

on_both!(
    a_phished_account_taken_back_by_its_owner_stays_the_owners,
    |app| {
        phished_then_taken_back(&app, false).await;
    }
);

on_both!(
    a_phished_account_taken_back_stays_the_owners_even_if_the_thief_confirmed_an_address,
    |app| {
        phished_then_taken_back(&app, true).await;
    }
);

/// Changes the address of `app`'s player to `email` with [`PASSWORD`].
async fn change_to(app: &TestApp, email: &str, password: &str) {
    expect(StatusCode::OK, app.change_email(email, password).await);
}

async fn undo(app: &TestApp, token: &str) -> (StatusCode, Value) {
    app.another_client()
        .post("/api/email/undo", json!({"token": token}))
        .await
}

on_both!(
    an_undo_link_dies_with_a_later_address_password_or_reset,
    |app| {
        open_account(&app, "lea").await;
        confirm_address(&app, "lea@example.org").await;
        // A later address: the first link is spent.
        change_to(&app, "lea@example.net", PASSWORD).await;
        let first = latest_token(&app, "lea@example.org", 2, "/#/undo-email/").await;
        confirm_address(&app, "lea@example.net").await;
        change_to(&app, "lea@example.com", PASSWORD).await;
        let first = undo(&app, &first.unwrap()).await;
        assert_refused(&first, StatusCode::BAD_REQUEST, "invalid_token");
        // A later password: the second link is spent.
        let second = latest_token(&app, "lea@example.net", 2, "/#/undo-email/").await;
        expect(
            StatusCode::OK,
            app.change_password(PASSWORD, OWNERS_NEW).await,
        );
        let second = undo(&app, &second.unwrap()).await;
        assert_refused(&second, StatusCode::BAD_REQUEST, "invalid_token");
        // A later reset: the third link is spent.
        confirm_address(&app, "lea@example.com").await;
        change_to(&app, "lea@example.eu", OWNERS_NEW).await;
        // Its confirmation, the password change's notice, the undo link.
        let third = latest_token(&app, "lea@example.com", 3, "/#/undo-email/").await;
        confirm_address(&app, "lea@example.eu").await;
        app.ask_reset("lea@example.eu").await;
        let reset = latest_token(&app, "lea@example.eu", 2, "/#/reset/").await;
        let body = json!({"token": reset.unwrap(), "new_password": "after the reset"});
        expect(
            StatusCode::OK,
            app.post("/api/password/reset/confirm", body).await,
        );
        let third = undo(&app, &third.unwrap()).await;
        assert_refused(&third, StatusCode::BAD_REQUEST, "invalid_token");
        // Nothing was undone: the address is the latest, confirmed.
        let owner = app.another_client();
        assert_eq!(
            owner.login("lea", "after the reset").await.0,
            StatusCode::OK
        );
        let (_, account) = owner.get("/api/account").await;
        assert_eq!(account["identity"]["email"], "lea@example.eu");
        assert!(account["email_confirmed_at"].is_string(), "{account}");
        assert_eq!(trail_count(&app, "email_change_undone").await, 0);
    }
);

on_both!(
    an_undo_puts_the_old_address_back_as_it_was_and_confirms_nothing,
    |app| {
        open_account(&app, "ida").await;
        confirm_address(&app, "ida@example.org").await;
        let (_, account) = app.get("/api/account").await;
        let confirmed_at = account["email_confirmed_at"].clone();
        assert!(confirmed_at.is_string(), "{account}");
        app.clock.advance_ms(60_000);
        change_to(&app, "ida@example.net", PASSWORD).await;
        // The new address confirmed too (the thief holds it): the link
        // still undoes the change.
        confirm_address(&app, "ida@example.net").await;
        let link = latest_token(&app, "ida@example.org", 2, "/#/undo-email/").await;
        app.clock.advance_ms(60_000);
        expect(StatusCode::OK, undo(&app, &link.unwrap()).await);
        let owner = app.another_client();
        assert_eq!(owner.login("ida", PASSWORD).await.0, StatusCode::OK);
        let (_, account) = owner.get("/api/account").await;
        assert_eq!(account["identity"]["email"], "ida@example.org");
        // Confirmed when it was, not by the undo.
        assert_eq!(account["email_confirmed_at"], confirmed_at, "{account}");
    }
);

on_both!(a_link_mailed_before_it_was_bound_undoes_nothing, |app| {
    // A change recorded as migration 0018 kept it (no undo_state), its old
    // address confirmed: what an installation holds when it upgrades.
    open_account(&app, "old").await;
    confirm_address(&app, "old@example.org").await;
    change_to(&app, "old@example.net", PASSWORD).await;
    let token = "a link mailed before migration 0024";
    let now_ms = app.service.now_ms();
    sqlx::query(
        "INSERT INTO email_changes (player_id, old_email, old_confirmed_at_ms, new_email, \
         changed_at_ms, undo_token_hash, undo_until_ms) \
         SELECT id, 'old@example.org', $1, 'old@example.net', $1, $2, $3 \
         FROM players WHERE username = 'old'",
    )
    .bind(now_ms)
    .bind(tresor::service::sha256_hex(token.as_bytes()))
    .bind(now_ms + DAY_MS)
    .execute(&app.service.db.pool)
    .await
    .unwrap();
    assert_refused(
        &undo(&app, token).await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    let (_, account) = app.get("/api/account").await;
    assert_eq!(account["identity"]["email"], "old@example.net", "{account}");
});

on_both!(a_stolen_session_cannot_take_the_account, |app| {
    open_account(&app, "owen").await;
    confirm_address(&app, "owen@example.org").await;
    let elsewhere = app.another_client();
    assert_eq!(elsewhere.login("owen", PASSWORD).await.0, StatusCode::OK);
    // The thief holds the owner's cookie (app's client), not the password:
    // the change as the report made it, then with a guess, is refused.
    let refused = app
        .put_json("/api/account/email", json!({"email": THIEF}))
        .await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    let refused = app.change_email(THIEF, "a guess at it").await;
    assert_refused(&refused, StatusCode::UNPROCESSABLE_ENTITY, "validation");
    assert!(
        refused.1["error"]["message"]
            .as_str()
            .unwrap()
            .starts_with("current_password"),
        "{}",
        refused.1
    );
    let (_, account) = app.get("/api/account").await;
    assert_eq!(account["identity"]["email"], "owen@example.org");
    assert!(account["email_confirmed_at"].is_string(), "{account}");
    // A reset for the thief's address sends nothing (no account has it).
    let (status, _) = app.ask_reset(THIEF).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(reset_links(&app, "owen").await, 0);

    // With the password too (a thief who has it, or the owner), the new
    // address is not confirmed: a reset does not go to it.
    let account = expect(StatusCode::OK, app.change_email(THIEF, PASSWORD).await);
    assert_eq!(account["identity"]["email"], THIEF);
    let (status, _) = app.ask_reset(THIEF).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    assert_eq!(
        reset_links(&app, "owen").await,
        0,
        "no reset to an unconfirmed address"
    );
    // The old address is told, with a link that undoes the change.
    let told = mails_to(&app, "owen@example.org", 2).await;
    let notice = told
        .iter()
        .find(|m| m.contains("/#/undo-email/"))
        .unwrap_or_else(|| panic!("no undo link in {told:?}"));
    assert!(notice.contains("valid once, until"), "{notice}");
    let undo = token_of(&link_in(notice, "/#/undo-email/"));
    let thief_confirm = token_of(&link_in(
        &mails_to(&app, THIEF, 1).await[0],
        "/#/confirm-email/",
    ));
    // The owner opens it (no session needed): the address is back,
    // confirmed, and every session ended, the thief's first.
    let owner = app.another_client();
    expect(
        StatusCode::OK,
        owner.post("/api/email/undo", json!({"token": undo})).await,
    );
    assert_eq!(app.get("/api/account").await.0, StatusCode::UNAUTHORIZED);
    assert_eq!(
        elsewhere.get("/api/account").await.0,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(owner.login("owen", PASSWORD).await.0, StatusCode::OK);
    let (_, account) = owner.get("/api/account").await;
    assert_eq!(account["identity"]["email"], "owen@example.org");
    assert!(account["email_confirmed_at"].is_string(), "{account}");
    assert_eq!(trail_count(&app, "email_change_undone").await, 1);
    // The link works once; the thief's confirmation link is spent.
    assert_refused(
        &owner.post("/api/email/undo", json!({"token": undo})).await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    assert_refused(
        &owner
            .post("/api/email/confirm", json!({"token": thief_confirm}))
            .await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    // A reset goes to the owner's confirmed address again.
    owner.ask_reset("owen@example.org").await;
    assert_eq!(reset_links(&app, "owen").await, 1);
});

on_both!(an_address_change_is_undone_within_seven_days_only, |app| {
    open_account(&app, "una").await;
    confirm_address(&app, "una@example.org").await;
    change_to(&app, "una@example.net", PASSWORD).await;
    let told = mails_to(&app, "una@example.org", 2).await;
    let notice = told.iter().find(|m| m.contains("/#/undo-email/")).unwrap();
    let undo = token_of(&link_in(notice, "/#/undo-email/"));
    app.clock.advance_ms(7 * DAY_MS + 60_000);
    assert_refused(
        &app.post("/api/email/undo", json!({"token": undo})).await,
        StatusCode::BAD_REQUEST,
        "invalid_token",
    );
    let owner = app.another_client();
    assert_eq!(owner.login("una", PASSWORD).await.0, StatusCode::OK);
    let (_, account) = owner.get("/api/account").await;
    assert_eq!(account["identity"]["email"], "una@example.net");
});
