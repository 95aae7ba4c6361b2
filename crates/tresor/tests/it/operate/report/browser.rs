//! Issue 45: the console's « Rapports » screen in Chromium (the real `tresor
//! serve`): the figures by Paris day of two real purchases, the same as the
//! API's and the player's balance, in French and in English, with its chart
//! and a CSV download of the same figures; axe-core clean; and the bad
//! dates the API refuses.

use crate::common::staff::add_operator;
use crate::common::{Harness, buy_and_play, cookie_client, get_json, register_and_deposit};
use crate::console_api::browser::{setup, shot};

on_sqlite!(the_reports_screen_shows_the_figures_by_paris_day_in_both_languages);

async fn the_reports_screen_shows_the_figures_by_paris_day_in_both_languages(h: &Harness) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = site.base.clone();
    let client = cookie_client();
    register_and_deposit(&client, &base, "reporter", 10_000).await;
    buy_and_play(&client, &base, 100).await;
    buy_and_play(&client, &base, 100).await;
    let balance = get_json(&client, &format!("{base}/api/me")).await["balance_cents"]
        .as_i64()
        .expect("a balance");
    add_operator(h, "vera", "viewer");
    browser.log_in(&site.admin, "vera", None).await;
    for (lang, title, all_games) in [
        ("fr", "Rapports", "Tous les jeux"),
        ("en", "Reports", "All games"),
    ] {
        browser
            .goto_until(
                &format!("{}/console?lang={lang}#/reports", site.admin),
                "document.body.dataset.loaded === 'reports'",
            )
            .await;
        let shown = browser
            .execute(
                "const row = document.querySelector('[data-testid=reports-sales-row][data-game=\"\"]');
                 const money = document.querySelector('[data-testid=reports-money-row]');
                 return [document.querySelector('[data-testid=nav-reports]').textContent,
                         document.querySelector('#reports-title').textContent,
                         Number(row.dataset.units), Number(row.dataset.stakes),
                         true,
                         Number(money.dataset.balances),
                         document.querySelectorAll('[data-testid=reports-chart] svg').length > 0]",
            )
            .await;
        assert_eq!(shown[0], title, "{shown}");
        assert_eq!(shown[1], title, "{shown}");
        assert_eq!(shown[2], 2, "two units sold today: {shown}");
        assert_eq!(shown[3], 200, "{shown}");
        assert_eq!(
            shown[5], balance,
            "the players' balances at the end of today: {shown}"
        );
        assert_eq!(shown[6], true, "a chart: {shown}");
        let text = browser
            .execute("return document.querySelector('#screen-reports').innerText")
            .await;
        assert!(text.as_str().unwrap().contains(all_games), "{text}");
        browser
            .assert_accessible_if_axe(&format!("the reports ({lang})"))
            .await;
        shot(&browser, &format!("console-reports-{lang}")).await;
    }
    // The same figures from the API, and as the CSV the link downloads.
    let (status, json) = browser.call("GET", "/console/api/report/periods").await;
    assert_eq!(status, 200, "{json}");
    assert_eq!(json["totals"]["sales"]["units"], 2);
    assert_eq!(json["totals"]["money"]["player_balances_cents"], balance);
    let href = browser
        .execute("return document.querySelector('[data-testid=reports-csv]').getAttribute('href')")
        .await;
    assert!(href.as_str().unwrap().contains("format=csv"), "{href}");
    let csv = browser
        .execute_async(
            "const done = arguments[arguments.length - 1];
             fetch(document.querySelector('[data-testid=reports-csv]').href, {credentials: 'same-origin'})
               .then(async (r) => done([r.status, r.headers.get('content-disposition'), await r.text()]));",
        )
        .await;
    assert_eq!(csv[0], 200, "{csv}");
    assert!(
        csv[1]
            .as_str()
            .unwrap()
            .starts_with("attachment; filename=\"tresor-day-"),
        "{csv}"
    );
    let total = csv[2]
        .as_str()
        .unwrap()
        .lines()
        .find(|l| l.starts_with("total,total,"))
        .expect("a total line")
        .to_owned();
    assert!(total.contains(",2,200,"), "{total}");
    // A bad date is refused, with its field named.
    let (status, refused) = browser
        .call("GET", "/console/api/report/periods?from=2026-02-30")
        .await;
    assert_eq!(status, 422, "{refused}");
    assert!(refused.to_string().contains("from"), "{refused}");
    browser
        .only_expected_errors(&["report/periods", "422"])
        .await;
    browser.close().await;
}
