//! Opening an account with the form: deposit, play, withdraw, statement, close; and the
//! same form with the keyboard alone on a phone, the account in English.

use super::*;

// The page is the same on either database (its PostgreSQL smoke test is
// api::plays::browser::a_new_player_registers_deposits_and_plays_a_full_game_at_each_stake).
on_sqlite!(
    an_account_opened_with_the_form_deposits_plays_withdraws_reads_its_statement_and_closes,
    the_opening_form_works_with_the_keyboard_alone_on_a_phone_and_the_account_speaks_english,
);

async fn an_account_opened_with_the_form_deposits_plays_withdraws_reads_its_statement_and_closes(
    h: &Harness,
) {
    let (site, browser) = setup(h, 1280, 900).await;
    let base = &site.base;
    browser.goto(&format!("{base}/?fast=1#/register")).await;
    // Fast animations on every page load, the sandbox's return included.
    browser
        .execute("localStorage.setItem('tresor.fast', '1')")
        .await;
    browser.wait_screen("register").await;
    browser.screenshot("account-open-form").await;
    let fields = [
        ("open-birth-name", "Durand"),
        ("open-first-names", "Ana Marie"),
        ("open-birth-date", "14/07/1990"),
        ("open-birth-place", "Lyon (France)"),
        ("open-address", "1 rue de la Paix, 75002 Paris"),
        ("open-email", "ana@example.org"),
        ("open-username", "ana_durand"),
        ("open-password", PASSWORD),
        ("open-iban", IBAN),
    ];
    for (testid, text) in fields {
        browser
            .type_into(&format!("[data-testid={testid}]"), text)
            .await;
    }
    // Without the rules accepted, the form says so under the box and focuses it.
    browser
        .click_until(
            "[data-testid=open-submit]",
            "document.activeElement === document.querySelector('[data-testid=open-accept]')",
        )
        .await;
    assert!(
        browser
            .text("#open-accept_rules-error")
            .await
            .contains("règlement")
    );
    browser.click("[data-testid=open-accept]").await;
    browser.click("[data-testid=open-submit]").await;
    browser.wait_screen("account").await;
    browser
        .wait_for("document.querySelector('[data-testid=account-status]').dataset.status === 'provisional'")
        .await;
    let withdraw = browser
        .wait_text_when(
            "document.querySelector('[data-testid=can-withdraw]')?.dataset.ok === 'false'",
            "[data-testid=can-withdraw]",
        )
        .await;
    assert!(
        withdraw.contains("identité vérifiée"),
        "the account says why it may not withdraw yet: {withdraw}"
    );
    let account = browser.get_json("/api/account").await;
    assert_eq!(account["identity"]["birth_name"], json!("Durand"));
    assert_eq!(account["identity"]["birth_date"], json!("1990-07-14"));
    assert_eq!(account["iban"], json!("FR76 •••• 0189"));
    assert_eq!(account["marketing_consent"], json!(false));
    browser.screenshot("account-provisional").await;

    // A deposit through the sandbox provider: « Pay », back on the account, credited.
    browser.ask_deposit("30").await;
    browser.screenshot("account-sandbox-page").await;
    browser.click("#pay").await;
    assert_eq!(browser.deposit_outcome().await, "credited");
    browser.wait_balance(3000).await;
    let outcome = browser.text("[data-testid=deposit-outcome]").await;
    assert!(outcome.contains("30"), "{outcome}");
    browser.screenshot("account-deposit-credited").await;

    // New rules are published: the purchase shows them to accept, then goes on.
    h.tresor_ok(&["rules", "publish"]);
    let play = browser.play_a_game_accepting_rules().await;
    let stake = play["stake_cents"].as_i64().unwrap();
    let prize = play["outcome"]["prize_cents"].as_i64().unwrap();
    let after_game = 3000 - stake + prize;
    browser.wait_balance(after_game).await;
    let account = browser.get_json("/api/account").await;
    assert_eq!(
        account["rules_version_accepted"],
        account["rules_version_current"]
    );

    // The operator checks the identity documents (here through the
    // service, as a console account does: tests/it/console_api/browser/ drives
    // the console's screens) and the IBAN: withdrawals open.
    let reviewer = tresor::service::Service::new(
        h.connect().await,
        std::sync::Arc::new(tresor::service::SystemClock),
        tresor::service::Settings::default(),
    );
    crate::common::opening::documents_verified(&reviewer, "ana_durand").await;
    h.tresor_ok(&[
        "account",
        "verify",
        "--username",
        "ana_durand",
        "--iban",
        IBAN,
    ]);
    browser
        .click_until(
            "[data-testid=nav-account]",
            "document.querySelector('[data-testid=account-status]').dataset.status === 'verified' && !document.querySelector('#withdraw-form').hidden",
        )
        .await;
    assert!(
        browser
            .text("[data-testid=withdraw-iban]")
            .await
            .contains("FR76 •••• 0189")
    );
    // More than the balance: refused in the page's language, nothing moves.
    browser.fill("[data-testid=withdraw-amount]", "1000").await;
    browser.click("[data-testid=withdraw-submit]").await;
    let refusal = browser.wait_text("#withdraw-error").await;
    assert!(
        refusal.contains("plus que vos disponibilités"),
        "the refusal is in French: {refusal}"
    );
    assert_eq!(browser.balance_cents().await, after_game);
    browser.fill("[data-testid=withdraw-amount]", "10").await;
    browser.click("[data-testid=withdraw-submit]").await;
    // The amount leaves the balance at once, pending the operator.
    browser.wait_balance(after_game - 1000).await;
    browser
        .wait_for("document.querySelector('[data-testid=withdrawal]')?.dataset.state === 'pending'")
        .await;
    assert_eq!(
        browser
            .execute(
                "return document.querySelector('[data-testid=withdrawal]').dataset.amountCents"
            )
            .await,
        json!("1000")
    );
    browser.screenshot("account-verified-withdrawal").await;

    // The statement: every movement, each balance the one before plus its change.
    browser.click("[data-testid=statement-open]").await;
    browser.wait_screen("statement").await;
    browser
        .wait_for("document.querySelectorAll('[data-testid=statement-row]').length > 0")
        .await;
    let rows = statement_rows(&browser).await;
    let kinds: Vec<&str> = rows.iter().rev().map(|r| r.0.as_str()).collect();
    let mut expected = vec!["deposit", "stake"];
    if prize > 0 {
        expected.push("win");
    }
    expected.push("withdrawal_requested");
    assert_eq!(kinds, expected, "oldest first: {rows:?}");
    let mut running = 0;
    for (movement, delta, balance) in rows.iter().rev() {
        running += delta;
        assert_eq!(*balance, running, "the balance after {movement}");
    }
    assert_eq!(running, after_game - 1000);
    let words = browser.text("[data-testid=statement]").await;
    for word in ["Dépôt", "Mise", "Retrait demandé"] {
        assert!(words.contains(word), "{word} in {words}");
    }
    browser.screenshot("account-statement").await;

    // The CSV behind the page's link: the same movements, oldest first.
    let csv = browser
        .in_page(
            "get(document.querySelector('[data-testid=statement-csv]').href)
               .then((r) => r.text()).then(done, (e) => done(String(e)));",
        )
        .await;
    let csv = csv.as_str().unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (movement, delta, balance) = (
        column("movement"),
        column("delta_cents"),
        column("balance_cents"),
    );
    let from_csv: Vec<(String, i64, i64)> = lines
        .map(|line| {
            let cells: Vec<&str> = line.split(',').collect();
            (
                cells[movement].to_owned(),
                cells[delta].parse().unwrap(),
                cells[balance].parse().unwrap(),
            )
        })
        .collect();
    let shown: Vec<(String, i64, i64)> = rows.into_iter().rev().collect();
    assert_eq!(from_csv, shown, "the CSV has the statement's rows");

    // Closing: the window says the balance goes to the checked IBAN, then logged out.
    browser.click("[data-testid=statement-back]").await;
    browser.wait_screen("account").await;
    browser.click("[data-testid=close-account]").await;
    browser.wait_open("#dlg-close").await;
    let text = browser.text("[data-testid=close-dialog-text]").await;
    assert!(text.contains("FR76 •••• 0189"), "{text}");
    browser.screenshot("account-close-dialog").await;
    browser
        .click_until(
            "[data-testid=close-confirm]",
            "document.body.dataset.screen === 'login' && document.body.dataset.user === 'out' && document.querySelector('#login-error').dataset.code === 'account_closed'",
        )
        .await;
    let withdrawals = h.tresor_ok(&["withdrawal", "list", "--state", "all", "--json"]);
    let withdrawals: Value = serde_json::from_slice(&withdrawals.stdout).unwrap();
    let closing: i64 = withdrawals
        .as_array()
        .or_else(|| withdrawals["withdrawals"].as_array())
        .unwrap()
        .iter()
        .filter(|w| w["closing"] == json!(true))
        .map(|w| w["amount_cents"].as_i64().unwrap())
        .sum();
    assert_eq!(
        closing,
        after_game - 1000,
        "the balance left to pay at closing"
    );
    browser.close_with_only_refusals(&[409]).await;

    h.tresor_ok(&["audit", "verify"]);
    crate::common::assert_ledger_balances(&h.connect().await).await;
}

async fn the_opening_form_works_with_the_keyboard_alone_on_a_phone_and_the_account_speaks_english(
    h: &Harness,
) {
    let (site, browser) = setup(h, 360, 740).await;
    let base = &site.base;
    browser.phone(360, 740).await;
    browser.goto(&format!("{base}/?fast=1#/register")).await;
    browser.wait_screen("register").await;
    assert_eq!(
        browser.execute("return window.innerWidth").await,
        json!(360)
    );
    assert!(browser.fits_360().await, "the register screen fits 360 px");

    browser.tab_to("open-birth-name").await;
    let typed = [
        "Martin",
        "Louise",
        // Under 18 by the server's clock: refused as a minor.
        "01/01/2015",
        "Nantes (France)",
        "3 place Royale, 44000 Nantes",
        "",
        "louise_m",
        PASSWORD,
        "",
        "",
        "",
    ];
    for (i, text) in typed.iter().enumerate() {
        browser.type_keys(text).await;
        if i + 1 < typed.len() {
            browser.press(&[TAB]).await;
        }
    }
    browser.press(&[TAB]).await;
    assert_eq!(browser.focused().await, json!("open-accept"));
    browser.press(&[SPACE]).await;
    browser.tab_to("open-submit").await;
    browser.press(&[ENTER]).await;
    // The server's refusal lands under the birth date, which gets the focus.
    browser
        .wait_for(
            "document.activeElement === document.querySelector('[data-testid=open-birth-date]')",
        )
        .await;
    let error = browser.text("#open-birth_date-error").await;
    assert!(error.contains("18 ans"), "{error}");
    assert_eq!(
        browser
            .execute("return document.activeElement.getAttribute('aria-invalid')")
            .await,
        json!("true")
    );
    browser.screenshot("account-phone-open-minor").await;
    browser.press(&[END]).await;
    browser.press(&[BACKSPACE; 10]).await;
    browser.type_keys("01/01/1990").await;
    browser.tab_to("open-submit").await;
    browser.press(&[ENTER]).await;
    browser.wait_screen("account").await;
    browser
        .wait_for("document.querySelector('[data-testid=account-status]').dataset.status === 'provisional'")
        .await;
    assert!(browser.fits_360().await, "the account screen fits 360 px");
    browser.screenshot("account-phone-account").await;

    // Every visible word of the account screen in English (on a phone the
    // language switch is in the menu).
    browser.click("[data-testid=menu]").await;
    browser
        .click_until(
            "[data-testid=lang]",
            "document.documentElement.lang === 'en' && document.querySelector('#account-title').textContent === 'My account'",
        )
        .await;
    let text = browser
        .execute("return document.querySelector('#screen-account').innerText")
        .await;
    let text = text.as_str().unwrap().to_lowercase();
    for french in [
        "é", "è", "ê", "à", "ç", "ô", " le ", " la ", " les ", " des ", " du ", " vous ",
        " votre ", " vos ", " mon ", " mes ", " oui", "jamais", "retrait", "dépôt", "compte ",
    ] {
        assert!(
            !text.contains(french),
            "French ({french:?}) left on the English account screen: {text}"
        );
    }
    let untranslated = browser
        .execute(
            "return [...document.querySelectorAll('#screen-account [data-i18n]')]
               .filter((n) => n.offsetParent !== null && n.textContent.trim() === '')
               .map((n) => n.dataset.i18n)",
        )
        .await;
    assert_eq!(untranslated, json!([]), "every label has its words");
    browser.screenshot("account-phone-english").await;

    browser.click("[data-testid=statement-open]").await;
    browser.wait_screen("statement").await;
    browser
        .wait_for("document.querySelector('#screen-statement').dataset.loaded !== undefined")
        .await;
    assert!(browser.fits_360().await, "the statement screen fits 360 px");
    // Tap targets: every button and link of the screen is 44 px high at least.
    let small = browser
        .execute(
            "return [...document.querySelectorAll('#screen-statement a, #screen-statement button, #screen-account button')]
               .filter((n) => n.offsetParent !== null && n.getBoundingClientRect().height < 44)
               .map((n) => n.dataset.testid || n.id || n.textContent)",
        )
        .await;
    assert_eq!(small, json!([]), "tap targets of 44 px");
    browser.close_with_only_refusals(&[403]).await;
}
