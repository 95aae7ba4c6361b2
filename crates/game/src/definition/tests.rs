//! One test per rule of docs/GAMES.md: each malformed definition is refused
//! with its line and its rule; and the island's file is the island.

use super::*;
use crate::block::block_outcomes;
use crate::math::{LEVELS, Stake};
use crate::{ScenarioSeeder, UNITS_PER_BLOCK};

const EXPRESS: &str = include_str!("../../../../games/tresor-express.toml");

/// A small scratch card: 100 units per block, one stake, six levels.
const SMALL: &str = r#"id = "small"
units_per_block = 100

[name]
fr = "Petit"
en = "Small"

[[stakes]]
cents = 100
losing_units_per_block = 79
levels = [
    { level = 1, units_per_block = 1, prize_cents = 1_000 },
    { level = 2, units_per_block = 2, prize_cents = 500 },
    { level = 3, units_per_block = 3, prize_cents = 300 },
    { level = 4, units_per_block = 5, prize_cents = 200 },
    { level = 5, units_per_block = 10, prize_cents = 100 },
]

[scene]
kind = "scratch"
rows = 3
columns = 3
identical = 3
"#;

/// The refusal of `text`, which must be one.
fn refusal(text: &str) -> DefinitionError {
    match Game::parse(text) {
        Ok(game) => match game.leak().check(10_000) {
            Ok(_) => panic!("the definition was accepted:\n{text}"),
            Err(error) => error,
        },
        Err(error) => error,
    }
}

/// `text` with `old` (which must be there once) replaced by `new`.
fn edit(text: &str, old: &str, new: &str) -> String {
    assert_eq!(text.matches(old).count(), 1, "{old:?} is in the text once");
    text.replacen(old, new, 1)
}

/// The line of `text` that `needle` is on (the first, from 1).
fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} is in the text"));
    1 + text[..at].matches('\n').count()
}

/// The line of the first `needle` after the first `after` in `text`.
fn line_after(text: &str, after: &str, needle: &str) -> usize {
    let from = text.find(after).unwrap();
    let at = from + text[from..].find(needle).unwrap();
    1 + text[..at].matches('\n').count()
}

/// Asserts `text` is refused for `rule` at the line of `at`, saying `words`.
fn assert_refused(text: &str, at: &str, rule: Rule, words: &str) {
    let line = line_of(text, at);
    let error = refusal(text);
    assert_eq!(
        (error.line, error.rule),
        (line, rule),
        "refused as: {error}"
    );
    assert!(
        error.message.contains(words),
        "{error} does not say {words:?}"
    );
    assert!(
        error
            .to_string()
            .starts_with(&format!("line {line}: [{}] ", rule.name()))
    );
}

#[test]
fn the_small_card_and_the_shipped_games_are_valid() {
    for text in [SMALL, EXPRESS, ISLAND_DEFINITION] {
        let game = Game::parse(text).unwrap().leak();
        game.check(7_500).unwrap();
    }
}

#[test]
fn text_that_is_not_toml_is_refused_with_its_line() {
    let text = edit(SMALL, "en = \"Small\"", "en = \"Small");
    assert_refused(&text, "en = ", Rule::Syntax, "");
    let text = edit(SMALL, "rows = 3", "rows = \"three\"");
    assert_refused(&text, "rows = ", Rule::Syntax, "invalid type");
}

#[test]
fn an_unknown_key_is_refused() {
    let text = edit(
        SMALL,
        "units_per_block = 100\n",
        "units_per_block = 100\ncolour = \"red\"\n",
    );
    assert_refused(&text, "colour", Rule::UnknownKey, "unknown field `colour`");
    let text = edit(
        SMALL,
        "{ level = 3, units_per_block = 3,",
        "{ level = 3, units = 3,",
    );
    assert_refused(
        &text,
        "units = 3",
        Rule::UnknownKey,
        "unknown field `units`",
    );
    // A key of another scene kind is unknown to this one.
    let text = edit(
        SMALL,
        "identical = 3\n",
        "identical = 3\nsymbols = [\"skull\"]\n",
    );
    assert_refused(
        &text,
        "symbols",
        Rule::UnknownKey,
        "unknown key `symbols` for the scratch",
    );
}

#[test]
fn a_missing_key_is_refused() {
    let text = edit(SMALL, "units_per_block = 100\n", "");
    assert_refused(&text, "id = ", Rule::MissingKey, "units_per_block");
    let text = edit(SMALL, "identical = 3\n", "");
    assert_refused(&text, "[scene]", Rule::MissingKey, "`identical`");
}

#[test]
fn values_out_of_range_are_refused() {
    let text = edit(SMALL, "\"small\"", "\"Small Game\"");
    assert_refused(&text, "id = ", Rule::BadValue, "lowercase");
    let text = edit(SMALL, "\ncents = 100", "\ncents = 0");
    assert_refused(&text, "cents = 0", Rule::BadValue, "1 to 100000 cents");
    let text = edit(SMALL, "{ level = 3,", "{ level = 4,");
    assert_refused(
        &text,
        "{ level = 4,",
        Rule::BadValue,
        "found 4 where 3 was expected",
    );
    let text = edit(SMALL, "prize_cents = 300", "prize_cents = -300");
    assert_refused(&text, "-300", Rule::BadValue, "prize_cents");
    let text = edit(SMALL, "rows = 3", "rows = 7");
    assert_refused(&text, "[scene]", Rule::BadValue, "1 to 5 rows");
    let text = edit(
        ISLAND_DEFINITION,
        "\"sapphire\", \"skull\"]",
        "\"sapphire\", \"parrot\"]",
    );
    assert_refused(
        &text,
        "symbols = ",
        Rule::BadValue,
        "unknown symbol \"parrot\"",
    );
    let text = edit(
        ISLAND_DEFINITION,
        "\"...####..##...\",",
        "\"...####..##..\",",
    );
    assert_refused(&text, "map = ", Rule::BadValue, "a map is a rectangle");
}

#[test]
fn duplicate_ids_are_refused() {
    // A stake listed twice.
    let stake = &SMALL[SMALL.find("[[stakes]]").unwrap()..SMALL.find("[scene]").unwrap()];
    let twice = edit(SMALL, "[scene]", &format!("{stake}[scene]"));
    let error = refusal(&twice);
    let second = 2 + twice[..twice.rfind("\ncents = 100").unwrap()]
        .matches('\n')
        .count();
    assert_eq!(
        (error.line, error.rule),
        (second, Rule::DuplicateId),
        "{error}"
    );
    assert!(error.message.contains("stake of 100 cents is listed twice"));
    // A level listed twice.
    let text = edit(SMALL, "{ level = 3,", "{ level = 2,");
    assert_refused(
        &text,
        "{ level = 2, units_per_block = 3",
        Rule::DuplicateId,
        "level 2 is listed twice",
    );
    // A symbol listed twice, a combination given twice.
    let text = edit(
        ISLAND_DEFINITION,
        "\"sapphire\", \"skull\"]",
        "\"sapphire\", \"monkey\"]",
    );
    assert_refused(
        &text,
        "symbols = ",
        Rule::DuplicateId,
        "\"monkey\" is listed twice",
    );
    let text = edit(
        ISLAND_DEFINITION,
        "{ level = 9, symbol",
        "{ level = 8, symbol",
    );
    assert_refused(
        &text,
        "{ level = 8, symbol = \"candlestick\"",
        Rule::DuplicateId,
        "level 8 has two combinations",
    );
}

#[test]
fn an_unknown_scene_kind_is_refused() {
    let text = edit(SMALL, "kind = \"scratch\"", "kind = \"wheel\"");
    assert_refused(&text, "kind = ", Rule::UnknownSceneKind, "\"wheel\"");
}

#[test]
fn levels_that_do_not_fill_the_block_exactly_are_refused() {
    let text = edit(
        SMALL,
        "losing_units_per_block = 79",
        "losing_units_per_block = 78",
    );
    assert_refused(
        &text,
        "losing_units_per_block",
        Rule::LevelsSum,
        "add up to 99, not the 100 units per block",
    );
    let text = edit(
        ISLAND_DEFINITION,
        "units_per_block = 52_000, prize_cents = 200 }",
        "units_per_block = 52_001, prize_cents = 200 }",
    );
    let error = refusal(&text);
    let losing = line_after(&text, "cents = 200", "losing_units_per_block");
    assert_eq!(
        (error.line, error.rule),
        (losing, Rule::LevelsSum),
        "{error}"
    );
    assert!(error.message.contains("stake 200 cents"), "{error}");
}

#[test]
fn each_stake_s_payout_is_computed_and_refused_above_the_cap() {
    let island = Game::parse(ISLAND_DEFINITION).unwrap().leak();
    let payouts = island.check(7_000).unwrap();
    let shown: Vec<String> = payouts
        .iter()
        .map(|p| format!("{} {p}", p.stake_cents))
        .collect();
    assert_eq!(shown, ["50 70.00 %", "100 70.00 %", "200 70.00 %"]);
    let error = island.check(6_999).unwrap_err();
    assert_eq!(
        (error.line, error.rule),
        (line_of(ISLAND_DEFINITION, "[[stakes]]"), Rule::PayoutCap)
    );
    assert!(
        error.message.contains(
            "stake 50 cents pays back 70.00 % of its sales (15750000 cents of prizes for \
             22500000 cents of sales), above the cap of 69.99 %"
        ),
        "{error}"
    );
    let express = Game::parse(EXPRESS).unwrap().leak();
    let rates: Vec<String> = express
        .check(10_000)
        .unwrap()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(rates, ["65.00 %", "65.00 %"]);
}

#[test]
fn every_prize_is_reachable_by_exactly_one_combination() {
    // Two island levels won by the same combination.
    let text = edit(
        ISLAND_DEFINITION,
        "{ level = 8, symbol = \"skull\", count = 2 }",
        "{ level = 8, symbol = \"sapphire\", count = 2 }",
    );
    assert_refused(
        &text,
        "{ level = 8, symbol",
        Rule::OneCombination,
        "levels 7 and 8 are both won by 2 × sapphire",
    );
    // An island level no combination wins.
    let text = edit(
        ISLAND_DEFINITION,
        "    { level = 9, symbol = \"candlestick\", count = 1 },\n",
        "",
    );
    assert_refused(
        &text,
        "[[stakes]]",
        Rule::OneCombination,
        "level 9 of stake 50 cents has no combination",
    );
    // A combination for a level no table has.
    let small_island = ISLAND_DEFINITION
        .replace(
            "    { level = 9, units_per_block = 52_000, prize_cents = 50 },\n",
            "",
        )
        .replace(
            "    { level = 9, units_per_block = 52_000, prize_cents = 100 },\n",
            "",
        )
        .replace(
            "    { level = 9, units_per_block = 52_000, prize_cents = 200 },\n",
            "",
        )
        .replace("330_396", "382_396");
    assert_refused(
        &small_island,
        "{ level = 9, symbol",
        Rule::OneCombination,
        "level 9 has a combination but no stake's table has that level",
    );
    // Two amounts alike on a scratch card.
    let text = edit(SMALL, "prize_cents = 300", "prize_cents = 500");
    assert_refused(
        &text,
        "[[stakes]]",
        Rule::OneCombination,
        "levels 2 and 3 both pay 500 cents",
    );
}

#[test]
fn a_level_whose_scene_cannot_be_staged_is_refused() {
    // Four amounts cannot fill nine cells without three alike.
    let text = edit(
        SMALL,
        "    { level = 5, units_per_block = 10, prize_cents = 100 },\n",
        "",
    );
    let text = edit(
        &text,
        "losing_units_per_block = 79",
        "losing_units_per_block = 89",
    );
    assert_refused(
        &text,
        "[[stakes]]",
        Rule::Scene,
        "stake 100 cents: a losing card draws its 9 cells from 2 copies of each of its 4 \
         amounts, 8 cells: it cannot be filled without 3 alike",
    );
    // An island too small to hold nine chests off the totem's walk.
    let small_map = r#"map = [
    "..........",
    ".########.",
    ".########.",
    "..........",
]
fallback_walk = { start = [1, 1], throws = ["E3", "E3", "SE1", "W3"] }"#;
    let start = ISLAND_DEFINITION.find("map = [").unwrap();
    let end = ISLAND_DEFINITION.find("combinations = [").unwrap();
    let text = format!(
        "{}{small_map}\n{}",
        &ISLAND_DEFINITION[..start],
        &ISLAND_DEFINITION[end..]
    );
    assert_refused(
        &text,
        "map = [",
        Rule::Scene,
        "the map has 16 land squares, and the walk from [1, 1] throwing",
    );
    // A fallback walk into the sea.
    let text = edit(ISLAND_DEFINITION, "start = [2, 7]", "start = [1, 7]");
    assert_refused(&text, "fallback_walk", Rule::Scene, "into the sea");
}

#[test]
fn the_island_s_file_is_the_rules_text() {
    let game = ile_au_tresor();
    assert_eq!(game.id(), ISLAND_ID);
    assert_eq!(
        (game.name_fr(), game.name_en()),
        ("L'Ile au Trésor", "Treasure Island")
    );
    assert_eq!(game.units_per_block(), UNITS_PER_BLOCK);
    assert!(!game.commitment_covers_definition());
    assert_eq!(game.scene().kind(), "island");
    for stake in Stake::ALL {
        let table = game.table(stake.cents()).unwrap();
        assert_eq!(table.block_prizes_cents(), stake.block_prizes_cents());
        for level in Level::all() {
            assert_eq!(table.prize_cents(level), Some(stake.prize_cents(level)));
        }
        for (prize, spec) in table.levels().iter().zip(&LEVELS) {
            assert_eq!(prize.units_per_block, spec.units_per_block);
        }
    }
    let SceneRules::Island(rules) = game.scene() else {
        unreachable!()
    };
    for spec in &LEVELS {
        let combination = rules.combination(Level::new(spec.level).unwrap()).unwrap();
        assert_eq!(
            (combination.symbol, combination.count),
            (spec.symbol, spec.count)
        );
    }
}

#[test]
fn the_island_from_its_file_deals_and_stages_as_before() {
    let game = ile_au_tresor();
    for secret in [[0u8; 32], [7; 32]] {
        let secret = BlockSecret::from_bytes(secret);
        assert_eq!(game.commitment(&secret), secret.commitment());
        for stake in Stake::ALL {
            let table = game.table(stake.cents()).unwrap();
            let outcomes = game.outcomes(table, &secret);
            assert_eq!(outcomes, block_outcomes(&secret));
            let seeder = ScenarioSeeder::new(&secret);
            for index in 0..2_000u32 {
                let level = outcomes[index as usize];
                let seed = seeder.seed(index);
                let Scene::Island(scenario) = game.stage(table, level, &seed).unwrap() else {
                    unreachable!()
                };
                assert_eq!(scenario, generate_scenario(stake, level, &seed));
            }
        }
    }
}

#[test]
fn another_game_s_commitment_covers_its_definition() {
    let express = Game::parse(EXPRESS).unwrap();
    let secret = BlockSecret::from_bytes([3; 32]);
    let mut hash = Sha256::new();
    hash.update([3u8; 32]);
    hash.update(Sha256::digest(EXPRESS.as_bytes()));
    let expected: [u8; 32] = hash.finalize().into();
    assert_eq!(
        express.sha256(),
        <[u8; 32]>::from(Sha256::digest(EXPRESS.as_bytes()))
    );
    assert_eq!(express.commitment(&secret).to_hex(), hex::encode(expected));
    // One more byte in the file is another game, with other commitments.
    let edited = Game::parse(&format!("{EXPRESS}\n")).unwrap();
    assert_ne!(edited.commitment(&secret), express.commitment(&secret));
}

#[test]
fn a_block_of_another_game_holds_exactly_its_table() {
    let express = Game::parse(EXPRESS).unwrap();
    for table in express.tables() {
        let outcomes = express.outcomes(table, &BlockSecret::from_bytes([5; 32]));
        assert_eq!(outcomes.len(), 100_000);
        let mut counts = [0u32; 10];
        for level in &outcomes {
            counts[usize::from(level.get())] += 1;
        }
        assert_eq!(counts, table.counts());
        assert_eq!(
            counts[..9],
            [68_775, 1, 4, 20, 200, 500, 2_000, 8_500, 20_000]
        );
    }
}
