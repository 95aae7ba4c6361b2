//! A game's odds sheet (docs/GAMES.md, "The odds sheet"): every figure a
//! player or an authority reads, computed exactly from the prize table. A
//! block is finite and known, so no figure is simulated: each is a fraction
//! of integers (big integers where a product of binomials needs them),
//! rounded only when it is shown.
//!
//! For a stake whose block holds `N` units, `c` of a level paying `p`:
//! - a level's chance is `c / N` (one unit, any block of the stake);
//! - the chance to win anything is (winning units) ÷ `N`; the payout rate is
//!   (the block's prizes) ÷ (`N` × stake); a unit's prize has mean
//!   Σ`c·p` ÷ `N` and variance Σ`c·p²` ÷ `N` − mean²;
//! - a player who buys `k` units of one block draws them without
//!   replacement (hypergeometric): no win has the chance `C(N − W, k) ÷
//!   C(N, k)`, `W` the winning units; getting back at least `k` × stake is
//!   counted over every way the `k` units split between the levels
//!   (Π `C(cᵢ, nᵢ)`, a dynamic programme over the levels, the units taken and
//!   the prizes so far, capped at the target), divided by `C(N, k)`.

use crate::definition::PrizeTable;
use num_bigint::BigUint;
use num_integer::Integer;
use num_traits::{One, Zero};
use serde::Serialize;

/// How many units of one block the sheet's buyer takes: 1, 10 and 100.
pub const BUYS: [u32; 3] = [1, 10, 100];

/// The most (units taken + 1) × (prize steps below the target) a sheet
/// counts for "at least the stake back": past it the figure is left out
/// (`None`) rather than computed for minutes. The catalogue's games need at
/// most 101 × 101.
const MOST_STATES: usize = 4_000_000;

/// An exact fraction in lowest terms, never above 1 for a chance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exact {
    num: BigUint,
    den: BigUint,
}

impl Exact {
    /// `num / den` in lowest terms; `den` must not be zero.
    pub fn new(num: impl Into<BigUint>, den: impl Into<BigUint>) -> Exact {
        Exact::reduced(num.into(), den.into())
    }

    fn reduced(num: BigUint, den: BigUint) -> Exact {
        assert!(!den.is_zero(), "a fraction's denominator is not zero");
        let gcd = num.gcd(&den);
        if gcd.is_zero() || gcd.is_one() {
            return Exact { num, den };
        }
        Exact {
            num: num / &gcd,
            den: den / &gcd,
        }
    }

    pub fn numerator(&self) -> &BigUint {
        &self.num
    }

    pub fn denominator(&self) -> &BigUint {
        &self.den
    }

    /// "num/den", in lowest terms.
    pub fn fraction(&self) -> String {
        format!("{}/{}", self.num, self.den)
    }

    /// The value with `decimals` decimals, rounded half up: "0.2658".
    pub fn decimal(&self, decimals: u32) -> String {
        rounded(&self.num, &self.den, decimals)
    }

    /// The value × 100 with `decimals` decimals, rounded half up.
    pub fn percent(&self, decimals: u32) -> String {
        rounded(&(&self.num * 100u32), &self.den, decimals)
    }

    /// "1 in N": the inverse with `decimals` decimals, rounded half up;
    /// `None` for a chance of 0.
    pub fn one_in(&self, decimals: u32) -> Option<String> {
        (!self.num.is_zero()).then(|| rounded(&self.den, &self.num, decimals))
    }

    /// The value rounded to 15 significant figures, as JSON carries it.
    pub fn to_f64(&self) -> f64 {
        let digits = self.den.to_string().len() as u32 + 15;
        self.decimal(digits).parse().unwrap_or(f64::NAN)
    }

    /// As a percent, with 4 decimals or as many more (up to 20) as it
    /// takes not to show a chance below 1 as "100.0000".
    pub fn percent_shown(&self) -> String {
        let mut decimals = 4;
        let mut shown = self.percent(decimals);
        while decimals < 20 && self.num != self.den && shown.starts_with("100.") {
            decimals += 1;
            shown = self.percent(decimals);
        }
        shown
    }

    /// 1 − self, for a chance.
    fn complement(&self) -> Exact {
        Exact::reduced(&self.den - &self.num, self.den.clone())
    }
}

/// `num / den` with `decimals` decimals, rounded half up, exactly.
fn rounded(num: &BigUint, den: &BigUint, decimals: u32) -> String {
    let scaled = num * BigUint::from(10u32).pow(decimals);
    let (quotient, remainder) = scaled.div_rem(den);
    let quotient = if remainder * 2u32 >= *den {
        quotient + 1u32
    } else {
        quotient
    };
    with_point(quotient.to_string(), decimals)
}

/// "2658" with 4 decimals → "0.2658".
fn with_point(digits: String, decimals: u32) -> String {
    let decimals = decimals as usize;
    if decimals == 0 {
        return digits;
    }
    let digits = format!("{digits:0>width$}", width = decimals + 1);
    let (whole, fraction) = digits.split_at(digits.len() - decimals);
    format!("{whole}.{fraction}")
}

/// One level's line of the sheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelOdds {
    /// 1 for the top prize, …; 0 for the losing units.
    pub level: u8,
    pub prize_cents: i64,
    pub units_per_block: u32,
    /// The chance that one unit is of this level.
    pub chance: Exact,
}

/// What a player who buys `units` units of one block can expect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Buy {
    pub units: u32,
    /// The chance that at least one of the units wins.
    pub any_win: Exact,
    /// The chance that their prizes add up to at least what they cost;
    /// `None` when too many prize steps lie below it to count them all.
    pub back_staked: Option<Exact>,
}

/// The sheet of one stake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StakeSheet {
    pub stake_cents: i64,
    pub units_per_block: u32,
    /// The winning levels, level 1 first, then the losing units (level 0).
    pub levels: Vec<LevelOdds>,
    /// The chance that a unit wins anything.
    pub win: Exact,
    /// The block's prizes ÷ its sales.
    pub payout: Exact,
    /// A unit's prize, in cents: its mean and its variance (cents²).
    pub mean_cents: Exact,
    pub variance_cents2: Exact,
    /// The largest prize ÷ the stake.
    pub largest_multiple: Exact,
    /// The chance that a unit pays at least its stake.
    pub back_stake: Exact,
    /// For each of `BUYS` a block holds.
    pub buys: Vec<Buy>,
}

impl StakeSheet {
    /// The standard deviation of a unit's prize in cents, with `decimals`
    /// decimals, rounded half up from the exact variance.
    pub fn sd_cents(&self, decimals: u32) -> String {
        let scale = BigUint::from(10u32).pow(2 * decimals);
        let num = self.variance_cents2.numerator() * scale;
        let den = self.variance_cents2.denominator();
        // r = ⌊√(num/den)⌋; r + 1 when num/den ≥ (r + ½)².
        let root = (&num / den).sqrt();
        let twice = &root * 2u32 + 1u32;
        let root = if num * 4u32 >= &twice * &twice * den {
            root + 1u32
        } else {
            root
        };
        with_point(root.to_string(), decimals)
    }
}

/// The sheet of every stake of a game whose blocks hold `units_per_block`.
pub fn sheet(tables: &[PrizeTable], units_per_block: u32) -> Vec<StakeSheet> {
    tables
        .iter()
        .map(|table| stake_sheet(table, units_per_block))
        .collect()
}

/// The sheet of one stake's table.
pub fn stake_sheet(table: &PrizeTable, units_per_block: u32) -> StakeSheet {
    let n = u128::from(units_per_block);
    let stake = table.stake_cents();
    let mut levels: Vec<LevelOdds> = table
        .levels()
        .iter()
        .map(|p| LevelOdds {
            level: p.level.get(),
            prize_cents: p.prize_cents,
            units_per_block: p.units_per_block,
            chance: Exact::new(p.units_per_block, units_per_block),
        })
        .collect();
    let losing = table.losing_units_per_block();
    levels.push(LevelOdds {
        level: 0,
        prize_cents: 0,
        units_per_block: losing,
        chance: Exact::new(losing, units_per_block),
    });
    let winning = units_per_block - losing;
    let (sum, squares) = levels.iter().fold((0u128, 0u128), |(s, q), l| {
        let (c, p) = (u128::from(l.units_per_block), l.prize_cents as u128);
        (s + c * p, q + c * p * p)
    });
    let largest = levels.iter().map(|l| l.prize_cents).max().unwrap_or(0);
    let back: u32 = levels
        .iter()
        .filter(|l| l.level > 0 && l.prize_cents >= stake)
        .map(|l| l.units_per_block)
        .sum();
    let buys = BUYS
        .iter()
        .filter(|&&k| k <= units_per_block)
        .map(|&k| buy(table, units_per_block, k))
        .collect();
    StakeSheet {
        stake_cents: stake,
        units_per_block,
        levels,
        win: Exact::new(winning, units_per_block),
        payout: Exact::new(sum, n * stake as u128),
        mean_cents: Exact::new(sum, n),
        variance_cents2: Exact::new(n * squares - sum * sum, n * n),
        largest_multiple: Exact::new(largest as u128, stake as u128),
        back_stake: Exact::new(back, units_per_block),
        buys,
    }
}

/// `C(n, k)`, exactly.
pub fn binomial(n: u64, k: u64) -> BigUint {
    if k > n {
        return BigUint::zero();
    }
    let k = k.min(n - k);
    let mut value = BigUint::one();
    for i in 0..k {
        value *= n - i;
        value /= i + 1;
    }
    value
}

/// The figures of a player who buys `k` units (1 ≤ k ≤ the block's units)
/// of one block of `table`'s stake.
pub fn buy(table: &PrizeTable, units_per_block: u32, k: u32) -> Buy {
    let n = u64::from(units_per_block);
    let losing = u64::from(table.losing_units_per_block());
    let all = binomial(n, u64::from(k));
    let none = Exact::reduced(binomial(losing, u64::from(k)), all.clone());
    let back_staked =
        short_ways(table, k as usize).map(|short| Exact::reduced(&all - short, all.clone()));
    Buy {
        units: k,
        any_win: none.complement(),
        back_staked,
    }
}

/// The number of ways `k` units of a block pay less than `k` × stake in
/// all, or `None` past `MOST_STATES`. The prizes are counted in steps of
/// the greatest common divisor of the stake and every prize.
fn short_ways(table: &PrizeTable, k: usize) -> Option<BigUint> {
    let stake = table.stake_cents() as u64;
    let step = table
        .levels()
        .iter()
        .fold(stake, |g, p| g.gcd(&(p.prize_cents as u64)));
    let target = (k as u64 * stake / step) as usize;
    if (k + 1).saturating_mul(target) > MOST_STATES {
        return None;
    }
    // ways[j][s]: the ways to pick j winning units paying s steps, s < target.
    let mut ways = vec![vec![BigUint::zero(); target]; k + 1];
    ways[0][0] = BigUint::one();
    for prize in table.levels() {
        let steps = (prize.prize_cents as u64 / step) as usize;
        ways = with_level(&ways, u64::from(prize.units_per_block), steps, target);
    }
    let losing = u64::from(table.losing_units_per_block());
    let mut short = BigUint::zero();
    for (j, row) in ways.iter().enumerate() {
        let sum: BigUint = row.iter().sum();
        if !sum.is_zero() {
            short += sum * binomial(losing, (k - j) as u64);
        }
    }
    Some(short)
}

/// One level of the count: each way so far, times each number `m` of the
/// level's `units` it may add (`C(units, m)` ways) without reaching the
/// target.
fn with_level(ways: &[Vec<BigUint>], units: u64, steps: usize, target: usize) -> Vec<Vec<BigUint>> {
    let k = ways.len() - 1;
    let most = (k as u64)
        .min(units)
        .min(((target - 1) / steps.max(1)) as u64) as usize;
    let mut choose = Vec::with_capacity(most + 1);
    choose.push(BigUint::one());
    for m in 1..=most {
        let next = choose[m - 1].clone() * (units - m as u64 + 1) / m as u64;
        choose.push(next);
    }
    let mut next = vec![vec![BigUint::zero(); target]; k + 1];
    for (j, row) in ways.iter().enumerate() {
        for (s, count) in row.iter().enumerate() {
            if count.is_zero() {
                continue;
            }
            for (m, ways_m) in choose.iter().enumerate() {
                let (units_now, paid) = (j + m, s + m * steps);
                if units_now > k || paid >= target {
                    break;
                }
                next[units_now][paid] += count * ways_m;
            }
        }
    }
    next
}

/// A figure as the JSON sheet carries it: exact, rounded, and its "1 in N".
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureView {
    /// "num/den" in lowest terms.
    pub exact: String,
    pub value: f64,
    /// The inverse, for a chance ("1 in N"); `None` for a chance of 0.
    pub one_in: Option<f64>,
}

impl From<&Exact> for FigureView {
    fn from(exact: &Exact) -> FigureView {
        FigureView {
            exact: exact.fraction(),
            value: exact.to_f64(),
            one_in: (!exact.num.is_zero())
                .then(|| Exact::reduced(exact.den.clone(), exact.num.clone()).to_f64()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LevelView {
    pub level: u8,
    pub prize_cents: i64,
    pub units_per_block: u32,
    pub chance: FigureView,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BuyView {
    pub units: u32,
    pub any_win: FigureView,
    pub back_staked: Option<FigureView>,
}

/// One stake's sheet as JSON: every figure exact and rounded.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StakeSheetView {
    pub stake_cents: i64,
    pub units_per_block: u32,
    pub levels: Vec<LevelView>,
    pub win: FigureView,
    pub payout: FigureView,
    pub mean_cents: FigureView,
    pub variance_cents2: FigureView,
    /// Rounded to the hundredth of a cent from the exact variance.
    pub sd_cents: f64,
    pub largest_multiple: FigureView,
    pub back_stake: FigureView,
    pub buys: Vec<BuyView>,
}

impl StakeSheet {
    pub fn view(&self) -> StakeSheetView {
        StakeSheetView {
            stake_cents: self.stake_cents,
            units_per_block: self.units_per_block,
            levels: self
                .levels
                .iter()
                .map(|l| LevelView {
                    level: l.level,
                    prize_cents: l.prize_cents,
                    units_per_block: l.units_per_block,
                    chance: (&l.chance).into(),
                })
                .collect(),
            win: (&self.win).into(),
            payout: (&self.payout).into(),
            mean_cents: (&self.mean_cents).into(),
            variance_cents2: (&self.variance_cents2).into(),
            sd_cents: self.sd_cents(2).parse().unwrap_or(f64::NAN),
            largest_multiple: (&self.largest_multiple).into(),
            back_stake: (&self.back_stake).into(),
            buys: self
                .buys
                .iter()
                .map(|b| BuyView {
                    units: b.units,
                    any_win: (&b.any_win).into(),
                    back_staked: b.back_staked.as_ref().map(FigureView::from),
                })
                .collect(),
        }
    }
}
