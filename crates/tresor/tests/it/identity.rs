//! Identities for real money, through the HTTP API on both databases: the
//! national ban list is not evaded with invisible, look-alike or combining
//! characters; names hold only what names hold; older identities are
//! matched again at start; one account per person (two openings at once
//! included, and a unique index behind the check); and an exclusion reaches
//! every account of a person. Every refusal is checked to change nothing.

mod browser;

use crate::common::expect;
use crate::common::opening::assert_refused;
use crate::common::players::player;
use crate::common::{TestApp, execute};
use reqwest::StatusCode;
use serde_json::{Value, json};

const BORN: &str = "1980-04-02";

/// Opens an account for real money for a person born on [`BORN`]; the answer.
async fn open(
    app: &TestApp,
    username: &str,
    birth_name: &str,
    first_names: &str,
) -> (StatusCode, Value) {
    player(username)
        .birth_name(birth_name)
        .first_names(first_names)
        .born(BORN)
        .register(app)
        .await
}

/// Everything an opening writes: players, accounts, identities, the trail.
async fn snapshot(app: &TestApp) -> Vec<i64> {
    let mut counts = Vec::new();
    for table in [
        "players",
        "accounts",
        "identities",
        "player_accounts",
        "trail",
    ] {
        counts.push(
            sqlx::query_scalar(&format!("SELECT COUNT(*) FROM {table}"))
                .fetch_one(&app.service.db.pool)
                .await
                .unwrap(),
        );
    }
    counts
}

on_both!(
    the_ban_list_is_not_evaded_with_invisible_look_alike_or_combining_characters,
    |app| {
        let import = app
            .service
            .import_ban_list(&format!(
                "birth_name,first_names,birth_date\nDupont,Jean,{BORN}\nMüller,Anna,{BORN}\nDur\u{200B}and,Paul,{BORN}\n"
            ))
            .await
            .unwrap();
        assert_eq!(import.entries, 3);
        let before = snapshot(&app).await;
        for (i, (birth_name, first_names)) in [
            ("Dup\u{AD}ont", "Jean"),
            ("Dup\u{200B}ont", "Jean"),
            ("DUPONT", "JEAN"),
            ("Ｄupont", "Jean"),
            ("Dupont", "Je\u{200D}an"),
            ("Mu\u{308}ller", "Anna"),
            ("MÜLLER", "Anna"),
            // The list's own invisible character is keyed away too.
            ("Durand", "Paul"),
        ]
        .into_iter()
        .enumerate()
        {
            let answer = open(&app, &format!("player_p{i}"), birth_name, first_names).await;
            assert_refused(&answer, StatusCode::FORBIDDEN, "banned");
        }
        // A look-alike letter of another script, digits, symbols: not names.
        for (i, (birth_name, first_names, field)) in [
            ("Dup\u{43E}nt", "Jean", "birth_name"),
            ("Dup0nt", "Jean", "birth_name"),
            ("Dupont", "Jean$", "first_names"),
            ("Dupont", "Je\u{430}n", "first_names"),
        ]
        .into_iter()
        .enumerate()
        {
            let answer = open(&app, &format!("player_q{i}"), birth_name, first_names).await;
            assert_refused(&answer, StatusCode::UNPROCESSABLE_ENTITY, "validation");
            let message = answer.1["error"]["message"].as_str().unwrap();
            assert!(message.starts_with(&format!("{field}: ")), "{message}");
        }
        // A control character is refused at the edge, before any check of
        // names (issue 42, finding 10).
        let answer = open(&app, "player_r", "Du\u{1}pont", "Jean").await;
        assert_refused(
            &answer,
            StatusCode::UNPROCESSABLE_ENTITY,
            "control_character",
        );
        let message = answer.1["error"]["message"].as_str().unwrap();
        assert!(message.starts_with("identity.birth_name: "), "{message}");
        assert_eq!(snapshot(&app).await, before, "no refusal wrote anything");
        // Someone else opens, and the name is stored without its invisible
        // character.
        expect(
            StatusCode::CREATED,
            open(&app, "jeanne", "Du\u{AD}pond", "Jeanne").await,
        );
        let (_, account) = app.get("/api/account").await;
        assert_eq!(account["identity"]["birth_name"], "Dupond");
    }
);

on_both!(
    older_identities_and_ban_entries_are_matched_again_at_start,
    |app| {
        expect(
            StatusCode::CREATED,
            open(&app, "ana", "Lefèvre", "Anne").await,
        );
        let ana = app.service.player_by_username("ana").await.unwrap();
        // As an older server left them: the soft hyphen kept, the name
        // folded the old way, no person key; the ban list keyed the old way.
        let pool = &app.service.db.pool;
        sqlx::query(
            "UPDATE identities SET birth_name = $1, name_key = 'dup ont|jean', person_key = NULL \
             WHERE player_id = $2",
        )
        .bind("Dup\u{AD}ont")
        .bind(ana.id)
        .execute(pool)
        .await
        .unwrap();
        sqlx::query("UPDATE identities SET first_names = 'Jean' WHERE player_id = $1")
            .bind(ana.id)
            .execute(pool)
            .await
            .unwrap();
        sqlx::query(
            "INSERT INTO ban_entries (name_key, birth_date, key_version) VALUES ('dupont|jean', $1, 1)",
        )
        .bind(BORN)
        .execute(pool)
        .await
        .unwrap();
        assert_eq!(app.get("/api/account").await.1["banned"], false);

        let rekeyed = app.service.rematch_identities().await.unwrap();
        assert_eq!((rekeyed.identities, rekeyed.ban_entries), (1, 1));
        // Banned at once: the session ended, and staking is refused.
        let (status, _) = app.get("/api/account").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        app.login("ana", "a long password").await;
        assert_eq!(app.get("/api/account").await.1["banned"], true);
        let record = trail_result(pool, "identities_rematched").await;
        assert_eq!(record["banned_player_ids"], json!([ana.id]));
        // Nothing is left to key: the next start changes nothing.
        assert_eq!(
            app.service.rematch_identities().await.unwrap(),
            Default::default()
        );
        let output = app.db.tresor_ok(&["audit", "verify"]);
        assert!(output.status.success());
    }
);

on_both!(one_person_opens_one_account, |app| {
    expect(
        StatusCode::CREATED,
        open(&app, "ana", "Lefèvre", "Anne Marie").await,
    );
    let before = snapshot(&app).await;
    // The same person written otherwise: case, accents, hyphens, spaces.
    for (i, (birth_name, first_names)) in [
        ("LEFEVRE", "anne-marie"),
        ("Lefe\u{300}vre", "Anne  Marie"),
        ("lefèvre", "ANNE MARIE"),
    ]
    .into_iter()
    .enumerate()
    {
        let answer = open(
            &app.another_client(),
            &format!("ana{i}"),
            birth_name,
            first_names,
        )
        .await;
        assert_refused(&answer, StatusCode::CONFLICT, "person_has_account");
        assert!(
            answer.1["error"]["message"]
                .as_str()
                .unwrap()
                .contains("one account per person")
        );
    }
    assert_eq!(snapshot(&app).await, before, "nothing written");
    // Closed, the account still is the person's.
    expect(
        StatusCode::OK,
        app.post("/api/account/close", json!({"confirm": true}))
            .await,
    );
    let answer = open(&app.another_client(), "ana_again", "Lefèvre", "Anne Marie").await;
    assert_refused(&answer, StatusCode::CONFLICT, "person_has_account");
    // Another person born the same day is another person.
    expect(
        StatusCode::CREATED,
        open(&app.another_client(), "bea", "Lefèvre", "Béatrice").await,
    );

    // Two openings of one person at once: one account.
    let (one, two) = (app.another_client(), app.another_client());
    let (first, second) = tokio::join!(
        open(&one, "cleo", "Martin", "Cléo"),
        open(&two, "cleo2", "MARTIN", "Cleo"),
    );
    let mut statuses = [first.0, second.0];
    statuses.sort();
    assert_eq!(
        statuses,
        [StatusCode::CREATED, StatusCode::CONFLICT],
        "{first:?} {second:?}"
    );

    // The unique index holds it whatever the code does.
    let pool = &app.service.db.pool;
    let cleo: i64 = sqlx::query_scalar(
        "SELECT player_id FROM identities WHERE birth_name IN ('Martin', 'MARTIN')",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    let bea = app.service.player_by_username("bea").await.unwrap();
    let forced = sqlx::query(
        "UPDATE identities SET person_key = (SELECT person_key FROM identities WHERE player_id = $1) \
         WHERE player_id = $2",
    )
    .bind(cleo)
    .bind(bea.id)
    .execute(pool)
    .await;
    assert!(forced.is_err(), "two accounts of one person: {forced:?}");
});

on_both!(
    an_exclusion_reaches_every_account_of_the_person_and_a_second_one_takes_no_money,
    |app| {
        // Two accounts of one person, as a database from before the rule
        // holds them: opened as two people, then found to be one.
        expect(
            StatusCode::CREATED,
            open(&app, "ana", "Lefèvre", "Anne").await,
        );
        let other = app.another_client();
        expect(
            StatusCode::CREATED,
            open(&other, "ana_bis", "Autre", "Anne").await,
        );
        let second = app.service.player_by_username("ana_bis").await.unwrap();
        app.service
            .credit_as(tresor::trail::Actor::staff("cleo"), &second, 1_000)
            .await
            .unwrap();
        let pool = &app.service.db.pool;
        execute(pool, &["UPDATE identities SET person_key = NULL"]).await;
        sqlx::query("UPDATE identities SET birth_name = 'Lefevre' WHERE player_id = $1")
            .bind(second.id)
            .execute(pool)
            .await
            .unwrap();
        let rekeyed = app.service.rematch_identities().await.unwrap();
        let first = app.service.player_by_username("ana").await.unwrap();
        assert_eq!(rekeyed.duplicates, vec![(second.id, first.id)]);

        // The second account takes no money in and no stake: caps cannot
        // be doubled.
        assert_refused(
            &other.deposit(500).await,
            StatusCode::FORBIDDEN,
            "duplicate_account",
        );
        assert_refused(
            &other.buy(100).await,
            StatusCode::FORBIDDEN,
            "duplicate_account",
        );
        assert_eq!(other.get("/api/account").await.1["can_stake"], false);
        assert_eq!(app.get("/api/account").await.1["can_stake"], true);

        // The person excludes themselves on one account: both are excluded,
        // and the other's session ends.
        expect(
            StatusCode::OK,
            app.post("/api/exclusion", json!({"period": "1m"})).await,
        );
        assert_eq!(other.get("/api/me").await.0, StatusCode::UNAUTHORIZED);
        let body = expect(
            StatusCode::FORBIDDEN,
            other.login("ana_bis", "a long password").await,
        );
        assert_eq!(body["error"]["code"], "excluded");
        let record = trail_result(pool, "exclude").await;
        assert_eq!(record["also_excluded_player_ids"], json!([second.id]));
        app.assert_ledger_balances().await;
    }
);

/// The result of the trail's record of `action` (the only one), as JSON.
async fn trail_result(pool: &sqlx::AnyPool, action: &str) -> Value {
    let record: String = sqlx::query_scalar("SELECT result FROM trail WHERE action = $1")
        .bind(action)
        .fetch_one(pool)
        .await
        .unwrap();
    serde_json::from_str(&record).unwrap()
}
