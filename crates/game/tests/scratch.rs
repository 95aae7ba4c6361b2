//! Property tests of the scratch card scene kind over many seeds and every
//! level of `games/tresor-express.toml`: a card shows exactly its unit's
//! outcome — the winning amount exactly three times, no other amount three
//! times — and a losing card never shows three identical amounts.

use std::collections::{HashMap, HashSet};
use tresor_game::{
    BlockSecret, Card, Game, InvalidCard, Level, PrizeTable, ScenarioSeeder, Scene, SceneRules,
};

const EXPRESS: &str = include_str!("../../../games/tresor-express.toml");

fn express() -> &'static Game {
    static GAME: std::sync::OnceLock<&'static Game> = std::sync::OnceLock::new();
    GAME.get_or_init(|| Game::parse(EXPRESS).unwrap().leak())
}

fn card(table: &PrizeTable, level: Level, seed: &[u8; 32]) -> Card {
    match express().stage(table, level, seed).unwrap() {
        Scene::Scratch(card) => card,
        Scene::Island(_) => unreachable!("Trésor Express is a scratch card"),
    }
}

/// How many times each amount appears on the card.
fn counts(card: &Card) -> HashMap<i64, usize> {
    let mut counts = HashMap::new();
    for &cell in &card.cells {
        *counts.entry(cell).or_default() += 1;
    }
    counts
}

#[test]
fn every_card_shows_exactly_its_outcome_and_never_a_second_win() {
    let seeder = ScenarioSeeder::new(&BlockSecret::from_bytes([9; 32]));
    for table in express().tables() {
        let amounts: HashSet<i64> = table.levels().iter().map(|p| p.prize_cents).collect();
        for level in Level::all().take(table.levels().len() + 1) {
            let prize = table.prize_cents(level).unwrap();
            for index in 0..5_000 {
                let card = card(table, level, &seeder.seed(index));
                assert_eq!((card.rows, card.columns, card.cells.len()), (3, 3, 9));
                assert_eq!(
                    (card.outcome.level, card.outcome.prize_cents),
                    (level, prize)
                );
                assert!(card.cells.iter().all(|c| amounts.contains(c)), "{card:?}");
                let triples: Vec<i64> = counts(&card)
                    .into_iter()
                    .filter(|&(_, n)| n >= 3)
                    .map(|(amount, n)| {
                        assert_eq!(n, 3, "{card:?}");
                        amount
                    })
                    .collect();
                if level.is_win() {
                    assert_eq!(triples, [prize], "{card:?}");
                } else {
                    assert!(
                        triples.is_empty(),
                        "a losing card shows {triples:?}: {card:?}"
                    );
                }
            }
        }
    }
}

#[test]
fn cards_vary_and_the_same_seed_gives_the_same_card() {
    let table = &express().tables()[0];
    let seeder = ScenarioSeeder::new(&BlockSecret::from_bytes([2; 32]));
    for level in [Level::LOSE, Level::new(1).unwrap(), Level::new(8).unwrap()] {
        let mut cards = HashSet::new();
        let mut cells_of_win = [0u32; 9];
        for index in 0..2_000 {
            let seed = seeder.seed(index);
            let card = card(table, level, &seed);
            assert_eq!(card, self::card(table, level, &seed));
            for (i, &cell) in card.cells.iter().enumerate() {
                if cell == card.outcome.prize_cents {
                    cells_of_win[i] += 1;
                }
            }
            cards.insert(card.cells);
        }
        assert!(
            cards.len() >= 1_990,
            "level {level}: {} distinct cards",
            cards.len()
        );
        if level.is_win() {
            // The winning amounts stand anywhere on the card.
            assert!(cells_of_win.iter().all(|&n| n > 500), "{cells_of_win:?}");
        }
    }
}

#[test]
fn losing_cards_tease_with_pairs() {
    let table = &express().tables()[0];
    let seeder = ScenarioSeeder::new(&BlockSecret::from_bytes([4; 32]));
    let with_pair = (0..2_000)
        .filter(|&i| {
            counts(&card(table, Level::LOSE, &seeder.seed(i)))
                .values()
                .any(|&n| n == 2)
        })
        .count();
    assert!(
        with_pair > 1_800,
        "{with_pair} of 2,000 losing cards show a pair"
    );
}

#[test]
fn the_evaluator_refuses_cards_the_rules_cannot_pay() {
    let SceneRules::Scratch(rules) = express().scene() else {
        unreachable!()
    };
    let prizes: Vec<i64> = express().tables()[0]
        .levels()
        .iter()
        .map(|p| p.prize_cents)
        .collect();
    let cells = |c: [i64; 9]| rules.evaluate(&prizes, &c);
    assert_eq!(
        cells([100, 100, 100, 200, 200, 500, 500, 1_000, 1_000]),
        Ok(Level::new(8).unwrap())
    );
    assert_eq!(
        cells([100, 100, 200, 200, 500, 500, 1_000, 1_000, 2_000]),
        Ok(Level::LOSE)
    );
    assert_eq!(
        cells([100, 100, 100, 200, 200, 200, 500, 500, 1_000]),
        Err(InvalidCard::TwoWins {
            first: 200,
            second: 100
        })
    );
    assert_eq!(
        cells([100, 100, 100, 100, 200, 200, 500, 500, 1_000]),
        Err(InvalidCard::TooMany {
            amount_cents: 100,
            count: 4
        })
    );
    assert_eq!(
        cells([7, 100, 100, 200, 200, 500, 500, 1_000, 1_000]),
        Err(InvalidCard::UnknownAmount(7))
    );
    assert_eq!(
        rules.evaluate(&prizes, &[100; 3]),
        Err(InvalidCard::Size { cells: 3 })
    );
}

#[test]
fn a_whole_block_of_cards_pays_exactly_its_table() {
    let secret = BlockSecret::from_bytes([6; 32]);
    let seeder = ScenarioSeeder::new(&secret);
    for table in express().tables() {
        let outcomes = express().outcomes(table, &secret);
        let mut paid = 0i64;
        for (index, &level) in outcomes.iter().enumerate() {
            let card = card(table, level, &seeder.seed(index as u32));
            let SceneRules::Scratch(rules) = express().scene() else {
                unreachable!()
            };
            let prizes: Vec<i64> = table.levels().iter().map(|p| p.prize_cents).collect();
            assert_eq!(rules.evaluate(&prizes, &card.cells), Ok(level));
            paid += card.outcome.prize_cents;
        }
        assert_eq!(paid, table.block_prizes_cents());
        assert_eq!(paid * 100, table.stake_cents() * 100_000 * 65);
    }
}
