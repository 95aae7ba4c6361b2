//! What a block's commitment binds (issue 42, finding 3): the island's
//! commitment is `sha256(secret)`, so its table can only be the built-in
//! one; a file of the island's id that is not `games/ile-au-tresor.toml`
//! byte for byte (one level-2 prize instead of three at 50 c, here) is
//! refused by every command and by a server's start, where it used to
//! replace the built-in island and let one published block verify under
//! two prize tables. Every emission names its definition's SHA-256 in its
//! `emission_create` record, and `GET /api/blocks` gives each block's
//! definition and the form of its commitment.

mod browser;

use crate::common::games::{entry, shipped};
use crate::common::{Harness, TestApp, TestDb, assert_exit, texts, tresor};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::sync::Arc;
use tresor::games::Catalog;
use tresor::service::Settings;
use tresor_game::ile_au_tresor;

/// The island's file with one level-2 prize instead of three at 50 cents
/// (two more losing units): 15,700,000 c of prizes, 69.78 %.
fn altered_island() -> String {
    let text = std::fs::read_to_string(shipped("ile-au-tresor.toml")).unwrap();
    let three = "{ level = 2, units_per_block = 3, prize_cents = 25_000 }";
    assert_eq!(text.matches(three).count(), 1);
    text.replacen(
        three,
        "{ level = 2, units_per_block = 1, prize_cents = 25_000 }",
        1,
    )
    .replacen(
        "losing_units_per_block = 330_396",
        "losing_units_per_block = 330_398",
        1,
    )
}

/// A folder holding the altered island as `ile-au-tresor.toml`.
fn altered_folder() -> tempfile::TempDir {
    let folder = tempfile::tempdir().unwrap();
    std::fs::write(folder.path().join("ile-au-tresor.toml"), altered_island()).unwrap();
    folder
}

/// Asserts a refusal of the altered island: exit 2, one line naming the
/// rule, the built-in file and what to do.
fn assert_refused_island(output: &std::process::Output) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_exit(output, 2);
    assert!(
        stderr.contains("ile-au-tresor.toml: line 6: [duplicate-id]"),
        "{stderr}"
    );
    assert!(stderr.contains("built-in"), "{stderr}");
    assert!(stderr.contains(&ile_au_tresor().sha256_hex()), "{stderr}");
    assert!(stderr.contains("another id"), "{stderr}");
}

const ZEROS: &str = "0000000000000000000000000000000000000000000000000000000000000000";
/// `sha256(ZEROS)`: the island's commitment for that secret (docs/AUDIT.md).
const ZEROS_COMMITMENT: &str = "66687aadf862bd776c8fc18b8e9f8e20089714856ee233b3902a591d0d5f2925";

/// The commands that take a definition file refuse the altered island, so
/// that a published island block verifies under the built-in table alone.
#[test]
fn an_island_file_other_than_the_built_in_one_is_refused_by_every_command() {
    let folder = altered_folder();
    let file = folder.path().join("ile-au-tresor.toml");
    let file = file.to_str().unwrap();
    assert_refused_island(&tresor(&["game", "check", file]));
    let verify = |game: &[&str]| {
        let mut args = vec![
            "block",
            "verify",
            "--secret",
            ZEROS,
            "--commitment",
            ZEROS_COMMITMENT,
            "--stake",
            "50",
        ];
        args.extend_from_slice(game);
        tresor(&args)
    };
    assert_refused_island(&verify(&["--game", file]));
    assert_refused_island(&tresor(&[
        "block", "generate", "--secret", ZEROS, "--stake", "50", "--game", file,
    ]));
    assert_refused_island(&tresor(&[
        "scenario", "--secret", ZEROS, "--stake", "50", "--index", "0", "--game", file,
    ]));
    // The block verifies under one table: the built-in island's.
    let built_in = verify(&[]);
    assert_exit(&built_in, 0);
    let said = String::from_utf8_lossy(&built_in.stdout);
    assert!(
        said.contains("15750000 cents of prizes at 0,50 €"),
        "{said}"
    );
    let shipped_file = shipped("ile-au-tresor.toml");
    let same = verify(&["--game", shipped_file.to_str().unwrap()]);
    assert_exit(&same, 0);
}

/// The shipped catalogue: the island (built in) and « Trésor Express ».
fn settings() -> Settings {
    Settings {
        games: Arc::new(Catalog::new(vec![entry(&shipped("tresor-express.toml"))])),
        ..TestApp::settings()
    }
}

/// The `emission_create` records' requests, oldest first.
async fn emission_records(db: &TestDb) -> Vec<Value> {
    let db = db.connect().await;
    let requests = texts(
        &db.pool,
        "SELECT request FROM trail WHERE action = 'emission_create' ORDER BY seq",
    )
    .await;
    requests
        .iter()
        .map(|r| serde_json::from_str(r).unwrap())
        .collect()
}

/// The emission id `tresor emission create` printed.
fn created_id(output: &std::process::Output) -> String {
    let text = String::from_utf8_lossy(&output.stdout);
    text.strip_prefix("created emission ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("an emission id in: {text}"))
        .to_owned()
}

/// `emission create` and `serve` refuse the altered island before writing
/// anything; the shipped catalogue's emissions name their definition in
/// the trail, `GET /api/blocks` gives each block's definition, units and
/// commitment form, and each published block verifies with the command
/// the fairness page gives for it.
async fn an_island_file_other_than_the_built_in_one_sells_nothing_and_each_emission_names_its_definition(
    h: &Harness,
) {
    let folder = altered_folder();
    let dir = folder.path().to_str().unwrap();
    let refused = h.tresor(&["emission", "create", "--games", dir, "--stakes", "50"]);
    assert_refused_island(&refused);
    assert!(emission_records(h).await.is_empty(), "nothing was created");
    assert_refused_island(&h.tresor(&[
        "serve",
        "--games",
        dir,
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
    ]));

    // The shipped catalogue: an island emission and a scratch card's.
    let games = shipped("ile-au-tresor.toml");
    let games = games.parent().unwrap().to_str().unwrap();
    let island = h.tresor_ok(&["emission", "create", "--games", games, "--stakes", "50"]);
    let express = h.tresor_ok(&[
        "emission",
        "create",
        "--games",
        games,
        "--game",
        "tresor-express",
        "--stakes",
        "100",
    ]);
    let express_sha = hex::encode(Sha256::digest(
        std::fs::read(shipped("tresor-express.toml")).unwrap(),
    ));
    let island_sha = ile_au_tresor().sha256_hex();
    let records = emission_records(h).await;
    assert_eq!(records.len(), 2, "{records:?}");
    let pinned = [
        ("ile-au-tresor", &island_sha),
        ("tresor-express", &express_sha),
    ];
    for (record, (game, sha)) in records.iter().zip(pinned) {
        assert_eq!(record["game"], game, "{record}");
        assert_eq!(record["game_sha256"], sha.as_str(), "{record}");
    }
    h.tresor_ok(&["emission", "close", &created_id(&island)]);
    h.tresor_ok(&["emission", "close", &created_id(&express)]);

    let app = h.app_with(settings()).await;
    let (status, answer) = app.get("/api/blocks").await;
    assert_eq!(status, 200, "{answer}");
    // The two closed ones (the test app adds an open island emission).
    let blocks: Vec<&Value> = crate::common::items(&answer["blocks"], "blocks")
        .iter()
        .filter(|b| b["state"] == "closed")
        .collect();
    assert_eq!(blocks.len(), 2, "{answer}");
    let expected = [
        (
            "ile-au-tresor",
            450_000,
            island_sha.as_str(),
            "sha256(secret)",
        ),
        (
            "tresor-express",
            100_000,
            express_sha.as_str(),
            "sha256(secret || sha256(definition))",
        ),
    ];
    for (block, (game, units, sha, form)) in blocks.iter().zip(expected) {
        assert_eq!(block["game"], game, "{block}");
        assert_eq!(block["units_per_block"], units, "{block}");
        assert_eq!(block["game_sha256"], sha, "{block}");
        assert_eq!(block["commitment_form"], form, "{block}");
        // The page's command: the island's without a file, the other
        // game's with the file whose SHA-256 is the block's definition.
        let mut args = vec![
            "block".to_owned(),
            "verify".to_owned(),
            "--secret".to_owned(),
            block["secret"].as_str().unwrap().to_owned(),
            "--commitment".to_owned(),
            block["commitment"].as_str().unwrap().to_owned(),
            "--stake".to_owned(),
            block["stake_cents"].to_string(),
        ];
        if game != "ile-au-tresor" {
            let file = shipped(&format!("{game}.toml"));
            args.extend(["--game".to_owned(), file.display().to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let verified = tresor(&args);
        assert_exit(&verified, 0);
    }
    h.tresor_ok(&["audit", "verify"]);
}

/// An island emission made before this check from another file (as the
/// code before it let a catalogue do): its blocks' commitments do not cover
/// the file it pinned, and the start says so, naming the command that
/// closes it.
async fn an_island_emission_pinned_to_another_file_is_named_at_start(db: &TestDb) {
    let (service, _) = db.service_with(settings()).await;
    let text = altered_island();
    let sha = hex::encode(Sha256::digest(text.as_bytes()));
    sqlx::query(
        "INSERT INTO emissions (name, state, created_at_ms, game_id, game_sha256, definition) \
         VALUES ('Before', 'open', 1, 'ile-au-tresor', $1, $2)",
    )
    .bind(&sha)
    .bind(&text)
    .execute(&service.db.pool)
    .await
    .unwrap();
    let said = service.pinned_versions().await.unwrap();
    assert_eq!(said.len(), 1, "{said:?}");
    for words in [
        "emission 1 of ile-au-tresor pinned",
        &sha,
        "not the built-in island",
        "do not cover",
        "tresor emission close 1",
    ] {
        assert!(said[0].contains(words), "{said:?} does not say {words:?}");
    }
}

on_both!(
    an_island_file_other_than_the_built_in_one_sells_nothing_and_each_emission_names_its_definition,
    an_island_emission_pinned_to_another_file_is_named_at_start,
);
