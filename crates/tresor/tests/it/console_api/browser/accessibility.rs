//! Every console screen passes axe-core, in both languages.

use super::*;
use crate::common::axe::assert_no_findings;
use crate::common::upload_document;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(every_console_screen_passes_axe_core,);

/// axe-core (WCAG 2.1 A and AA) on every screen of the console, its login
/// and enrolment, a confirmation and a player's page: no serious or critical
/// finding. All findings are listed before failing.
async fn every_console_screen_passes_axe_core(h: &Harness) {
    let Some(axe) = axe_source() else {
        return;
    };
    let (site, browser) = setup(h, 1280, 900).await;
    for lang in ["fr", "en"] {
        add_operator(h, &format!("olga_{lang}"), "operator");
        add_operator(h, &format!("aude_{lang}"), "auditor");
    }
    let base = &site.base;
    // A player waiting for verification, so the queue has a row.
    let ana = cookie_client();
    let body = json!({
        "username": "ana_martin", "password": "a long password", "accept_rules": true,
        "marketing_consent": false, "iban": IBAN,
        "deposit_limit_cents": 1_000_000, "stake_limit_cents": 1_000_000,
        "identity": {"birth_name": "Martin", "first_names": "Anne Marie", "birth_date": "1990-05-01",
                     "birth_place": "Nantes", "address": "1 rue de la Paix, 75002 Paris"},
    });
    let (status, answer) = post(&ana, &format!("{base}/api/account/open"), &body, None)
        .await
        .unwrap();
    assert_eq!(status, 201, "{answer}");
    // Her identity document waits for review: the queue shows it.
    upload_document(&ana, base, "identity", "passport.jpg", JPEG).await;

    let mut findings = Vec::new();
    for lang in ["fr", "en"] {
        // axe-core's findings, and any box that scrolls sideways (a table 1 px
        // wider than its card showed a scroll bar at 1280 px).
        let mut check = async |name: &str| {
            findings.extend(
                browser
                    .axe_findings(&axe)
                    .await
                    .into_iter()
                    .map(|f| format!("{lang} {name}: {f}")),
            );
            let wide = browser
                .execute(
                    "return [...document.querySelectorAll('body *')].filter((e) => {
                       const s = getComputedStyle(e);
                       return e.offsetParent !== null && ['auto', 'scroll'].includes(s.overflowX)
                         && e.scrollWidth > e.clientWidth;
                     }).map((e) => `${e.tagName.toLowerCase()}#${e.id}.${e.className} ${e.scrollWidth}>${e.clientWidth}`)
                     .concat(document.documentElement.scrollWidth > innerWidth ? ['the page itself'] : [])",
                )
                .await;
            for item in wide.as_array().unwrap() {
                findings.push(format!(
                    "{lang} {name}: scrolls sideways at {}: {item}",
                    browser.execute("return innerWidth").await
                ));
            }
        };
        browser
            .goto(&format!("{}/console?lang={lang}", site.admin))
            .await;
        browser.wait_screen("login").await;
        check("login").await;
        let secret = browser
            .up_to_enrolment(&site.admin, &format!("olga_{lang}"), lang)
            .await;
        check("enrolment").await;
        browser.enter_code(&secret).await;
        // The console speaks the language asked (French by default), amounts
        // in its format.
        let words = browser
            .execute(
                "return [document.documentElement.lang,
                         document.querySelector('[data-testid=nav-dashboard]').textContent,
                         document.querySelector('[data-testid=who-role]').textContent]",
            )
            .await;
        let expected = if lang == "fr" {
            json!(["fr", "Tableau de bord", "opérateur"])
        } else {
            json!(["en", "Dashboard", "operator"])
        };
        assert_eq!(words, expected);
        for screen in ["dashboard", "emissions", "players", "queues", "site"] {
            browser.open(screen).await;
            browser.settled().await;
            check(screen).await;
            shot(&browser, &format!("console-{screen}-{lang}")).await;
        }
        // The queue shows the IBAN in groups of four, as it is checked by eye.
        browser.open("queues").await;
        let queue = browser
            .execute("return document.querySelector('main').innerText")
            .await;
        assert!(
            queue
                .as_str()
                .unwrap()
                .contains("FR76 3000 6000 0112 3456 7890 189"),
            "{queue}"
        );
        // A tablet's width: every screen still fits its boxes.
        browser.set_window(768, 1000).await;
        for screen in ["dashboard", "emissions", "players", "queues", "site"] {
            browser.open(screen).await;
            browser.settled().await;
            check(screen).await;
            if screen == "queues" {
                shot(&browser, &format!("console-queues-768-{lang}")).await;
            }
        }
        browser.set_window(1280, 900).await;
        browser.open("emissions").await;
        let block = browser
            .wait_for(
                "document.querySelector('[data-testid=block-row][data-state=open]')?.dataset.blockId",
            )
            .await;
        browser
            .ask(&format!("[data-testid=suspend-{}]", data_i64(&block)))
            .await;
        check("confirmation").await;
        // Leaving the screen (here as the browser's back button would) cancels
        // the confirmation: it does not stay over the next screen.
        browser.execute("location.hash = '#/players';").await;
        browser
            .wait_for("document.body.dataset.loaded === 'players'")
            .await;
        assert_eq!(
            browser
                .execute("return document.querySelector('#confirm').open")
                .await,
            json!(false),
            "the confirmation closed with its screen"
        );
        browser.open("players").await;
        browser.type_into("[data-testid=player-q]", "ana").await;
        browser.click("[data-testid=player-search-submit]").await;
        browser
            .click_until(
                "[data-testid^=player-link-]",
                "document.querySelector('[data-testid=player-detail]')?.dataset.playerId",
            )
            .await;
        browser.settled().await;
        check("a player").await;
        browser.log_out_of_the_console().await;
        let secret = browser
            .up_to_enrolment(&site.admin, &format!("aude_{lang}"), lang)
            .await;
        browser.enter_code(&secret).await;
        browser.open("trail").await;
        browser
            .wait_for("document.querySelector('[data-testid=trail-records]').dataset.count > 0")
            .await;
        browser.settled().await;
        check("trail").await;
        shot(&browser, &format!("console-trail-{lang}")).await;
        // A search that matches nothing says so.
        browser
            .type_into("[data-testid=trail-action]", "no_such_action")
            .await;
        browser
            .click_until(
                "[data-testid=trail-search-submit]",
                "document.querySelector('[data-testid=trail-records]').dataset.count === '0' && document.querySelector('#trail-records .empty') !== null",
            )
            .await;
        check("trail, nothing found").await;
        browser.log_out_of_the_console().await;
    }
    // The switch in the bar changes the language, and it is remembered.
    browser
        .goto_until(
            &format!("{}/console", site.admin),
            "document.documentElement.lang === 'en' && document.querySelector('#login-title').textContent === 'Operator\\'s console'",
        )
        .await;
    browser
        .click_until(
            "[data-testid=console-lang]",
            "document.documentElement.lang === 'fr' && document.querySelector('#login-title').textContent === 'Console de l\\'opérateur'",
        )
        .await;
    browser
        .goto_until(
            &format!("{}/console", site.admin),
            "document.documentElement.lang === 'fr' && document.querySelector('[data-testid=login-submit]').textContent === 'Continuer'",
        )
        .await;
    assert_no_findings(&findings, "the console's screens");
    browser.only_expected_errors(&[]).await;
    browser.close().await;
}
