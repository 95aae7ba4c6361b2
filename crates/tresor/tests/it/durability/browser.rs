//! The players' page in Chromium: a reload in the middle of a game resumes
//! it where it stopped.

use crate::api::browser::*;
use crate::common::Harness;
use serde_json::json;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped);

async fn a_reload_in_the_middle_of_a_game_resumes_it_where_it_stopped(h: &Harness) {
    let (server, browser) = setup(h, 1280, 900).await;
    let base = &server.base;
    browser.register_with_50(base, "resumer").await;
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
