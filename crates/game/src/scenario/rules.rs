//! The island scene kind's rules: a game definition's map, symbols, winning
//! combinations and fallback walk, checked once so that every scene staged by
//! them shows exactly its unit's level.

use super::{Direction, Island, MAX_OPENED, MAX_STEPS, Scenario, Square, Walk, throw_path};
use crate::math::{Evaluation, InvalidReveal, Level, Symbol};
use std::collections::HashSet;

/// A winning combination: `count` times `symbol` revealed, exactly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Combination {
    pub symbol: Symbol,
    pub count: u8,
}

/// The most symbols of one kind a scene may reveal (SPEC §1).
pub const MAX_COUNT: u8 = 3;

/// The walk used when eight drawn walks all entered too few squares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FallbackWalk {
    pub start: Square,
    pub throws: [(Direction, u8); 4],
}

/// The island scene kind's parameters, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IslandRules {
    pub(super) map: Island,
    /// The combination of each level, by level number (0, losing, has none).
    combinations: [Option<Combination>; 10],
    /// The symbols no one-symbol combination uses, in the definition's order:
    /// the ones a scene may show alone.
    pub(super) lone: [Symbol; 4],
    pub(super) lone_len: usize,
    pub(super) fallback: Walk,
}

impl IslandRules {
    /// Checks the parameters: the symbols distinct, each combination of 1 to
    /// 3 of a listed symbol, no two alike, and a fallback walk on land that
    /// enters at least as many squares as a scene ever opens chests.
    pub fn new(
        map: Island,
        symbols: &[Symbol],
        combinations: &[(Level, Combination)],
        fallback: FallbackWalk,
    ) -> Result<IslandRules, String> {
        let mut seen = HashSet::new();
        if let Some(twice) = symbols.iter().find(|&&s| !seen.insert(s)) {
            return Err(format!("the symbol {twice:?} is listed twice"));
        }
        let mut by_level = [None; 10];
        for &(level, combination) in combinations {
            if !level.is_win() {
                return Err("a combination wins a level from 1 to 9".into());
            }
            if !symbols.contains(&combination.symbol) {
                return Err(format!(
                    "the combination of level {level} uses {:?}, which `symbols` does not list",
                    combination.symbol
                ));
            }
            if !(1..=MAX_COUNT).contains(&combination.count) {
                return Err(format!(
                    "the combination of level {level} reveals {} symbols: 1 to {MAX_COUNT}",
                    combination.count
                ));
            }
            if let Some(other) = (1..10).find(|&l| by_level[l] == Some(combination)) {
                return Err(format!(
                    "levels {other} and {level} have the same combination: a prize is reachable by one combination only"
                ));
            }
            if by_level[usize::from(level.get())]
                .replace(combination)
                .is_some()
            {
                return Err(format!("level {level} has two combinations"));
            }
        }
        let mut lone = [Symbol::Skull; 4];
        let mut lone_len = 0;
        for &symbol in symbols {
            if !by_level
                .iter()
                .flatten()
                .any(|c| c.symbol == symbol && c.count == 1)
            {
                lone[lone_len] = symbol;
                lone_len += 1;
            }
        }
        let walk = Walk::from_throws(&map, fallback.start, fallback.throws).ok_or_else(|| {
            "the fallback walk starts or goes into the sea, or moves other than 1 to 3 squares"
                .to_string()
        })?;
        if walk.distinct_len < MAX_OPENED {
            return Err(format!(
                "the fallback walk enters {} squares: it must enter at least {MAX_OPENED}, \
                 as many as a scene opens chests at most",
                walk.distinct_len
            ));
        }
        Ok(IslandRules {
            map,
            combinations: by_level,
            lone,
            lone_len,
            fallback: walk,
        })
    }

    /// The island's map.
    pub fn map(&self) -> &Island {
        &self.map
    }

    /// The combination that wins `level`; `None` for a losing level.
    pub fn combination(&self, level: Level) -> Option<Combination> {
        self.combinations[usize::from(level.get())]
    }

    /// Evaluates revealed symbols (SPEC §1): a combination matches when its
    /// symbol was revealed exactly its count of times; the unit wins the level
    /// of the one combination that matches, or loses when none does.
    pub fn evaluate(&self, revealed: &[Symbol]) -> Evaluation {
        let mut counts = [0usize; 4];
        for symbol in revealed {
            counts[symbol.slot()] += 1;
        }
        for symbol in Symbol::ALL {
            let count = counts[symbol.slot()];
            if count > usize::from(MAX_COUNT) {
                return Err(InvalidReveal::TooMany { symbol, count });
            }
        }
        let mut matched: Option<Level> = None;
        for level in Level::all().skip(1) {
            let Some(combination) = self.combination(level) else {
                continue;
            };
            if counts[combination.symbol.slot()] == usize::from(combination.count) {
                if let Some(first) = matched {
                    return Err(InvalidReveal::TwoCombinations {
                        first: first.get(),
                        second: level.get(),
                    });
                }
                matched = Some(level);
            }
        }
        Ok(matched.unwrap_or(Level::LOSE))
    }

    /// Checks one staged scene against every rule of SPEC §3: nine chests on
    /// distinct land squares off the start, four straight throws of 1 to 3
    /// squares over land, each chest opened the first time it is entered, and
    /// a reveal that evaluates to exactly `level`.
    pub fn check_scene(&self, scenario: &Scenario, level: Level) -> Result<(), String> {
        let map = &self.map;
        if scenario.outcome.level != level {
            return Err(format!("stages level {}", scenario.outcome.level));
        }
        let on_land = |square: Square| map.land_index(square).is_some();
        let chests: HashSet<Square> = scenario.chests.iter().copied().collect();
        if !on_land(scenario.start)
            || chests.len() != 9
            || !chests.iter().all(|&c| on_land(c))
            || chests.contains(&scenario.start)
        {
            return Err(
                "the totem or the nine chests are not on nine distinct land squares".into(),
            );
        }
        let mut at = scenario.start;
        let mut open = [false; 9];
        for (t, throw) in scenario.throws.iter().enumerate() {
            let expected = throw_path(map, at, throw.direction, throw.steps);
            if throw.steps == 0
                || throw.steps > MAX_STEPS
                || expected.map(|p| p[..usize::from(throw.steps)].to_vec())
                    != Some(throw.path().to_vec())
            {
                return Err(format!("throw {} does not go straight over land", t + 1));
            }
            let mut opened = Vec::new();
            for &square in throw.path() {
                if let Some(chest) = scenario.chests.iter().position(|&c| c == square)
                    && !open[chest]
                {
                    open[chest] = true;
                    opened.push((chest as u8, square));
                }
            }
            let shown: Vec<(u8, Square)> =
                throw.opened().iter().map(|o| (o.chest, o.square)).collect();
            if shown != opened {
                return Err(format!("throw {} opens the wrong chests", t + 1));
            }
            at = throw.path()[usize::from(throw.steps) - 1];
        }
        match self.evaluate(&scenario.revealed_symbols()) {
            Ok(evaluated) if evaluated == level => Ok(()),
            Ok(evaluated) => Err(format!("reveals symbols worth level {evaluated}")),
            Err(invalid) => Err(format!("reveals symbols the rules cannot pay: {invalid}")),
        }
    }
}
