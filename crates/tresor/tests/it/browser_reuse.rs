//! A browser test's session is fresh, though its Chromium served another
//! test before (`common/chromedriver.rs`): one tab, nothing stored for the
//! sites the last test opened, no emulated device, no log left over.

use crate::common::Harness;
use crate::common::page::Site;
use serde_json::json;

on_sqlite!(a_kept_browser_comes_back_with_one_tab_and_nothing_left_behind);

async fn a_kept_browser_comes_back_with_one_tab_and_nothing_left_behind(h: &Harness) {
    let (site, browser) = Site::start(h, &[], 1024, 700).await;
    let page = format!("{}/?fast=1#/", site.base);
    browser.goto(&page).await;
    let left = browser
        .execute(
            "localStorage.setItem('left', 'behind'); sessionStorage.setItem('left', 'behind');
             document.cookie = 'left=behind; path=/; max-age=3600';
             window.open('/?fast=1#/rules'); console.error('left behind');
             return [localStorage.getItem('left'), document.cookie.includes('left=behind')];",
        )
        .await;
    assert_eq!(left, json!(["behind", true]));
    browser.phone(360, 740).await;
    let before = browser.session_id().to_owned();

    let browser = browser.made_fresh(1024, 700).await;
    assert_eq!(browser.session_id(), before, "the same Chromium");
    let handles = browser
        .command(reqwest::Method::GET, "/window/handles", None)
        .await;
    assert_eq!(handles.as_array().map(Vec::len), Some(1), "{handles}");
    assert!(browser.console_errors().await.is_empty());
    browser.goto(&page).await;
    let now = browser
        .execute(
            "return [localStorage.getItem('left'), sessionStorage.getItem('left'),
                     document.cookie.includes('left'), window.innerWidth, history.length];",
        )
        .await;
    assert_eq!(now, json!([null, null, false, 1024, 2]));
    browser.close_without_console_errors().await;
}
