//! Unit tests of the island and the generator's internals; the rules every
//! scene obeys are checked over whole blocks in `tests/scenarios.rs`.

use super::*;
// The tests stage the built-in island; the scene kind itself never names it.
use crate::definition::{generate_scenario, ile_au_tresor_rules, island};
use crate::math::Stake;

#[test]
fn the_island_has_a_sea_border_and_a_plausible_size() {
    let island = island();
    assert_eq!((island.width, island.height), (14, 10));
    assert!((60..=90).contains(&island.land.len()));
    for &Square(x, y) in &island.land {
        assert!(x > 0 && y > 0 && x < island.width - 1 && y < island.height - 1);
    }
}

#[test]
fn every_land_square_has_a_land_neighbour() {
    let map = island();
    for &square in &map.land {
        assert!(
            Direction::ALL
                .iter()
                .any(|&d| throw_path(map, square, d, 1).is_some()),
            "{square:?} is cut off"
        );
    }
}

#[test]
fn the_land_index_matches_the_land_list() {
    let map = island();
    assert_eq!(map.land_count(), 69);
    for (i, &square) in map.land.iter().enumerate() {
        assert_eq!(map.land_index(square), Some(i));
    }
    assert_eq!(map.land_index(Square(0, 0)), None);
    assert_eq!(map.land_index(Square(-1, 3)), None);
    assert_eq!(map.land_index(Square(14, 3)), None);
    assert_eq!(map.land_index(Square(9, 2)), None, "the bay is sea");
    assert_eq!(map.land_index(Square(5, 4)), None, "the lagoon is sea");
}

#[test]
fn the_fallback_walk_stays_on_land_and_enters_enough_squares() {
    let walk = ile_au_tresor_rules().fallback;
    assert_eq!(walk.start, Square(2, 7));
    assert_eq!(
        walk.throws,
        [
            (Direction::E, 3),
            (Direction::E, 3),
            (Direction::NE, 3),
            (Direction::N, 3)
        ]
    );
    assert_eq!(walk.distinct_len, 12);
    assert!(walk.distinct_len >= MAX_OPENED);
    // There is room off the walk for all nine chests.
    assert!(island().land_count() - 1 - walk.distinct_len >= 9);
}

#[test]
fn maps_that_are_not_islands_are_refused() {
    assert!(
        Island::from_rows(&["..", ".#"])
            .unwrap_err()
            .contains("no land neighbour")
    );
    assert!(
        Island::from_rows(&["##", "#"])
            .unwrap_err()
            .contains("rectangle")
    );
    assert!(
        Island::from_rows(&["#x"])
            .unwrap_err()
            .contains("`#` (land) or `.` (sea)")
    );
    assert!(
        Island::from_rows(&["..."])
            .unwrap_err()
            .contains("at least one land")
    );
    let big = vec!["#".repeat(12); 11];
    assert!(Island::from_rows(&big).unwrap_err().contains("at most 128"));
}

#[test]
fn nth_set_bit_counts_across_both_halves() {
    let set: u128 = (1 << 3) | (1 << 10) | (1 << 64) | (1 << 100);
    assert_eq!(nth_set_bit(set, 0), 3);
    assert_eq!(nth_set_bit(set, 1), 10);
    assert_eq!(nth_set_bit(set, 2), 64);
    assert_eq!(nth_set_bit(set, 3), 100);
}

#[test]
fn the_fallback_walk_is_almost_never_needed() {
    let rules = ile_au_tresor_rules();
    let mut fallbacks = 0;
    for i in 0u32..20_000 {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&i.to_le_bytes());
        for level in [Level::LOSE, Level::new(1).unwrap(), Level::new(4).unwrap()] {
            if rules.stage_noting_fallback(level, 0, &seed).unwrap().1 {
                fallbacks += 1;
            }
        }
    }
    assert_eq!(fallbacks, 0, "fallbacks in 60,000 scenes");
}

#[test]
fn a_throw_round_trips_through_json() {
    let scenario = generate_scenario(Stake::try_from(100).unwrap(), Level::LOSE, &[9; 32]);
    for throw in &scenario.throws {
        let json = serde_json::to_string(throw).unwrap();
        let back: Throw = serde_json::from_str(&json).unwrap();
        assert_eq!(&back, throw);
    }
    let bad = r#"{"direction":"N","steps":2,"path":[[1,1]],"opened":[]}"#;
    assert!(serde_json::from_str::<Throw>(bad).is_err());
}
