//! An operator enrols, logs in and watches the dashboard move while players buy.

use super::*;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(an_operator_enrols_logs_in_and_watches_the_dashboard_move_while_players_buy,);

async fn an_operator_enrols_logs_in_and_watches_the_dashboard_move_while_players_buy(h: &Harness) {
    let (site, browser) = setup(h, 1366, 1000).await;
    add_operator(h, "olivia", "operator");
    browser
        .log_in(&site.admin, "olivia", Some("console-login-enrol"))
        .await;
    browser
        .wait_for("document.body.dataset.loaded === 'dashboard' && document.querySelector('[data-testid=ppm-chart] svg')")
        .await;
    assert_eq!(browser.text("[data-testid=who-role]").await, "operator");
    let before_total = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.total")
            .await,
    );
    let before_cents = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=sales-total]').dataset.cents")
            .await,
    );
    assert_eq!(
        browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.points")
            .await,
        json!("60"),
        "the last hour, minute by minute"
    );

    // Players buy in the background; the page polls every 2 s.
    let stop = Arc::new(AtomicBool::new(false));
    let bought = Arc::new(AtomicI64::new(0));
    let buyers: Vec<_> = (0..2)
        .map(|i| {
            buyer(
                site.base.clone(),
                format!("buyer_{i}"),
                Duration::from_millis(60),
                stop.clone(),
                bought.clone(),
            )
        })
        .collect();
    let started = Instant::now();
    let polls_before = data_i64(
        &browser
            .execute("return document.body.dataset.dashboardPolls")
            .await,
    );
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) >= {}
             && Number(document.querySelector('[data-testid=sales-total]').dataset.cents) >= {}",
            before_total + 10,
            before_cents + 1000
        ))
        .await;
    // Once more after a poll, to see it keep moving.
    let mid = data_i64(
        &browser
            .execute("return document.querySelector('[data-testid=ppm-chart]').dataset.total")
            .await,
    );
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) > {mid}"
        ))
        .await;
    stop.store(true, Ordering::SeqCst);
    for b in buyers {
        b.await.unwrap();
    }
    let polls = data_i64(
        &browser
            .execute("return document.body.dataset.dashboardPolls")
            .await,
    );
    assert!(
        polls > polls_before,
        "the dashboard polled ({polls_before} → {polls})"
    );
    eprintln!(
        "dashboard moved: {} purchases in {:?}, {} polls",
        bought.load(Ordering::SeqCst),
        started.elapsed(),
        polls - polls_before
    );

    // Once the buyers stop, the page settles on exactly what was bought
    // (the server answers from memory for up to a second, the page polls
    // every 2 s), and the sales figure on a euro per unit.
    let bought = bought.load(Ordering::SeqCst);
    let server_total = before_total + bought;
    browser
        .wait_for(&format!(
            "Number(document.querySelector('[data-testid=ppm-chart]').dataset.total) === {server_total}
             && Number(document.querySelector('[data-testid=sales-total]').dataset.cents) === {}",
            before_cents + 100 * bought
        ))
        .await;
    let (status, dashboard) = browser.call("GET", "/console/api/dashboard").await;
    assert_eq!(status, 200, "{dashboard}");
    let counted: i64 = dashboard["purchases_per_minute"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["count"].as_i64().unwrap())
        .sum();
    assert_eq!(counted, server_total, "the API counts what the page shows");
    // The chart's numbers are there for screen readers and in its table.
    let described = browser.text("[data-testid=ppm-chart] svg desc").await;
    assert!(
        described.contains(&format!("{server_total} purchases")),
        "{described}"
    );
    let rows = browser
        .execute(
            "return document.querySelectorAll('[data-testid=ppm-chart] details tbody tr').length",
        )
        .await;
    assert_eq!(rows, json!(60));
    // Its table reads the purchases, minute by minute: they add up to the
    // total the server counted.
    let cells = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=ppm-chart] details tbody tr')]
               .map((row) => row.cells[1].textContent)",
        )
        .await;
    let in_table: i64 = cells
        .as_array()
        .unwrap()
        .iter()
        .map(|cell| digits(cell.as_str().unwrap()))
        .sum();
    assert_eq!(in_table, server_total, "the chart's table: {cells}");
    let sales_rows = browser
        .execute("return document.querySelectorAll('[data-testid=sales-row] progress').length")
        .await;
    assert!(
        sales_rows.as_u64().unwrap() >= 3,
        "a progress bar per block: {sales_rows}"
    );
    let stakes_bars = browser
        .execute("return document.querySelectorAll('[data-testid=money-chart] rect.bar').length")
        .await;
    assert_eq!(
        stakes_bars,
        json!(9),
        "three bars for each of the three stakes"
    );
    // Each bar reads the server's figure for its stake.
    let titles = browser
        .execute(
            "return [...document.querySelectorAll('[data-testid=money-chart] rect.bar title')]
               .map((t) => t.textContent)",
        )
        .await;
    let (status, dashboard) = browser.call("GET", "/console/api/dashboard").await;
    assert_eq!(status, 200, "{dashboard}");
    let per_stake = crate::common::items(&dashboard["per_stake"], "stakes");
    let mut expected = Vec::new();
    for stake in per_stake {
        for field in ["stakes_cents", "prizes_cents", "expected_prizes_cents"] {
            expected.push(stake[field].as_i64().unwrap());
        }
    }
    let shown: Vec<i64> = titles
        .as_array()
        .unwrap()
        .iter()
        .map(|title| {
            let title = title.as_str().unwrap();
            digits(title.rsplit_once(": ").expect("name: value").1)
        })
        .collect();
    assert_eq!(shown, expected, "the bars' values: {titles}");
    shot(&browser, "console-dashboard").await;

    // A tablet's width: nothing runs off the side.
    browser.set_window(768, 1024).await;
    browser.wait_for("window.innerWidth <= 768").await;
    browser.settled().await;
    let overflow = browser
        .execute("return document.documentElement.scrollWidth > window.innerWidth")
        .await;
    assert_eq!(
        overflow,
        json!(false),
        "the dashboard fits a 768 px wide screen"
    );
    shot(&browser, "console-dashboard-tablet").await;

    // Logging out ends the session: the API answers 401 and the page asks again.
    browser.log_out_of_the_console().await;
    let (status, body) = browser.call("GET", "/console/api/me").await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], json!("unauthorized"));
    browser.only_expected_errors(&["/console/api/me"]).await;
    browser.close().await;
}
