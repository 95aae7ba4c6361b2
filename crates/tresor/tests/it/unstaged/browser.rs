//! The game page and a play whose scene cannot be staged (issue 42,
//! finding 2; `tests/it/unstaged.rs` for the server): the server sends
//! `"scenario":{"kind":"unavailable"}` with the play's outcome. The page
//! resumes such a play, its four throws are made with « Lancer », and the
//! end shows the outcome (won amount, or not won) with a plain word that the
//! scene cannot be shown; the history lists it and shows it again the same
//! way; no JavaScript error. « La Ligne » (nine land squares in a row)
//! stages no unit at all: it is put in the catalogue unchecked, as only a
//! test can.

use crate::common::TestApp;
use crate::common::browser::Browser;
use crate::common::page::{PASSWORD, browser_in_turn};
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tresor::games::{Catalog, Entry};
use tresor::service::Settings;
use tresor::trail::Actor;
use tresor_game::Game;

/// « La Ligne », read but not checked.
fn ligne() -> Entry {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/games/refused/ligne.toml");
    let text = std::fs::read_to_string(path).unwrap();
    Entry::new(Game::parse(&text).unwrap().leak(), text)
}

fn settings() -> Settings {
    Settings {
        games: Arc::new(Catalog::new(vec![ligne()])),
        ..TestApp::settings()
    }
}

/// The status line and what the game screen says of itself.
async fn screen(browser: &Browser) -> Value {
    browser
        .execute(
            "const s = document.querySelector('#screen-game');
             return {status: document.querySelector('#game-status').textContent,
                     scene: s.dataset.scene ?? null, outcome: s.dataset.outcome ?? null,
                     used: document.querySelector('#pips').dataset.used};",
        )
        .await
}

/// A player with 10 €, and a unit of « La Ligne » bought (the page sells
/// the island alone: the API buys it); its id and prize.
async fn buy_a_ligne(browser: &Browser) -> (i64, i64) {
    let key = hex::encode(&tresor::service::os_random_32()[..12]);
    let play = browser
        .in_page(&format!(
            "post('/api/register', {{username: 'ana', password: {PASSWORD:?}, adult: true, accept_rules: true}})
               .then(() => post('/api/demo/deposit', {{amount_cents: 1000}}))
               .then(() => post('/api/plays', {{stake_cents: 100, game: 'ligne'}}, {{'Idempotency-Key': '{key}'}}))
               .then((r) => r.json())
               .then((play) => {{ localStorage.setItem('tresor.session', '1'); done(play); }}, (e) => done(String(e)));"
        ))
        .await;
    assert_eq!(play["scenario"], json!({"kind": "unavailable"}), "{play}");
    let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
    (play["id"].as_i64().unwrap(), prize)
}

/// « Lancer » four times: the counter moves, then the outcome shows with
/// the word that the scene cannot be shown.
async fn throw_to_the_end(browser: &Browser, prize: i64) {
    for thrown in 1..=4 {
        browser
            .click_until(
                "#throw",
                &format!("document.querySelector('#pips').dataset.used === '{thrown}'"),
            )
            .await;
    }
    browser
        .wait_for("document.querySelector('#screen-game').dataset.outcome")
        .await;
    if prize > 0 {
        browser.wait_open("#dlg-win").await;
        browser.click("#win-close").await;
    }
    let shown = screen(browser).await;
    let status = shown["status"].as_str().unwrap();
    assert!(status.contains(UNSHOWN), "{shown}");
    let (outcome, said) = if prize > 0 {
        ("won", "vous avez gagné")
    } else {
        ("lost", "pas de gain")
    };
    assert_eq!(shown["outcome"], outcome, "{shown}");
    assert!(status.contains(said), "{shown}");
}

/// The words of `scene.unavailable` in French.
const UNSHOWN: &str = "ne peut pas être montrée";

on_sqlite!(
    the_page_plays_a_unit_whose_scene_cannot_be_staged_to_its_outcome,
    settings(),
    |app| {
        let (_turn, browser) = browser_in_turn(1280, 900).await;
        app.service
            .create_game_emission(Actor::Operator, "Ligne", "ligne", &[100], 1)
            .await
            .unwrap();
        browser.goto(&format!("{}/?fast=1#/", app.address)).await;
        let (id, prize) = buy_a_ligne(&browser).await;
        // Reloaded, the page resumes the play: no walk, a plain word why.
        browser.reload_after("").await;
        browser
            .wait_for("document.body.dataset.user === 'in'")
            .await;
        browser
            .wait_for(&format!(
                "document.querySelector('#screen-game').dataset.playId === '{id}'
                 && document.querySelector('#game-status').textContent !== ''"
            ))
            .await;
        let shown = screen(&browser).await;
        assert!(
            shown["status"].as_str().unwrap().contains(UNSHOWN),
            "{shown}"
        );
        assert_eq!(shown["scene"], "unavailable", "{shown}");
        throw_to_the_end(&browser, prize).await;
        let finished = browser.fetch_play(id).await;
        assert_eq!(finished["state"], "finished", "{finished}");

        // The history lists it, and shows it again the same way.
        browser
            .goto_until(
                &format!("{}/?fast=1#/history", app.address),
                &format!("document.querySelector('#screen-history').textContent.includes('{id}')"),
            )
            .await;
        browser
            .goto_until(
                &format!("{}/?fast=1#/replay/{id}", app.address),
                &format!(
                    "document.querySelector('#game-status').textContent.includes('{UNSHOWN}')"
                ),
            )
            .await;
        assert_eq!(screen(&browser).await["scene"], "unavailable");
        // In English too.
        browser
            .click_until(
                "#lang",
                "document.querySelector('#game-status').textContent.includes('cannot be shown')",
            )
            .await;
        browser.close_without_console_errors().await;
    }
);
