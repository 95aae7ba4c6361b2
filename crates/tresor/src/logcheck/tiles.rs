//! The C2SP `tlog-tiles` side of checking the log from outside: a tile's
//! path (made, and parsed from what a client sends), which tiles a tree has,
//! and the computations over fetched tiles (each authenticated against a
//! checkpoint's root): the tree's hashes, a consistency proof, a tile's
//! bytes.

use super::{CheckError, TILE_HEIGHT, TILE_WIDTH, fail};
use tlog_tiles::{Hash, Tile, TileHashReader, TileReader};

/// A tile's C2SP path under a log's `tile/` (`tile/0/x001/234.p/7`).
pub fn tile_path(tile: &Tile) -> String {
    tile.path()
        .replacen(&format!("tile/{TILE_HEIGHT}/"), "tile/", 1)
}

/// Parses a C2SP tile path (`tile/L/N[.p/W]`, hash tiles only), by hand:
/// what a client sends is checked before `Tile::new` (which panics on a
/// width of 0 or a level past 63), and only the canonical spelling of a
/// tile that can exist (a level below 8, an index below 2^56) is taken.
pub fn parse_tile_path(path: &str) -> Option<Tile> {
    let rest = path.strip_prefix("tile/")?;
    let (level, rest) = rest.split_once('/')?;
    let level: u8 = level.parse().ok().filter(|l| *l < 8)?;
    let (index, width) = match rest.split_once(".p/") {
        None => (rest, TILE_WIDTH),
        Some((index, width)) => {
            let width: u32 = width.parse().ok().filter(|w| (1..TILE_WIDTH).contains(w))?;
            (index, width)
        }
    };
    let groups: Vec<&str> = index.split('/').collect();
    let mut n: u64 = 0;
    for (i, group) in groups.iter().enumerate() {
        let digits = if i + 1 == groups.len() {
            *group
        } else {
            group.strip_prefix('x')?
        };
        if digits.len() != 3 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        n = n.checked_mul(1000)?.checked_add(digits.parse().ok()?)?;
    }
    if n >= 1 << 56 {
        return None;
    }
    let tile = Tile::new(TILE_HEIGHT, level, n, width, false);
    (tile_path(&tile) == path).then_some(tile)
}

/// The tiles a tree of `size` leaves is published as (full and partial,
/// every level), in order.
pub fn tiles_of(size: u64) -> Vec<Tile> {
    Tile::new_tiles(TILE_HEIGHT, 0, size)
}

/// Whether `tile` exists in a tree of `size` leaves, and whether it is full
/// there (then it never changes).
/// Computed without overflow: a client names any index below 2^56, whose
/// first hash (the index times 256) is near 2^64.
pub fn tile_in_tree(tile: &Tile, size: u64) -> Option<bool> {
    let level_size = size
        .checked_shr(u32::from(tile.level()) * u32::from(TILE_HEIGHT))
        .unwrap_or(0);
    let start = tile.level_index().checked_mul(1 << TILE_HEIGHT)?;
    let end = start.checked_add(u64::from(tile.width()))?;
    if tile.width() == 0 || end > level_size {
        return None;
    }
    Some(tile.width() == TILE_WIDTH)
}

/// Tiles fetched so far, for the tree hash reader: asking for one not here
/// notes it as missing (the caller fetches the missing ones and asks again).
#[derive(Debug, Default)]
pub struct TileStore {
    pub tiles: std::collections::HashMap<Tile, Vec<u8>>,
    pub(super) missing: std::sync::Mutex<Vec<Tile>>,
}

impl TileStore {
    /// The tiles asked for and not held since the last call.
    pub fn take_missing(&self) -> Vec<Tile> {
        let mut missing = self.missing.lock().expect("not poisoned");
        let mut taken = std::mem::take(&mut *missing);
        taken.sort_by_key(|t| (t.level(), t.level_index(), t.width()));
        taken.dedup();
        taken
    }
}

impl TileReader for TileStore {
    fn height(&self) -> u8 {
        TILE_HEIGHT
    }

    fn read_tiles(&self, tiles: &[Tile]) -> Result<Vec<Vec<u8>>, tlog_tiles::Error> {
        let mut found = Vec::with_capacity(tiles.len());
        let mut missing = Vec::new();
        for tile in tiles {
            match self.tiles.get(tile) {
                Some(data) => found.push(data.clone()),
                None => missing.push(*tile),
            }
        }
        if missing.is_empty() {
            Ok(found)
        } else {
            self.missing.lock().expect("not poisoned").extend(missing);
            Err(tlog_tiles::Error::InvalidTile)
        }
    }

    fn save_tiles(&self, _tiles: &[Tile], _data: &[Vec<u8>]) {}
}

/// What a computation over tiles needs: done, or these tiles fetched first.
#[derive(Debug)]
pub enum Needs<T> {
    Done(T),
    Tiles(Vec<Tile>),
}

/// Runs `f` over the tree `(size, root)` read from `store`'s tiles (each
/// tile read is authenticated against the root by `tlog_tiles`): `Done`, or
/// the tiles to fetch first. A tile that does not hash to the root is an
/// error.
pub fn over_tiles<T>(
    store: &TileStore,
    size: u64,
    root: Hash,
    f: impl FnOnce(&TileHashReader<'_>) -> Result<T, tlog_tiles::Error>,
) -> Result<Needs<T>, CheckError> {
    let reader = TileHashReader::new(size, root, store);
    match f(&reader) {
        Ok(value) => Ok(Needs::Done(value)),
        Err(error) => {
            let missing = store.take_missing();
            if missing.is_empty() {
                fail(format!(
                    "the published tiles do not hash to the checkpoint's root (size {size}): {error}"
                ))
            } else {
                Ok(Needs::Tiles(missing))
            }
        }
    }
}

/// The consistency proof (RFC 9162 §2.1.4) from the tree `(old_size,
/// old_root)` to `(size, root)`, built from `store`'s tiles and checked.
/// `Err` when the new tree does not extend the old one.
pub fn check_consistency(
    store: &TileStore,
    old_size: u64,
    old_root: Hash,
    size: u64,
    root: Hash,
) -> Result<Needs<()>, CheckError> {
    if old_size == 0 || old_size == size {
        return Ok(Needs::Done(()));
    }
    let proof = match over_tiles(store, size, root, |r| {
        tlog_tiles::prove_tree(size, old_size, r)
    })? {
        Needs::Done(proof) => proof,
        Needs::Tiles(tiles) => return Ok(Needs::Tiles(tiles)),
    };
    tlog_tiles::check_tree(&proof, size, root, old_size, old_root).map_err(|_| {
        CheckError(format!(
            "the log was rewritten: the checkpoint of {size} records does not extend the \
             one kept of {old_size} records (the consistency proof built from the tiles \
             served fails)"
        ))
    })?;
    Ok(Needs::Done(()))
}

/// A tile's bytes read through the authenticated reader of `(size, root)`.
pub fn authenticated_tile(
    store: &TileStore,
    size: u64,
    root: Hash,
    tile: &Tile,
) -> Result<Needs<Vec<u8>>, CheckError> {
    over_tiles(store, size, root, |r| tile.read_data(r))
}
