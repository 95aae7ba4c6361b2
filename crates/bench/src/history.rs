//! `--history-plays N`: months of trading bulk-loaded into a database, to
//! measure the period report (`tresor report --by day|month`, issue 45) over
//! millions of plays, on SQLite (`--data DIR`) or PostgreSQL
//! (`--database-url URL`, a database of its own that is kept).
//!
//! Over `--history-days` Paris days ending today (daylight saving changes
//! included), four kinds of plays interleaved through each day: the
//! island's 0.50, 1 and 2 € stakes and a generated scratch game's 1 € (its
//! own emission, pinning its definition), 35, 30, 15 and 20 % of the plays,
//! in blocks of their game's size; the days' volumes vary. A unit's outcome
//! follows its index (one in five pays twice the stake, one in forty ten
//! times). Each day, in one transaction: every player who plays deposits
//! what they will stake; each play, its stake transfer and, for a win, its
//! prize transfer at its time; the players whose id is a multiple of three
//! ask to withdraw the day's winnings at its end, paid the next morning;
//! and the accounts' balances moved by what the day's transfers move, so
//! the ledger sums to zero and the report reconciles. The rows are made by
//! the database (a recursive CTE on SQLite, `generate_series` on
//! PostgreSQL), a day at a time; no trail record is written (the audit does
//! not hold on such a database: it is for measuring reports only).

use crate::report::progress;
use anyhow::Context;
use clap::Parser;
use tresor::cli::db::DbArgs;
use tresor::report::paris;
use tresor::service::{DEPOSITS_ACCOUNT, PRIZES_ACCOUNT, STAKES_ACCOUNT, os_random_32, sha256_hex};
use tresor::store::{Backend, Db};

/// The database as every command opens it.
#[derive(Debug, Parser)]
struct Opened {
    #[command(flatten)]
    db: DbArgs,
}

/// The pending withdrawals' and the paid out money's accounts.
const PENDING: i64 = -3;
const PAID_OUT: i64 = -4;

/// The island's units per block.
const ISLAND_UNITS: i64 = tresor_game::UNITS_PER_BLOCK as i64;

/// One kind of play: its game's emission (0 the island's, 1 the scratch
/// game's), stake, block size, and its share of each 20 plays (`r` in
/// `lo..hi` for play n with r = n mod 20).
struct Class {
    emission: usize,
    stake: i64,
    units: i64,
    lo: i64,
    hi: i64,
}

const CLASSES: [Class; 4] = [
    Class {
        emission: 0,
        stake: 50,
        units: ISLAND_UNITS,
        lo: 0,
        hi: 7,
    },
    Class {
        emission: 0,
        stake: 100,
        units: ISLAND_UNITS,
        lo: 7,
        hi: 13,
    },
    Class {
        emission: 0,
        stake: 200,
        units: ISLAND_UNITS,
        lo: 13,
        hi: 16,
    },
    Class {
        emission: 1,
        stake: 100,
        units: 10_000,
        lo: 16,
        hi: 20,
    },
];

impl Class {
    /// How many of the plays 0..count are of this class.
    fn count_of(&self, count: i64) -> i64 {
        let width = self.hi - self.lo;
        (count / 20) * width + (count % 20 - self.lo).clamp(0, width)
    }
}

/// Fills the database with `plays` plays over `days` Paris days.
pub(crate) async fn history(
    data: Option<&std::path::Path>,
    url: Option<&str>,
    plays: u64,
    days: u32,
) -> anyhow::Result<()> {
    let db = open(data, url).await?;
    let now_ms = {
        use tresor::service::Clock;
        tresor::service::SystemClock.now_ms()
    };
    let plan = Plan::new(&db, now_ms, plays as i64, i64::from(days.max(1))).await?;
    let bar = progress(plays, "loading the history");
    let mut withdrawals = (0, 0);
    for day in 0..plan.days.len() {
        withdrawals = plan.load_day(&db, day, withdrawals).await?;
        bar.inc(plan.days[day].count as u64);
    }
    bar.finish_and_clear();
    if db.backend == Backend::Postgres {
        for table in [
            "emissions",
            "blocks",
            "accounts",
            "players",
            "plays",
            "transfers",
        ] {
            sqlx::query(&format!(
                "SELECT setval(pg_get_serial_sequence('{table}', 'id'), \
                 (SELECT MAX(id) FROM {table}))"
            ))
            .execute(&db.pool)
            .await?;
        }
        sqlx::query("ANALYZE").execute(&db.pool).await?;
    }
    db.pool.close().await;
    println!(
        "history: {plays} plays over {} Paris days, {} players",
        plan.days.len(),
        plan.players
    );
    Ok(())
}

async fn open(data: Option<&std::path::Path>, url: Option<&str>) -> anyhow::Result<Db> {
    let mut args = vec!["history".to_owned()];
    if let Some(data) = data {
        args.extend(["--data".to_owned(), data.display().to_string()]);
    }
    if let Some(url) = url {
        args.extend(["--database-url".to_owned(), url.to_owned()]);
    }
    let opened = Opened::try_parse_from(args).context("the history's database flags")?;
    opened.db.open_read().await
}

/// One Paris day: where it starts, how long it is, how many plays it has
/// and each class's plays before it.
struct Day {
    start_ms: i64,
    length_ms: i64,
    count: i64,
    before: [i64; 4],
}

/// What the whole load is made of: the days, the players and the first
/// ids of everything it adds.
struct Plan {
    days: Vec<Day>,
    players: i64,
    first_player: i64,
    first_account: i64,
    first_play: i64,
    /// Each class's first block.
    blocks: [i64; 4],
    /// On PostgreSQL as a superuser: each day loaded with the foreign keys'
    /// triggers off (`session_replication_role`), its rows being whole by
    /// construction; more than twice as fast.
    replica: bool,
}

impl Plan {
    async fn new(db: &Db, now_ms: i64, plays: i64, days: i64) -> anyhow::Result<Plan> {
        let mut starts = Vec::new();
        let mut date = paris::paris_date(now_ms - (days - 1) * 86_400_000);
        for _ in 0..=days {
            starts.push(paris::day_start_ms(date));
            date = paris::By::Day.next(date);
        }
        // Weekly and slower swings: weights 10 to 19.
        let weights: Vec<i64> = (0..days).map(|d| 10 + (d * 7 + d / 9) % 10).collect();
        let sum: i64 = weights.iter().sum();
        let mut out = Vec::new();
        let mut given = 0;
        let mut before = [0; 4];
        for d in 0..days as usize {
            let count = match d + 1 == days as usize {
                true => plays - given,
                false => plays * weights[d] / sum,
            };
            // Today ends now.
            let end = match d + 1 == days as usize {
                true => starts[d + 1].min(now_ms).max(starts[d] + 3_600_000),
                false => starts[d + 1],
            };
            out.push(Day {
                start_ms: starts[d],
                length_ms: end - starts[d],
                count,
                before,
            });
            for (c, class) in CLASSES.iter().enumerate() {
                before[c] += class.count_of(count);
            }
            given += count;
        }
        let players = (plays / 1000).max(10);
        let mut plan = Plan {
            days: out,
            players,
            first_player: next_id(db, "players").await?,
            first_account: next_id(db, "accounts").await?,
            first_play: next_id(db, "plays").await?,
            blocks: [0; 4],
            replica: db.backend == Backend::Postgres
                && sqlx::query_scalar::<_, bool>(
                    "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
                )
                .fetch_one(&db.pool)
                .await?,
        };
        plan.blocks = plan.make_games(db, now_ms, &before).await?;
        plan.make_players(db, starts[0]).await?;
        Ok(plan)
    }

    /// The two emissions and each class's blocks, `totals` plays each;
    /// each class's first block.
    async fn make_games(
        &self,
        db: &Db,
        now_ms: i64,
        totals: &[i64; 4],
    ) -> anyhow::Result<[i64; 4]> {
        let definition = crate::games::definition(1);
        let mut emissions = Vec::new();
        for (name, game, sha, text) in [
            ("Historique", "ile-au-tresor", None, None),
            (
                "Historique grattage",
                "bench-01",
                Some(sha256_hex(definition.as_bytes())),
                Some(definition.clone()),
            ),
        ] {
            let id: i64 = sqlx::query_scalar(
                "INSERT INTO emissions (name, state, created_at_ms, closed_at_ms, game_id, game_sha256, definition) \
                 VALUES ($1, 'closed', $2, $2, $3, COALESCE($4, \
                 'e14d91a10d98dbd4d34188fa6f981c7281c01e829394aba8d7ef937c2d095072'), $5) RETURNING id",
            )
            .bind(name)
            .bind(now_ms)
            .bind(game)
            .bind(sha)
            .bind(text)
            .fetch_one(&db.pool)
            .await?;
            emissions.push((id, game));
        }
        let mut next = next_id(db, "blocks").await?;
        let mut firsts = [0; 4];
        for (c, class) in CLASSES.iter().enumerate() {
            firsts[c] = next;
            let (emission, game) = emissions[class.emission];
            let blocks = (totals[c] + class.units - 1) / class.units;
            for b in 0..blocks {
                let secret = os_random_32();
                sqlx::query(
                    "INSERT INTO blocks (id, emission_id, game_id, stake_cents, units_per_block, secret, \
                     commitment, units_sold, state, created_at_ms, published_at_ms) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'closed', $9, $9)",
                )
                .bind(next)
                .bind(emission)
                .bind(game)
                .bind(class.stake)
                .bind(class.units)
                .bind(secret.to_vec())
                .bind(sha256_hex(&secret))
                .bind((totals[c] - b * class.units).min(class.units))
                .bind(now_ms)
                .execute(&db.pool)
                .await?;
                next += 1;
            }
        }
        Ok(firsts)
    }

    /// The players and their accounts, registered before the first day.
    async fn make_players(&self, db: &Db, at_ms: i64) -> anyhow::Result<()> {
        let numbers = numbers(db.backend, self.players);
        for sql in [
            format!(
                "{numbers} INSERT INTO accounts (id, kind, balance_cents) \
                 SELECT {} + n, 'player', 0 FROM c",
                self.first_account
            ),
            format!(
                "{numbers} INSERT INTO players (id, username, username_key, password_hash, account_id, \
                 adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
                 SELECT {p} + n, 'history' || ({p} + n), 'history' || ({p} + n), '!', {a} + n, \
                 {at_ms}, {at_ms}, {at_ms} FROM c",
                p = self.first_player,
                a = self.first_account
            ),
        ] {
            sqlx::query(&sql).execute(&db.pool).await?;
        }
        Ok(())
    }

    /// Day `d` in one transaction; `withdrawals` the transfer ids (from,
    /// to excluded) of the day before's withdrawal requests, paid this
    /// morning. This day's, for the next.
    async fn load_day(
        &self,
        db: &Db,
        d: usize,
        withdrawals: (i64, i64),
    ) -> anyhow::Result<(i64, i64)> {
        let day = &self.days[d];
        let first_play = self.first_play + day.before.iter().sum::<i64>();
        let mut tx = db.pool.begin().await?;
        if self.replica {
            sqlx::query("SET LOCAL session_replication_role = replica")
                .execute(&mut *tx)
                .await?;
        }
        let first_transfer: i64 =
            sqlx::query_scalar("SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM transfers")
                .fetch_one(&mut *tx)
                .await?;
        if day.count > 0 {
            sqlx::query(&self.plays_sql(db.backend, d, first_play))
                .execute(&mut *tx)
                .await
                .context("the day's plays")?;
        }
        let plays = format!(
            "FROM plays WHERE id >= {first_play} AND id < {}",
            first_play + day.count
        );
        let account = format!(
            "{} + (player_id - {})",
            self.first_account, self.first_player
        );
        let end = day.start_ms + day.length_ms;
        let statements = [
            format!(
                "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
                 SELECT {DEPOSITS_ACCOUNT}, {account}, SUM(stake_cents), 'deposit', {} {plays} GROUP BY player_id",
                day.start_ms + 300_000
            ),
            format!(
                "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms) \
                 SELECT {account}, {STAKES_ACCOUNT}, stake_cents, 'stake', id, created_at_ms {plays}"
            ),
            format!(
                "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms) \
                 SELECT {PRIZES_ACCOUNT}, {account}, prize_cents, 'prize', id, created_at_ms + 1000 {plays} \
                 AND prize_cents > 0"
            ),
            format!(
                "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
                 SELECT {PENDING}, {PAID_OUT}, amount_cents, 'withdrawal_paid', {} FROM transfers \
                 WHERE id >= {} AND id < {} AND kind = 'withdrawal'",
                day.start_ms + 7_200_000,
                withdrawals.0,
                withdrawals.1
            ),
        ];
        for sql in &statements {
            sqlx::query(sql)
                .execute(&mut *tx)
                .await
                .with_context(|| sql[..60].to_owned())?;
        }
        let asked_from: i64 =
            sqlx::query_scalar("SELECT CAST(MAX(id) + 1 AS BIGINT) FROM transfers")
                .fetch_one(&mut *tx)
                .await?;
        sqlx::query(&format!(
            "INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
             SELECT {account}, {PENDING}, SUM(prize_cents), 'withdrawal', {} {plays} \
             AND prize_cents > 0 AND player_id % 3 = 0 GROUP BY player_id",
            end - 600_000
        ))
        .execute(&mut *tx)
        .await?;
        let asked_to: i64 = sqlx::query_scalar("SELECT CAST(MAX(id) + 1 AS BIGINT) FROM transfers")
            .fetch_one(&mut *tx)
            .await?;
        sqlx::query(&balances_sql(first_transfer))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((asked_from, asked_to))
    }

    /// The day's plays, interleaved by class through the day.
    fn plays_sql(&self, backend: Backend, d: usize, first_play: i64) -> String {
        let day = &self.days[d];
        let case = |expr: &dyn Fn(usize, &Class) -> String| {
            let arms: Vec<String> = CLASSES
                .iter()
                .enumerate()
                .map(|(c, class)| format!("WHEN {c} THEN {}", expr(c, class)))
                .collect();
            format!("CASE cls {} END", arms.join(" "))
        };
        // g: the play's rank among its class's plays of the whole history.
        let class_of: Vec<String> = CLASSES
            .iter()
            .enumerate()
            .map(|(c, class)| format!("WHEN r < {} THEN {c}", class.hi))
            .collect();
        let rank: Vec<String> = CLASSES
            .iter()
            .enumerate()
            .map(|(c, class)| {
                let width = class.hi - class.lo;
                format!(
                    "WHEN r < {} THEN {} + q * {width} + r - {}",
                    class.hi, day.before[c], class.lo
                )
            })
            .collect();
        let block = case(&|c, class| format!("{} + g / {}", self.blocks[c], class.units));
        let unit = case(&|_, class| format!("g % {}", class.units));
        let stake = case(&|_, class| class.stake.to_string());
        let span = day.length_ms - 1_800_000;
        format!(
            "{numbers} INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, \
             prize_cents, throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms) \
             SELECT {first_play} + n, {fp} + (n * 7919 + {d}) % {players}, block, unit, stake, \
             CASE WHEN unit % 5 = 0 THEN 1 WHEN unit % 40 = 3 THEN 2 ELSE 0 END, \
             CASE WHEN unit % 5 = 0 THEN 2 * stake WHEN unit % 40 = 3 THEN 10 * stake ELSE 0 END, \
             4, 'finished', 'history-' || ({first_play} + n), \
             '5a1b6a0c0b7a4f3e2d1c0b9a8f7e6d5c4b3a29180f7e6d5c4b3a291807f6e5d4', t_ms, t_ms + 30000 \
             FROM (SELECT n, {block} AS block, {unit} AS unit, {stake} AS stake, \
             {start} + n * {span} / {count} AS t_ms \
             FROM (SELECT n, CASE {classes} END AS cls, CASE {ranks} END AS g \
             FROM (SELECT n, n % 20 AS r, n / 20 AS q FROM c) AS k) AS j) AS p",
            numbers = numbers(backend, day.count),
            fp = self.first_player,
            players = self.players,
            start = day.start_ms + 600_000,
            count = day.count.max(1),
            classes = class_of.join(" "),
            ranks = rank.join(" "),
        )
    }
}

/// Moves each account's balance by what the transfers from `first` move.
fn balances_sql(first: i64) -> String {
    format!(
        "UPDATE accounts SET balance_cents = accounts.balance_cents + d.net FROM \
         (SELECT account, CAST(SUM(amount) AS BIGINT) AS net FROM \
         (SELECT credit_account_id AS account, amount_cents AS amount FROM transfers WHERE id >= {first} \
         UNION ALL SELECT debit_account_id, -amount_cents FROM transfers WHERE id >= {first}) AS m \
         GROUP BY account) AS d WHERE accounts.id = d.account"
    )
}

/// A CTE `c(n)` of the numbers 0 to count − 1.
fn numbers(backend: Backend, count: i64) -> String {
    match backend {
        Backend::Sqlite => format!(
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < {count})"
        ),
        Backend::Postgres => {
            format!("WITH c(n) AS (SELECT generate_series(CAST(0 AS BIGINT), {count} - 1))")
        }
    }
}

/// The id after the highest of `table`.
async fn next_id(db: &Db, table: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT CAST(COALESCE(MAX(id), 0) + 1 AS BIGINT) FROM {table}");
    Ok(sqlx::query_scalar(&sql).fetch_one(&db.pool).await?)
}
