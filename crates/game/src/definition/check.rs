//! The rules a definition must obey before it is used (docs/GAMES.md,
//! "Rules"), each refusal naming the line of the file and the rule broken.

use super::grammar::{self, File, ISLAND_KEYS, SCRATCH_KEYS};
use super::{DefinitionError, Game, MAX_UNITS_PER_BLOCK, Prize, PrizeTable, Rule, SceneRules};
use crate::math::{Level, Symbol};
use crate::scenario::{Combination, Direction, FallbackWalk, Island, IslandRules, Square};
use crate::scratch::ScratchRules;
use std::collections::HashMap;
use std::ops::Range;
use toml::Spanned;

/// Turns byte offsets into line numbers.
struct Lines<'a>(&'a str);

impl Lines<'_> {
    fn of(&self, span: Range<usize>) -> usize {
        let end = span.start.min(self.0.len());
        1 + self.0.as_bytes()[..end]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
    }

    fn refuse<T>(
        &self,
        span: Range<usize>,
        rule: Rule,
        message: impl Into<String>,
    ) -> Result<T, DefinitionError> {
        Err(DefinitionError {
            line: self.of(span),
            rule,
            message: message.into(),
        })
    }
}

/// Reads the file and checks every rule that stages no scene.
pub(super) fn parse(text: &str) -> Result<Game, DefinitionError> {
    let lines = Lines(text);
    let file: File = toml::from_str(text).map_err(|error| {
        let message = error.message().trim().to_string();
        let rule = if message.starts_with("unknown field") {
            Rule::UnknownKey
        } else if message.starts_with("missing field") {
            Rule::MissingKey
        } else {
            Rule::Syntax
        };
        DefinitionError {
            line: lines.of(error.span().unwrap_or(0..0)),
            rule,
            message,
        }
    })?;
    let id = check_id(&lines, &file.id)?;
    let name_fr = check_name(&lines, &file.name.get_ref().fr, "name.fr")?;
    let name_en = check_name(&lines, &file.name.get_ref().en, "name.en")?;
    let units_per_block = match u32::try_from(*file.units_per_block.get_ref()) {
        Ok(units) if (1..=MAX_UNITS_PER_BLOCK).contains(&units) => units,
        _ => {
            return lines.refuse(
                file.units_per_block.span(),
                Rule::BadValue,
                format!("units_per_block is 1 to {MAX_UNITS_PER_BLOCK}"),
            );
        }
    };
    let tables = check_tables(&lines, &file.stakes, units_per_block)?;
    let scene = check_scene(&lines, &file.scene, &tables)?;
    // An island's room is its map's; a card's, its `[scene]`.
    let scene_line = lines.of(file
        .scene
        .get_ref()
        .map
        .as_ref()
        .map_or(file.scene.span(), Spanned::span));
    Ok(Game {
        id,
        name_fr,
        name_en,
        units_per_block,
        tables,
        scene,
        scene_line,
        sha256: [0; 32],
    })
}

/// The most characters of an id and of a name.
const MAX_ID: usize = 40;
const MAX_NAME: usize = 80;

fn check_id(lines: &Lines, id: &Spanned<String>) -> Result<String, DefinitionError> {
    let text = id.get_ref();
    let well_formed = !text.is_empty()
        && text.len() <= MAX_ID
        && !text.starts_with('-')
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !well_formed {
        return lines.refuse(
            id.span(),
            Rule::BadValue,
            format!(
                "id {text:?}: 1 to {MAX_ID} lowercase letters, digits and dashes, not starting with a dash"
            ),
        );
    }
    Ok(text.clone())
}

fn check_name(lines: &Lines, name: &Spanned<String>, key: &str) -> Result<String, DefinitionError> {
    let text = name.get_ref().trim();
    if text.is_empty() || text.chars().count() > MAX_NAME || text.chars().any(char::is_control) {
        return lines.refuse(
            name.span(),
            Rule::BadValue,
            format!("{key} is 1 to {MAX_NAME} printable characters"),
        );
    }
    Ok(text.to_string())
}

/// The most a unit may cost, and the most a prize may pay, in cents.
const MAX_STAKE_CENTS: i64 = 100_000;
const MAX_PRIZE_CENTS: i64 = 100_000_000_000;

fn check_tables(
    lines: &Lines,
    stakes: &Spanned<Vec<Spanned<grammar::StakeTable>>>,
    units_per_block: u32,
) -> Result<Vec<PrizeTable>, DefinitionError> {
    if stakes.get_ref().is_empty() {
        return lines.refuse(
            stakes.span(),
            Rule::BadValue,
            "a game sells at least one stake",
        );
    }
    let mut tables: Vec<PrizeTable> = Vec::new();
    for stake in stakes.get_ref() {
        let raw = stake.get_ref();
        let cents = *raw.cents.get_ref();
        if !(1..=MAX_STAKE_CENTS).contains(&cents) {
            return lines.refuse(
                raw.cents.span(),
                Rule::BadValue,
                format!("a stake is 1 to {MAX_STAKE_CENTS} cents"),
            );
        }
        if tables.iter().any(|t| t.stake_cents == cents) {
            return lines.refuse(
                raw.cents.span(),
                Rule::DuplicateId,
                format!("the stake of {cents} cents is listed twice"),
            );
        }
        let levels = check_levels(lines, &raw.levels, cents)?;
        let losing = match u32::try_from(*raw.losing_units_per_block.get_ref()) {
            Ok(units) => units,
            Err(_) => {
                return lines.refuse(
                    raw.losing_units_per_block.span(),
                    Rule::BadValue,
                    "losing_units_per_block is 0 or more",
                );
            }
        };
        let total: u64 = u64::from(losing)
            + levels
                .iter()
                .map(|p| u64::from(p.units_per_block))
                .sum::<u64>();
        if total != u64::from(units_per_block) {
            return lines.refuse(
                raw.losing_units_per_block.span(),
                Rule::LevelsSum,
                format!(
                    "stake {cents} cents: the levels' units and the losing units add up to \
                     {total}, not the {units_per_block} units per block"
                ),
            );
        }
        tables.push(PrizeTable {
            stake_cents: cents,
            losing_units_per_block: losing,
            amounts: levels.iter().map(|p| p.prize_cents).collect(),
            levels,
            line: lines.of(stake.span()),
        });
    }
    Ok(tables)
}

/// A table's levels: numbered 1, 2, … in order, at most nine, each with
/// units and a prize.
fn check_levels(
    lines: &Lines,
    rows: &Spanned<Vec<Spanned<grammar::LevelRow>>>,
    stake_cents: i64,
) -> Result<Vec<Prize>, DefinitionError> {
    if rows.get_ref().is_empty() || rows.get_ref().len() > 9 {
        return lines.refuse(
            rows.span(),
            Rule::BadValue,
            format!("stake {stake_cents} cents: a table has 1 to 9 winning levels"),
        );
    }
    let mut levels: Vec<Prize> = Vec::new();
    for row in rows.get_ref() {
        let row = row.get_ref();
        let number = *row.level.get_ref();
        if levels.iter().any(|p| i64::from(p.level.get()) == number) {
            return lines.refuse(
                row.level.span(),
                Rule::DuplicateId,
                format!("stake {stake_cents} cents: level {number} is listed twice"),
            );
        }
        let expected = levels.len() + 1;
        if number != expected as i64 {
            return lines.refuse(
                row.level.span(),
                Rule::BadValue,
                format!(
                    "stake {stake_cents} cents: levels are numbered 1, 2, … in order; \
                     found {number} where {expected} was expected"
                ),
            );
        }
        let units = match u32::try_from(*row.units_per_block.get_ref()) {
            Ok(units) if units >= 1 => units,
            _ => {
                return lines.refuse(
                    row.units_per_block.span(),
                    Rule::BadValue,
                    format!(
                        "stake {stake_cents} cents, level {number}: units_per_block is 1 or more"
                    ),
                );
            }
        };
        let prize_cents = *row.prize_cents.get_ref();
        if !(1..=MAX_PRIZE_CENTS).contains(&prize_cents) {
            return lines.refuse(
                row.prize_cents.span(),
                Rule::BadValue,
                format!(
                    "stake {stake_cents} cents, level {number}: prize_cents is 1 to {MAX_PRIZE_CENTS}"
                ),
            );
        }
        levels.push(Prize {
            level: Level::new(expected as u8).expect("at most nine levels"),
            units_per_block: units,
            prize_cents,
        });
    }
    Ok(levels)
}

fn check_scene(
    lines: &Lines,
    scene: &Spanned<grammar::Scene>,
    tables: &[PrizeTable],
) -> Result<SceneRules, DefinitionError> {
    let raw = scene.get_ref();
    let present: [(&str, Option<Range<usize>>); 7] = [
        ("symbols", raw.symbols.as_ref().map(Spanned::span)),
        ("map", raw.map.as_ref().map(Spanned::span)),
        (
            "fallback_walk",
            raw.fallback_walk.as_ref().map(Spanned::span),
        ),
        ("combinations", raw.combinations.as_ref().map(Spanned::span)),
        ("rows", raw.rows.as_ref().map(Spanned::span)),
        ("columns", raw.columns.as_ref().map(Spanned::span)),
        ("identical", raw.identical.as_ref().map(Spanned::span)),
    ];
    let kind = raw.kind.get_ref().as_str();
    let keys: &[&str] = match kind {
        "island" => &ISLAND_KEYS,
        "scratch" => &SCRATCH_KEYS,
        other => {
            return lines.refuse(
                raw.kind.span(),
                Rule::UnknownSceneKind,
                format!("unknown scene kind {other:?}: the kinds are \"island\" and \"scratch\""),
            );
        }
    };
    for (key, span) in &present {
        match span {
            Some(span) if !keys.contains(key) => {
                return lines.refuse(
                    span.clone(),
                    Rule::UnknownKey,
                    format!(
                        "unknown key `{key}` for the {kind} scene kind, whose keys are `kind`, {}",
                        keys.iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                );
            }
            None if keys.contains(key) => {
                return lines.refuse(
                    scene.span(),
                    Rule::MissingKey,
                    format!("the {kind} scene kind needs the key `{key}`"),
                );
            }
            _ => {}
        }
    }
    match kind {
        "island" => island(lines, scene, tables).map(SceneRules::Island),
        _ => scratch(lines, scene, tables).map(SceneRules::Scratch),
    }
}

/// The island's symbols, by their names in a definition file.
const SYMBOLS: [(&str, Symbol); 4] = [
    ("candlestick", Symbol::Candlestick),
    ("monkey", Symbol::Monkey),
    ("sapphire", Symbol::Sapphire),
    ("skull", Symbol::Skull),
];

fn symbol(lines: &Lines, name: &Spanned<String>) -> Result<Symbol, DefinitionError> {
    match SYMBOLS.iter().find(|(n, _)| n == name.get_ref()) {
        Some(&(_, symbol)) => Ok(symbol),
        None => lines.refuse(
            name.span(),
            Rule::BadValue,
            format!(
                "unknown symbol {:?}: the island scene kind has candlestick, monkey, sapphire and skull",
                name.get_ref()
            ),
        ),
    }
}

fn island(
    lines: &Lines,
    scene: &Spanned<grammar::Scene>,
    tables: &[PrizeTable],
) -> Result<IslandRules, DefinitionError> {
    let raw = scene.get_ref();
    let (Some(symbols_raw), Some(map_raw), Some(walk_raw), Some(combinations_raw)) = (
        &raw.symbols,
        &raw.map,
        &raw.fallback_walk,
        &raw.combinations,
    ) else {
        unreachable!("the island's keys were checked present");
    };
    let mut symbols = Vec::new();
    for name in symbols_raw.get_ref() {
        let symbol = symbol(lines, name)?;
        if symbols.contains(&symbol) {
            return lines.refuse(
                name.span(),
                Rule::DuplicateId,
                format!("the symbol {:?} is listed twice", name.get_ref()),
            );
        }
        symbols.push(symbol);
    }
    let rows: Vec<&str> = map_raw
        .get_ref()
        .iter()
        .map(|r| r.get_ref().as_str())
        .collect();
    let map = Island::from_rows(&rows).or_else(|problem| {
        lines.refuse(map_raw.span(), Rule::BadValue, format!("map: {problem}"))
    })?;
    let fallback = fallback_walk(lines, walk_raw)?;
    let combinations = combinations(lines, combinations_raw, &symbols, tables)?;
    IslandRules::new(map, &symbols, &combinations, fallback)
        .or_else(|problem| lines.refuse(walk_raw.span(), Rule::Scene, problem))
}

fn fallback_walk(
    lines: &Lines,
    walk: &Spanned<grammar::FallbackWalk>,
) -> Result<FallbackWalk, DefinitionError> {
    let raw = walk.get_ref();
    let [x, y] = *raw.start.get_ref();
    let (Ok(x), Ok(y)) = (i16::try_from(x), i16::try_from(y)) else {
        return lines.refuse(
            raw.start.span(),
            Rule::BadValue,
            "start is a square [x, y] of the map",
        );
    };
    if raw.throws.get_ref().len() != 4 {
        return lines.refuse(raw.throws.span(), Rule::BadValue, "a walk is four throws");
    }
    let mut throws = [(Direction::N, 1); 4];
    for (slot, throw) in throws.iter_mut().zip(raw.throws.get_ref()) {
        let text = throw.get_ref();
        let split = text
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(text.len());
        let direction = Direction::ALL
            .into_iter()
            .find(|d| format!("{d:?}") == text[..split]);
        let steps = text[split..].parse::<u8>().ok();
        match (direction, steps) {
            (Some(direction), Some(steps)) => *slot = (direction, steps),
            _ => {
                return lines.refuse(
                    throw.span(),
                    Rule::BadValue,
                    format!("throw {text:?}: a compass direction (N, NE, E, SE, S, SW, W, NW) and 1 to 3 squares, as \"NE3\""),
                );
            }
        }
    }
    Ok(FallbackWalk {
        start: Square(x, y),
        throws,
    })
}

/// The island's combinations: one per level that some table has, none for a
/// level no table has, and no two alike (the rules text's "one amount only").
fn combinations(
    lines: &Lines,
    raw: &Spanned<Vec<Spanned<grammar::Combination>>>,
    symbols: &[Symbol],
    tables: &[PrizeTable],
) -> Result<Vec<(Level, Combination)>, DefinitionError> {
    let deepest = tables.iter().map(|t| t.levels.len()).max().unwrap_or(0);
    let mut found: Vec<(Level, Combination)> = Vec::new();
    let mut seen: HashMap<Combination, Level> = HashMap::new();
    for item in raw.get_ref() {
        let item = item.get_ref();
        let level = combination_level(lines, item, deepest, &found)?;
        let combination = combination_of(lines, item, symbols)?;
        if let Some(other) = seen.insert(combination, level) {
            return lines.refuse(
                item.level.span(),
                Rule::OneCombination,
                format!(
                    "levels {other} and {level} are both won by {} × {}: \
                     every prize is reachable by exactly one combination",
                    combination.count,
                    item.symbol.get_ref()
                ),
            );
        }
        found.push((level, combination));
    }
    every_level_is_won(tables, &found)?;
    Ok(found)
}

/// The level a combination wins: a winning level, not yet given a
/// combination, that some stake's table has.
fn combination_level(
    lines: &Lines,
    item: &grammar::Combination,
    deepest: usize,
    found: &[(Level, Combination)],
) -> Result<Level, DefinitionError> {
    let number = *item.level.get_ref();
    let Some(level) = u8::try_from(number)
        .ok()
        .and_then(Level::new)
        .filter(|l| l.is_win())
    else {
        return lines.refuse(
            item.level.span(),
            Rule::BadValue,
            "a combination wins a level from 1 to 9",
        );
    };
    if found.iter().any(|(l, _)| *l == level) {
        return lines.refuse(
            item.level.span(),
            Rule::DuplicateId,
            format!("level {level} has two combinations"),
        );
    }
    if usize::from(level.get()) > deepest {
        return lines.refuse(
            item.level.span(),
            Rule::OneCombination,
            format!("level {level} has a combination but no stake's table has that level"),
        );
    }
    Ok(level)
}

/// What a combination reveals: one of the scene's symbols, 1 to 3 times.
fn combination_of(
    lines: &Lines,
    item: &grammar::Combination,
    symbols: &[Symbol],
) -> Result<Combination, DefinitionError> {
    let symbol = symbol(lines, &item.symbol)?;
    if !symbols.contains(&symbol) {
        return lines.refuse(
            item.symbol.span(),
            Rule::BadValue,
            format!(
                "{:?} is not one of the scene's `symbols`",
                item.symbol.get_ref()
            ),
        );
    }
    match u8::try_from(*item.count.get_ref()) {
        Ok(count) if (1..=3).contains(&count) => Ok(Combination { symbol, count }),
        _ => lines.refuse(
            item.count.span(),
            Rule::BadValue,
            "a combination reveals its symbol 1 to 3 times (more is never a valid scene)",
        ),
    }
}

/// Refuses a table's level that no combination wins: its prize could never
/// be won.
fn every_level_is_won(
    tables: &[PrizeTable],
    found: &[(Level, Combination)],
) -> Result<(), DefinitionError> {
    for table in tables {
        if let Some(missing) = table
            .levels
            .iter()
            .find(|p| !found.iter().any(|(l, _)| *l == p.level))
        {
            return Err(DefinitionError {
                line: table.line,
                rule: Rule::OneCombination,
                message: format!(
                    "level {} of stake {} cents has no combination: its prize could never be won",
                    missing.level, table.stake_cents
                ),
            });
        }
    }
    Ok(())
}

fn scratch(
    lines: &Lines,
    scene: &Spanned<grammar::Scene>,
    tables: &[PrizeTable],
) -> Result<ScratchRules, DefinitionError> {
    let raw = scene.get_ref();
    let small = |value: &Option<Spanned<i64>>| {
        value
            .as_ref()
            .and_then(|v| u8::try_from(*v.get_ref()).ok())
            .unwrap_or(0)
    };
    let rules = ScratchRules::new(small(&raw.rows), small(&raw.columns), small(&raw.identical))
        .or_else(|problem| lines.refuse(scene.span(), Rule::BadValue, problem))?;
    for table in tables {
        for (i, prize) in table.levels.iter().enumerate() {
            if let Some(first) = table.levels[..i]
                .iter()
                .find(|p| p.prize_cents == prize.prize_cents)
            {
                return Err(DefinitionError {
                    line: table.line,
                    rule: Rule::OneCombination,
                    message: format!(
                        "stake {} cents: levels {} and {} both pay {} cents, and a scratch card \
                         wins the amount it shows: every prize is reachable by exactly one combination",
                        table.stake_cents, first.level, prize.level, prize.prize_cents
                    ),
                });
            }
        }
    }
    Ok(rules)
}
