//! Each game's exact odds on the players' page and in the console (issue
//! 45, part 2): the lobby's cards and each game's screen say « 1 chance sur
//! 3,76 · 70 % redistribués », the « Règles et chances » panel gives each
//! stake's table, in French and in English, from the figures the server
//! computed (`GET /api/games`); the console's dashboard shows each game's
//! sheet and its prize distribution chart; and on a 360-px-wide phone, in
//! both languages, the cards and both panels fit without sideways scroll.

use super::*;
use crate::common::fetch_json;

on_sqlite!(the_page_and_the_console_show_each_game_s_exact_odds,);

/// Text with every kind of space as a plain one (ICU's French puts a
/// narrow no-break space before « % » and between thousands).
fn plain(value: &Value) -> String {
    plain_text(
        value
            .as_str()
            .unwrap_or_else(|| panic!("not text: {value}")),
    )
}

fn plain_text(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_whitespace() { ' ' } else { c })
        .collect()
}

/// The lobby's odds lines, by game id.
async fn card_odds(browser: &Browser) -> Value {
    browser
        .wait_for(
            "(() => { const cards = [...document.querySelectorAll('[data-testid=game-card]')];
               return cards.length >= 2 && cards.every((c) => c.querySelector('[data-testid=game-odds]'))
                 && cards.map((c) => [c.dataset.game, c.querySelector('[data-testid=game-odds]').textContent]); })()",
        )
        .await
}

/// The panel's rows of the stake `cents`: `[level, odds text]`.
async fn panel_rows(browser: &Browser, panel: &str, cents: i64) -> Vec<(String, String)> {
    let rows = browser
        .wait_for(&format!(
            "(() => {{ const rows = [...document.querySelectorAll(`[data-testid={panel}] [data-testid=odds-stake][data-stake-cents='{cents}'] tbody tr`)];
               return rows.length > 0 && rows.map((r) => [r.dataset.level, r.querySelector('[data-testid=odds-one-in]').textContent]); }})()"
        ))
        .await;
    rows.as_array()
        .unwrap()
        .iter()
        .map(|r| (plain(&r[0]), plain(&r[1])))
        .collect()
}

async fn the_page_and_the_console_show_each_game_s_exact_odds(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    // The server's figures: the island's 119,604 winning units of 450,000
    // and « Trésor Express »'s 31,225 of 100,000.
    let games = fetch_json(&format!("{}/api/games", site.base)).await;
    assert_eq!(games[0]["id"], json!(ISLAND));
    assert_eq!(
        games[0]["sheet"]["stakes"][0]["win"]["exact"],
        json!("9967/37500")
    );
    assert_eq!(
        games[1]["sheet"]["stakes"][0]["win"]["exact"],
        json!("1249/4000")
    );

    // A visitor's lobby, in French.
    browser.goto(&format!("{}/?fast=1#/games", site.base)).await;
    let cards = card_odds(&browser).await;
    let cards: Vec<(String, String)> = cards
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (plain(&c[0]), plain(&c[1])))
        .collect();
    assert_eq!(
        cards,
        [
            (
                ISLAND.to_string(),
                "1 chance sur 3,76 · 70 % redistribués".to_string()
            ),
            (
                SCRATCH.to_string(),
                "1 chance sur 3,2 · 65 % redistribués".to_string()
            ),
        ]
    );

    // The island's screen: the stake chosen (1 €) and its panel.
    browser.goto(&format!("{}/?fast=1#/", site.base)).await;
    let line = browser.wait_shown_text("[data-testid=screen-odds]").await;
    assert_eq!(plain_text(&line), "1 chance sur 3,76 · 70 % redistribués");
    browser.click("[data-testid=odds-summary]").await;
    browser.wait_open("[data-testid=odds-panel]").await;
    let summary = browser.text("[data-testid=odds-summary]").await;
    assert_eq!(summary, "Règles et chances");
    let rows = panel_rows(&browser, "odds-panel", 50).await;
    let expected: Vec<(String, String)> = [
        ("1", "1 sur 450 000"),
        ("2", "1 sur 150 000"),
        ("3", "1 sur 4 500"),
        ("4", "1 sur 450"),
        ("5", "1 sur 900"),
        ("6", "1 sur 225"),
        ("7", "1 sur 17,31"),
        ("8", "1 sur 11,84"),
        ("9", "1 sur 8,65"),
        ("0", "1 sur 1,36"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(rows, expected);
    let stakes = browser
        .execute("return [...document.querySelectorAll('[data-testid=odds-panel] [data-testid=odds-stake]')].map((s) => Number(s.dataset.stakeCents))")
        .await;
    assert_eq!(stakes, json!([50, 100, 200]));
    browser
        .click_until(
            "label:has(> [data-testid=stake-200])",
            "document.querySelector('[data-testid=screen-odds]').dataset.stakeCents === '200'",
        )
        .await;
    browser
        .assert_accessible_if_axe("the island's odds panel (fr)")
        .await;
    browser.screenshot("odds-island-fr").await;

    // In English, the same figures.
    browser.switch_language("en").await;
    let line = browser.wait_text_when("document.querySelector('[data-testid=screen-odds]').textContent.startsWith('1 chance in')", "[data-testid=screen-odds]").await;
    assert_eq!(plain_text(&line), "1 chance in 3.76 · 70% paid back");
    let summary = browser.text("[data-testid=odds-summary]").await;
    assert_eq!(summary, "Rules and odds");
    let rows = panel_rows(&browser, "odds-panel", 100).await;
    assert_eq!(rows[6], ("7".to_string(), "1 in 17.31".to_string()));
    assert_eq!(rows[0], ("1".to_string(), "1 in 450,000".to_string()));

    // The scratch card's screen, in English.
    browser
        .goto(&format!("{}/?fast=1#/play/{SCRATCH}", site.base))
        .await;
    let line = browser
        .wait_shown_text("[data-testid=scratch-screen-odds]")
        .await;
    assert_eq!(plain_text(&line), "1 chance in 3.2 · 65% paid back");
    browser
        .click("[data-testid=scratch-odds-panel] summary")
        .await;
    let rows = panel_rows(&browser, "scratch-odds-panel", 100).await;
    assert_eq!(rows.len(), 9, "8 levels and the losing units: {rows:?}");
    assert_eq!(rows[0], ("1".to_string(), "1 in 100,000".to_string()));
    browser
        .assert_accessible_if_axe("the scratch card's odds panel (en)")
        .await;

    // The console: each game's sheet beside its live figures.
    add_operator(h, "odile", "viewer");
    browser.log_in(&site.admin, "odile", None).await;
    let sheet = browser
        .wait_for(
            "(() => { const s = [...document.querySelectorAll('[data-testid=game-sheet][data-game=ile-au-tresor] [data-testid=sheet-stake]')];
               return s.length === 3 && s.map((x) => [Number(x.dataset.stakeCents), x.dataset.payout, Number(x.dataset.winOneIn).toFixed(4)]); })()",
        )
        .await;
    assert_eq!(
        sheet,
        json!([
            [50, "7/10", "3.7624"],
            [100, "7/10", "3.7624"],
            [200, "7/10", "3.7624"]
        ])
    );
    let levels = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=game-sheet][data-game=ile-au-tresor] [data-testid=sheet-stake][data-stake-cents=\"50\"] [data-testid=sheet-level] code')].map((c) => c.textContent)",
        )
        .await;
    assert_eq!(
        levels,
        json!([
            "1/450000",
            "1/150000",
            "1/4500",
            "1/450",
            "1/900",
            "1/225",
            "13/225",
            "19/225",
            "26/225",
            "27533/37500"
        ])
    );
    // The prize distribution: two bars per winning level.
    let bars = browser
        .execute(
            "return document.querySelectorAll('[data-testid=game-sheet][data-game=ile-au-tresor] [data-testid=sheet-stake][data-stake-cents=\"50\"] [data-testid=sheet-chart] rect.bar').length",
        )
        .await;
    assert_eq!(bars, json!(18));
    let scratch = browser
        .execute("return document.querySelectorAll('[data-testid=game-sheet][data-game=tresor-express] [data-testid=sheet-stake]').length")
        .await;
    assert_eq!(scratch, json!(2));
    browser
        .assert_accessible_if_axe("the console's odds sheets")
        .await;
    browser.screenshot("odds-console").await;
    on_a_phone(&site, &browser).await;
    browser.close_without_console_errors().await;
}

/// At 360 px the page does not scroll sideways, each open odds table of
/// `panel` fits its width (no column cut off or scrolled) in a readable
/// size, and every odds line of the page fits its own.
async fn fits_360(browser: &Browser, panel: &str, what: &str) {
    browser.settled().await;
    let seen = browser
        .execute(&format!(
            "const page = document.scrollingElement;
             const tables = [...document.querySelectorAll('[data-testid={panel}] .table-scroll')];
             const lines = [...document.querySelectorAll('[data-testid=game-odds], [data-testid=screen-odds], [data-testid=scratch-screen-odds]')]
               .filter((l) => l.offsetParent);
             const cells = [...document.querySelectorAll('[data-testid={panel}] .odds-table :is(th, td)')];
             return {{
               width: window.innerWidth,
               page: page.scrollWidth <= page.clientWidth,
               tables: tables.length,
               cut: tables.filter((t) => t.scrollWidth > t.clientWidth).length
                 + lines.filter((l) => l.scrollWidth > l.clientWidth).length,
               smallest: Math.min(...cells.map((c) => parseFloat(getComputedStyle(c).fontSize))),
               over: [...document.body.querySelectorAll('*')].filter((e) => e.scrollWidth > e.clientWidth + 1 && e.clientWidth > 0)
                 .slice(0, 12).map((e) => `${{e.tagName}}#${{e.id}}.${{e.className}} ${{e.scrollWidth}}>${{e.clientWidth}}`),
               sizes: [page.scrollWidth, page.clientWidth, scrollX, document.body.scrollWidth],
             }};"
        ))
        .await;
    assert_eq!(seen["width"], json!(360), "{what}: {seen}");
    assert_eq!(
        seen["page"],
        json!(true),
        "{what}: the page scrolls sideways: {seen}"
    );
    assert_eq!(
        seen["cut"],
        json!(0),
        "{what}: a table or line overflows: {seen}"
    );
    if panel != "none" {
        assert!(seen["tables"].as_u64().unwrap() > 0, "{what}: {seen}");
        assert!(seen["smallest"].as_f64().unwrap() >= 13.0, "{what}: {seen}");
    }
}

/// The lobby's cards and the « Règles et chances » panels of both games on a
/// 360-px-wide phone, in English and in French, axe-core clean.
async fn on_a_phone(site: &Site, browser: &Browser) {
    browser.phone(360, 740).await;
    browser
        .goto_until(
            &format!("{}/?fast=1#/play/{SCRATCH}", site.base),
            "document.documentElement.lang === 'en' && !document.querySelector('[data-testid=scratch-screen-odds]').hidden",
        )
        .await;
    browser
        .click("[data-testid=scratch-odds-panel] summary")
        .await;
    browser.wait_open("[data-testid=scratch-odds-panel]").await;
    fits_360(
        browser,
        "scratch-odds-panel",
        "the scratch card's panel (en)",
    )
    .await;
    browser
        .assert_accessible_if_axe("the scratch card's odds panel at 360 px (en)")
        .await;
    browser.screenshot("odds-scratch-en-360").await;
    browser.goto(&format!("{}/?fast=1#/games", site.base)).await;
    card_odds(browser).await;
    fits_360(browser, "none", "the lobby's cards (en)").await;
    // On a phone the language switch is behind the menu.
    browser
        .execute("if (!document.querySelector('[data-testid=lang]').offsetParent) document.querySelector('[data-testid=menu]').click()")
        .await;
    browser.switch_language("fr").await;
    let cards = card_odds(browser).await;
    assert!(cards.to_string().contains("redistribués"), "{cards}");
    fits_360(browser, "none", "the lobby's cards (fr)").await;
    browser
        .assert_accessible_if_axe("the lobby's odds at 360 px (fr)")
        .await;
    browser
        .goto_until(
            &format!("{}/?fast=1#/", site.base),
            "!document.querySelector('[data-testid=screen-odds]').hidden",
        )
        .await;
    browser.click("[data-testid=odds-summary]").await;
    browser.wait_open("[data-testid=odds-panel]").await;
    let rows = panel_rows(browser, "odds-panel", 200).await;
    assert_eq!(rows[0], ("1".to_string(), "1 sur 450 000".to_string()));
    fits_360(browser, "odds-panel", "the island's panel (fr)").await;
    browser
        .assert_accessible_if_axe("the island's odds panel at 360 px (fr)")
        .await;
    browser.screenshot("odds-island-fr-360").await;
}
