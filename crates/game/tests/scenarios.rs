//! Property tests of the scenario generator over whole blocks: every unit of
//! one block of each stake is staged and checked against every rule of SPEC §3,
//! and the staged games are checked to look varied.

use std::collections::HashSet;
use std::sync::LazyLock;
use tresor_game::{
    BlockSecret, Content, Level, Scenario, ScenarioSeeder, Square, Stake, UNITS_PER_BLOCK,
    block_outcomes, evaluate, generate_scenario, island,
};

/// The land squares as a set, built once for all the checks.
static LAND: LazyLock<HashSet<Square>> = LazyLock::new(|| island().land.iter().copied().collect());

fn is_land(square: Square) -> bool {
    LAND.contains(&square)
}

/// Checks every rule of SPEC §3 on one scene; returns what went wrong.
fn check(scenario: &Scenario, stake: Stake, level: Level) -> Result<(), String> {
    let land = &*LAND;
    if scenario.outcome.level != level || scenario.outcome.prize_cents != stake.prize_cents(level) {
        return Err(format!("wrong outcome {:?}", scenario.outcome));
    }
    if !land.contains(&scenario.start) {
        return Err("the totem starts in the sea".into());
    }
    let chests: HashSet<Square> = scenario.chests.iter().copied().collect();
    if chests.len() != 9 {
        return Err("two chests share a square".into());
    }
    if !chests.is_subset(land) {
        return Err("a chest stands in the sea".into());
    }
    if chests.contains(&scenario.start) {
        return Err("a chest stands under the totem".into());
    }
    // A game is four throws, and its view once played shows all four.
    if scenario.throws.len() != 4 || scenario.view(4).throws.len() != 4 {
        return Err("a game is not four throws".into());
    }
    let mut at = scenario.start;
    let mut open = [false; 9];
    let mut revealed = Vec::new();
    for (t, throw) in scenario.throws.iter().enumerate() {
        if !(1..=3).contains(&throw.steps) || throw.path().len() != usize::from(throw.steps) {
            return Err(format!("throw {t} has a bad length"));
        }
        let (dx, dy) = throw.direction.delta();
        let mut expected_opened = Vec::new();
        for &square in throw.path() {
            if square != Square(at.0 + dx, at.1 + dy) {
                return Err(format!("throw {t} does not go straight"));
            }
            if !land.contains(&square) {
                return Err(format!("throw {t} enters the sea at {square:?}"));
            }
            at = square;
            if let Some(chest) = scenario.chests.iter().position(|&c| c == square)
                && !open[chest]
            {
                open[chest] = true;
                expected_opened.push((chest, square));
            }
        }
        let opened: Vec<(usize, Square)> = throw
            .opened()
            .iter()
            .map(|o| (usize::from(o.chest), o.square))
            .collect();
        if opened != expected_opened {
            return Err(format!(
                "throw {t} opens {opened:?}, not {expected_opened:?}"
            ));
        }
        revealed.extend(throw.opened().iter().filter_map(|o| o.content.symbol()));
    }
    if revealed != scenario.revealed_symbols() {
        return Err("revealed_symbols disagrees with the throws".into());
    }
    match evaluate(&revealed) {
        Ok(evaluated) if evaluated == level => Ok(()),
        other => Err(format!("reveals {revealed:?}, evaluated {other:?}")),
    }
}

/// What a block's scenes look like, for the distribution checks.
#[derive(Default)]
struct Tally {
    units: u32,
    opened_per_game: [u32; 13],
    losing: u32,
    losing_with_symbols: u32,
    losing_with_empty: u32,
    decided_on_throw: [u32; 4],
    winning_with_extra_symbols: u32,
    starts: HashSet<Square>,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.units += other.units;
        for (a, b) in self.opened_per_game.iter_mut().zip(other.opened_per_game) {
            *a += b;
        }
        self.losing += other.losing;
        self.losing_with_symbols += other.losing_with_symbols;
        self.losing_with_empty += other.losing_with_empty;
        for (a, b) in self.decided_on_throw.iter_mut().zip(other.decided_on_throw) {
            *a += b;
        }
        self.winning_with_extra_symbols += other.winning_with_extra_symbols;
        self.starts.extend(other.starts);
    }
}

/// Stages and checks every unit of the block at `secret`, on two threads.
fn stage_block(secret: &BlockSecret, stake: Stake) -> Tally {
    let outcomes = block_outcomes(secret);
    let seeder = ScenarioSeeder::new(secret);
    let half = outcomes.len() / 2;
    let work = |from: usize, to: usize| {
        let mut tally = Tally::default();
        for (offset, &level) in outcomes[from..to].iter().enumerate() {
            let index = (from + offset) as u32;
            let scenario = generate_scenario(stake, level, &seeder.seed(index));
            if let Err(problem) = check(&scenario, stake, level) {
                panic!("unit {index} (level {level}): {problem}");
            }
            tally.units += 1;
            let opened: Vec<Content> = scenario.opened().map(|(_, o)| o.content).collect();
            tally.opened_per_game[opened.len()] += 1;
            tally.starts.insert(scenario.start);
            if level.is_win() {
                let decisive = scenario.decisive_throw().expect("a win is decided");
                tally.decided_on_throw[decisive] += 1;
                let spec = level.spec().unwrap();
                if opened
                    .iter()
                    .any(|c| c.symbol().is_some_and(|s| s != spec.symbol))
                {
                    tally.winning_with_extra_symbols += 1;
                }
            } else {
                tally.losing += 1;
                if opened.iter().any(|c| c.symbol().is_some()) {
                    tally.losing_with_symbols += 1;
                }
                if opened.contains(&Content::Empty) {
                    tally.losing_with_empty += 1;
                }
            }
        }
        tally
    };
    std::thread::scope(|scope| {
        let first = scope.spawn(|| work(0, half));
        let mut tally = work(half, outcomes.len());
        tally.add(first.join().expect("the first half's checks pass"));
        tally
    })
}

fn check_block_of(stake_cents: i64, secret_byte: u8) {
    let stake = Stake::try_from(stake_cents).unwrap();
    let tally = stage_block(&BlockSecret::from_bytes([secret_byte; 32]), stake);
    assert_eq!(tally.units, UNITS_PER_BLOCK);

    // Games open anything from no chest to several.
    assert!(tally.opened_per_game[0] > 0);
    for opened in 1..=6 {
        assert!(
            tally.opened_per_game[opened] > 1_000,
            "{opened} chests opened in {} games only",
            tally.opened_per_game[opened]
        );
    }
    // Losing games usually show lone symbols and empty chests.
    assert!(tally.losing_with_symbols * 100 > tally.losing * 60);
    assert!(tally.losing_with_empty * 100 > tally.losing * 50);
    // Winning games are decided on every throw, not always the last.
    let winners: u32 = tally.decided_on_throw.iter().sum();
    assert_eq!(winners, 119_604);
    for (throw, &count) in tally.decided_on_throw.iter().enumerate() {
        assert!(
            count * 100 > winners * 8,
            "only {count} wins decided on throw {}",
            throw + 1
        );
    }
    assert!(tally.winning_with_extra_symbols * 100 > winners * 25);
    // The totem starts anywhere on the island.
    assert_eq!(tally.starts.len(), island().land.len());
}

#[test]
fn every_unit_of_a_fifty_cent_block_stages_validly_and_varied() {
    check_block_of(50, 1);
}

#[test]
fn every_unit_of_a_one_euro_block_stages_validly_and_varied() {
    check_block_of(100, 2);
}

#[test]
fn every_unit_of_a_two_euro_block_stages_validly_and_varied() {
    check_block_of(200, 3);
}

#[test]
fn the_same_seed_gives_the_same_scene_and_different_seeds_differ() {
    let stake = Stake::try_from(50).unwrap();
    let seeder = ScenarioSeeder::new(&BlockSecret::from_bytes([4; 32]));
    for level in Level::all() {
        let mut scenes = HashSet::new();
        for index in 0..2_000 {
            let seed = seeder.seed(index);
            let scenario = generate_scenario(stake, level, &seed);
            assert_eq!(scenario, generate_scenario(stake, level, &seed));
            scenes.insert(serde_json::to_string(&scenario.view(4)).unwrap());
        }
        assert!(
            scenes.len() >= 1_990,
            "level {level}: {} distinct scenes",
            scenes.len()
        );
    }
}

#[test]
fn the_stake_changes_only_the_prize() {
    let seed = [0x5a; 32];
    let level = Level::new(5).unwrap();
    let at = |cents| generate_scenario(Stake::try_from(cents).unwrap(), level, &seed);
    let (a, b) = (at(50), at(200));
    assert_eq!(
        (a.outcome.prize_cents, b.outcome.prize_cents),
        (1_250, 5_000)
    );
    assert_eq!((a.start, a.chests, a.throws), (b.start, b.chests, b.throws));
}

#[test]
fn the_view_serializes_to_the_published_json_shape() {
    let stake = Stake::try_from(100).unwrap();
    let scenario = generate_scenario(stake, Level::new(7).unwrap(), &[0x11; 32]);
    let json = serde_json::to_value(scenario.view(4)).unwrap();
    let keys = |v: &serde_json::Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(keys(&json), ["chests", "map", "outcome", "start", "throws"]);
    assert_eq!(keys(&json["outcome"]), ["level", "prize_cents"]);
    assert_eq!(json["outcome"]["level"], 7);
    assert_eq!(json["outcome"]["prize_cents"], 300);
    assert_eq!(keys(&json["map"]), ["height", "land", "width"]);
    assert_eq!(json["map"]["width"], 14);
    assert!(json["start"].as_array().unwrap().len() == 2);
    assert_eq!(json["chests"].as_array().unwrap().len(), 9);
    let throws = json["throws"].as_array().unwrap();
    assert_eq!(throws.len(), 4);
    for throw in throws {
        assert_eq!(keys(throw), ["direction", "opened", "path", "steps"]);
        assert!(
            ["N", "NE", "E", "SE", "S", "SW", "W", "NW"]
                .contains(&throw["direction"].as_str().unwrap())
        );
        let steps = throw["steps"].as_u64().unwrap() as usize;
        assert_eq!(throw["path"].as_array().unwrap().len(), steps);
        for opened in throw["opened"].as_array().unwrap() {
            assert_eq!(keys(opened), ["chest", "content", "square"]);
        }
    }
    assert_eq!(
        serde_json::to_value(scenario.view(1)).unwrap()["throws"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert!(!is_land(Square(0, 0)));
}
