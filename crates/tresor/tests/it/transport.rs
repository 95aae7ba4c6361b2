//! Why the writer has a PostgreSQL library of its own (issue 43): the same
//! batch-shaped transaction — the prefetch's six reads (`store::batch`'s
//! own statements), an account's update and the batch's identity held
//! back, COMMIT — run through sqlx's transaction (`Conn::Tx`, one round
//! trip per statement) and through the writer's tokio-postgres connection
//! (`Conn::Pipe`: the reads in one round trip, the writes in another),
//! alternating, in one run on one database. It checks that both read the
//! same rows and prints each one's time per batch (BENCHMARKS.md, "One
//! library per database?").

use crate::common::TestDb;
use std::time::{Duration, Instant};
use tresor::store::batch as store;
use tresor::store::batch::AccountUpdate;
use tresor::store::sql::{self, Conn};
use tresor::store::{Backend, Db};

/// Batches per path and round, and rounds.
const BATCHES: u32 = 200;
const ROUNDS: u32 = 3;

/// One batch-shaped transaction on `conn` (begun), committed: the rows read
/// by each of its six reads.
async fn batch(conn: &mut Conn, id: &str) -> Vec<usize> {
    let game = tresor_game::ISLAND_ID.to_owned();
    let reads = vec![
        store::sales_gate(),
        store::earlier_purchases(false, &[(1, "a key")]),
        store::blocks_on_sale(false, &[(game, 50)], 4),
        store::new_play_ids(false, 1),
        store::plays_for_batch(false, &[], &[1]),
        store::balances(false, &[2], &[]),
    ];
    let rows = sql::fetch_each(conn, reads).await.unwrap();
    let update = AccountUpdate {
        id: 2,
        delta_cents: 0,
        stake_hour: None,
    };
    store::write(conn, false, &[update]).await.unwrap();
    sql::query("INSERT INTO writer_batches (id, committed_at_ms) VALUES ($1, 0)")
        .bind(id)
        .defer(conn)
        .await
        .unwrap();
    conn.flush().await.unwrap();
    rows.iter().map(Vec::len).collect()
}

/// `BATCHES` batches through sqlx's transactions: their time, and the rows
/// the last one read.
async fn through_sqlx(db: &Db, round: u32) -> (Duration, Vec<usize>) {
    let started = Instant::now();
    let mut read = Vec::new();
    for n in 0..BATCHES {
        let mut conn = Conn::Tx(db.begin().await.unwrap());
        read = batch(&mut conn, &format!("sqlx-{round}-{n}")).await;
        let Conn::Tx(tx) = conn else { unreachable!() };
        tx.commit().await.unwrap();
    }
    (started.elapsed(), read)
}

/// The same through the writer's own connection, kept between batches as
/// the writer keeps it.
async fn through_pipe(db: &Db, round: u32) -> (Duration, Vec<usize>) {
    let started = Instant::now();
    let mut idle = None;
    let mut read = Vec::new();
    for n in 0..BATCHES {
        let mut conn = Conn::Pipe(db.begin_pipe(idle.take()).await.unwrap());
        read = batch(&mut conn, &format!("pipe-{round}-{n}")).await;
        let Conn::Pipe(mut pipe) = conn else {
            unreachable!()
        };
        pipe.simple("COMMIT").await.unwrap();
        idle = Some(pipe);
    }
    (started.elapsed(), read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_through_the_writers_connection_against_sqlx_on_postgresql() {
    let Some(test_db) = TestDb::new(Backend::Postgres).await else {
        return;
    };
    let db = test_db.connect().await;
    // Warm both (connections made, statements prepared), then alternate.
    through_sqlx(&db, 0).await;
    through_pipe(&db, 0).await;
    let (mut sqlx_time, mut pipe_time) = (Duration::ZERO, Duration::ZERO);
    for round in 1..=ROUNDS {
        let (took, by_sqlx) = through_sqlx(&db, round).await;
        sqlx_time += took;
        let (took, by_pipe) = through_pipe(&db, round).await;
        pipe_time += took;
        assert_eq!(by_sqlx, by_pipe, "both read the same rows");
    }
    let per_batch = |total: Duration| total.as_secs_f64() * 1e6 / f64::from(BATCHES * ROUNDS);
    println!(
        "a batch's transaction (6 reads, 2 writes, COMMIT), {} batches each, alternating: \
         sqlx {:.0} µs, the writer's tokio-postgres connection {:.0} µs a batch ({:.2}×)",
        BATCHES * ROUNDS,
        per_batch(sqlx_time),
        per_batch(pipe_time),
        per_batch(sqlx_time) / per_batch(pipe_time),
    );
}
