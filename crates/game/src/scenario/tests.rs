//! Unit tests of the island and the generator's internals; the rules every
//! scene obeys are checked over whole blocks in `tests/scenarios.rs`.

use super::*;

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
    for &square in &LAND {
        assert!(
            Direction::ALL
                .iter()
                .any(|&d| throw_path(square, d, 1).is_some()),
            "{square:?} is cut off"
        );
    }
}

#[test]
fn the_land_index_matches_the_land_list() {
    for (i, &square) in LAND.iter().enumerate() {
        assert_eq!(land_index(square), Some(i));
    }
    assert_eq!(land_index(Square(0, 0)), None);
    assert_eq!(land_index(Square(-1, 3)), None);
    assert_eq!(land_index(Square(14, 3)), None);
    assert_eq!(land_index(Square(9, 2)), None, "the bay is sea");
    assert_eq!(land_index(Square(5, 4)), None, "the lagoon is sea");
}

#[test]
fn the_fallback_walk_stays_on_land_and_enters_enough_squares() {
    let walk = Walk::fallback();
    assert_eq!(walk.distinct_len, 12);
    assert!(walk.distinct_len >= MAX_OPENED);
    // There is room off the walk for all nine chests.
    assert!(LAND_COUNT - 1 - walk.distinct_len >= 9);
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
    let stake = Stake::try_from(50).unwrap();
    let mut fallbacks = 0;
    for i in 0u32..20_000 {
        let mut seed = [0u8; 32];
        seed[..4].copy_from_slice(&i.to_le_bytes());
        for level in [Level::LOSE, Level::new(1).unwrap(), Level::new(4).unwrap()] {
            if stage(stake, level, &seed).1 {
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
