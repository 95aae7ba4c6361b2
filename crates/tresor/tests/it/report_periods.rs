//! `tresor report --by day|month`: Europe/Paris days across both daylight
//! saving changes of 2026 and a month end, each figure against what the test
//! did and against the ledger summed apart, the balances chained from one
//! period to the next, a report that does not reconcile refused, and the
//! formats and dates parsed. On SQLite and PostgreSQL, through the binary.

use crate::common::{TestDb, describe, player, purchase, scalar};
use serde_json::Value;
use std::collections::BTreeMap;
use tresor::clock::ManualClock;
use tresor::model::Player;
use tresor::service::Service;
use tresor_game::Stake;

/// Milliseconds since the epoch of an RFC 3339 time.
fn ms(text: &str) -> i64 {
    let at = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .expect("an RFC 3339 time");
    (at.unix_timestamp_nanos() / 1_000_000) as i64
}

/// What the test did on one Paris day (the label written by hand).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct Day {
    units: i64,
    stakes: i64,
    prizes: i64,
    deposits: i64,
    /// What the players' accounts held after the day's last event.
    closing: i64,
}

/// The events: (UTC time, its Paris day written by hand, stake or credit).
/// 2026's changes: 29 March and 25 October, at 01:00 UTC.
const EVENTS: &[(&str, &str, Event)] = &[
    ("2026-03-28T12:00:00Z", "2026-03-28", Event::Credit(10_000)),
    ("2026-03-28T22:30:00Z", "2026-03-28", Event::Play(100)), // 23:30 winter
    ("2026-03-28T23:30:00Z", "2026-03-29", Event::Play(50)),  // 00:30
    ("2026-03-29T00:30:00Z", "2026-03-29", Event::Play(200)), // 01:30 winter
    ("2026-03-29T01:30:00Z", "2026-03-29", Event::Play(100)), // 03:30 summer
    ("2026-03-29T21:30:00Z", "2026-03-29", Event::Play(50)),  // 23:30 summer
    ("2026-03-29T22:30:00Z", "2026-03-30", Event::Play(100)), // 00:30
    ("2026-03-29T22:40:00Z", "2026-03-30", Event::Credit(500)),
    ("2026-03-31T21:59:00Z", "2026-03-31", Event::Play(200)), // 23:59
    ("2026-03-31T22:00:00Z", "2026-04-01", Event::Play(50)),  // April
    ("2026-10-24T21:30:00Z", "2026-10-24", Event::Play(100)), // 23:30 summer
    ("2026-10-24T22:30:00Z", "2026-10-25", Event::Play(50)),  // 00:30
    ("2026-10-25T00:30:00Z", "2026-10-25", Event::Play(200)), // 02:30 summer
    ("2026-10-25T01:30:00Z", "2026-10-25", Event::Play(100)), // 02:30 winter
    ("2026-10-25T22:30:00Z", "2026-10-25", Event::Play(50)),  // 23:30 winter
    ("2026-10-25T23:30:00Z", "2026-10-26", Event::Play(100)), // 00:30
];

#[derive(Debug, Clone, Copy)]
enum Event {
    Credit(i64),
    Play(i64),
}

/// Runs the events; returns each Paris day's figures and the players.
async fn run_events(
    service: &Service,
    clock: &ManualClock,
) -> (BTreeMap<String, Day>, Vec<Player>) {
    service
        .create_emission("Periods", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    let players = vec![
        player(service, "alice").await,
        player(service, "bruno").await,
    ];
    let mut days: BTreeMap<String, Day> = BTreeMap::new();
    for (i, (at, label, event)) in EVENTS.iter().enumerate() {
        clock.advance_ms(ms(at) - tresor::clock::Clock::now_ms(clock));
        let day = days.entry((*label).to_owned()).or_default();
        match *event {
            Event::Credit(cents) => {
                for p in &players {
                    service.credit(p, cents).await.expect("credit");
                    day.deposits += cents;
                }
            }
            Event::Play(stake) => {
                let prize = play_one(service, &players[i % 2], stake, &format!("period{i}")).await;
                day.units += 1;
                day.stakes += stake;
                day.prizes += prize;
            }
        }
        day.closing = scalar(
            &service.db.pool,
            "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts WHERE kind = 'player'",
        )
        .await;
    }
    (days, players)
}

/// An emission and a player credited 100 €, who buys and plays a unit of
/// each stake of `stakes` at each time of `times` (ms, the clock set there).
pub(crate) async fn played_at(
    service: &Service,
    clock: &ManualClock,
    times: &[i64],
    stakes: &[i64],
) -> Player {
    let at = |ms: i64| clock.advance_ms(ms - tresor::clock::Clock::now_ms(clock));
    at(times[0]);
    service
        .create_emission("Rollup", &Stake::ALL, 1)
        .await
        .expect("create an emission");
    let alice = player(service, "alice").await;
    service.credit(&alice, 10_000).await.expect("credit");
    for (i, (&time, &stake)) in times.iter().zip(stakes).enumerate() {
        at(time);
        play_one(service, &alice, stake, &format!("old{i}")).await;
    }
    alice
}

/// Buys a unit and plays it to its end; its prize.
pub(crate) async fn play_one(service: &Service, player: &Player, stake: i64, key: &str) -> i64 {
    let bought = service
        .buy(player, purchase(stake, key))
        .await
        .expect("buy");
    let mut play = service.play(player, bought.play_id).await.expect("play");
    for _ in 0..4 {
        play = service.throw(player, bought.play_id).await.expect("throw");
    }
    play.outcome.prize_cents
}

fn report(db: &TestDb, args: &[&str]) -> Value {
    let mut all = vec!["report", "--format", "json"];
    all.extend_from_slice(args);
    let output = db.tresor_ok(&all);
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

fn int(value: &Value) -> i64 {
    value
        .as_i64()
        .unwrap_or_else(|| panic!("not an integer: {value}"))
}

/// Checks each period of `report` against the days the test lived, the
/// periods' labels given by `period_of` a day's label.
fn assert_periods(report: &Value, days: &BTreeMap<String, Day>, period_of: fn(&str) -> String) {
    let mut opening = None;
    let mut closing = 0;
    let periods = report["periods"].as_array().expect("periods");
    for period in periods {
        let name = period["period"].as_str().expect("a label");
        let mut want = Day::default();
        for (label, day) in days.iter().filter(|(label, _)| period_of(label) == name) {
            want.units += day.units;
            want.stakes += day.stakes;
            want.prizes += day.prizes;
            want.deposits += day.deposits;
            let _ = label;
        }
        // Closing: after the last event on or before the period.
        if let Some((_, day)) = days
            .iter()
            .rev()
            .find(|(label, _)| period_of(label).as_str() <= name)
        {
            closing = day.closing;
        }
        let sales = &period["sales"];
        let money = &period["money"];
        assert_eq!(int(&sales["units"]), want.units, "{name} units");
        assert_eq!(int(&sales["stakes_cents"]), want.stakes, "{name} stakes");
        assert_eq!(int(&sales["prizes_cents"]), want.prizes, "{name} prizes");
        assert_eq!(
            int(&sales["gross_gaming_yield_cents"]),
            want.stakes - want.prizes,
            "{name}"
        );
        assert_eq!(
            int(&money["deposits_cents"]),
            want.deposits,
            "{name} deposits"
        );
        assert_eq!(
            int(&money["player_balances_cents"]),
            closing,
            "{name} closing"
        );
        if let Some(previous) = opening {
            assert_eq!(
                int(&money["opening_player_balances_cents"]),
                previous,
                "{name} opening"
            );
        }
        opening = Some(closing);
        let games = period["games"].as_array().expect("games");
        let per_game: i64 = games.iter().map(|g| int(&g["stakes_cents"])).sum();
        assert_eq!(
            per_game, want.stakes,
            "{name}: the games add up to the period"
        );
    }
    let total: i64 = periods
        .iter()
        .map(|p| int(&p["sales"]["stakes_cents"]))
        .sum();
    assert_eq!(int(&report["totals"]["sales"]["stakes_cents"]), total);
}

/// Each period's label, in order.
fn labels_of(report: &Value) -> Vec<&str> {
    periods(report)
        .map(|p| p["period"].as_str().expect("a label"))
        .collect()
}

/// Each period's units sold, in order.
fn units_of(report: &Value) -> Vec<i64> {
    periods(report).map(|p| int(&p["sales"]["units"])).collect()
}

fn periods(report: &Value) -> impl Iterator<Item = &Value> {
    report["periods"].as_array().expect("periods").iter()
}

fn same_day(label: &str) -> String {
    label.to_owned()
}

fn month_of(label: &str) -> String {
    label[..7].to_owned()
}

crate::on_both!(paris_days_across_daylight_saving_and_month_end_reconcile);

async fn paris_days_across_daylight_saving_and_month_end_reconcile(db: &TestDb) {
    let (service, clock) = db.service().await;
    let (days, players) = run_events(&service, &clock).await;

    // March: the 29th is 23 hours long and holds the plays at 23:30 UTC the
    // day before, 00:30 and 01:30 UTC (either side of the change) and 21:30.
    let march = report(
        db,
        &["--by", "day", "--from", "2026-03-28", "--to", "2026-04-01"],
    );
    let labels = labels_of(&march);
    assert_eq!(
        labels,
        [
            "2026-03-28",
            "2026-03-29",
            "2026-03-30",
            "2026-03-31",
            "2026-04-01"
        ]
    );
    let units = units_of(&march);
    assert_eq!(units, [1, 4, 1, 1, 1]);
    assert_eq!(march["periods"][1]["start_utc"], "2026-03-28T23:00:00.000Z");
    assert_eq!(march["periods"][1]["end_utc"], "2026-03-29T22:00:00.000Z");
    assert_periods(&march, &days, same_day);
    assert_eq!(
        int(&march["periods"][0]["money"]["opening_player_balances_cents"]),
        0
    );

    // October: the 25th is 25 hours long.
    let october = report(
        db,
        &["--by", "day", "--from", "2026-10-24", "--to", "2026-10-26"],
    );
    let units = units_of(&october);
    assert_eq!(units, [1, 4, 1]);
    assert_eq!(
        october["periods"][1]["start_utc"],
        "2026-10-24T22:00:00.000Z"
    );
    assert_eq!(october["periods"][1]["end_utc"], "2026-10-25T23:00:00.000Z");
    assert_periods(&october, &days, same_day);

    // By month, the whole ledger: March ends at 22:00 UTC on the 31st,
    // months with nothing sold carry the balances on.
    let months = report(db, &["--by", "month"]);
    let labels = labels_of(&months);
    assert_eq!(
        labels,
        [
            "2026-03", "2026-04", "2026-05", "2026-06", "2026-07", "2026-08", "2026-09", "2026-10"
        ]
    );
    assert_eq!(int(&months["periods"][0]["sales"]["units"]), 7);
    assert_eq!(int(&months["periods"][1]["sales"]["units"]), 1);
    assert_eq!(months["periods"][0]["end_utc"], "2026-03-31T22:00:00.000Z");
    assert_periods(&months, &days, month_of);

    // Against the ledger summed apart: the stake and prize transfers within
    // Paris's 29 March, and what the accounts hold now.
    let pool = &service.db.pool;
    let ledger = |kind: &str| {
        format!(
            "SELECT CAST(COALESCE(SUM(amount_cents), 0) AS BIGINT) FROM transfers WHERE kind = '{kind}' \
             AND created_at_ms >= {} AND created_at_ms < {}",
            ms("2026-03-28T23:00:00Z"),
            ms("2026-03-29T22:00:00Z")
        )
    };
    assert_eq!(
        int(&march["periods"][1]["sales"]["stakes_cents"]),
        scalar(pool, &ledger("stake")).await
    );
    assert_eq!(
        int(&march["periods"][1]["money"]["prizes_credited_cents"]),
        scalar(pool, &ledger("prize")).await
    );
    let held = scalar(
        pool,
        "SELECT CAST(SUM(balance_cents) AS BIGINT) FROM accounts WHERE kind = 'player'",
    )
    .await;
    assert_eq!(
        int(&months["totals"]["money"]["player_balances_cents"]),
        held
    );

    // A balance that no transfer explains: the report is refused, naming
    // the period, and prints nothing.
    let account = players[0].account_id;
    sqlx::query(&format!(
        "UPDATE accounts SET balance_cents = balance_cents + 7 WHERE id = {account}"
    ))
    .execute(pool)
    .await
    .expect("break the ledger");
    let refused = db.tresor(&[
        "report",
        "--by",
        "day",
        "--from",
        "2026-10-24",
        "--to",
        "2026-10-26",
    ]);
    assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
    assert!(refused.stdout.is_empty(), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("does not reconcile") && stderr.contains("2026-10-26"),
        "{stderr}"
    );
}

crate::on_sqlite!(the_formats_say_the_same_and_bad_dates_print_nothing);

async fn the_formats_say_the_same_and_bad_dates_print_nothing(db: &TestDb) {
    let (service, clock) = db.service().await;
    run_events(&service, &clock).await;
    let args = ["--by", "day", "--from", "2026-03-28", "--to", "2026-03-31"];
    let json = report(db, &args);
    // CSV: a line per period, per period and game, and the totals, each
    // figure the JSON's.
    let mut all = vec!["report", "--format", "csv"];
    all.extend_from_slice(&args);
    let csv = String::from_utf8(db.tresor_ok(&all).stdout).expect("UTF-8");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("a header").split(',').collect();
    let rows: Vec<BTreeMap<&str, &str>> = lines
        .map(|line| {
            let row: BTreeMap<&str, &str> = header.iter().copied().zip(line.split(',')).collect();
            assert_eq!(line.split(',').count(), header.len(), "{line}");
            row
        })
        .collect();
    let periods: Vec<&BTreeMap<&str, &str>> =
        rows.iter().filter(|r| r["scope"] == "period").collect();
    assert_eq!(periods.len(), 4, "{csv}");
    for (row, period) in periods
        .iter()
        .zip(json["periods"].as_array().expect("periods"))
    {
        assert_eq!(row["period"], period["period"].as_str().expect("a label"));
        for (column, value) in [
            ("units", &period["sales"]["units"]),
            ("stakes_cents", &period["sales"]["stakes_cents"]),
            ("prizes_cents", &period["sales"]["prizes_cents"]),
            (
                "gross_gaming_yield_cents",
                &period["sales"]["gross_gaming_yield_cents"],
            ),
            ("deposits_cents", &period["money"]["deposits_cents"]),
            (
                "player_balances_cents",
                &period["money"]["player_balances_cents"],
            ),
            ("reserves_cents", &period["money"]["reserves_cents"]),
        ] {
            assert_eq!(
                row[column].parse::<i64>().expect("a number"),
                int(value),
                "{column}"
            );
        }
    }
    let total = rows
        .iter()
        .find(|r| r["scope"] == "total")
        .expect("a total line");
    assert_eq!(
        total["stakes_cents"].parse::<i64>().expect("a number"),
        int(&json["totals"]["sales"]["stakes_cents"])
    );
    assert_eq!(
        rows.iter().filter(|r| r["scope"] == "game").count(),
        4,
        "{csv}"
    );
    // The table: each period and the totals, in euros.
    let mut all = vec!["report"];
    all.extend_from_slice(&args);
    let table = String::from_utf8(db.tresor_ok(&all).stdout).expect("UTF-8");
    for label in [
        "2026-03-28",
        "2026-03-29",
        "2026-03-30",
        "2026-03-31",
        "total",
        "Europe/Paris",
    ] {
        assert!(table.contains(label), "{label}: {table}");
    }
    let stakes = int(&json["periods"][1]["sales"]["stakes_cents"]);
    assert!(
        table.contains(&format!("{}.{:02}", stakes / 100, stakes % 100)),
        "{table}"
    );

    // Bad dates and ranges: refused before anything is read, nothing on stdout.
    for (bad, names) in [
        (&["--by", "day", "--from", "2026-02-30"][..], "--from"),
        (&["--by", "day", "--to", "29/03/2026"][..], "--to"),
        (&["--by", "month", "--from", "2026-3-1"][..], "--from"),
        (
            &["--by", "day", "--from", "2026-03-02", "--to", "2026-03-01"][..],
            "--from",
        ),
        (&["--from", "2026-03-01"][..], "--by"),
        (&["--by", "week"][..], "week"),
        (&["--by", "day", "--emission", "1"][..], "--emission"),
    ] {
        let mut all = vec!["report"];
        all.extend_from_slice(bad);
        let output = db.tresor(&all);
        assert_ne!(
            output.status.code(),
            Some(0),
            "{bad:?}: {}",
            describe(&output)
        );
        assert!(output.stdout.is_empty(), "{bad:?}: {}", describe(&output));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(names), "{bad:?}: {stderr}");
    }
}

crate::on_both!(the_rollup_is_reused_and_equals_the_tables_read_afresh);

/// The rollup (migration 0026): `--no-rollup` reads the tables and writes
/// nothing; a report rolls up the rows up to the last one older than an
/// hour and reads the rest live, with the same figures; the next one
/// reuses the sums; a late row of a past day still counts; a rollup that
/// no longer matches the ledger refuses the report.
async fn the_rollup_is_reused_and_equals_the_tables_read_afresh(db: &TestDb) {
    const DAY: i64 = 86_400_000;
    let (service, clock) = db.service().await;
    let pool = &service.db.pool;
    let now = tresor::clock::Clock::now_ms(&tresor::clock::SystemClock);
    let at = |ms: i64| clock.advance_ms(ms - tresor::clock::Clock::now_ms(&*clock));
    let times: Vec<i64> = (0..3).map(|i| now - 3 * DAY + i * DAY / 2).collect();
    let alice = played_at(&service, &clock, &times, &[100, 50, 200]).await;
    // Ten minutes ago: too recent for the rollup.
    at(now - 600_000);
    play_one(&service, &alice, 100, "recent").await;
    let rolled_up = "SELECT CAST(COALESCE(SUM(units), 0) AS BIGINT) FROM report_play_hours";

    let fresh = report(db, &["--by", "day", "--no-rollup"]);
    assert_eq!(
        scalar(pool, rolled_up).await,
        0,
        "--no-rollup writes nothing"
    );
    assert_eq!(
        scalar(pool, "SELECT plays_through FROM report_rollup").await,
        0
    );
    assert_eq!(int(&fresh["totals"]["sales"]["units"]), 4);

    let rolled = report(db, &["--by", "day"]);
    assert_eq!(rolled, fresh, "the rollup's figures are the tables'");
    let mark = scalar(pool, "SELECT plays_through FROM report_rollup").await;
    let older = format!(
        "SELECT CAST(MAX(id) AS BIGINT) FROM plays WHERE created_at_ms < {}",
        now - 3_600_000
    );
    assert_eq!(mark, scalar(pool, &older).await);
    assert!(mark < scalar(pool, "SELECT CAST(MAX(id) AS BIGINT) FROM plays").await);
    assert_eq!(
        scalar(pool, rolled_up).await,
        3,
        "the last hour's play stays live"
    );
    let rows = "SELECT CAST(COUNT(*) AS BIGINT) FROM report_transfer_hours";
    let transfer_rows = scalar(pool, rows).await;
    assert!(transfer_rows > 0);

    // Reused: nothing new to roll up, nothing written, the same figures.
    assert_eq!(report(db, &["--by", "month"])["totals"], fresh["totals"]);
    assert_eq!(scalar(pool, rows).await, transfer_rows);

    // A play stamped two days ago but written now: after the mark, read
    // live, then rolled up by the next report, with the recent one before
    // it (by id: a row is in the sums or read live, whatever its time).
    at(now - 2 * DAY + 3_600_000);
    play_one(&service, &alice, 50, "late").await;
    let fresh = report(db, &["--by", "day", "--no-rollup"]);
    assert_eq!(int(&fresh["totals"]["sales"]["units"]), 5);
    assert_eq!(report(db, &["--by", "day"]), fresh);
    assert_eq!(scalar(pool, rolled_up).await, 5);
    assert_eq!(report(db, &["--by", "day"]), fresh);

    // A rollup the ledger does not bear out: refused, naming the period.
    sqlx::query("UPDATE report_play_hours SET stakes_cents = stakes_cents + 50")
        .execute(pool)
        .await
        .expect("spoil the rollup");
    let refused = db.tresor(&["report", "--by", "day"]);
    assert_ne!(refused.status.code(), Some(0), "{}", describe(&refused));
    assert!(refused.stdout.is_empty(), "{}", describe(&refused));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("does not reconcile"), "{stderr}");
    assert_eq!(report(db, &["--by", "day", "--no-rollup"]), fresh);
}
