//! A payout rate shown beside the cap it is compared with: with as many
//! decimals as it takes to see the two differ, and the exact cents, so that
//! a refusal at 75.0001 % never reads "75.00 %, above the cap of 75.00 %".

use super::Payout;

/// Past this many decimals a rate is cut short with "…" (never reached: a
/// rate above a cap of two decimals shows it within 13, sales being at most
/// 4.5 × 10^10 cents).
const MOST_DECIMALS: u32 = 20;

impl Payout {
    /// The rate as a percent, exact or cut short (then ending in "…") once
    /// it differs from `cap_basis_points` and has at least two decimals:
    /// "75.0001 %" against a cap of 75 %.
    pub fn beyond(&self, cap_basis_points: u32) -> String {
        let sales = i128::from(self.sales_cents).max(1);
        let scaled = i128::from(self.prizes_cents) * 100;
        let mut remainder = scaled % sales;
        let mut shown = scaled / sales;
        let mut cap = i128::from(cap_basis_points);
        let mut text = format!("{shown}.");
        for decimals in 1..=MOST_DECIMALS {
            remainder *= 10;
            let digit = remainder / sales;
            remainder %= sales;
            shown = shown * 10 + digit;
            text.push(char::from(b'0' + digit as u8));
            if decimals > 2 {
                cap *= 10;
            }
            if decimals >= 2 && (remainder == 0 || shown != cap) {
                break;
            }
        }
        if remainder != 0 {
            text.push('…');
        }
        text + " %"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payout(prizes_cents: i64, sales_cents: i64) -> Payout {
        Payout {
            stake_cents: 100,
            prizes_cents,
            sales_cents,
        }
    }

    #[test]
    fn a_rate_shows_the_digits_that_set_it_apart_from_the_cap() {
        assert_eq!(payout(7_500_010, 10_000_000).beyond(7_500), "75.0001 %");
        assert_eq!(payout(7_001, 10_000).beyond(7_000), "70.01 %");
        assert_eq!(payout(6_500, 10_000).beyond(6_499), "65.00 %");
        assert_eq!(payout(6_500, 10_000).beyond(6_500), "65.00 %");
        // A third of a hundred-millionth above 75 %: cut short once it differs.
        assert_eq!(
            payout(2_250_000_001, 3_000_000_000).beyond(7_500),
            "75.00000003… %"
        );
        assert_eq!(payout(2, 3).beyond(6_666), "66.666… %");
        assert_eq!(payout(2, 3).beyond(7_000), "66.66… %");
    }
}
