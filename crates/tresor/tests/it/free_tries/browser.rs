//! Free tries on the players' page (issue 45; docs/GAMES.md, "Free tries"),
//! in real Chromium on a 360 px phone, axe-core clean: a visitor in French
//! and a logged-in player in English try « Trésor Express » and the island
//! with play money (20,00 € fictifs), every screen marked « Partie gratuite
//! — aucun gain réel », the win window showing the real game's prize said
//! fictitious, the play money moved by exactly the stake and the prize
//! shown; the real balance, plays, transfers, trail records and units sold
//! unchanged; and a player excluded from another device refused on the page.

use crate::common::browser::Browser;
use crate::common::page::{ENTER, PASSWORD};
use crate::common::{Harness, cookie_client, post, scalar};
use crate::games_sold::browser::{ISLAND, SCRATCH, setup};
use serde_json::{Value, json};

// The page is the same on either database; the free route's own tests run
// on both (free_tries.rs).
on_sqlite!(
    a_visitor_tries_the_scratch_card_and_the_island_for_free_in_french,
    a_player_tries_for_free_in_english_and_is_refused_once_excluded,
);

/// What the page says of a free game in one language.
struct Words {
    mark: &'static str,
    /// The play money at the start.
    start: &'static str,
    /// How an amount of play money is said to be fictitious.
    fictitious: &'static str,
    try_free: &'static str,
}

const FRENCH: Words = Words {
    mark: "Partie gratuite — aucun gain réel",
    start: "20,00 € fictifs",
    fictitious: "fictifs",
    try_free: "Essayer gratuitement",
};

const ENGLISH: Words = Words {
    mark: "Free game — no real winnings",
    start: "€20.00 play money",
    fictitious: "play money",
    try_free: "Try for free",
};

/// What no free try may change: plays, transfers, trail records and the
/// real blocks' units sold, counted in the server's database.
async fn real_rows(h: &Harness) -> [i64; 4] {
    let db = h.connect().await;
    let mut counts = [0; 4];
    for (count, sql) in counts.iter_mut().zip([
        "SELECT COUNT(*) FROM plays",
        "SELECT COUNT(*) FROM transfers",
        "SELECT COUNT(*) FROM trail",
        "SELECT CAST(COALESCE(SUM(units_sold), 0) AS BIGINT) FROM blocks",
    ]) {
        *count = scalar(&db.pool, sql).await;
    }
    counts
}

/// The free bar of `screen` (`game`, `scratch`), once shown: its mark and
/// its play money as said (any space as a plain one).
async fn free_bar(browser: &Browser, screen: &str) -> Value {
    browser
        .wait_for(&format!(
            "document.querySelector('#screen-{screen}').dataset.free === 'true'
             && !document.querySelector('#free-bar-{screen}').hidden"
        ))
        .await;
    browser
        .execute(&format!(
            "const bar = document.querySelector('#free-bar-{screen}');
             return [bar.querySelector('[data-testid=free-mark]').textContent,
                     bar.querySelector('[data-testid=free-balance]').textContent.replace(/\\s/g, ' ')];"
        ))
        .await
}

/// The play money on `screen`'s free bar, in cents.
async fn play_money(browser: &Browser, screen: &str) -> i64 {
    let cents = browser
        .execute(&format!(
            "return document.querySelector('#free-bar-{screen} [data-testid=free-balance]').dataset.cents"
        ))
        .await;
    cents.as_str().unwrap().parse().unwrap()
}

/// The end of a free game on `screen`: a win's window marked free, its
/// amount the real game's prize said fictitious, the status line saying so;
/// or a loss said so, no window. Closes the window; returns the prize.
async fn the_free_result(browser: &Browser, screen: &str, words: &Words) -> i64 {
    browser
        .wait_for(&format!(
            "document.querySelector('#screen-{screen}').dataset.mode === 'finished'"
        ))
        .await;
    let prize = browser
        .execute(&format!(
            "return Number(document.querySelector('#screen-{screen}').dataset.prize)"
        ))
        .await
        .as_i64()
        .unwrap();
    let status = browser
        .execute(&format!(
            "const s = document.querySelector('#{screen}-status'); return [s.dataset.kind, s.textContent];"
        ))
        .await;
    if prize == 0 {
        assert_eq!(status[0], json!("lost"), "{status}");
        assert_eq!(
            browser
                .execute("return document.querySelector('#dlg-win').open")
                .await,
            json!(false)
        );
        return 0;
    }
    assert_eq!(status[0], json!("won"), "{status}");
    browser.wait_open("#dlg-win").await;
    let window = browser
        .execute(
            "const d = document.querySelector('#dlg-win');
             const shown = (css) => !d.querySelector(css).hidden;
             return [d.querySelector('[data-testid=win-free-mark]').textContent, shown('[data-testid=win-free-mark]'),
                     d.querySelector('[data-testid=win-amount]').textContent.replace(/\\s/g, ' '),
                     shown('[data-testid=win-free-note]'), shown('[data-real-mark]')];",
        )
        .await;
    let amount = window[2].as_str().unwrap();
    let digits: String = amount.chars().filter(char::is_ascii_digit).collect();
    assert_eq!(window[0], json!(words.mark), "{window}");
    assert_eq!(window[1], json!(true), "the window is marked free");
    assert!(
        amount.contains(words.fictitious) && digits == format!("{}{:02}", prize / 100, prize % 100),
        "the real game's {prize} cents, said fictitious: {amount}"
    );
    assert_eq!(
        (&window[3], &window[4]),
        (&json!(true), &json!(false)),
        "said fictitious, not « credited »"
    );
    browser.screenshot(&format!("free-{screen}-win")).await;
    browser.click("[data-testid=win-close]").await;
    browser.wait_closed("#dlg-win").await;
    prize
}

/// One free scratch card at `stake` cents, bought with the keyboard and
/// scratched with « Tout gratter »:
/// the card staged by the scratch screen's scene, the play money moved by
/// exactly the stake and the prize shown. Returns the prize.
async fn a_free_card(browser: &Browser, stake: i64, words: &Words) -> i64 {
    if play_money(browser, "scratch").await < stake {
        browser
            .click("#free-bar-scratch [data-testid=free-refill]")
            .await;
        assert_eq!(play_money(browser, "scratch").await, 2000, "refilled");
    }
    let before = play_money(browser, "scratch").await;
    browser
        .click(&format!("label:has(> [data-testid=scratch-stake-{stake}])"))
        .await;
    // « Jouer gratuitement » with the keyboard: Enter on the focused button.
    browser
        .execute("document.querySelector('[data-testid=scratch-play]').focus()")
        .await;
    browser.press(&[ENTER]).await;
    let bought = browser
        .wait_for(
            "(document.querySelector('#screen-scratch').dataset.mode === 'scratching'
              || document.querySelector('#scratch-status').dataset.kind === 'error')
             && [document.querySelector('#screen-scratch').dataset.mode,
                 document.querySelector('#scratch-status').textContent,
                 document.querySelector('#scratch-reason').textContent]",
        )
        .await;
    assert_eq!(bought[0], json!("scratching"), "{bought}");
    assert_eq!(play_money(browser, "scratch").await, before - stake);
    browser.click("[data-testid=scratch-all]").await;
    let prize = the_free_result(browser, "scratch", words).await;
    let cells = browser
        .execute(
            "const cells = [...document.querySelectorAll('[data-testid=scratch-cell]')];
             return [cells.map((c) => c.dataset.state), cells.filter((c) => c.classList.contains('winner')).map((c) => Number(c.dataset.cents))];",
        )
        .await;
    assert_eq!(cells[0], json!(vec!["uncovered"; 9]), "{cells}");
    let winners = if prize > 0 { vec![prize; 3] } else { vec![] };
    assert_eq!(cells[1], json!(winners), "three cells of the prize win");
    assert_eq!(play_money(browser, "scratch").await, before - stake + prize);
    prize
}

/// One free island game at `stake` cents: « how to play » marked free, the
/// four throws with « Lancer », the play money moved by exactly the stake
/// and the prize shown. Returns the prize.
async fn a_free_island_game(browser: &Browser, stake: i64, words: &Words) -> i64 {
    let before = play_money(browser, "game").await;
    browser
        .click(&format!("label:has(> [data-testid=stake-{stake}])"))
        .await;
    browser.press_play().await;
    assert_eq!(
        browser
            .execute("const m = document.querySelector('[data-testid=howto-free-mark]'); return [m.hidden, m.textContent];")
            .await,
        json!([false, words.mark]),
        "« how to play » is marked free"
    );
    browser.close_the_howto().await;
    assert_eq!(play_money(browser, "game").await, before - stake);
    for number in 1..=4 {
        browser.throw_and_wait(number).await;
    }
    let prize = the_free_result(browser, "game", words).await;
    let found = browser
        .execute("return document.querySelector('#pips').dataset.used")
        .await;
    assert_eq!(found, json!("4"), "four throws played out");
    assert_eq!(play_money(browser, "game").await, before - stake + prize);
    prize
}

async fn a_visitor_tries_the_scratch_card_and_the_island_for_free_in_french(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    browser.phone(360, 740).await;
    browser
        .goto_until(
            &format!("{}/?fast=1#/games", site.base),
            "document.body.dataset.ready === 'true' && document.querySelectorAll('[data-testid^=free-link-]').length === 2",
        )
        .await;
    let before = real_rows(h).await;
    let links = browser
        .execute("return [...document.querySelectorAll('[data-testid^=free-link-]')].map((a) => [a.textContent, a.getAttribute('href')])")
        .await;
    assert_eq!(
        links,
        json!([
            [FRENCH.try_free, format!("#/free/{ISLAND}")],
            [FRENCH.try_free, format!("#/free/{SCRATCH}")]
        ])
    );
    browser
        .click(&format!("[data-testid=free-link-{SCRATCH}]"))
        .await;
    assert_eq!(
        free_bar(&browser, "scratch").await,
        json!([FRENCH.mark, FRENCH.start])
    );
    assert_eq!(
        browser
            .execute("return [location.hash, document.querySelector('[data-testid=scratch-play]').textContent]")
            .await,
        json!([format!("#/free/{SCRATCH}"), "Jouer gratuitement"])
    );
    browser.screenshot("free-scratch-fr").await;
    browser
        .assert_accessible_if_axe("a free scratch card (fr, 360 px)")
        .await;
    // Cards until one wins (a third do), the play money refilled when short.
    let mut cards = 0;
    while a_free_card(&browser, 100, &FRENCH).await == 0 {
        cards += 1;
        assert!(cards < 40, "no free win in 40 cards");
    }
    browser
        .assert_accessible_if_axe("a free card won (fr, 360 px)")
        .await;

    // The island, from the lobby, with the same play money.
    let money = play_money(&browser, "scratch").await;
    browser.click("[data-testid=scratch-lobby]").await;
    browser
        .click(&format!("[data-testid=free-link-{ISLAND}]"))
        .await;
    free_bar(&browser, "game").await;
    assert_eq!(play_money(&browser, "game").await, money);
    a_free_island_game(&browser, 50, &FRENCH).await;
    browser.screenshot("free-island-fr").await;
    browser
        .assert_accessible_if_axe("a free island game (fr, 360 px)")
        .await;
    assert_eq!(real_rows(h).await, before, "plays, transfers, trail, units");
    assert_eq!(
        browser.execute("return document.body.dataset.user").await,
        json!("out")
    );
    browser.close_without_console_errors().await;
}

async fn a_player_tries_for_free_in_english_and_is_refused_once_excluded(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    browser.phone(360, 740).await;
    browser
        .register_in_page(&site.base, "?fast=1#/", "libre", 5000, Some("en"))
        .await;
    let (real, rows) = (browser.server_state().await, real_rows(h).await);

    // From the island's own screen, with the keyboard.
    browser
        .wait_for("!document.querySelector('#free-entry-game').hidden")
        .await;
    browser
        .execute("document.querySelector('#screen-game [data-testid=free-entry]').focus()")
        .await;
    browser.press(&[ENTER]).await;
    assert_eq!(
        free_bar(&browser, "game").await,
        json!([ENGLISH.mark, ENGLISH.start])
    );
    assert_eq!(
        browser.execute("return location.hash").await,
        json!("#/free")
    );
    a_free_island_game(&browser, 200, &ENGLISH).await;
    browser
        .assert_accessible_if_axe("a free island game (en, 360 px)")
        .await;

    // From the scratch card's screen.
    let money = play_money(&browser, "game").await;
    browser
        .execute(&format!("location.hash = '#/play/{SCRATCH}'"))
        .await;
    browser
        .wait_for("document.body.dataset.screen === 'scratch' && !document.querySelector('#free-entry-scratch').hidden")
        .await;
    browser
        .click("#screen-scratch [data-testid=free-entry]")
        .await;
    free_bar(&browser, "scratch").await;
    assert_eq!(play_money(&browser, "scratch").await, money);
    a_free_card(&browser, 200, &ENGLISH).await;
    browser.screenshot("free-scratch-en").await;
    browser
        .assert_accessible_if_axe("a free scratch card (en, 360 px)")
        .await;
    assert_eq!(
        browser.balance_cents().await,
        5000,
        "the real balance shown"
    );
    assert_eq!(
        browser.server_state().await,
        real,
        "the real balance, the plays"
    );
    assert_eq!(real_rows(h).await, rows, "plays, transfers, trail, units");
    assert_eq!(browser.console_errors().await, Vec::<String>::new());

    // She excludes herself from another device: every session of hers
    // ends, this page's cookie still names her, and her free try is refused.
    let phone = cookie_client();
    let login = json!({"username": "libre", "password": PASSWORD});
    let (status, _) = post(&phone, &format!("{}/api/login", site.base), &login, None)
        .await
        .unwrap();
    assert_eq!(status, 200);
    let (status, body) = post(
        &phone,
        &format!("{}/api/exclusion", site.base),
        &json!({"period": "7d"}),
        None,
    )
    .await
    .unwrap();
    assert_eq!(status, 200, "{body}");
    let money = play_money(&browser, "scratch").await;
    browser.click("[data-testid=scratch-play]").await;
    let refused = browser
        .wait_for(
            "document.querySelector('#scratch-status').dataset.code === 'excluded'
             && [document.querySelector('#scratch-status').textContent, document.querySelector('#screen-scratch').dataset.mode]",
        )
        .await;
    assert!(
        refused[0].as_str().is_some_and(|text| !text.is_empty()),
        "the refusal is said: {refused}"
    );
    assert_ne!(refused[1], json!("scratching"), "no card");
    assert_eq!(
        play_money(&browser, "scratch").await,
        money,
        "nothing taken"
    );
    browser.screenshot("free-refused-en").await;
    assert_eq!(real_rows(h).await[..2], rows[..2], "plays, transfers");
    browser.close().await;
}
