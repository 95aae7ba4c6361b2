//! `--preload-plays`: bulk-loaded finished plays, to measure purchases on a
//! large SQLite database.
//!
//! Closed blocks hold them, one player per thousand plays, a deposit per
//! player, a stake transfer and a trail record per play, the rows generated
//! inside SQLite (recursive CTEs), a block at a time. The trail records are
//! appended to the log of the writer `preload` as the server's writer
//! appends (`trail::log`: leaves, stored hashes, a checkpoint signed with
//! the installation's key), so that `tresor audit verify` holds afterwards.
//!
//! Only the measurement is real (purchases through the server afterwards):
//! the loaded plays all lose. It is for measuring growth, never for
//! anything else.

use crate::report::progress;
use anyhow::Context;
use clap::Parser;
use serde_json::json;
use tresor::cli::db::DbArgs;
use tresor::service::{DEPOSITS_ACCOUNT, STAKES_ACCOUNT, os_random_32, sha256_hex};
use tresor::store::Db;
use tresor::store::sql::Conn;
use tresor::trail::log::{Edge, Head};
use tresor::trail::{self, Actor};

/// The database as every command opens it (`DbArgs`: the key of its
/// secrets, the log's key, demo mode for a folder it creates).
#[derive(Debug, Parser)]
struct Opened {
    #[command(flatten)]
    db: DbArgs,
}

/// The writer the preload appends to the trail as: a log of its own.
const WRITER: &str = "preload";

/// Trail records inserted per statement.
const RECORDS_PER_INSERT: usize = 5_000;

/// Players a block's plays are shared among: one per this many plays.
const PER_PLAYER: u64 = 1000;

/// The transaction under `conn`, for the preload's own statements.
fn tx(conn: &mut Conn) -> &mut sqlx::AnyConnection {
    match conn {
        Conn::Tx(transaction) => transaction,
        Conn::Lite(_) | Conn::Pooled(_) | Conn::Pipe(_) => {
            unreachable!("the preload runs in a transaction")
        }
    }
}

/// Bulk-loads finished 50-cent plays into the SQLite database under `data`
/// until it holds `target` plays.
pub(crate) async fn preload(data: &std::path::Path, target: u64) -> anyhow::Result<()> {
    let db = open(data).await?;
    let have: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM plays")
        .fetch_one(&db.pool)
        .await?;
    let mut left = target.saturating_sub(have as u64);
    if left == 0 {
        return Ok(());
    }
    // The bench deposits through the demo deposit: a growth database is a
    // demo database.
    sqlx::query("DELETE FROM settings WHERE key = 'demo'")
        .execute(&db.pool)
        .await?;
    sqlx::query("INSERT INTO settings (key, value) VALUES ('demo', '1')")
        .execute(&db.pool)
        .await?;
    let bar = progress(left, "preloading plays");
    let now_ms = {
        use tresor::service::Clock;
        tresor::service::SystemClock.now_ms()
    };
    let emission_id: i64 = sqlx::query_scalar(
        "INSERT INTO emissions (name, state, created_at_ms, closed_at_ms) \
         VALUES ('Preload', 'closed', $1, $1) RETURNING id",
    )
    .bind(now_ms)
    .fetch_one(&db.pool)
    .await?;
    let units = u64::from(tresor_game::UNITS_PER_BLOCK);
    let mut edge = None;
    while left > 0 {
        let count = left.min(units);
        let block = Block {
            emission_id,
            count: count as i64,
            now_ms,
        };
        edge = Some(block.load(&db, edge.take()).await?);
        left -= count;
        bar.inc(count);
    }
    bar.finish_and_clear();
    db.pool.close().await;
    Ok(())
}

/// The SQLite folder `data`, opened as the writer `preload`.
async fn open(data: &std::path::Path) -> anyhow::Result<Db> {
    let data_arg = data.display().to_string();
    let mut opened = Opened::try_parse_from(["preload", "--data", &data_arg, "--writer", WRITER])
        .context("the preload's database flags")?;
    // The folder, whatever TRESOR_DATABASE_URL says.
    opened.db.database_url = None;
    opened.db.open_as(WRITER, true).await
}

/// The id after the highest of `table`.
async fn next_id(conn: &mut Conn, table: &str) -> anyhow::Result<i64> {
    let sql = format!("SELECT COALESCE(MAX(id), 0) + 1 FROM {table}");
    Ok(sqlx::query_scalar(&sql).fetch_one(tx(conn)).await?)
}

/// One closed block of `count` finished plays of the emission.
struct Block {
    emission_id: i64,
    count: i64,
    now_ms: i64,
}

/// Where one block's new rows start: their ids follow the highest so far.
struct Firsts {
    block_id: i64,
    account: i64,
    player: i64,
    play: i64,
    players: i64,
}

impl Block {
    /// Loads the block in one transaction, appending its records to the
    /// preload's log after `edge`; the log's edge to go on from.
    async fn load(&self, db: &Db, edge: Option<Edge>) -> anyhow::Result<Edge> {
        let mut conn = Conn::Tx(db.begin().await?);
        // The log's row first, as the writer locks it.
        let mut head = trail::log::lock(
            &mut conn,
            &db.writer,
            edge,
            self.now_ms,
            db.log_key.as_ref().map(|key| key.vkey()),
        )
        .await?;
        let firsts = self.insert_rows(&mut conn).await?;
        self.append_records(&mut conn, &mut head, &firsts).await?;
        let (kept, _) =
            trail::log::store(&mut conn, head, db.log_key.as_ref(), self.now_ms).await?;
        let Conn::Tx(transaction) = conn else {
            unreachable!("the preload runs in a transaction")
        };
        transaction.commit().await?;
        Ok(kept)
    }

    /// The block, its players with their accounts and deposits, its plays
    /// and their stakes, and the money moved from the deposits account to
    /// the stakes account.
    async fn insert_rows(&self, conn: &mut Conn) -> anyhow::Result<Firsts> {
        let firsts = self.firsts(conn).await?;
        let statements = [
            // Players and their accounts: player k of this block is
            // first_player + k with account first_account + k.
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO accounts (id, kind, balance_cents) SELECT $2 + k, 'player', 0 FROM c",
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO players (id, username, username_key, password_hash, account_id, \
             adult_declared_at_ms, rules_accepted_at_ms, created_at_ms) \
             SELECT $3 + k, 'preload' || ($3 + k), 'preload' || ($3 + k), '!', $2 + k, $4, $4, $4 FROM c",
            // Each player deposits exactly what its plays stake.
            "WITH RECURSIVE c(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM c WHERE k + 1 < $1) \
             INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, created_at_ms) \
             SELECT 1, $2 + k, 50 * ((($5 - 1 - k) / $1) + 1), 'deposit', $4 FROM c",
            // Play n of the block belongs to player n mod players.
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $5) \
             INSERT INTO plays (id, player_id, block_id, unit_index, stake_cents, level, prize_cents, \
             throws_made, state, idempotency_key, request_hash, created_at_ms, finished_at_ms) \
             SELECT $6 + n, $3 + n % $1, $7, n, 50, 0, 0, 4, 'finished', 'preload-' || n, \
             '5a1b6a0c0b7a4f3e2d1c0b9a8f7e6d5c4b3a29180f7e6d5c4b3a291807f6e5d4', $4, $4 FROM c",
            "WITH RECURSIVE c(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM c WHERE n + 1 < $5) \
             INSERT INTO transfers (debit_account_id, credit_account_id, amount_cents, kind, play_id, created_at_ms) \
             SELECT $2 + n % $1, 2, 50, 'stake', $6 + n, $4 FROM c",
        ];
        for sql in statements {
            sqlx::query(sql)
                .bind(firsts.players)
                .bind(firsts.account)
                .bind(firsts.player)
                .bind(self.now_ms)
                .bind(self.count)
                .bind(firsts.play)
                .bind(firsts.block_id)
                .execute(tx(conn))
                .await
                .with_context(|| format!("preloading: {}", &sql[..60.min(sql.len())]))?;
        }
        for (account, cents) in [
            (DEPOSITS_ACCOUNT, -50 * self.count),
            (STAKES_ACCOUNT, 50 * self.count),
        ] {
            sqlx::query("UPDATE accounts SET balance_cents = balance_cents + $1 WHERE id = $2")
                .bind(cents)
                .bind(account)
                .execute(tx(conn))
                .await?;
        }
        Ok(firsts)
    }

    /// The block's row, and the first ids of its accounts, players and
    /// plays.
    async fn firsts(&self, conn: &mut Conn) -> anyhow::Result<Firsts> {
        let secret = os_random_32();
        let block_id: i64 = sqlx::query_scalar(
            "INSERT INTO blocks (emission_id, stake_cents, secret, commitment, units_sold, state, \
             created_at_ms, published_at_ms) VALUES ($1, 50, $2, $3, $4, 'closed', $5, $5) RETURNING id",
        )
        .bind(self.emission_id)
        .bind(secret.to_vec())
        .bind(sha256_hex(&secret))
        .bind(self.count)
        .bind(self.now_ms)
        .fetch_one(tx(conn))
        .await?;
        Ok(Firsts {
            block_id,
            account: next_id(conn, "accounts").await?,
            player: next_id(conn, "players").await?,
            play: next_id(conn, "plays").await?,
            players: (self.count as u64).div_ceil(PER_PLAYER) as i64,
        })
    }

    /// Each play's record, as the batch appends a purchase's, and each play
    /// naming its record's leaf, as the batch writes it (migration 0021).
    async fn append_records(
        &self,
        conn: &mut Conn,
        head: &mut Head,
        firsts: &Firsts,
    ) -> anyhow::Result<()> {
        let mut records = Vec::with_capacity(RECORDS_PER_INSERT);
        let mut first_leaf = None;
        for n in 0..self.count {
            let player = firsts.player + n % firsts.players;
            records.push(head.chain(
                self.now_ms,
                &Actor::player(player, &format!("preload{player}")),
                "buy",
                &json!({"idempotency_key": format!("preload-{n}"), "stake_cents": 50}),
                &json!({
                    "balance_cents": 0,
                    "block_id": firsts.block_id,
                    "block_sold_out": false,
                    "emission_id": self.emission_id,
                    "level": 0,
                    "play_id": firsts.play + n,
                    "prize_cents": 0,
                    "unit_index": n,
                }),
            ));
            if first_leaf.is_none() {
                first_leaf = records.last().and_then(|r| r.log_id.zip(r.idx));
            }
            if records.len() == RECORDS_PER_INSERT || n + 1 == self.count {
                trail::insert_records(conn, true, &records).await?;
                records.clear();
            }
        }
        // Play n is leaf n after the first.
        if let Some((log_id, first_idx)) = first_leaf {
            sqlx::query(
                "UPDATE plays SET buy_log_id = $1, buy_idx = $2 + (id - $3) \
                 WHERE id >= $3 AND id < $3 + $4",
            )
            .bind(log_id)
            .bind(first_idx)
            .bind(firsts.play)
            .bind(self.count)
            .execute(tx(conn))
            .await?;
        }
        Ok(())
    }
}
