//! The proof that an island leaves room for every scene: a definition is
//! accepted only if no walk the generator can draw leaves too few land
//! squares for the chests that stay closed (docs/GAMES.md, rule `scene`).
//!
//! Step 3 puts the chests that open on walk squares and the other
//! `9 − opened` on land squares neither on the walk nor the start. Step 1 can
//! draw every walk of four throws over land (a throw is drawn from all
//! directions and lengths, the start from all land), and step 2 can open as
//! few chests as the combination has symbols: none for a losing unit, since
//! "no lone symbol" and "no empty chest" both have weight. So every unit
//! stages from every seed exactly when `land − 1 − D ≥ 9`, that is
//! `land ≥ 10 + D`, where D is the most squares besides its start that any
//! walk of four throws enters (the fallback walk is one of them). D is at most
//! 12, four throws of three squares: a map of 22 land squares or more always
//! has room. On a smaller map every walk is enumerated, from every start.

use super::{Direction, Island, IslandRules, MAX_STEPS, Square, throw_path};

/// The chests of a scene.
const CHESTS: usize = 9;

/// The most squares a walk enters besides its start: four throws of three.
const MOST_ENTERED: usize = 4 * MAX_STEPS as usize;

/// The land squares a map needs for every walk to leave room, whatever walks
/// it has.
pub const ALWAYS_ROOM: usize = CHESTS + 1 + MOST_ENTERED;

/// A walk of four throws and how many squares it enters besides its start.
struct Cramped {
    start: Square,
    throws: [(Direction, u8); 4],
    entered: usize,
}

impl IslandRules {
    /// `Ok` when every unit of every level can be staged from every seed
    /// (see the module's proof); otherwise a walk that leaves too little
    /// room, in words.
    pub fn room_for_every_scene(&self) -> Result<(), String> {
        let land = self.map.land_count();
        if land >= ALWAYS_ROOM {
            return Ok(());
        }
        let most = land.saturating_sub(CHESTS + 1);
        let Some(walk) = walk_entering_more_than(&self.map, most) else {
            return Ok(());
        };
        let throws: Vec<String> = walk
            .throws
            .iter()
            .map(|(direction, steps)| format!("{direction:?}{steps}"))
            .collect();
        Err(format!(
            "the map has {land} land squares, and the walk from [{}, {}] throwing {} enters \
             {} of them besides its start: a losing unit may open no chest on it, and its nine \
             closed chests then need nine land squares off the walk and the start, where {} are \
             left. Every walk of four throws must leave room: the map needs 10 land squares more \
             than any walk enters ({ALWAYS_ROOM} always do)",
            walk.start.0,
            walk.start.1,
            throws.join(", "),
            walk.entered,
            land - 1 - walk.entered,
        ))
    }
}

/// A walk of four throws over land that enters more than `most` squares
/// besides its start, if the map has one: every start, every throw.
fn walk_entering_more_than(map: &Island, most: usize) -> Option<Cramped> {
    map.land.iter().find_map(|&start| {
        let mut walk = Cramped {
            start,
            throws: [(Direction::N, 1); 4],
            entered: 0,
        };
        walk.entered = extend(map, &mut walk, start, 0, 0, most)?;
        Some(walk)
    })
}

/// Tries every throw from `at` as throw `done` of `walk` and every walk on
/// from there, `entered` being the land bitmap of the squares entered so far
/// (the start left out); returns how many squares the first walk entering
/// more than `most` enters, its throws left in `walk`.
fn extend(
    map: &Island,
    walk: &mut Cramped,
    at: Square,
    entered: u128,
    done: usize,
    most: usize,
) -> Option<usize> {
    let count = entered.count_ones() as usize;
    if done == 4 {
        return (count > most).then_some(count);
    }
    // Even three new squares a throw would not be enough.
    if count + (4 - done) * usize::from(MAX_STEPS) <= most {
        return None;
    }
    for direction in Direction::ALL {
        for steps in 1..=MAX_STEPS {
            // A longer throw the same way would leave land too.
            let Some(path) = throw_path(map, at, direction, steps) else {
                break;
            };
            let path = &path[..usize::from(steps)];
            let mut next = entered;
            for &square in path.iter().filter(|&&s| s != walk.start) {
                next |= map.land_bit(square);
            }
            walk.throws[done] = (direction, steps);
            let found = extend(map, walk, path[path.len() - 1], next, done + 1, most);
            if found.is_some() {
                return found;
            }
        }
    }
    None
}
