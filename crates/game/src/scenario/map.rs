//! The island's map: a rectangular grid whose `#` squares are land and `.`
//! squares sea, read from a game definition's `map` rows (docs/GAMES.md).

use super::{Direction, Square};
use serde::Serialize;

/// The island: a rectangular grid of `width` × `height` squares, of which
/// `land` are the island's and the rest is sea.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Island {
    pub width: i16,
    pub height: i16,
    /// The land squares in reading order (row by row, west to east).
    pub land: Vec<Square>,
    /// For each square, row by row, its index in `land`, or `SEA`.
    #[serde(skip)]
    index: Vec<u8>,
}

/// A sea square's entry in `Island::index`.
const SEA: u8 = u8::MAX;

/// The most land squares a map may have: the generator keeps the free squares
/// in a `u128` bitmap.
const MAX_LAND: usize = 128;

/// The most squares a map may have on a side.
const MAX_SIDE: usize = 64;

impl Island {
    /// Reads a map from its rows, north first: `#` is land, `.` is sea. Every
    /// row is as wide, the map has 1 to 128 land squares, and every land
    /// square has a land neighbour (a throw can always move).
    pub fn from_rows<S: AsRef<str>>(rows: &[S]) -> Result<Island, String> {
        let height = rows.len();
        let width = rows.first().map_or(0, |row| row.as_ref().len());
        if height == 0 || width == 0 || height > MAX_SIDE || width > MAX_SIDE {
            return Err(format!(
                "a map is 1 to {MAX_SIDE} rows of 1 to {MAX_SIDE} squares"
            ));
        }
        let mut land = Vec::new();
        let mut index = vec![SEA; width * height];
        for (y, row) in rows.iter().enumerate() {
            let row = row.as_ref();
            if row.len() != width {
                return Err(format!(
                    "row {} is {} squares wide, the first row {width}: a map is a rectangle",
                    y + 1,
                    row.len()
                ));
            }
            for (x, square) in row.bytes().enumerate() {
                match square {
                    b'#' if land.len() < MAX_LAND => {
                        index[y * width + x] = land.len() as u8;
                        land.push(Square(x as i16, y as i16));
                    }
                    b'#' => return Err(format!("a map has at most {MAX_LAND} land squares")),
                    b'.' => {}
                    _ => {
                        return Err(format!(
                            "row {} has {:?}: a square is `#` (land) or `.` (sea)",
                            y + 1,
                            char::from(square)
                        ));
                    }
                }
            }
        }
        if land.is_empty() {
            return Err("a map has at least one land square".into());
        }
        let island = Island {
            width: width as i16,
            height: height as i16,
            land,
            index,
        };
        if let Some(cut_off) = island.land.iter().find(|&&square| {
            Direction::ALL
                .iter()
                .all(|&d| island.step(square, d).is_none())
        }) {
            return Err(format!(
                "the land square [{}, {}] has no land neighbour: the totem could not move from it",
                cut_off.0, cut_off.1
            ));
        }
        Ok(island)
    }

    /// How many land squares the island has.
    pub fn land_count(&self) -> usize {
        self.land.len()
    }

    /// The land index of `square`, `None` for sea or off the map.
    pub fn land_index(&self, square: Square) -> Option<usize> {
        let Square(x, y) = square;
        if x < 0 || y < 0 || x >= self.width || y >= self.height {
            return None;
        }
        match self.index[y as usize * self.width as usize + x as usize] {
            SEA => None,
            i => Some(usize::from(i)),
        }
    }

    /// The square one step from `from` towards `direction`, if it is land.
    fn step(&self, from: Square, direction: Direction) -> Option<Square> {
        let (dx, dy) = direction.delta();
        let to = Square(from.0 + dx, from.1 + dy);
        self.land_index(to).map(|_| to)
    }

    /// Every land square as a bitmap over land indices.
    pub(crate) fn all_land(&self) -> u128 {
        if self.land.len() == MAX_LAND {
            u128::MAX
        } else {
            (1u128 << self.land.len()) - 1
        }
    }

    /// The bit of `square` in a land bitmap.
    pub(crate) fn land_bit(&self, square: Square) -> u128 {
        1u128
            << self
                .land_index(square)
                .expect("only land squares are in a bitmap")
    }
}

/// Picks the `r`-th set bit (0-based, lowest first) of `set`.
pub(super) fn nth_set_bit(set: u128, r: u32) -> usize {
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
