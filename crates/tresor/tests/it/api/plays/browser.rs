//! A player registers, deposits and plays a full game at each stake.

use crate::api::browser::*;
use crate::common::Harness;
use serde_json::json;

// The page is the same on either database: its tests run on SQLite, and
// this one, a whole account's path through the page, on PostgreSQL too (the
// smoke test of the page on PostgreSQL; the database's own behaviour is
// tested without a browser).
on_both!(a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake);

async fn a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
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
        if prize > 0 && !won {
            browser.photograph_the_win("04-winning-end").await;
        }
        browser.dismiss_win(prize).await;
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
