//! The definition file as written (docs/GAMES.md, "Grammar"): plain serde
//! structs over TOML, every value kept with its place in the file so that a
//! refusal can name its line. Unknown keys are refused here; the rules are
//! checked in `check.rs`.

use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct File {
    pub id: Spanned<String>,
    pub name: Spanned<Names>,
    pub units_per_block: Spanned<i64>,
    pub stakes: Spanned<Vec<Spanned<StakeTable>>>,
    pub scene: Spanned<Scene>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Names {
    pub fr: Spanned<String>,
    pub en: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct StakeTable {
    pub cents: Spanned<i64>,
    pub losing_units_per_block: Spanned<i64>,
    pub levels: Spanned<Vec<Spanned<LevelRow>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct LevelRow {
    pub level: Spanned<i64>,
    pub units_per_block: Spanned<i64>,
    pub prize_cents: Spanned<i64>,
}

/// Every key any scene kind takes: which belong to which kind is checked
/// against `kind`, so that a scratch card's `rows` on an island is refused as
/// an unknown key too.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Scene {
    pub kind: Spanned<String>,
    // The island's.
    pub symbols: Option<Spanned<Vec<Spanned<String>>>>,
    pub map: Option<Spanned<Vec<Spanned<String>>>>,
    pub fallback_walk: Option<Spanned<FallbackWalk>>,
    pub combinations: Option<Spanned<Vec<Spanned<Combination>>>>,
    // The scratch card's.
    pub rows: Option<Spanned<i64>>,
    pub columns: Option<Spanned<i64>>,
    pub identical: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FallbackWalk {
    pub start: Spanned<[i64; 2]>,
    pub throws: Spanned<Vec<Spanned<String>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Combination {
    pub level: Spanned<i64>,
    pub symbol: Spanned<String>,
    pub count: Spanned<i64>,
}

/// The keys of each scene kind, besides `kind`.
pub(super) const ISLAND_KEYS: [&str; 4] = ["symbols", "map", "fallback_walk", "combinations"];
pub(super) const SCRATCH_KEYS: [&str; 3] = ["rows", "columns", "identical"];
