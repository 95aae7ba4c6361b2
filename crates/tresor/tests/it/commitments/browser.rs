//! The fairness page's blocks (issue 42): the page says what holds for
//! every game — not « each block of 450,000 units » nor a commitment that is
//! always sha256(secret) — and gives each block its units, its game's
//! definition (SHA-256) and the form of its commitment, as `GET /api/blocks`
//! does; a published block's command, run as the page shows it, re-checks
//! it (another game's with its file, whose SHA-256 it checks first). In
//! French and in English, axe-core clean.

use crate::common::Harness;
use crate::common::browser::Browser;
use crate::common::fetch_json;
use crate::common::page::Site;
use crate::tlog::browser::open_fairness;
use serde_json::{Value, json};
use std::path::Path;

on_sqlite!(the_fairness_page_gives_each_block_its_units_definition_and_commitment_form);

/// The repository's folder: `games/` holds the shipped definitions.
fn repository() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The page's text above the blocks, the blocks' column headers, and each
/// row as `{id, game, definition, units, form, commitment, verify}`, its
/// white space made plain.
async fn read_page(browser: &Browser, rows: usize) -> Value {
    browser
        .wait_for(&format!(
            "(() => {{
               const plain = (e) => e ? e.textContent.replace(/\\s+/g, ' ').trim() : null;
               const screen = document.querySelector('#screen-fairness');
               const rows = [...screen.querySelectorAll('[data-testid=block-row]')];
               if (rows.length !== {rows}) return false;
               return {{
                 text: plain(screen.querySelector('.fair-text')),
                 headers: [...screen.querySelectorAll('[data-testid=blocks] th')].map(plain),
                 rows: rows.map((r) => ({{
                   id: Number(r.dataset.blockId),
                   game: plain(r.querySelector('[data-testid=block-game]')),
                   definition: plain(r.querySelector('[data-testid=block-definition]')),
                   units: plain(r.querySelector('[data-testid=block-units]')),
                   form: plain(r.querySelector('[data-testid=block-commitment-form]')),
                   commitment: plain(r.querySelector('[data-testid=block-commitment]')),
                   verify: r.querySelector('[data-testid=block-verify]')?.textContent ?? null,
                 }})),
               }};
             }})()"
        ))
        .await
}

/// A count as the page writes it in `lang`: "450 000", "450,000".
fn count(n: i64, lang: &str) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(if lang == "fr" { ' ' } else { ',' });
        }
        out.push(digit);
    }
    out
}

/// Checks the page against `GET /api/blocks` in `lang`, and that it no
/// longer speaks of the island alone.
fn check_page(page: &Value, blocks: &[Value], lang: &str) {
    let text = page["text"].as_str().unwrap();
    let gone: &[&str] = if lang == "fr" {
        &["450 000", "sha256(secret), appelée engagement"]
    } else {
        &["450,000", "sha256(secret), called the commitment"]
    };
    for words in gone {
        assert!(
            !text.contains(words),
            "{lang}: {text:?} still says {words:?}"
        );
    }
    for form in ["sha256(secret)", "sha256(secret || sha256(definition))"] {
        assert!(
            text.contains(form),
            "{lang}: {text:?} does not say {form:?}"
        );
    }
    let headers = page["headers"].to_string().to_lowercase();
    assert!(!headers.contains("sha256(secret)"), "{lang}: {headers}");
    let rows = page["rows"].as_array().unwrap();
    assert_eq!(rows.len(), blocks.len());
    for (row, block) in rows.iter().zip(blocks) {
        assert_eq!(row["id"], block["id"], "{lang}: {row}");
        let sold = block["units_sold"]
            .as_i64()
            .map_or("—".to_owned(), |n| count(n, lang));
        let units = count(block["units_per_block"].as_i64().unwrap(), lang);
        assert_eq!(row["units"], json!(format!("{sold} / {units}")), "{lang}");
        assert_eq!(row["definition"], block["game_sha256"], "{lang}: {row}");
        assert_eq!(row["form"], block["commitment_form"], "{lang}: {row}");
        assert_eq!(row["commitment"], block["commitment"], "{lang}: {row}");
        let published = block["secret"].is_string();
        assert_eq!(row["verify"].is_string(), published, "{lang}: {row}");
    }
}

/// Runs a command the page shows, as someone would paste it in a shell at
/// the repository's root with `tresor` on the path.
fn run_as_pasted(command: &str) -> std::process::Output {
    let bin = Path::new(env!("CARGO_BIN_EXE_tresor")).parent().unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    std::process::Command::new("sh")
        .args(["-c", command])
        .current_dir(repository())
        .env("PATH", path)
        .output()
        .expect("run sh")
}

async fn the_fairness_page_gives_each_block_its_units_definition_and_commitment_form(h: &Harness) {
    let games = repository().join("games");
    let games = games.to_str().unwrap();
    let (server, browser) =
        Site::start(h, &["--games".to_owned(), games.to_owned()], 1280, 900).await;
    // One published block of each game (the demo's stay on sale).
    for (game, stake) in [("ile-au-tresor", "50"), ("tresor-express", "100")] {
        let created = h.tresor_ok(&[
            "emission", "create", "--games", games, "--game", game, "--stakes", stake,
        ]);
        let created = String::from_utf8_lossy(&created.stdout).to_string();
        let id = created
            .strip_prefix("created emission ")
            .and_then(|rest| rest.split_whitespace().next())
            .unwrap_or_else(|| panic!("an emission id in: {created}"))
            .to_owned();
        h.tresor_ok(&["emission", "close", &id]);
    }
    let api = fetch_json(&format!("{}/api/blocks", server.base)).await;
    let blocks = crate::common::items(&api["blocks"], "blocks");
    for game in ["ile-au-tresor", "tresor-express"] {
        assert!(
            blocks
                .iter()
                .any(|b| b["game"] == game && b["secret"].is_string()),
            "a published block of {game}: {api}"
        );
    }

    open_fairness(&browser, &server.base, "fr").await;
    let mut page = Value::Null;
    for lang in ["fr", "en"] {
        if lang == "en" {
            browser.switch_language("en").await;
        }
        page = read_page(&browser, blocks.len()).await;
        check_page(&page, blocks, lang);
        browser
            .execute("document.querySelector('[data-testid=blocks]').scrollIntoView();")
            .await;
        browser.screenshot(&format!("fairness-blocks-{lang}")).await;
        browser
            .assert_accessible_if_axe(&format!("fairness page, {lang}"))
            .await;
    }
    browser.close().await;

    // Each published block's command, pasted as shown, re-checks it: the
    // island's with no file, the scratch card's with its file checked first.
    for row in page["rows"].as_array().unwrap() {
        let Some(command) = row["verify"].as_str() else {
            continue;
        };
        let block = blocks.iter().find(|b| b["id"] == row["id"]).unwrap();
        if block["game"] == "ile-au-tresor" {
            assert!(!command.contains("--game"), "{command}");
        } else {
            let sha = block["game_sha256"].as_str().unwrap();
            assert!(
                command.starts_with(&format!(
                    "echo \"{sha}  games/tresor-express.toml\" | sha256sum --check && "
                )),
                "{command}"
            );
            assert!(
                command.ends_with(" --game games/tresor-express.toml"),
                "{command}"
            );
        }
        let output = run_as_pasted(command);
        assert!(
            output.status.success(),
            "{command}: {}",
            crate::common::describe(&output)
        );
        let said = String::from_utf8_lossy(&output.stdout);
        assert!(
            said.contains(&format!("OK: {}", row["form"].as_str().unwrap())),
            "{said}"
        );
    }
}
