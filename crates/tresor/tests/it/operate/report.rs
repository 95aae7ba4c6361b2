//! The report's figures equal the ledger summed independently.

mod browser;

use super::*;

on_both!(report_figures_equal_the_ledger_summed_independently);

async fn report_figures_equal_the_ledger_summed_independently(db: &TestDb) {
    let (service, _clock) = db.service_selling("Test").await;
    // Per block: units sold, stakes taken, wins won, wins credited (as seen by
    // the players' balances), wins pending.
    #[derive(Default, Debug)]
    struct Sums {
        sold: i64,
        stakes: i64,
        won: i64,
        credited: i64,
        pending: i64,
        per_level: HashMap<u8, i64>,
    }
    let mut sums: HashMap<i64, Sums> = HashMap::new();
    for p in 0..4 {
        let player = player(&service, &format!("player{p}")).await;
        service.credit(&player, 50_000).await.expect("credit");
        let mut previous: Option<(i64, i64, bool)> = None;
        for g in 0..50 {
            let stake = [50, 100, 200][(g + p) % 3];
            let before = service
                .balance_cents(player.account_id)
                .await
                .expect("balance");
            let bought = service
                .buy(&player, purchase(stake, &format!("p{p}g{g}")))
                .await
                .expect("buy");
            let play = service.play(&player, bought.play_id).await.expect("play");
            let after = service
                .balance_cents(player.account_id)
                .await
                .expect("balance");
            // A play left mid-way was settled by this purchase: its prize
            // shows in the balance beside this stake.
            if let Some((block, prize, false)) = previous {
                assert_eq!(after, before - stake + prize);
                let s = sums.entry(block).or_default();
                s.credited += prize;
                s.pending -= prize;
            }
            let s = sums.entry(play.unit.block).or_default();
            s.sold += 1;
            s.stakes += stake;
            s.won += play.outcome.prize_cents;
            s.pending += play.outcome.prize_cents;
            *s.per_level.entry(play.outcome.level.get()).or_default() += 1;
            let finish = g % 3 != 0;
            if finish {
                let before = service
                    .balance_cents(player.account_id)
                    .await
                    .expect("balance");
                for _ in 0..4 {
                    service.throw(&player, bought.play_id).await.expect("throw");
                }
                let after = service
                    .balance_cents(player.account_id)
                    .await
                    .expect("balance");
                assert_eq!(after - before, play.outcome.prize_cents);
                s.credited += play.outcome.prize_cents;
                s.pending -= play.outcome.prize_cents;
            }
            previous = Some((play.unit.block, play.outcome.prize_cents, finish));
        }
    }
    let report = report_json(db, &[]);
    let blocks = blocks_of(&report);
    assert_eq!(blocks.len(), 3);
    for block in &blocks {
        let id = block["id"].as_i64().expect("an id");
        let f = &block["figures"];
        let s = sums.remove(&id).unwrap_or_default();
        assert_eq!(f["units_sold"], json!(s.sold), "block {id}");
        assert_eq!(f["units_left"], json!(i64::from(UNITS_PER_BLOCK) - s.sold));
        assert_eq!(f["stakes_taken_cents"], json!(s.stakes), "block {id}");
        assert_eq!(f["wins_won_cents"], json!(s.won), "block {id}");
        assert_eq!(f["wins_credited_cents"], json!(s.credited), "block {id}");
        assert_eq!(f["wins_pending_cents"], json!(s.pending), "block {id}");
        for level in crate::common::items(&f["levels"], "levels") {
            let n = level["level"].as_u64().expect("a level") as u8;
            let sold = s.per_level.get(&n).copied().unwrap_or(0);
            assert_eq!(level["units_sold"], json!(sold), "block {id} level {n}");
            assert_eq!(
                level["units_left"].as_i64().expect("left") + sold,
                level["units_in_table"].as_i64().expect("table")
            );
        }
    }
    // And the report's totals equal the ledger's transfers.
    let pool = &service.db.pool;
    let ledger = |kind: &'static str| async move {
        sqlx::query_scalar::<_, i64>(
            "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers WHERE kind = $1",
        )
        .bind(kind)
        .fetch_one(pool)
        .await
        .expect("a sum")
    };
    let total = &report["emissions"][0]["figures"];
    assert_eq!(total["stakes_taken_cents"], json!(ledger("stake").await));
    assert_eq!(total["wins_credited_cents"], json!(ledger("prize").await));
    let balances: i64 = scalar(
        pool,
        "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts",
    )
    .await;
    assert_eq!(balances, 0, "all balances sum to zero");

    // The other formats say the same: each CSV line's figures are the
    // JSON's, for its block, its stake or the emission.
    let output = db.tresor_ok(&["report", "--format", "csv"]);
    let csv = String::from_utf8_lossy(&output.stdout);
    assert_eq!(csv.lines().count(), 1 + 3 * 2 + 1, "{csv}");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let mut compared = 0;
    for line in lines {
        let row: std::collections::HashMap<&str, &str> =
            header.iter().copied().zip(line.split(',')).collect();
        assert_eq!(row.len(), header.len(), "{line}");
        let emission = &report["emissions"][0];
        let figures = match row["scope"] {
            "block" => blocks
                .iter()
                .find(|b| row["block"].parse::<i64>().ok() == b["id"].as_i64())
                .map(|b| &b["figures"])
                .expect("a block of the JSON"),
            "stake" => crate::common::items(&emission["stakes"], "stakes")
                .iter()
                .find(|s| row["stake_cents"].parse::<i64>().ok() == s["stake_cents"].as_i64())
                .map(|s| &s["figures"])
                .expect("a stake of the JSON"),
            "emission" => &emission["figures"],
            other => panic!("scope {other}"),
        };
        for field in [
            "units_sold",
            "stakes_taken_cents",
            "wins_won_cents",
            "wins_credited_cents",
            "wins_pending_cents",
        ] {
            assert_eq!(row[field], figures[field].to_string(), "{field} in {line}");
        }
        compared += 1;
    }
    assert_eq!(compared, 3 * 2 + 1);

    // And the plain text: each row's figures are its block's, stake's or
    // the emission's in the JSON, each level's line its level's, and the
    // money lines the JSON's money.
    let output = db.tresor_ok(&["report"]);
    let text = String::from_utf8_lossy(&output.stdout);
    let emission = &report["emissions"][0];
    let stakes = crate::common::items(&emission["stakes"], "stakes");
    let (mut rows, mut levels, mut money) = (0, 0, 0);
    let mut level_stake = None;
    for line in text.lines() {
        let chars: Vec<char> = line.chars().collect();
        let label: String = chars.iter().take(18).collect::<String>().trim().to_owned();
        let mut words = label.split(' ');
        let figures = match (words.next(), words.next()) {
            (Some("block"), Some(id)) => blocks
                .iter()
                .find(|b| id.parse::<i64>().ok() == b["id"].as_i64())
                .map(|b| &b["figures"])
                .expect("a block of the JSON"),
            (Some("stake"), Some(cents)) => stakes
                .iter()
                .find(|s| cents.parse::<i64>().ok() == s["stake_cents"].as_i64())
                .map(|s| &s["figures"])
                .expect("a stake of the JSON"),
            (Some("emission"), None) => &emission["figures"],
            (Some("prizes"), _) => {
                // "  prizes left at stake 50 c (level: …)": the level lines follow.
                let cents: i64 = label_after(line, "at stake ").parse().expect("a stake");
                level_stake = Some(
                    stakes
                        .iter()
                        .find(|s| s["stake_cents"].as_i64() == Some(cents))
                        .expect("a stake of the JSON"),
                );
                continue;
            }
            (Some("level"), Some(n)) => {
                // "    level 3:   left /   table ×   prize =   liability"
                let n: u64 = n.trim_end_matches(':').parse().expect("a level");
                let stake = level_stake.expect("level lines follow their stake");
                let level = crate::common::items(&stake["figures"]["levels"], "levels")
                    .iter()
                    .find(|l| l["level"].as_u64() == Some(n))
                    .expect("a level of the JSON");
                let rest = line.split_once(':').expect("a level line").1;
                let (left, rest) = rest.split_once('/').expect("left / table");
                let (table, rest) = rest.split_once('×').expect("table × prize");
                let (prize, liability) = rest.split_once('=').expect("prize = liability");
                assert_eq!(left.trim(), level["units_left"].to_string(), "{line}");
                assert_eq!(table.trim(), level["units_in_table"].to_string(), "{line}");
                assert_eq!(
                    Some(cents_of(prize)),
                    level["prize_cents"].as_i64(),
                    "{line}"
                );
                assert_eq!(
                    Some(cents_of(liability)),
                    level["prizes_left_cents"].as_i64(),
                    "{line}"
                );
                levels += 1;
                continue;
            }
            _ => {
                if let Some((name, field)) =
                    MONEY_LINES.iter().find(|(name, _)| label_is(line, name))
                {
                    let amount = &line[line.find(name).unwrap() + name.len()..];
                    assert_eq!(
                        Some(cents_of(amount)),
                        report["money"][field].as_i64(),
                        "{line}"
                    );
                    money += 1;
                }
                continue;
            }
        };
        // The columns, fixed widths after the 18 of the label: state, sold,
        // left, stakes, wins won, credited, pending, prizes left, payout
        // (euros are grouped with spaces, so widths, not words).
        let mut at = 18;
        let mut column = |width: usize| {
            let cell: String = chars[at + 1..(at + 1 + width).min(chars.len())]
                .iter()
                .collect();
            at += 1 + width;
            cell.trim().to_owned()
        };
        let _state = column(9);
        assert_eq!(
            column(8),
            figures["units_sold"].to_string(),
            "sold in {line}"
        );
        assert_eq!(
            column(8),
            figures["units_left"].to_string(),
            "left in {line}"
        );
        for field in [
            "stakes_taken_cents",
            "wins_won_cents",
            "wins_credited_cents",
            "wins_pending_cents",
            "prizes_left_cents",
        ] {
            let width = if field == "wins_pending_cents" {
                12
            } else {
                15
            };
            assert_eq!(
                Some(cents_of(&column(width))),
                figures[field].as_i64(),
                "{field} in {line}"
            );
        }
        let payout = column(7);
        match figures["payout_percent"].as_str() {
            Some(percent) => assert_eq!(payout, format!("{percent}%"), "{line}"),
            None => assert_eq!(payout, "-", "{line}"),
        }
        rows += 1;
    }
    assert_eq!(
        rows,
        3 * 2 + 1,
        "every block, stake and the emission:\n{text}"
    );
    let level_count: usize = stakes
        .iter()
        .map(|s| crate::common::items(&s["figures"]["levels"], "levels").len())
        .sum();
    assert!(level_count > 0);
    assert_eq!(levels, level_count, "every level of every stake:\n{text}");
    assert_eq!(money, MONEY_LINES.len(), "every money line:\n{text}");
    let output = db.tresor(&["report", "--emission", "99"]);
    assert_exit(&output, 2);
}

/// The money lines of the plain-text report and the JSON fields they show.
const MONEY_LINES: [(&str, &str); 10] = [
    ("deposits through the provider", "provider_deposits_cents"),
    ("demo deposits and operator credits", "other_deposits_cents"),
    ("received, to refund", "to_refund_cents"),
    ("withdrawals pending", "withdrawals_pending_cents"),
    ("withdrawals paid", "withdrawals_paid_cents"),
    ("kept in reserve", "reserves_cents"),
    ("stakes taken (every writer)", "stakes_taken_cents"),
    ("wins credited (every writer)", "wins_credited_cents"),
    ("players' balances", "player_balances_cents"),
    ("ledger sum (always 0)", "ledger_sum_cents"),
];

/// Whether `line` is the text report's line labelled `name`.
fn label_is(line: &str, name: &str) -> bool {
    line.trim_start().starts_with(name)
}

/// The word after `prefix` in `line`.
fn label_after<'a>(line: &'a str, prefix: &str) -> &'a str {
    let rest = &line[line.find(prefix).expect("the prefix") + prefix.len()..];
    rest.split(' ').next().unwrap_or("")
}

/// Cents from the text report's euros ("-1 234.56"): grouping spaces and
/// the point dropped.
fn cents_of(euros: &str) -> i64 {
    let euros = euros.trim();
    assert!(
        euros.len() > 3 && euros.as_bytes()[euros.len() - 3] == b'.',
        "euros with two decimals: {euros:?}"
    );
    euros
        .chars()
        .filter(|c| *c != ' ' && *c != '.')
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("euros: {euros:?}"))
}
