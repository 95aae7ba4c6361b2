//! The odds sheet's exact figures (`sheet.rs`, docs/GAMES.md, "The odds
//! sheet"): the k-unit figures against a brute-force count of every set of
//! units of tiny blocks, and the island's figures as literals derived by hand
//! from its table.

use tresor_game::{Exact, Game, binomial, buy, ile_au_tresor, stake_sheet};

/// Two stakes of a 12-unit block; the second's prizes are multiples of 5
/// cents only, so the count runs in steps of 5 cents, some prizes below the
/// stake.
const TINY: &str = r#"
id = "tiny"
units_per_block = 12

[name]
fr = "Minuscule"
en = "Tiny"

[[stakes]]
cents = 100
losing_units_per_block = 6
levels = [
    { level = 1, units_per_block = 1, prize_cents = 500 },
    { level = 2, units_per_block = 2, prize_cents = 200 },
    { level = 3, units_per_block = 3, prize_cents = 50 },
]

[[stakes]]
cents = 30
losing_units_per_block = 4
levels = [
    { level = 1, units_per_block = 2, prize_cents = 45 },
    { level = 2, units_per_block = 3, prize_cents = 20 },
    { level = 3, units_per_block = 3, prize_cents = 10 },
]

[scene]
kind = "scratch"
rows = 2
columns = 2
identical = 2
"#;

/// Every k-subset of the block's units, counted: (with a win, paying at
/// least k × stake, all).
fn brute_force(prizes: &[i64], stake: i64, k: u32) -> (u64, u64, u64) {
    let (mut any, mut back, mut all) = (0, 0, 0);
    for mask in 0u32..(1 << prizes.len()) {
        if mask.count_ones() != k {
            continue;
        }
        let taken: Vec<i64> = (0..prizes.len())
            .filter(|i| mask & (1 << i) != 0)
            .map(|i| prizes[i])
            .collect();
        all += 1;
        any += u64::from(taken.iter().any(|&p| p > 0));
        back += u64::from(taken.iter().sum::<i64>() >= i64::from(k) * stake);
    }
    (any, back, all)
}

#[test]
fn the_k_unit_chances_equal_a_count_of_every_set_of_units() {
    let game = Game::parse(TINY).unwrap();
    for table in game.tables() {
        // The block's units, one prize each (0 for a losing unit).
        let mut prizes = vec![0i64; table.losing_units_per_block() as usize];
        for level in table.levels() {
            prizes.extend(std::iter::repeat_n(
                level.prize_cents,
                level.units_per_block as usize,
            ));
        }
        assert_eq!(prizes.len(), 12);
        for k in 1..=12 {
            let (any, back, all) = brute_force(&prizes, table.stake_cents(), k);
            assert_eq!(binomial(12, u64::from(k)).to_string(), all.to_string());
            let figures = buy(table, 12, k);
            let stake = table.stake_cents();
            assert_eq!(
                figures.any_win,
                Exact::new(any, all),
                "stake {stake}, k {k}"
            );
            assert_eq!(
                figures.back_staked,
                Some(Exact::new(back, all)),
                "stake {stake}, k {k}"
            );
        }
    }
    // By hand: 4 units at 1 € get 4 € back with the 5 € unit (C(11, 3) =
    // 165 sets), or without it with both 2 € units (C(9, 2) = 36 sets; one
    // 2 € unit and three 0,50 € make 3,50 €): 201 of C(12, 4) = 495.
    let table = &game.tables()[0];
    assert_eq!(
        buy(table, 12, 4).back_staked,
        Some(Exact::new(201u32, 495u32))
    );
}

#[test]
fn the_island_sheet_is_its_table_exactly() {
    let game = ile_au_tresor();
    for (table, (mean, variance)) in game.tables().iter().zip([
        // Σc·p = 15,750,000 c per block at 0,50 €: 35 c a unit; Σc·p² ÷ N −
        // 35² = 266,126,250,000 ÷ 450,000 − 1,225 = 1,770,500 / 3 c².
        (35u32, 1_770_500u32),
        (70, 7_082_000),
        (140, 28_328_000),
    ]) {
        let sheet = stake_sheet(table, 450_000);
        let chances: Vec<String> = sheet.levels.iter().map(|l| l.chance.fraction()).collect();
        // 1, 3, 100, 1,000, 500, 2,000, 26,000, 38,000, 52,000 and 330,396
        // units of 450,000.
        assert_eq!(
            chances,
            [
                "1/450000",
                "1/150000",
                "1/4500",
                "1/450",
                "1/900",
                "1/225",
                "13/225",
                "19/225",
                "26/225",
                "27533/37500"
            ]
        );
        assert_eq!(sheet.levels[6].chance.one_in(2).unwrap(), "17.31");
        // 119,604 winning units of 450,000 = 9,967 / 37,500: 1 in 3.76.
        assert_eq!(sheet.win.fraction(), "9967/37500");
        assert_eq!(sheet.win.one_in(2).unwrap(), "3.76");
        assert_eq!(sheet.win.percent(2), "26.58");
        assert_eq!(sheet.payout.fraction(), "7/10");
        assert_eq!(sheet.mean_cents, Exact::new(mean, 1u32));
        assert_eq!(sheet.variance_cents2, Exact::new(variance, 3u32));
        assert_eq!(sheet.largest_multiple.fraction(), "10000/1");
        // Every winning unit pays at least the stake (level 9 pays it back).
        assert_eq!(sheet.back_stake, sheet.win);
        let buys: Vec<(u32, String, String)> = sheet
            .buys
            .iter()
            .map(|b| {
                (
                    b.units,
                    b.any_win.percent_shown(),
                    b.back_staked.as_ref().unwrap().percent(4),
                )
            })
            .collect();
        assert_eq!(
            buys,
            [
                (1, "26.5787".to_string(), "26.5787".to_string()),
                (10, "95.4480".to_string(), "12.5741".to_string()),
                (100, "99.999999999996".to_string(), "14.1663".to_string()),
            ]
        );
    }
    let sds: Vec<String> = game
        .tables()
        .iter()
        .map(|t| stake_sheet(t, 450_000).sd_cents(2))
        .collect();
    // √(1,770,500 / 3) = 768.223…; twice and four times that.
    assert_eq!(sds, ["768.22", "1536.45", "3072.89"]);
}
