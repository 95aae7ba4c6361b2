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

use crate::math::{Level, Stake, Symbol};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};
use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};

/// A square `[x, y]` of the map: x to the east, y to the south.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Square(pub i16, pub i16);

/// The island: a rectangular grid of `width` × `height` squares, of which
/// `land` are the island's and the rest is sea.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Island {
    pub width: i16,
    pub height: i16,
    pub land: Vec<Square>,
}

/// The map, north at the top: `#` is land, `.` is sea. A sea border all round,
/// a bay cut into the north coast at (9, 2) and a lagoon in the middle, so that
/// straight throws must go around water and games differ in shape.
const MAP: [&str; 10] = [
    "..............",
    "...#####..##..",
    "..#######.###.",
    ".####..######.",
    ".###....#####.",
    ".###...######.",
    "..###.######..",
    "..##########..",
    "...####..##...",
    "..............",
];

const WIDTH: usize = MAP[0].len();
const HEIGHT: usize = MAP.len();

const fn is_land_char(map: &[&str; HEIGHT], x: usize, y: usize) -> bool {
    map[y].as_bytes()[x] == b'#'
}

const fn count_land() -> usize {
    let mut count = 0;
    let mut y = 0;
    while y < HEIGHT {
        assert!(MAP[y].len() == WIDTH, "every row of the map is as wide");
        let mut x = 0;
        while x < WIDTH {
            if is_land_char(&MAP, x, y) {
                count += 1;
            }
            x += 1;
        }
        y += 1;
    }
    count
}

/// How many land squares the island has.
const LAND_COUNT: usize = count_land();

// The free-square sets below are `u128` bitmaps over land indices.
const _: () = assert!(LAND_COUNT <= 128 && LAND_COUNT >= 60);

/// The land squares in reading order (row by row, west to east).
const LAND: [Square; LAND_COUNT] = {
    let mut land = [Square(0, 0); LAND_COUNT];
    let mut i = 0;
    let mut y = 0;
    while y < HEIGHT {
        let mut x = 0;
        while x < WIDTH {
            if is_land_char(&MAP, x, y) {
                land[i] = Square(x as i16, y as i16);
                i += 1;
            }
            x += 1;
        }
        y += 1;
    }
    land
};

/// A sea square's entry in `LAND_INDEX`.
const SEA: u8 = u8::MAX;

/// For each square, its index in `LAND`, or `SEA`.
const LAND_INDEX: [[u8; WIDTH]; HEIGHT] = {
    let mut index = [[SEA; WIDTH]; HEIGHT];
    let mut i = 0;
    while i < LAND_COUNT {
        let Square(x, y) = LAND[i];
        index[y as usize][x as usize] = i as u8;
        i += 1;
    }
    index
};

/// The land index of `square`, `None` for sea or off the map.
fn land_index(square: Square) -> Option<usize> {
    let Square(x, y) = square;
    if x < 0 || y < 0 || x as usize >= WIDTH || y as usize >= HEIGHT {
        return None;
    }
    match LAND_INDEX[y as usize][x as usize] {
        SEA => None,
        i => Some(usize::from(i)),
    }
}

/// The one island every game is played on.
pub fn island() -> &'static Island {
    static ISLAND: std::sync::OnceLock<Island> = std::sync::OnceLock::new();
    ISLAND.get_or_init(|| Island {
        width: WIDTH as i16,
        height: HEIGHT as i16,
        land: LAND.to_vec(),
    })
}

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

/// A unit's outcome as the player sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    pub level: Level,
    pub prize_cents: i64,
}

/// The whole staging of one unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub outcome: Outcome,
    pub start: Square,
    pub chests: [Square; 9],
    pub throws: [Throw; 4],
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
            map: island(),
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
        let spec = self.outcome.level.spec()?;
        let mut seen = 0;
        for (t, opened) in self.opened() {
            if opened.content.symbol() == Some(spec.symbol) {
                seen += 1;
                if seen == spec.count {
                    return Some(t);
                }
            }
        }
        None
    }
}

/// The scene generator's random draws: the ChaCha8 keystream keyed by the
/// unit's seed (key = seed, zero nonce, counter from 0), read as LE `u32`
/// words.
struct SceneRng(ChaCha8Rng);

impl SceneRng {
    fn new(seed: &[u8; 32]) -> Self {
        SceneRng(ChaCha8Rng::from_seed(*seed))
    }

    /// A uniform integer in `0..n`, by Lemire's multiply-and-shift with
    /// rejection: `m = r * n` (64-bit); the low 32 bits of `m` below
    /// `2^32 mod n` are redrawn; the answer is `m >> 32`. Exactly uniform, and
    /// unlike the block shuffle's `uniform` it needs no division in the
    /// common case, which matters at a million scenes per second.
    fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let mut m = u64::from(self.0.next_u32()) * u64::from(n);
        if (m as u32) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u32) < threshold {
                m = u64::from(self.0.next_u32()) * u64::from(n);
            }
        }
        (m >> 32) as u32
    }

    /// Picks a count from a table of cumulative weights out of 20.
    fn weighted(&mut self, cumulative: &[u32]) -> usize {
        let r = self.below(20);
        cumulative
            .iter()
            .position(|&c| r < c)
            .unwrap_or(cumulative.len())
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

/// Step 2: what the `room` or fewer chests that open show. A lone monkey, sapphire or skull
/// matches no combination, and the unit's own symbol never appears outside its
/// combination, so the reveal evaluates to exactly `level`. Lone symbols and
/// empty chests are left out when the walk has no room for them.
fn draw_reveal(rng: &mut SceneRng, level: Level, room: usize) -> Reveal {
    let mut reveal = Reveal {
        items: [Content::Empty; MAX_OPENED],
        len: 0,
    };
    let target = level.spec().map(|spec| (spec.symbol, spec.count));
    if let Some((symbol, count)) = target {
        for _ in 0..count {
            reveal.push(symbol.into());
        }
    }

    // A lone candlestick would win level 9, so only these may stand alone.
    let mut lone = [Symbol::Monkey, Symbol::Sapphire, Symbol::Skull];
    let mut lone_len = 0;
    for i in 0..lone.len() {
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
#[derive(Clone, Copy)]
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
fn throw_path(from: Square, direction: Direction, steps: u8) -> Option<[Square; MAX_STEPS_USIZE]> {
    let (dx, dy) = direction.delta();
    // Unused slots stay at the origin so that equal throws compare equal.
    let mut path = [Square(0, 0); MAX_STEPS_USIZE];
    let mut at = from;
    for slot in path.iter_mut().take(usize::from(steps)) {
        at = Square(at.0 + dx, at.1 + dy);
        land_index(at)?;
        *slot = at;
    }
    Some(path)
}

impl Walk {
    /// Builds a walk from its throws, which must stay on land.
    fn from_throws(start: Square, throws: [(Direction, u8); 4]) -> Walk {
        let mut walk = Walk {
            start,
            throws,
            paths: [[start; MAX_STEPS_USIZE]; 4],
            distinct: [start; 4 * MAX_STEPS_USIZE],
            distinct_len: 0,
        };
        let mut at = start;
        for (t, &(direction, steps)) in throws.iter().enumerate() {
            let path = throw_path(at, direction, steps).expect("a walk stays on land");
            for &square in &path[..usize::from(steps)] {
                if square != start && !walk.distinct[..walk.distinct_len].contains(&square) {
                    walk.distinct[walk.distinct_len] = square;
                    walk.distinct_len += 1;
                }
            }
            walk.paths[t] = path;
            at = path[usize::from(steps) - 1];
        }
        walk
    }

    /// Step 1: a random start and four random throws, each redrawn while it
    /// would leave land; after `THROW_ATTEMPTS` misses the throw is the first
    /// single step onto land clockwise from north (every land square has one).
    fn draw(rng: &mut SceneRng) -> Walk {
        let start = LAND[rng.below(LAND_COUNT as u32) as usize];
        let mut throws = [(Direction::N, 1); 4];
        let mut at = start;
        for throw in &mut throws {
            *throw = (0..THROW_ATTEMPTS)
                .find_map(|_| {
                    let direction = Direction::ALL[rng.below(8) as usize];
                    let steps = 1 + rng.below(u32::from(MAX_STEPS)) as u8;
                    throw_path(at, direction, steps).map(|_| (direction, steps))
                })
                .unwrap_or_else(|| {
                    let direction = Direction::ALL
                        .into_iter()
                        .find(|&d| throw_path(at, d, 1).is_some())
                        .expect("every land square has a land neighbour");
                    (direction, 1)
                });
            let path = throw_path(at, throw.0, throw.1).expect("the throw was checked");
            at = path[usize::from(throw.1) - 1];
        }
        Walk::from_throws(start, throws)
    }

    /// The walk used when no drawn walk entered enough squares: twelve
    /// distinct squares along the south coast and up the east.
    fn fallback() -> Walk {
        Walk::from_throws(
            Square(2, 7),
            [
                (Direction::E, 3),
                (Direction::E, 3),
                (Direction::NE, 3),
                (Direction::N, 3),
            ],
        )
    }
}

/// Picks the `r`-th set bit (0-based, lowest first) of `set`.
fn nth_set_bit(set: u128, r: u32) -> usize {
    debug_assert!(r < set.count_ones());
    let low = set as u64;
    let (mut word, mut r, base) = if r < low.count_ones() {
        (low, r, 0)
    } else {
        ((set >> 64) as u64, r - low.count_ones(), 64)
    };
    while r > 0 {
        word &= word - 1;
        r -= 1;
    }
    base + word.trailing_zeros() as usize
}

/// The bit of `square` in a land bitmap.
fn land_bit(square: Square) -> u128 {
    1u128 << land_index(square).expect("only land squares are in a bitmap")
}

/// Stages `level` as a game drawn from `seed`; `stake` only sets the prize.
pub fn generate_scenario(stake: Stake, level: Level, seed: &[u8; 32]) -> Scenario {
    stage(stake, level, seed).0
}

/// The scene, and whether the fallback walk was needed (for the tests).
fn stage(stake: Stake, level: Level, seed: &[u8; 32]) -> (Scenario, bool) {
    let mut rng = SceneRng::new(seed);
    let combination = level.spec().map_or(0, |spec| usize::from(spec.count));
    let drawn = (0..WALK_ATTEMPTS)
        .map(|_| Walk::draw(&mut rng))
        .find(|walk| walk.distinct_len >= combination);
    let used_fallback = drawn.is_none();
    let walk = drawn.unwrap_or_else(Walk::fallback);
    let reveal = draw_reveal(&mut rng, level, walk.distinct_len);
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
    let mut free: u128 = if LAND_COUNT == 128 {
        u128::MAX
    } else {
        (1u128 << LAND_COUNT) - 1
    };
    free &= !land_bit(walk.start);
    for &square in &walk.distinct[..walk.distinct_len] {
        free &= !land_bit(square);
    }
    for chest in &mut chests[placed..] {
        let i = nth_set_bit(free, rng.below(free.count_ones()));
        free &= !(1u128 << i);
        *chest = LAND[i];
    }

    // Shuffle, so that a chest's index says nothing about whether it opens.
    for i in (1..9).rev() {
        let j = rng.below(i as u32 + 1) as usize;
        chests.swap(i, j);
        contents.swap(i, j);
    }

    // Step 4: replay the walk and open each chest when first entered.
    let mut open = [false; 9];
    let throws: [Throw; 4] = std::array::from_fn(|t| {
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
    });

    let scenario = Scenario {
        outcome: Outcome {
            level,
            prize_cents: stake.prize_cents(level),
        },
        start: walk.start,
        chests,
        throws,
    };
    (scenario, used_fallback)
}

#[cfg(test)]
mod tests;
