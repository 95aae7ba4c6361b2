//! The console shows emissions, sales and payout by game.

use crate::common::staff::add_operator;
use crate::common::{Harness, cookie_client, post, register_and_deposit};
use crate::games_sold::browser::*;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(the_console_shows_emissions_sales_and_payout_by_game,);

/// A player buys `cards` scratch cards at 1 € through the API and scratches
/// each; returns the prizes they won, in cents.
async fn scratch_cards_through_the_api(base: &str, cards: usize) -> i64 {
    let client = cookie_client();
    register_and_deposit(&client, base, "api_scratcher", 10_000).await;
    let mut prizes = 0;
    for n in 0..cards {
        let (status, play) = post(
            &client,
            &format!("{base}/api/plays"),
            &json!({"stake_cents": 100, "game": SCRATCH}),
            Some(&format!("scratch-card-{n}")),
        )
        .await
        .unwrap();
        assert_eq!(status, 201, "{play}");
        let (status, play) = post(
            &client,
            &format!("{base}/api/plays/{}/throws", play["id"]),
            &json!({}),
            None,
        )
        .await
        .unwrap();
        assert_eq!(status, 200, "{play}");
        assert_eq!(play["state"], json!("finished"), "{play}");
        prizes += play["outcome"]["prize_cents"].as_i64().unwrap();
    }
    prizes
}

async fn the_console_shows_emissions_sales_and_payout_by_game(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    let prizes = scratch_cards_through_the_api(&site.base, 6).await;
    add_operator(h, "gina", "operator");
    browser.log_in(&site.admin, "gina", None).await;

    // The dashboard: each game's sales and payout beside its table's rate.
    let per_game = browser
        .wait_for(
            "(() => { const rows = [...document.querySelectorAll('[data-testid=per-game-row]')];
               return rows.length === 2 && rows.map((r) => [r.dataset.game, Number(r.dataset.stakesCents), Number(r.dataset.prizesCents)]); })()",
        )
        .await;
    assert_eq!(
        per_game,
        json!([[ISLAND, 0, 0], [SCRATCH, 600, prizes]]),
        "the island first, then the scratch card's six 1 € cards"
    );
    let stakes = browser
        .execute(
            "return [...document.querySelectorAll(`[data-testid=per-game-stake][data-game=${'tresor-express'}]`)]
               .map((r) => [Number(r.dataset.stakeCents), Number(r.dataset.sold), r.dataset.tablePercent])",
        )
        .await;
    assert_eq!(stakes, json!([[100, 6, "65.00"], [200, 0, "65.00"]]));
    let heading = browser
        .execute("return document.querySelector(`[data-testid=per-game-row][data-game=tresor-express] h3`).textContent")
        .await;
    assert!(
        heading
            .as_str()
            .unwrap()
            .starts_with("Treasure Express: €6.00 taken"),
        "{heading}"
    );
    // Each game has its own bars per stake: stakes taken, prizes won and
    // what its table expects.
    let chart = browser
        .execute(
            "const chart = document.querySelector(`[data-testid=per-game-chart][data-game=tresor-express]`);
             return [chart.querySelector('svg title').textContent,
                     ...[...chart.querySelectorAll('svg rect.bar title')].map((t) => t.textContent)]",
        )
        .await;
    let chart: Vec<String> = serde_json::from_value(chart).unwrap();
    let unsold = browser
        .execute("return document.querySelectorAll(`[data-testid=per-game-chart][data-game=ile-au-tresor]`).length")
        .await;
    assert_eq!(unsold, json!(0), "no bars for a game that has sold nothing");
    assert_eq!(
        chart.len(),
        7,
        "a title and three bars for each of two stakes: {chart:?}"
    );
    assert_eq!(
        chart[0],
        "Treasure Express: stakes taken, prizes won and expected by its table, per stake"
    );
    assert_eq!(chart[1], "€1.00, Stakes taken: €6.00");
    assert_eq!(chart[4], "€2.00, Stakes taken: €0.00");
    assert!(
        chart[5].starts_with("€2.00, Prizes won: €0.00"),
        "{chart:?}"
    );
    browser
        .execute("document.querySelector('[data-testid=per-game]').scrollIntoView()")
        .await;
    browser.screenshot("console-dashboard-by-game").await;
    browser
        .assert_accessible_if_axe("the dashboard by game")
        .await;

    // Emissions and blocks name their game; the form picks a game, then
    // one of its stakes.
    browser.open("emissions").await;
    let games = browser
        .wait_for(
            "document.querySelectorAll('#emission-game option').length === 2 &&
             [...document.querySelectorAll('#emission-game option')].map((o) => [o.value, o.textContent])",
        )
        .await;
    assert_eq!(
        games,
        json!([[ISLAND, "Treasure Island"], [SCRATCH, "Treasure Express"]])
    );
    browser
        .execute(&format!(
            "const select = document.querySelector('#emission-game'); select.value = '{SCRATCH}';
             select.dispatchEvent(new Event('change', {{bubbles: true}}));"
        ))
        .await;
    let stakes = browser
        .execute("return [...document.querySelectorAll('#emission-stake option')].map((o) => Number(o.value))")
        .await;
    assert_eq!(stakes, json!([100, 200]));
    browser
        .execute("document.querySelector('#emission-stake').value = '200';")
        .await;
    browser.click("[data-testid=emission-create]").await;
    let text = browser
        .wait_text_when("document.querySelector('#confirm').open", "#confirm-text")
        .await;
    assert!(
        text.starts_with("1 block of Treasure Express at €2.00"),
        "{text}"
    );
    browser.confirm().await;
    let (status, answer) = browser.call("GET", "/console/api/emissions").await;
    assert_eq!(status, 200, "{answer}");
    let newest = answer["emissions"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|e| e["id"].as_i64())
        .unwrap()
        .clone();
    assert_eq!(newest["game"]["id"], json!(SCRATCH), "{newest}");
    let blocks = newest["blocks"].as_array().unwrap();
    assert_eq!(blocks.len(), 1, "{newest}");
    assert_eq!(blocks[0]["stake_cents"], json!(200));
    let row = browser
        .wait_for(&format!(
            "document.querySelector('[data-testid=emission-row][data-emission-id=\"{}\"]')?.dataset.game",
            newest["id"]
        ))
        .await;
    assert_eq!(row, json!(SCRATCH));
    let shown = browser
        .execute(&format!(
            "return [document.querySelector('[data-testid=emission-row][data-emission-id=\"{}\"] [data-testid=emission-game]').textContent,
                     document.querySelector('[data-testid=block-row][data-block-id=\"{}\"]').dataset.game]",
            newest["id"], blocks[0]["id"]
        ))
        .await;
    assert_eq!(shown, json!(["Treasure Express", SCRATCH]));
    crate::console_api::browser::shot(&browser, "console-emissions-by-game").await;
    browser.assert_accessible_if_axe("emissions by game").await;

    // In French: the names and the words.
    browser
        .goto(&format!("{}/console?lang=fr#/dashboard", site.admin))
        .await;
    let heading = browser
        .wait_for("document.querySelector(`[data-testid=per-game-row][data-game=tresor-express] h3`)?.textContent.replace(/\\s/g, ' ')")
        .await;
    assert!(
        heading
            .as_str()
            .unwrap()
            .starts_with("Trésor Express : 6,00 € reçus"),
        "{heading}"
    );
    let title = browser.text("#per-game-title").await;
    assert_eq!(title, "Ventes et taux de retour par jeu");
    browser.only_expected_errors(&[]).await;
    browser.close().await;
}
