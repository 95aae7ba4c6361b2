//! A unit whose scene cannot be staged never fails a request (issue 42,
//! finding 2). `tresor game check` refuses such a definition, but a server
//! reads each emission's pinned text without the check (an emission made
//! before the check refused it keeps its version), so a purchase may already
//! be committed: its answer, `GET /api/plays/{id}`, the history and the
//! throws show the play with its outcome and no scene, and the server logs
//! why (and warns of the block as it loads it). « La Ligne » (`tests/it/games/refused/ligne.toml`, nine land
//! squares in a row) stages no unit at all; it is put in the catalogue
//! unchecked, as only a test can.

mod browser;

use crate::common::TestApp;
use crate::common::expect;
use reqwest::StatusCode;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use tresor::games::{Catalog, Entry};
use tresor::service::Settings;
use tresor::trail::Actor;
use tresor_game::{Game, Rule};

/// « La Ligne », read but not checked.
fn ligne() -> Entry {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/games/refused/ligne.toml");
    let text = std::fs::read_to_string(path).unwrap();
    let game = Game::parse(&text).unwrap().leak();
    let refused = game.check(10_000).unwrap_err();
    assert_eq!(refused.rule, Rule::Scene, "{refused}");
    Entry::new(game, text)
}

fn settings() -> Settings {
    Settings {
        games: Arc::new(Catalog::new(vec![ligne()])),
        ..TestApp::settings()
    }
}

/// The plays' error lines and the blocks' warnings, captured for the whole
/// test binary (no other test installs a subscriber).
fn logged() -> String {
    static LOG: OnceLock<Arc<Mutex<Vec<u8>>>> = OnceLock::new();
    let log = LOG.get_or_init(|| {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::{Layer, filter::Targets, fmt};
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = log.clone();
        let layer = fmt::layer()
            .with_ansi(false)
            .with_writer(move || Sink(sink.clone()))
            .with_filter(
                Targets::new()
                    .with_target("tresor::service::plays", tracing::Level::ERROR)
                    .with_target("tresor::service::blocks", tracing::Level::WARN),
            );
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        log
    });
    String::from_utf8_lossy(&log.lock().unwrap()).into_owned()
}

struct Sink(Arc<Mutex<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Asserts `play` is play `id` with `outcome` and no scene.
fn assert_shown_without_scene(play: &Value, id: i64, outcome: &Value) {
    assert_eq!(play["id"], id, "{play}");
    assert_eq!(play["game"]["id"], "ligne", "{play}");
    assert_eq!(&play["outcome"], outcome, "{play}");
    assert_eq!(play["scenario"], json!({"kind": "unavailable"}), "{play}");
}

on_both!(
    a_unit_whose_scene_cannot_be_staged_is_shown_with_its_outcome_and_fails_no_request,
    settings(),
    |app| {
        logged();
        app.service
            .create_game_emission(Actor::Operator, "Ligne", "ligne", &[100], 1)
            .await
            .unwrap();
        app.player("ana", 1_000).await;
        let key = hex::encode(&tresor::service::os_random_32()[..12]);
        let bought = expect(
            StatusCode::CREATED,
            app.post_raw(
                "/api/plays",
                &json!({"stake_cents": 100, "game": "ligne"}).to_string(),
                &[("x-requested-with", "tresor"), ("idempotency-key", &key)],
            )
            .await,
        );
        let id = bought["id"].as_i64().unwrap();
        let outcome = bought["outcome"].clone();
        assert_shown_without_scene(&bought, id, &outcome);

        let play = expect(StatusCode::OK, app.play(id).await);
        assert_shown_without_scene(&play, id, &outcome);
        assert_eq!(play["state"], "in_progress");
        let history = expect(StatusCode::OK, app.history("").await);
        assert_shown_without_scene(&history["plays"][0], id, &outcome);

        // The four throws finish it and credit its prize, as for any play.
        let play = app.finish(id).await;
        assert_shown_without_scene(&play, id, &outcome);
        assert_eq!(
            (&play["state"], &play["throws_left"]),
            (&json!("finished"), &json!(0))
        );
        let prize = outcome["prize_cents"].as_i64().unwrap();
        assert_eq!(app.balance().await, 1_000 - 100 + prize);
        app.assert_ledger_balances().await;

        let log = logged();
        let line = log
            .lines()
            .find(|l| l.contains(&format!("play={id}")) && l.contains("game=\"ligne\""))
            .unwrap_or_else(|| panic!("no error logged for play {id}:\n{log}"));
        assert!(line.contains("ERROR"), "{line}");
        assert!(line.contains("a play's scene cannot be staged"), "{line}");
        assert!(
            line.contains("too few land squares for the nine chests"),
            "{line}"
        );
        // The block, once, as it was loaded.
        assert!(
            log.lines().any(|l| l.contains("WARN")
                && l.contains("game=\"ligne\"")
                && l.contains("this block's pinned definition fails `tresor game check`")
                && l.contains("[scene] the map has 9 land squares")),
            "{log}"
        );
    }
);
