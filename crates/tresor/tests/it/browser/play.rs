//! A player registers, deposits and plays a full game at each stake; a reload resumes a game;
//! a whole game is played with the keyboard alone.

use super::*;

// The page is the same on either database: its tests run on SQLite, and
// this one, a whole account's path through the page, on PostgreSQL too (the
// smoke test of the page on PostgreSQL; the database's own behaviour is
// tested without a browser).
on_both!(a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake);

on_sqlite!(
    a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped,
    a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed,
);

async fn a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.goto(&format!("{base}/?fast=1")).await;
    browser.screenshot("01-home").await;
    browser.register_with_the_form(base, "marie_curie").await;
    assert_eq!(browser.balance_cents().await, 0);

    browser.deposit_on_the_account_screen(2000).await;
    // The 7-day caps chosen on the form (100 € each) show on the account
    // screen, the deposit counted against its cap.
    browser
        .wait_for(
            "document.querySelector('[data-testid=cap-deposit]')?.dataset.leftCents === '8000'
             && document.querySelector('[data-testid=cap-deposit]').dataset.limitCents === '10000'
             && document.querySelector('[data-testid=cap-stake]').dataset.limitCents === '10000'",
        )
        .await;
    browser.screenshot("account-caps").await;
    browser.back_to_the_game().await;

    let mut won = false;
    let mut games = 0;
    // One game at each stake, then more (a bounded few) until one wins, for
    // the screenshot of a winning end.
    while games < 3 || (!won && games < 14) {
        let stake = STAKES[games % 3];
        let before = browser.balance_cents().await;
        if before < stake {
            browser.deposit_on_the_account_screen(before + 2000).await;
            browser.back_to_the_game().await;
            continue;
        }
        let shots = (games == 0).then_some("02");
        let play = browser.play_a_game(stake, shots).await;
        let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
        assert_eq!(play["stake_cents"], json!(stake));
        assert_eq!(play["state"], json!("finished"));
        let end_shot = if prize > 0 && !won {
            Some("04-winning-end")
        } else {
            None
        };
        browser.dismiss_win(prize, end_shot).await;
        if prize == 0 && games == 0 {
            browser.screenshot("05-losing-end").await;
        }
        assert_eq!(
            browser.found_symbols().await,
            revealed(&play),
            "the page shows the scenario's symbols"
        );
        let expected = before - stake + prize;
        browser.wait_balance(expected).await;
        assert_eq!(browser.balance_cents().await, expected);
        won |= prize > 0;
        games += 1;
    }
    if !won {
        eprintln!("no game won in {games}: no screenshot of a winning end this time");
    }
    browser.close_without_console_errors().await;
}

async fn a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    let base = &server.base;
    browser.register_quickly(base, "resumer", "?fast=1").await;
    browser.press_play().await;
    browser.close_the_howto().await;
    browser.throw_and_wait(1).await;
    browser.throw_and_wait(2).await;
    let id = browser.play_id().await;
    let shown = browser.found_symbols().await;

    browser.goto(&format!("{base}/?fast=1#/")).await;
    browser.wait_mode("playing").await;
    assert_eq!(browser.play_id().await, id);
    assert_eq!(browser.found_symbols().await, shown);
    assert_eq!(
        browser
            .execute("return document.querySelector('#pips').dataset.used")
            .await,
        json!("2")
    );
    let opened = browser
        .execute(
            "return document.querySelectorAll('[data-testid^=chest-][data-state=open]').length",
        )
        .await;
    let play = browser.fetch_play(id).await;
    let expected_open: usize = play["scenario"]["throws"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["opened"].as_array().unwrap().len())
        .sum();
    assert_eq!(opened, json!(expected_open));

    browser.throw_and_wait(3).await;
    browser.throw_and_wait(4).await;
    browser.wait_mode("finished").await;
    let play = browser.fetch_play(id).await;
    assert_eq!(play["state"], json!("finished"));
    assert_eq!(browser.found_symbols().await, revealed(&play));
    browser.close().await;
}

async fn a_whole_game_can_be_played_with_the_keyboard_alone_at_normal_speed(h: &Harness) {
    let Some((server, browser)) = setup(h, 1280, 900).await else {
        return;
    };
    const TAB: &str = "\u{E004}";
    const ENTER: &str = "\u{E007}";
    const ESCAPE: &str = "\u{E00C}";
    const SPACE: &str = "\u{E00D}";
    const LEFT: &str = "\u{E012}";
    browser
        .register_quickly(&server.base, "keyboard_only", "")
        .await;

    // Tab to the stake choice, pick 0,50 € with an arrow key, then Tab to "Jouer".
    let mut presses = 0;
    while browser.execute("return document.activeElement.name").await != json!("stake") {
        browser.press(&[TAB]).await;
        presses += 1;
        assert!(presses < 30, "the stake choice is not reachable with Tab");
    }
    browser.press(&[LEFT]).await;
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=stake-50]').checked")
            .await,
        json!(true)
    );
    while browser
        .execute("return document.activeElement.dataset.testid")
        .await
        != json!("play")
    {
        browser.press(&[TAB]).await;
        presses += 1;
        assert!(presses < 40, "\"Jouer\" is not reachable with Tab");
    }
    let before = browser.balance_cents().await;
    browser.press(&[ENTER]).await;
    browser
        .wait_for("document.querySelector('#dlg-howto').open")
        .await;
    browser
        .wait_for("document.querySelector('#screen-game').dataset.playId")
        .await;
    // The window has the focus, and Escape closes it.
    assert_eq!(
        browser
            .execute("return document.querySelector('#dlg-howto').contains(document.activeElement)")
            .await,
        json!(true)
    );
    browser.press(&[ESCAPE]).await;
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=throw]')")
        .await;
    for number in 1..=4 {
        browser
            .wait_for("document.activeElement === document.querySelector('[data-testid=throw]') || document.querySelector('#screen-game').dataset.mode === 'finished'")
            .await;
        browser
            .press(&[if number % 2 == 0 { SPACE } else { ENTER }])
            .await;
        browser.wait_throw(number).await;
    }
    browser.wait_mode("finished").await;
    let play = browser.fetch_play(browser.play_id().await).await;
    let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
    if prize > 0 {
        browser
            .wait_for("document.querySelector('#dlg-win').open")
            .await;
        browser.press(&[ESCAPE]).await;
    }
    browser
        .wait_for("document.activeElement === document.querySelector('[data-testid=play]')")
        .await;
    assert_eq!(browser.found_symbols().await, revealed(&play));
    let expected = before - 50 + prize;
    browser.wait_balance(expected).await;
    let live = browser
        .execute("return document.querySelector('#live').textContent")
        .await;
    assert!(
        live.as_str().unwrap().contains("Lancer 4"),
        "each throw is announced to screen readers: {live}"
    );
    browser.close().await;
}
