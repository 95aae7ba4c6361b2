//! `tresor game sheet` through the real binary (issue 45, part 2): the
//! island's figures at each stake as literals derived by hand from its table,
//! the JSON and CSV formats parsed back, a test game's, and bad input refused
//! with nothing on stdout; `tresor simulate`'s counts against the sheet; and
//! `GET /api/games`'s sheet from the version the open emission pinned.

use crate::common::{TestApp, TestDb, describe, tresor};
use std::path::{Path, PathBuf};
use tresor::service::{Service, Settings};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../games")
        .join(name)
}

fn test_game(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/it/games")
        .join(name)
}

fn sheet(args: &[&str]) -> String {
    let mut all = vec!["game", "sheet"];
    all.extend(args);
    let output = tresor(&all);
    assert_eq!(output.status.code(), Some(0), "{}", describe(&output));
    String::from_utf8(output.stdout).unwrap()
}

/// The island's block at every stake: 450,000 units, of which 1, 3, 100,
/// 1,000, 500, 2,000, 26,000, 38,000 and 52,000 win levels 1 to 9 and
/// 330,396 lose. So level 7 is 1 in 450,000 / 26,000 = 17.31, the 119,604
/// winning units are 1 in 3.76 (26.58 %), and the prizes, 15,750,000 c
/// per block at 0,50 € (twice, four times that at 1 € and 2 €), pay back
/// 70 % of 22,500,000 c; a unit's mean prize is 35 c at 0,50 €; the top
/// prize is 10,000 stakes; the lowest prize is the stake itself, so the
/// chance to win back the stake is the chance to win.
#[test]
fn the_island_s_table_at_each_stake() {
    let text = sheet(&[]);
    assert!(
        text.starts_with(
            "built in: ile-au-tresor « L'Ile au Trésor » (Treasure Island), 450000 units per block"
        ),
        "{text}"
    );
    for (stake, top, mean, sd) in [
        ("0,50 €", "5000,00 €", "35.00", "768.22"),
        ("1,00 €", "10000,00 €", "70.00", "1536.45"),
        ("2,00 €", "20000,00 €", "140.00", "3072.89"),
    ] {
        let part = text
            .split(&format!("stake {stake}:"))
            .nth(1)
            .unwrap_or_else(|| panic!("no stake {stake}: {text}"));
        let part = part.split("\nstake ").next().unwrap();
        let rows: Vec<Vec<&str>> = part
            .lines()
            .skip(2)
            .take(10)
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(
            rows[0],
            [
                "1",
                top.split(' ').next().unwrap(),
                "€",
                "1",
                "450000.00",
                "1/450000"
            ]
        );
        let odds: Vec<(&str, &str)> = rows.iter().map(|r| (r[4], r[5])).collect();
        assert_eq!(
            odds,
            [
                ("450000.00", "1/450000"),
                ("150000.00", "1/150000"),
                ("4500.00", "1/4500"),
                ("450.00", "1/450"),
                ("900.00", "1/900"),
                ("225.00", "1/225"),
                ("17.31", "13/225"),
                ("11.84", "19/225"),
                ("8.65", "26/225"),
                ("1.36", "27533/37500"),
            ],
            "{part}"
        );
        for line in [
            "chance to win anything: 1 in 3.76 (26.5787 %, 9967/37500)",
            "payout rate: 70.00 % (7/10)",
            &format!("a unit's prize: mean {mean} cents"),
            &format!("standard deviation {sd} cents"),
            "largest prize: 10000.00 × the stake",
            "chance to win back the stake: 1 in 3.76 (26.5787 %, 9967/37500)",
            "buying 1 unit of one block: at least one win 26.5787 %, at least the stakes back 26.5787 %",
            "buying 10 units of one block: at least one win 95.4480 %, at least the stakes back 12.5741 %",
            "buying 100 units of one block: at least one win 99.999999999996 %, at least the stakes back 14.1663 %",
        ] {
            assert!(part.contains(line), "stake {stake}: no {line:?} in {part}");
        }
    }
    // The island's file gives the same sheet as the built-in definition.
    let island = shipped("ile-au-tresor.toml");
    let from_file = sheet(&[island.to_str().unwrap()]);
    assert_eq!(
        from_file.split_once('\n').unwrap().1,
        text.split_once('\n').unwrap().1
    );
}

#[test]
fn the_json_sheet_parses_and_holds_the_exact_figures() {
    let express = shipped("tresor-express.toml");
    let coffre = test_game("petit-coffre.toml");
    let text = sheet(&[
        "--format",
        "json",
        express.to_str().unwrap(),
        coffre.to_str().unwrap(),
    ]);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    let games = json["games"].as_array().unwrap();
    assert_eq!(games.len(), 2);
    assert_eq!(games[0]["id"], "tresor-express");
    let stake = &games[0]["stakes"][0];
    assert_eq!(stake["stake_cents"], 100);
    // 31,225 winning units of 100,000 = 1,249 / 4,000: 1 in 3.20.
    assert_eq!(stake["win"]["exact"], "1249/4000");
    assert!((stake["win"]["one_in"].as_f64().unwrap() - 4000.0 / 1249.0).abs() < 1e-12);
    assert_eq!(stake["payout"]["exact"], "13/20");
    assert_eq!(stake["levels"][0]["chance"]["exact"], "1/100000");
    assert_eq!(stake["levels"].as_array().unwrap().len(), 9);
    assert_eq!(stake["levels"][8]["level"], 0);
    // « Petit coffre »: 326 winning units of 2,000 at 5 €; 500,000 c of
    // prizes for 1,000,000 c of sales; a mean of 250 c; only levels 1 to 5
    // pay 5 € or more: the stake back is the win, 163 / 1,000.
    let coffre = &games[1]["stakes"][0];
    assert_eq!(coffre["win"]["exact"], "163/1000");
    assert_eq!(coffre["back_stake"]["exact"], "163/1000");
    assert_eq!(coffre["payout"]["exact"], "1/2");
    assert_eq!(coffre["mean_cents"]["exact"], "250/1");
    assert_eq!(coffre["largest_multiple"]["exact"], "200/1");
    let buys: Vec<u64> = coffre["buys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["units"].as_u64().unwrap())
        .collect();
    assert_eq!(buys, [1, 10, 100]);
    // One unit: at least one win is the chance to win.
    assert_eq!(coffre["buys"][0]["any_win"]["exact"], "163/1000");
    // Ten units: 1 − C(1674, 10) / C(2000, 10).
    let none: f64 = (0..10)
        .map(|i| f64::from(1674 - i) / f64::from(2000 - i))
        .product();
    let any_win = coffre["buys"][1]["any_win"]["value"].as_f64().unwrap();
    assert!((any_win - (1.0 - none)).abs() < 1e-12, "{any_win}");
}

#[test]
fn the_csv_sheet_parses_one_figure_a_row() {
    let text = sheet(&["--format", "csv"]);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header,
        [
            "game",
            "stake_cents",
            "figure",
            "level",
            "prize_cents",
            "units_per_block",
            "exact",
            "rounded"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert!(rows.iter().all(|r| r.len() == 8), "{text}");
    let find = |stake: &str, figure: &str, level: &str| {
        rows.iter()
            .find(|r| r[1] == stake && r[2] == figure && r[3] == level)
            .unwrap_or_else(|| panic!("no {stake} {figure} {level}: {text}"))
    };
    assert_eq!(
        find("50", "odds", "7")[4..],
        ["150", "26000", "13/225", "0.057777777778"]
    );
    assert_eq!(
        find("200", "odds", "1")[4..],
        ["2000000", "1", "1/450000", "0.000002222222"]
    );
    assert_eq!(find("100", "payout", "")[6..], ["7/10", "0.700000000000"]);
    assert_eq!(
        find("100", "win", "")[6..],
        ["9967/37500", "0.265786666667"]
    );
    assert_eq!(
        find("50", "mean_cents", "")[6..],
        ["35/1", "35.000000000000"]
    );
    assert_eq!(find("50", "variance_cents2", "")[6], "1770500/3");
    assert_eq!(find("50", "back_staked_10", "")[7], "0.125741185281");
    // 3 stakes × (10 levels + 7 figures + 3 × 2 buys).
    assert_eq!(rows.len(), 3 * (10 + 7 + 6));
}

#[test]
fn bad_files_are_refused_with_nothing_on_stdout() {
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.toml");
    let express = std::fs::read_to_string(shipped("tresor-express.toml")).unwrap();
    std::fs::write(
        &short,
        express.replacen(
            "losing_units_per_block = 68_775",
            "losing_units_per_block = 68_774",
            1,
        ),
    )
    .unwrap();
    let fake_island = dir.path().join("island.toml");
    let island = std::fs::read_to_string(shipped("ile-au-tresor.toml")).unwrap();
    std::fs::write(
        &fake_island,
        island.replacen("prize_cents = 500_000", "prize_cents = 600_000", 1),
    )
    .unwrap();
    let good = shipped("tresor-express.toml");
    let missing = dir.path().join("missing.toml");
    for (file, says) in [
        (&short, "[levels-sum]"),
        (&fake_island, "[duplicate-id]"),
        (&missing, "cannot read it"),
    ] {
        // A good file first: still nothing printed.
        for format in ["table", "json", "csv"] {
            let output = tresor(&[
                "game",
                "sheet",
                "--format",
                format,
                good.to_str().unwrap(),
                file.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
            assert!(output.stdout.is_empty(), "{}", describe(&output));
            assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
            assert!(stderr.contains(says), "{stderr}");
            assert!(stderr.contains(&file.display().to_string()), "{stderr}");
        }
    }
    let output = tresor(&["game", "sheet", "--format", "xml"]);
    assert_eq!(output.status.code(), Some(2), "{}", describe(&output));
    assert!(output.stdout.is_empty(), "{}", describe(&output));
}

/// What `tresor simulate` counted over its blocks: the units dealt of each
/// level (0 for the losing ones), the prizes its scenes staged against the
/// sales, and for each buy of k units (k, runs, runs with at least one win,
/// runs paying back at least k stakes).
struct Simulated {
    dealt: [u64; 10],
    prizes_cents: u64,
    sales_cents: u64,
    buys: Vec<[u64; 4]>,
}

/// The number after `after` in `text`.
fn number_after(text: &str, after: &str) -> u64 {
    let rest = text
        .split(after)
        .nth(1)
        .unwrap_or_else(|| panic!("no {after:?} in {text}"));
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits
        .parse()
        .unwrap_or_else(|_| panic!("{after:?}: {rest}"))
}

fn simulated(text: &str) -> Simulated {
    let mut dealt = [0u64; 10];
    let table = text
        .split("units per level (all blocks):\n")
        .nth(1)
        .unwrap();
    for line in table.lines().skip(1).take_while(|l| l.starts_with("  ")) {
        let columns: Vec<&str> = line.split_whitespace().collect();
        let level: usize = if columns[0] == "lose" {
            0
        } else {
            columns[0].parse().unwrap()
        };
        dealt[level] = columns[2].parse().unwrap();
    }
    let buys = text
        .lines()
        .filter(|l| l.starts_with("  k = "))
        .map(|l| {
            [
                number_after(l, "k = "),
                number_after(l, ": "),
                number_after(l, "at least one win in "),
                number_after(l, "at least the stakes back in "),
            ]
        })
        .collect();
    Simulated {
        dealt,
        prizes_cents: number_after(text, "\npayout: "),
        sales_cents: number_after(text, " cents of prizes for "),
        buys,
    }
}

/// `num/den` in lowest terms, as the sheet writes an exact figure.
fn fraction(num: u64, den: u64) -> String {
    let (mut a, mut b) = (num, den);
    while b != 0 {
        (a, b) = (b, a % b);
    }
    format!("{}/{}", num / a, den / a)
}

/// The Kullback–Leibler divergence of a share `q` from a chance `p`, in
/// nats (0 · ln 0 = 0).
fn divergence(q: f64, p: f64) -> f64 {
    let term = |x: f64, y: f64| if x == 0.0 { 0.0 } else { x * (x / y).ln() };
    term(q, p) + term(1.0 - q, 1.0 - p)
}

/// How many sampled figures `simulate_counts_what_the_sheet_says` checks:
/// the island's three stakes and « Petit coffre »'s one, each 2 buys (10
/// and 100 units) × 2 chances. Each is given 1 ‰ ÷ 16 of failing by chance.
const SAMPLED: u32 = 16;

/// Checks `tresor simulate` of `blocks` blocks of `stake` (of `file`, else
/// the island) against the stake's sheet; returns how many sampled figures
/// it checked.
///
/// A whole block is the table, so each level's units per block, the chance
/// to win, the payout rate and a unit's mean prize must equal the sheet's
/// fractions exactly, and so must the chances of a buyer of one unit. A
/// buyer of k = 10 or 100 units is sampled by the blocks' runs of k
/// consecutive units (`simulate`'s `buys.rs`): a share `q` of `n` runs
/// is refused when n · KL(q ‖ p) ≥ ln(2 × 16 / 1 ‰). The runs of one
/// shuffled block are not independent, but as increasing functions of
/// disjoint parts of a uniform permutation they are negatively associated
/// (Joag-Dev and Proschan 1983), for which the Chernoff–Hoeffding bound
/// P(q ≥ p + t) ≤ exp(−n · KL(p + t ‖ p)), and its mirror below, still
/// holds (Dubhashi and Ranjan 1998): each figure fails by chance with
/// probability at most 1 ‰ ÷ 16, the 16 of them at most 1 ‰ together. The
/// seed is drawn anew each run and said on failure.
fn simulate_agrees_with_the_sheet(file: Option<&Path>, stake: &str, blocks: u64) -> u32 {
    let mut seed = [0u8; 32];
    getrandom::fill(&mut seed).unwrap();
    let seed = hex::encode(seed);
    let mut extra = vec!["--seed", seed.as_str()];
    let mut sheet_args = vec!["--format", "json"];
    if let Some(file) = file {
        extra.extend(["--game", file.to_str().unwrap()]);
        sheet_args.push(file.to_str().unwrap());
    }
    let text = crate::common::cli::simulate(stake, &blocks.to_string(), &extra);
    let counted = simulated(&text);
    let json: serde_json::Value = serde_json::from_str(&sheet(&sheet_args)).unwrap();
    let sheet = json["games"][0]["stakes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stake_cents"].as_i64() == stake.parse().ok())
        .unwrap_or_else(|| panic!("no stake {stake} in {json}"));
    let said = format!("stake {stake}, seed {seed}: {text}");
    let units = blocks * sheet["units_per_block"].as_u64().unwrap();
    for level in sheet["levels"].as_array().unwrap() {
        let number = level["level"].as_u64().unwrap() as usize;
        let per_block = level["units_per_block"].as_u64().unwrap();
        assert_eq!(
            counted.dealt[number],
            blocks * per_block,
            "level {number}, {said}"
        );
        assert_eq!(
            fraction(counted.dealt[number], units),
            level["chance"]["exact"],
            "level {number}, {said}"
        );
    }
    let exact = [
        ("win", units - counted.dealt[0], units),
        ("payout", counted.prizes_cents, counted.sales_cents),
        ("mean_cents", counted.prizes_cents, units),
    ];
    for (figure, num, den) in exact {
        assert_eq!(
            fraction(num, den),
            sheet[figure]["exact"],
            "{figure}, {said}"
        );
    }
    let buys = sheet["buys"].as_array().unwrap();
    assert_eq!(counted.buys.len(), buys.len(), "{said}");
    let mut sampled = 0;
    for (&[k, runs, any_win, back], buy) in counted.buys.iter().zip(buys) {
        assert_eq!(buy["units"].as_u64(), Some(k), "{said}");
        assert_eq!(runs, units / k, "{said}");
        for (figure, count) in [("any_win", any_win), ("back_staked", back)] {
            let chance = &buy[figure];
            if k == 1 {
                assert_eq!(fraction(count, runs), chance["exact"], "{figure}, {said}");
                continue;
            }
            let (q, p) = (
                count as f64 / runs as f64,
                chance["value"].as_f64().unwrap(),
            );
            let bound = (2.0 * f64::from(SAMPLED) / 1e-3).ln();
            assert!(
                runs as f64 * divergence(q, p) < bound,
                "{figure} of {k} units: {count} of {runs} runs = {q}, the sheet's {p}; {said}"
            );
            sampled += 1;
        }
    }
    sampled
}

/// `tresor simulate` counts what `tresor game sheet` computes: the island's
/// three stakes, one block each, and « Petit coffre », a scratch card of
/// 2,000 units, over 100 blocks.
#[test]
fn simulate_counts_what_the_sheet_says() {
    let mut sampled = 0;
    for stake in ["50", "100", "200"] {
        sampled += simulate_agrees_with_the_sheet(None, stake, 1);
    }
    let coffre = test_game("petit-coffre.toml");
    sampled += simulate_agrees_with_the_sheet(Some(&coffre), "500", 100);
    assert_eq!(sampled, SAMPLED);
}

/// A catalogue of the island and « Petit coffre » as `text` gives it.
fn coffre_catalog(text: &str) -> std::sync::Arc<tresor::games::Catalog> {
    let game = tresor_game::Game::parse(text).unwrap().leak();
    game.check(7_500).unwrap();
    std::sync::Arc::new(tresor::games::Catalog::new(vec![
        tresor::games::Entry::new(game, text.to_owned()),
    ]))
}

/// `GET /api/games`'s sheet is the definition the open emission pinned,
/// read by its SHA-256 when the catalogue's file has changed since (the
/// catalogue's own versions need no text at all), and the file's once no
/// emission of the game is open.
async fn the_sheet_is_the_pinned_version_s(db: &TestDb) {
    let folder = tempfile::tempdir().unwrap();
    let file = folder.path().join("petit-coffre.toml");
    let pinned = std::fs::read_to_string(test_game("petit-coffre.toml")).unwrap();
    std::fs::write(&file, &pinned).unwrap();
    let games = folder.path().to_str().unwrap();
    let created = db.tresor_ok(&[
        "emission",
        "create",
        "--games",
        games,
        "--game",
        "petit-coffre",
        "--blocks",
        "1",
    ]);
    let emission = number_after(
        &String::from_utf8_lossy(&created.stdout),
        "created emission ",
    );
    // The file changes: 100 losing units more, 100 of level 5 fewer.
    let changed = pinned
        .replacen(
            "losing_units_per_block = 1_674",
            "losing_units_per_block = 1_774",
            1,
        )
        .replacen(
            "{ level = 5, units_per_block = 200,",
            "{ level = 5, units_per_block = 100,",
            1,
        );
    assert_ne!(changed, pinned);
    let sheet_of = |service: Service| async move {
        let games = service.games_with_sheets().await.unwrap();
        let coffre = games
            .iter()
            .find(|g| g.view.game.id == "petit-coffre")
            .unwrap();
        let stake = &coffre.sheet.stakes[0];
        (coffre.sheet.sha256.clone(), stake.win.exact.clone())
    };
    let settings = |text: &str| Settings {
        games: coffre_catalog(text),
        ..TestApp::settings()
    };
    let pinned_sha = tresor_game::Game::parse(&pinned).unwrap().sha256_hex();
    let service = db.service_with(settings(&changed)).await.0;
    assert_eq!(
        sheet_of(service).await,
        (pinned_sha.clone(), "163/1000".to_owned())
    );
    let service = db.service_with(settings(&pinned)).await.0;
    assert_eq!(sheet_of(service).await, (pinned_sha, "163/1000".to_owned()));
    // No emission of it open: the file's figures, 226 winning units.
    db.tresor_ok(&["emission", "close", &emission.to_string()]);
    let changed_sha = tresor_game::Game::parse(&changed).unwrap().sha256_hex();
    let service = db.service_with(settings(&changed)).await.0;
    assert_eq!(
        sheet_of(service).await,
        (changed_sha, "113/1000".to_owned())
    );
}

on_both!(the_sheet_is_the_pinned_version_s);
