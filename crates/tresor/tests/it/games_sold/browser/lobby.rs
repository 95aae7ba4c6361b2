//! A player picks the scratch card in the lobby, wins, loses, then plays the island.

use super::*;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_player_picks_the_scratch_card_in_the_lobby_wins_loses_then_plays_the_island,);

/// Plays one island game with the mouse, from the island's screen.
async fn play_the_island(browser: &Browser) -> Value {
    browser.wait_ready("game", "play").await;
    browser.press_play().await;
    browser.close_the_howto().await;
    browser.finish_the_game().await
}

async fn a_player_picks_the_scratch_card_in_the_lobby_wins_loses_then_plays_the_island(
    h: &Harness,
) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = &site.base;
    browser.register_with_50(base, "gratteuse").await;

    // The lobby, in French: the island first, then the scratch card, each
    // with its stakes and payout rates; picked by a click on the card.
    browser.click("[data-testid=nav-games]").await;
    let cards = lobby_cards(&browser).await;
    assert_eq!(
        cards,
        json!([
            [
                ISLAND,
                "island",
                "L'Ile au Trésor",
                [50, 100, 200],
                ["70,00 %", "70,00 %", "70,00 %"]
            ],
            [
                SCRATCH,
                "scratch",
                "Trésor Express",
                [100, 200],
                ["65,00 %", "65,00 %"]
            ],
        ]),
    );
    browser.screenshot("games-lobby-fr").await;
    browser.assert_accessible_if_axe("the lobby (fr)").await;
    pick_the_scratch_card(
        &browser,
        &format!("[data-testid=game-card][data-game={SCRATCH}]"),
    )
    .await;
    assert_eq!(
        browser.execute("return location.hash").await,
        json!(format!("#/play/{SCRATCH}")),
        "the game chosen is in the address"
    );
    assert_eq!(
        browser.text("[data-testid=scratch-title]").await,
        "Trésor Express"
    );
    browser
        .assert_accessible_if_axe("the scratch card (fr)")
        .await;

    // Cards until a win and a loss: by mouse drags, then « Tout gratter ».
    let plays = until_a_win_and_a_loss(
        &browser,
        &[Scratch::Pointer("mouse"), Scratch::RevealAll],
        "games-scratch-fr",
    )
    .await;
    let live = browser.text("#live").await;
    assert!(
        live.contains("Partie gagnée") && live.contains("Partie perdue"),
        "results are spoken: {live}"
    );
    browser
        .assert_accessible_if_axe("a finished scratch card (fr)")
        .await;

    // Back to the lobby, then the island, as it always was.
    browser.click("[data-testid=scratch-lobby]").await;
    lobby_cards(&browser).await;
    browser
        .click(&format!("[data-testid=game-link-{ISLAND}]"))
        .await;
    let island = play_the_island(&browser).await;
    assert_eq!(island["game"]["id"], json!(ISLAND), "{island}");

    // The history names each play's game.
    browser.click("[data-testid=nav-history]").await;
    // (The history's first page: 20 plays.)
    let page = (plays.len() + 1).min(20);
    let rows = history_rows(&browser, page).await;
    let mut expected: Vec<Value> = plays
        .iter()
        .chain([&island])
        .map(|p| json!([p["id"], p["game"]["id"], p["game"]["name"]["fr"]]))
        .collect();
    expected.reverse();
    expected.truncate(page);
    assert_eq!(rows, json!(expected));
    assert_eq!(rows[0][2], json!("L'Ile au Trésor"));
    assert_eq!(rows[1][2], json!("Trésor Express"));
    browser.screenshot("games-history-fr").await;
    browser.assert_accessible_if_axe("the history (fr)").await;

    // So does the statement, beside each stake and win.
    // A stake row for each play: the island's newest, then every card's
    // (as many as the statement's first page of 20 rows holds).
    browser.execute("location.hash = '#/statement';").await;
    let shown = browser
        .wait_for(
            "(() => { const rows = [...document.querySelectorAll('[data-testid=statement-row]')];
               return rows.length > 0 && [rows.length, rows.filter((r) => r.dataset.movement === 'stake')
                 .map((r) => r.cells[1].textContent)]; })()",
        )
        .await;
    let (rows, lines): (usize, Vec<String>) = serde_json::from_value(shown).unwrap();
    let stakes = if rows < 20 { plays.len() + 1 } else { 2 };
    assert!(
        lines.len() >= 2 && (rows == 20 || lines.len() == stakes),
        "{rows} rows, {stakes} stakes expected: {lines:?}"
    );
    assert!(
        lines[0].ends_with("· L'Ile au Trésor")
            && lines[1..].iter().all(|l| l.ends_with("· Trésor Express")),
        "{lines:?}"
    );

    // A card's receipt, checked on the fairness page, names its game.
    let card = &plays[0];
    let receipt = browser
        .get_json(&format!("/api/plays/{}/receipt", card["id"]))
        .await;
    browser.click("[data-testid=nav-fairness]").await;
    browser.wait_screen("fairness").await;
    // Every block names its game, and a published one's command re-checks
    // it with its game's definition (the island's needs none).
    let named = browser
        .wait_for(
            "document.querySelectorAll('[data-testid=block-row]').length > 0 && \
             Array.from(document.querySelectorAll('[data-testid=block-row]'), (row) => \
               row.querySelector('[data-testid=block-game]').textContent)",
        )
        .await;
    let named: Vec<String> = serde_json::from_value(named).unwrap();
    assert!(
        named.iter().any(|n| n == "Trésor Express")
            && named.iter().any(|n| n == "L'Ile au Trésor")
            && named
                .iter()
                .all(|n| n == "Trésor Express" || n == "L'Ile au Trésor"),
        "{named:?}"
    );
    let commands = browser
        .execute(
            "const main = document.querySelector('script[type=module]').src; \
             return import(main.replace(/main\\.js$/, 'fairness.js')).then((m) => [ \
               m.verifyCommand({ secret: 's', commitment: 'c', stake_cents: 100, game: 'tresor-express' }), \
               m.verifyCommand({ secret: 's', commitment: 'c', stake_cents: 50, game: 'ile-au-tresor' })]);",
        )
        .await;
    assert_eq!(
        commands,
        serde_json::json!([
            "tresor block verify --secret s --commitment c --stake 100 --game games/tresor-express.toml",
            "tresor block verify --secret s --commitment c --stake 50"
        ])
    );
    browser
        .execute(&format!(
            "document.querySelector('[data-testid=receipt-text]').value = {};",
            serde_json::to_string(&receipt.to_string()).unwrap()
        ))
        .await;
    browser.click("[data-testid=receipt-check]").await;
    let said = browser
        .wait_for("document.querySelector('[data-testid=receipt-result]').dataset.result === 'ok' && document.querySelector('[data-testid=receipt-result]').textContent.replace(/\\s/g, ' ')")
        .await;
    let said = said.as_str().unwrap();
    assert!(
        said.contains(&format!(
            "partie n° {} : Trésor Express, mise de 1 €",
            card["id"]
        )),
        "{said}"
    );
    browser.click("[data-testid=nav-history]").await;

    // In English: the history, the lobby and a card shown again.
    browser.switch_language("en").await;
    let rows = history_rows(&browser, page).await;
    assert_eq!(rows[0][2], json!("Treasure Island"));
    assert_eq!(rows[1][2], json!("Treasure Express"));
    browser.assert_accessible_if_axe("the history (en)").await;
    // The last card, replayed from its row: every cell uncovered at once.
    let last = &plays[plays.len() - 1];
    browser.click_until(&format!(
            "[data-testid=history-row][data-play-id='{}'] [data-testid=history-replay]",
            last["id"]
        ), "document.body.dataset.screen === 'scratch' && document.querySelector('#screen-scratch').dataset.mode === 'replay'").await;
    let shown = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=scratch-cell]')].map((c) => [c.dataset.state, Number(c.dataset.cents)])",
        )
        .await;
    let expected: Vec<Value> = last["scenario"]["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| json!(["uncovered", c]))
        .collect();
    assert_eq!(shown, json!(expected));
    browser
        .assert_accessible_if_axe("a card shown again (en)")
        .await;
    browser.click("[data-testid=nav-games]").await;
    let cards = lobby_cards(&browser).await;
    assert_eq!(cards[0][2], json!("Treasure Island"));
    assert_eq!(cards[1][2], json!("Treasure Express"));
    assert_eq!(cards[1][4], json!(["65.00%", "65.00%"]));
    browser.screenshot("games-lobby-en").await;
    browser.assert_accessible_if_axe("the lobby (en)").await;
    // A card in English, to a win and a loss again, with « Reveal all ».
    pick_the_scratch_card(&browser, &format!("[data-testid=game-link-{SCRATCH}]")).await;
    assert_eq!(
        browser
            .execute("return [document.querySelector('[data-testid=scratch-all]').textContent, document.querySelector('[data-testid=scratch-title]').textContent]")
            .await,
        json!(["Reveal all", "Treasure Express"])
    );
    until_a_win_and_a_loss(&browser, &[Scratch::RevealAll], "games-scratch-en").await;
    browser
        .assert_accessible_if_axe("a finished scratch card (en)")
        .await;
    browser.close_without_console_errors().await;
}

/// Picks the scratch card in the lobby with a click on `css` (its card, or
/// its name): its screen, ready to buy.
async fn pick_the_scratch_card(browser: &Browser, css: &str) {
    browser.click(css).await;
    browser.wait_ready("scratch", "scratch-play").await;
}
