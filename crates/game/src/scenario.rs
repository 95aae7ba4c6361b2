//! The treasure-island scene (SPEC §3, rules Articles 4.1–4.3): the island map
//! and the scenario generator that stages a unit's fixed outcome as four throws.
//!
//! The outcome is decided by the block shuffle; the scene only shows it. The
//! generator therefore works backwards, always in the same order, so that an
//! auditor can replay it (`docs/AUDIT.md`, "Scenarios"):
//!
//! 1. walk the totem four throws over land, re-walking while the walk enters
//!    fewer distinct squares than the unit's combination has symbols;
//! 2. draw what the opened chests will show (the unit's combination, some lone
//!    symbols that match nothing, some empty chests, as many as the walk has
//!    room for), in a random order;
//! 3. put those chests on randomly chosen squares of the walk and the other
//!    chests on land off the walk, then shuffle the nine chests;
//! 4. replay the walk, opening each chest the first time the totem enters it.
//!
//! Every draw comes from ChaCha8 keyed by the unit's seed and uses integers
//! only, so the same seed gives the same scene on every machine. Every loop is
//! bounded and ends in a fallback that is still a valid scene.
//!
//! The map, the symbols, the winning combinations and the fallback walk are a
//! game definition's (`IslandRules`, docs/GAMES.md); « L'Ile au Trésor »'s are
//! in `games/ile-au-tresor.toml`.

mod map;

pub use map::Island;
use map::nth_set_bit;

use crate::math::{Level, Outcome, Symbol};
use crate::rng::SceneRng;
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

/// A square `[x, y]` of the map: x to the east, y to the south.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Square(pub i16, pub i16);

/// The eight compass directions a throw can show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Direction {
    N,
    NE,
    E,
    SE,
    S,
    SW,
    W,
    NW,
}

impl Direction {
    /// Clockwise from north: the order the generator draws them in.
    pub const ALL: [Direction; 8] = [
        Direction::N,
        Direction::NE,
        Direction::E,
        Direction::SE,
        Direction::S,
        Direction::SW,
        Direction::W,
        Direction::NW,
    ];

    /// One step's move `(dx, dy)`, x to the east and y to the south.
    pub const fn delta(self) -> (i16, i16) {
        match self {
            Direction::N => (0, -1),
            Direction::NE => (1, -1),
            Direction::E => (1, 0),
            Direction::SE => (1, 1),
            Direction::S => (0, 1),
            Direction::SW => (-1, 1),
            Direction::W => (-1, 0),
            Direction::NW => (-1, -1),
        }
    }
}

/// What an opened chest shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Content {
    Empty,
    Candlestick,
    Monkey,
    Sapphire,
    Skull,
}

impl Content {
    pub fn symbol(self) -> Option<Symbol> {
        match self {
            Content::Empty => None,
            Content::Candlestick => Some(Symbol::Candlestick),
            Content::Monkey => Some(Symbol::Monkey),
            Content::Sapphire => Some(Symbol::Sapphire),
            Content::Skull => Some(Symbol::Skull),
        }
    }
}

impl From<Symbol> for Content {
    fn from(symbol: Symbol) -> Content {
        match symbol {
            Symbol::Candlestick => Content::Candlestick,
            Symbol::Monkey => Content::Monkey,
            Symbol::Sapphire => Content::Sapphire,
            Symbol::Skull => Content::Skull,
        }
    }
}

/// A chest the totem opened during a throw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// Index of the chest in `Scenario::chests`.
    pub chest: u8,
    pub square: Square,
    pub content: Content,
}

/// Alias kept for readers of the JSON: a chest is a square.
pub type Chest = Square;

/// The most squares one throw moves the totem.
pub const MAX_STEPS: u8 = 3;
const MAX_STEPS_USIZE: usize = MAX_STEPS as usize;

/// The most chests a scene ever opens: a three-symbol combination, two lone
/// symbols and three empty chests.
const MAX_OPENED: usize = 8;

/// One press of "Lancer". Stored in fixed arrays so that generating a scene
/// allocates nothing; `path()` and `opened()` give the used part.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "ThrowData")]
pub struct Throw {
    pub direction: Direction,
    /// How many squares the totem moves, 1 to `MAX_STEPS`.
    pub steps: u8,
    path: [Square; MAX_STEPS_USIZE],
    opened: [Opened; MAX_STEPS_USIZE],
    opened_len: u8,
}

const NO_OPENED: Opened = Opened {
    chest: 0,
    square: Square(0, 0),
    content: Content::Empty,
};

impl Throw {
    /// The squares entered, in order (`steps` of them).
    pub fn path(&self) -> &[Square] {
        &self.path[..usize::from(self.steps)]
    }

    /// The chests this throw opened, in the order the totem reached them.
    pub fn opened(&self) -> &[Opened] {
        &self.opened[..usize::from(self.opened_len)]
    }
}

impl Serialize for Throw {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Throw", 4)?;
        s.serialize_field("direction", &self.direction)?;
        s.serialize_field("steps", &self.steps)?;
        s.serialize_field("path", self.path())?;
        s.serialize_field("opened", self.opened())?;
        s.end()
    }
}

/// A throw as JSON data, checked into a `Throw` on the way in.
#[derive(Deserialize)]
struct ThrowData {
    direction: Direction,
    steps: u8,
    path: Vec<Square>,
    opened: Vec<Opened>,
}

impl TryFrom<ThrowData> for Throw {
    type Error = String;

    fn try_from(data: ThrowData) -> Result<Self, Self::Error> {
        if data.steps == 0 || data.steps > MAX_STEPS || data.path.len() != usize::from(data.steps) {
            return Err(format!(
                "a throw moves 1 to {MAX_STEPS} squares and lists each square entered"
            ));
        }
        if data.opened.len() > data.path.len() {
            return Err("a throw opens at most one chest per square entered".to_owned());
        }
        let mut path = [Square(0, 0); MAX_STEPS_USIZE];
        path[..data.path.len()].copy_from_slice(&data.path);
        let mut opened = [NO_OPENED; MAX_STEPS_USIZE];
        opened[..data.opened.len()].copy_from_slice(&data.opened);
        Ok(Throw {
            direction: data.direction,
            steps: data.steps,
            path,
            opened,
            opened_len: data.opened.len() as u8,
        })
    }
}

/// The whole staging of one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub outcome: Outcome,
    pub start: Square,
    pub chests: [Square; 9],
    pub throws: [Throw; 4],
    /// The rules the scene was staged by: its map and combinations.
    rules: &'static IslandRules,
}

/// The JSON shape of a scenario, with only the first `throws` throws revealed.
#[derive(Debug, Serialize)]
pub struct ScenarioView<'a> {
    pub outcome: Outcome,
    pub map: &'a Island,
    pub start: Square,
    pub chests: &'a [Square; 9],
    pub throws: &'a [Throw],
}

impl Scenario {
    /// The scenario as JSON data, revealing only the first `throws` throws.
    pub fn view(&self, throws: usize) -> ScenarioView<'_> {
        ScenarioView {
            outcome: self.outcome,
            map: &self.rules.map,
            start: self.start,
            chests: &self.chests,
            throws: &self.throws[..throws.min(4)],
        }
    }

    /// Every chest the four throws open, in order.
    pub fn opened(&self) -> impl Iterator<Item = (usize, &Opened)> {
        self.throws
            .iter()
            .enumerate()
            .flat_map(|(t, throw)| throw.opened().iter().map(move |o| (t, o)))
    }

    /// Every symbol the four throws reveal, in order.
    pub fn revealed_symbols(&self) -> Vec<Symbol> {
        self.opened()
            .filter_map(|(_, o)| o.content.symbol())
            .collect()
    }

    /// The throw (0 to 3) during which a winning unit's combination became
    /// complete; `None` for a losing unit.
    pub fn decisive_throw(&self) -> Option<usize> {
        let combination = self.rules.combination(self.outcome.level)?;
        let mut seen = 0;
        for (t, opened) in self.opened() {
            if opened.content.symbol() == Some(combination.symbol) {
                seen += 1;
                if seen == combination.count {
                    return Some(t);
                }
            }
        }
        None
    }
}

/// How many lone symbols a losing game shows: 0 to 3, with weights 4, 7, 6, 3.
const LOSE_LONE_SYMBOLS: [u32; 3] = [4, 11, 17];
/// How many lone symbols a winning game shows besides its combination: 0, 1 or
/// 2 with weights 10, 6, 4.
const WIN_LONE_SYMBOLS: [u32; 2] = [10, 16];
/// How many empty chests a game opens: 0 to 3, with weights 5, 7, 5, 3.
const EMPTY_CHESTS: [u32; 3] = [5, 12, 17];

/// The contents of the chests a game will open, in opening order.
struct Reveal {
    items: [Content; MAX_OPENED],
    len: usize,
}

impl Reveal {
    fn push(&mut self, content: Content) {
        self.items[self.len] = content;
        self.len += 1;
    }
}

/// Step 2: what the `room` or fewer chests that open show. A lone symbol is
/// one that no one-symbol combination uses (on the island a monkey, a sapphire
/// or a skull: a lone candlestick would win level 9), so it matches nothing,
/// and the unit's own symbol never appears outside its combination, so the
/// reveal evaluates to exactly `level`. Lone symbols and empty chests are left
/// out when the walk has no room for them.
fn draw_reveal(rules: &IslandRules, rng: &mut SceneRng, level: Level, room: usize) -> Reveal {
    let mut reveal = Reveal {
        items: [Content::Empty; MAX_OPENED],
        len: 0,
    };
    let target = rules.combination(level).map(|c| (c.symbol, c.count));
    if let Some((symbol, count)) = target {
        for _ in 0..count {
            reveal.push(symbol.into());
        }
    }

    let mut lone = rules.lone;
    let mut lone_len = 0;
    for i in 0..rules.lone_len {
        if target.map(|(symbol, _)| symbol) != Some(lone[i]) {
            lone[lone_len] = lone[i];
            lone_len += 1;
        }
    }
    let wanted = if level.is_win() {
        rng.weighted(&WIN_LONE_SYMBOLS)
    } else {
        rng.weighted(&LOSE_LONE_SYMBOLS)
    }
    .min(lone_len)
    .min(room.saturating_sub(reveal.len));
    for i in 0..wanted {
        let j = i + rng.below((lone_len - i) as u32) as usize;
        lone.swap(i, j);
        reveal.push(lone[i].into());
    }

    let empties = rng
        .weighted(&EMPTY_CHESTS)
        .min(room.saturating_sub(reveal.len));
    for _ in 0..empties {
        reveal.push(Content::Empty);
    }

    for i in (1..reveal.len).rev() {
        let j = rng.below(i as u32 + 1) as usize;
        reveal.items.swap(i, j);
    }
    reveal
}

/// The totem's four throws and the distinct squares they enter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Walk {
    start: Square,
    throws: [(Direction, u8); 4],
    /// The squares entered, per throw.
    paths: [[Square; MAX_STEPS_USIZE]; 4],
    /// Squares entered other than the start, each once, in order of first entry.
    distinct: [Square; 4 * MAX_STEPS_USIZE],
    distinct_len: usize,
}

/// How many times a throw is redrawn when it would leave land.
const THROW_ATTEMPTS: usize = 16;
/// How many walks are drawn before the fallback walk is used.
const WALK_ATTEMPTS: usize = 8;

/// The squares a throw enters, or `None` if one of them is sea.
fn throw_path(
    map: &Island,
    from: Square,
    direction: Direction,
    steps: u8,
) -> Option<[Square; MAX_STEPS_USIZE]> {
    let (dx, dy) = direction.delta();
    // Unused slots stay at the origin so that equal throws compare equal.
    let mut path = [Square(0, 0); MAX_STEPS_USIZE];
    let mut at = from;
    for slot in path.iter_mut().take(usize::from(steps)) {
        at = Square(at.0 + dx, at.1 + dy);
        map.land_index(at)?;
        *slot = at;
    }
    Some(path)
}

impl Walk {
    /// Builds a walk from its throws, or `None` if it leaves land.
    fn from_throws(map: &Island, start: Square, throws: [(Direction, u8); 4]) -> Option<Walk> {
        map.land_index(start)?;
        let mut walk = Walk {
            start,
            throws,
            paths: [[start; MAX_STEPS_USIZE]; 4],
            distinct: [start; 4 * MAX_STEPS_USIZE],
            distinct_len: 0,
        };
        let mut at = start;
        for (t, &(direction, steps)) in throws.iter().enumerate() {
            if steps == 0 || steps > MAX_STEPS {
                return None;
            }
            let path = throw_path(map, at, direction, steps)?;
            for &square in &path[..usize::from(steps)] {
                if square != start && !walk.distinct[..walk.distinct_len].contains(&square) {
                    walk.distinct[walk.distinct_len] = square;
                    walk.distinct_len += 1;
                }
            }
            walk.paths[t] = path;
            at = path[usize::from(steps) - 1];
        }
        Some(walk)
    }

    /// Step 1: a random start and four random throws, each redrawn while it
    /// would leave land; after `THROW_ATTEMPTS` misses the throw is the first
    /// single step onto land clockwise from north (every land square has one).
    fn draw(map: &Island, rng: &mut SceneRng) -> Walk {
        let start = map.land[rng.below(map.land_count() as u32) as usize];
        let mut throws = [(Direction::N, 1); 4];
        let mut at = start;
        for throw in &mut throws {
            *throw = (0..THROW_ATTEMPTS)
                .find_map(|_| {
                    let direction = Direction::ALL[rng.below(8) as usize];
                    let steps = 1 + rng.below(u32::from(MAX_STEPS)) as u8;
                    throw_path(map, at, direction, steps).map(|_| (direction, steps))
                })
                .unwrap_or_else(|| {
                    let direction = Direction::ALL
                        .into_iter()
                        .find(|&d| throw_path(map, at, d, 1).is_some())
                        .expect("every land square has a land neighbour");
                    (direction, 1)
                });
            let path = throw_path(map, at, throw.0, throw.1).expect("the throw was checked");
            at = path[usize::from(throw.1) - 1];
        }
        Walk::from_throws(map, start, throws).expect("a drawn walk stays on land")
    }
}

impl IslandRules {
    /// Stages `level`, which pays `prize_cents`, as a game drawn from `seed`;
    /// `None` only when the walk leaves no room for the nine chests, which
    /// `room_for_every_scene` proves never happens on an accepted map.
    pub fn stage(
        &'static self,
        level: Level,
        prize_cents: i64,
        seed: &[u8; 32],
    ) -> Option<Scenario> {
        self.stage_noting_fallback(level, prize_cents, seed)
            .map(|(scenario, _)| scenario)
    }

    /// The scene, and whether the fallback walk was needed (for the tests).
    fn stage_noting_fallback(
        &'static self,
        level: Level,
        prize_cents: i64,
        seed: &[u8; 32],
    ) -> Option<(Scenario, bool)> {
        let map = &self.map;
        let mut rng = SceneRng::new(seed);
        let combination = self.combination(level).map_or(0, |c| usize::from(c.count));
        let drawn = (0..WALK_ATTEMPTS)
            .map(|_| Walk::draw(map, &mut rng))
            .find(|walk| walk.distinct_len >= combination);
        let used_fallback = drawn.is_none();
        let walk = drawn.unwrap_or(self.fallback);
        let reveal = draw_reveal(self, &mut rng, level, walk.distinct_len);
        assert!(
            walk.distinct_len >= reveal.len,
            "every opened chest has a square"
        );

        // Step 3: `reveal.len` of the walk's squares get the chests that open,
        // chosen by selection sampling so they come out in order of first entry.
        let mut chests = [walk.start; 9];
        let mut contents: [Option<Content>; 9] = [None; 9];
        let mut placed = 0;
        let mut needed = reveal.len;
        for (i, &square) in walk.distinct[..walk.distinct_len].iter().enumerate() {
            if needed == 0 {
                break;
            }
            if (rng.below((walk.distinct_len - i) as u32) as usize) < needed {
                chests[placed] = square;
                contents[placed] = Some(reveal.items[placed]);
                placed += 1;
                needed -= 1;
            }
        }
        debug_assert_eq!(placed, reveal.len);

        // The others go on land the totem never enters, and never on the start.
        let mut free = map.all_land() & !map.land_bit(walk.start);
        for &square in &walk.distinct[..walk.distinct_len] {
            free &= !map.land_bit(square);
        }
        for chest in &mut chests[placed..] {
            if free == 0 {
                return None;
            }
            let i = nth_set_bit(free, rng.below(free.count_ones()));
            free &= !(1u128 << i);
            *chest = map.land[i];
        }

        // Shuffle, so that a chest's index says nothing about whether it opens.
        for i in (1..9).rev() {
            let j = rng.below(i as u32 + 1) as usize;
            chests.swap(i, j);
            contents.swap(i, j);
        }

        let scenario = Scenario {
            outcome: Outcome { level, prize_cents },
            start: walk.start,
            chests,
            throws: replay(&walk, &chests, &contents),
            rules: self,
        };
        Some((scenario, used_fallback))
    }
}

/// Step 4: replays the walk and opens each chest when first entered.
fn replay(walk: &Walk, chests: &[Square; 9], contents: &[Option<Content>; 9]) -> [Throw; 4] {
    let mut open = [false; 9];
    std::array::from_fn(|t| {
        let (direction, steps) = walk.throws[t];
        let mut throw = Throw {
            direction,
            steps,
            path: walk.paths[t],
            opened: [NO_OPENED; MAX_STEPS_USIZE],
            opened_len: 0,
        };
        for &square in &walk.paths[t][..usize::from(steps)] {
            if let Some(chest) = (0..9).find(|&c| chests[c] == square && !open[c]) {
                open[chest] = true;
                throw.opened[usize::from(throw.opened_len)] = Opened {
                    chest: chest as u8,
                    square,
                    content: contents[chest].expect("chests on the walk have contents"),
                };
                throw.opened_len += 1;
            }
        }
        throw
    })
}

mod room;
mod rules;

pub use rules::{Combination, FallbackWalk, IslandRules};

#[cfg(test)]
mod tests;
