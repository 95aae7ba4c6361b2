//! On PostgreSQL a batch takes a few round trips whatever its size, and
//! the writes held back keep every value and fail as they did.

use super::*;
use crate::common::execute;
use crate::common::wire::{self, Transaction};

on_postgres!(
    a_batch_of_purchases_takes_a_few_round_trips_whatever_its_size,
    held_back_writes_keep_every_value_and_fail_as_they_did,
    tables_go_as_typed_arrays_and_read_back_as_bound,
);

/// On PostgreSQL a batch of purchases takes three round trips, for one
/// purchase as for a hundred: `BEGIN`, the log's lock and the batch's reads
/// in one message, its writes and the log's checkpoint in one more, then
/// `COMMIT` (before: five, `BEGIN` and the lock each alone; before issue 34,
/// one per statement, 19 between `BEGIN` and `COMMIT`; BENCHMARKS.md, "Round trips per PostgreSQL batch"
/// and "A lone PostgreSQL purchase: its round trips"). Counted on the wire,
/// by a proxy every connection of the service goes through, not by the
/// writer's own statistics.
async fn a_batch_of_purchases_takes_a_few_round_trips_whatever_its_size(h: &Harness) {
    let (service, proxy) = through_proxy(h, "Wire", "?sslmode=disable").await;
    let everyone = players(&service, "p", 111).await;
    let groups = [&everyone[0..1], &everyone[1..11], &everyone[11..111]];
    let mut flights = Vec::new();
    // The first round buys; the second also settles each player's first play.
    for round in ["first", "second"] {
        let mut batches = Vec::new();
        for group in groups {
            let before = proxy.connections();
            for result in buy_in_one_batch(&service, group, round).await {
                result.expect("bought");
            }
            batches.push(last_batch_on_the_wire(&before, &proxy.connections()));
            let counted = last_batch(&service);
            assert_eq!(counted.requests, group.len());
            eprintln!("{round} round, the writer's own count: {counted:?}");
        }
        eprintln!("{round} round, on the wire: {batches:#?}");
        for (batch, group) in batches.iter().zip(groups) {
            let size = group.len();
            assert_eq!(batch.end, "COMMIT", "{size} purchases: {batch:?}");
            // A group the writer sends whole can reach the proxy in pieces
            // (its connection's task flushing the first statement before the
            // others are queued), the first answered before the next
            // arrives: the wire then counts a flight more than the writer
            // waited for (seen as 5 of 100 purchases at a load average of
            // 10, the writer's own count 2). A few such splits are allowed;
            // a writer sending its statements one at a time shows 19
            // between BEGIN and COMMIT, and three in all must be seen
            // (below).
            assert!(
                (2..=5).contains(&batch.running),
                "{round} round, {size} purchases: the lock with the reads, the writes: {batch:?}"
            );
            assert!(
                (3..=2 * batch.running + 1).contains(&batch.flights),
                "{round} round, {size} purchases: BEGIN with the lock and the reads, \
                 the writes, COMMIT: {batch:?}"
            );
            flights.push(batch.flights);
            // The statements not kept prepared yet (the first batch, and
            // every few seconds: store/pipe.rs) are prepared just before
            // they run: a round trip of Parse messages at most before each
            // of the two, whatever the batch's size.
            assert!(
                batch.round_trips <= 2 * batch.running,
                "{round} round, {size} purchases: {batch:?}"
            );
            if batch.round_trips == batch.running {
                assert_eq!(batch.syncs, batch.executes, "{batch:?}");
            }
            assert_eq!(
                (batch.executes, batch.queries),
                (batches[0].executes, batches[0].queries),
                "{round} round, {size} purchases: the statements do not grow with the batch"
            );
        }
    }
    assert!(
        flights.contains(&3),
        "a batch not split on its way shows its three round trips on the wire, \
         BEGIN's and COMMIT's included: {flights:?}"
    );
    assert_eq!(service.writer.stats.batch_retries.get(), 0);
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}

/// The purchases' batch among what was committed through the proxy between
/// `before` and `after`: the holding job's batch, then the purchases', on
/// the writer's connection, the only one that committed.
fn last_batch_on_the_wire(before: &[wire::Conn], after: &[wire::Conn]) -> Transaction {
    let mut committed = Vec::new();
    for (at, conn) in after.iter().enumerate() {
        assert!(!conn.opaque, "connection {at} is read in the clear");
        let known = before.get(at).map_or(0, |conn| conn.transactions.len());
        for transaction in &conn.transactions[known..] {
            committed.push((at, transaction.clone()));
        }
    }
    assert_eq!(
        committed.len(),
        2,
        "the holding job's batch, the purchases': {committed:#?}"
    );
    assert_eq!(
        committed[0].0, committed[1].0,
        "one connection: {committed:#?}"
    );
    committed.pop().expect("the purchases' batch").1
}

/// A row of the odd values' table: (n, t, b).
type OddRow = (Option<i64>, Option<String>, Option<Vec<u8>>);

/// Odd values that a held-back write carries (as literals before the
/// writer's statements were prepared, issue 34; bound values since).
fn odd_texts() -> Vec<String> {
    vec![
        String::new(),
        "it's".to_owned(),
        "''".to_owned(),
        "$$".to_owned(),
        "$t_".to_owned(),
        "ends with a dollar $".to_owned(),
        "$1 $2 $10".to_owned(),
        "back\\slash \\x00 \\\\".to_owned(),
        "é ü 漢字 🎲 \u{202e}".to_owned(),
        "line\nbreak\ttab\r".to_owned(),
        "-- not a comment; SELECT 1; /* nor this */".to_owned(),
        "{\"json\": [1, \"two\"]}".to_owned(),
    ]
}

async fn held_back_writes_keep_every_value_and_fail_as_they_did(db: &TestDb) {
    use tresor::store::sql::{self, Conn};
    let connected = db.connect().await;
    let pool = connected.pool.clone();
    let texts = odd_texts();
    let ints = [0, 1, -1, 42, i64::MAX, i64::MIN, 1 << 53];
    let blobs: [&[u8]; 4] = [b"", b"\0\x01\xff", b"'\\$", &[0x5c; 3]];

    // Written held back, all in one round trip, and read back exactly.
    let mut conn = Conn::Pipe(connected.begin_pipe(None).await.expect("begin"));
    conn.execute_raw("CREATE TEMP TABLE odd (n bigint, t text, b bytea, k int PRIMARY KEY)")
        .await
        .expect("a table");
    let (written, counts) = sql::counting(async {
        for (k, text) in texts.iter().enumerate() {
            let n = ints[k % ints.len()];
            let b = blobs[k % blobs.len()];
            sql::query("INSERT INTO odd (n, t, b, k) VALUES ($1, $2, $3, $4)")
                .bind(n)
                .bind(text.as_str())
                .bind(b)
                .bind(k as i64)
                .defer(&mut conn)
                .await?;
        }
        sql::query("INSERT INTO odd (n, t, b, k) VALUES ($1, $2, NULL, $3)")
            .bind(None::<i64>)
            .bind(None::<String>)
            .bind(1_000i64)
            .defer(&mut conn)
            .await?;
        conn.flush().await
    })
    .await;
    written.expect("held-back writes");
    assert_eq!(counts.round_trips, 1, "{counts:?}");
    assert_eq!(counts.statements, texts.len() as u64 + 1, "{counts:?}");
    let rows: Vec<OddRow> = sql::query_as("SELECT n, t, b FROM odd ORDER BY k")
        .fetch_all(&mut conn)
        .await
        .expect("read back");
    for (k, text) in texts.iter().enumerate() {
        let expected = (
            Some(ints[k % ints.len()]),
            Some(text.clone()),
            Some(blobs[k % blobs.len()].to_vec()),
        );
        assert_eq!(rows[k], expected, "value {k} kept");
    }
    assert_eq!(rows[texts.len()], (None, None, None), "NULLs kept");

    // Reads sent together carry the same values and answer in order.
    let queries = texts
        .iter()
        .map(|text| {
            sql::query("SELECT $1 AS t, $2 AS n")
                .bind(text.as_str())
                .bind(i64::MIN)
        })
        .collect();
    let (read, counts) = sql::counting(sql::fetch_each(&mut conn, queries)).await;
    let read = read.expect("reads sent together");
    assert_eq!(counts.round_trips, 1, "{counts:?}");
    for (rows, text) in read.iter().zip(&texts) {
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].try_get::<String, _>("t").expect("t"), *text);
        assert_eq!(rows[0].try_get::<i64, _>("n").expect("n"), i64::MIN);
    }

    // A write that changes other rows than expected fails at the flush with
    // the error the same write run alone gives.
    let missing = || sql::query("UPDATE odd SET n = 0 WHERE k = $1").bind(-5i64);
    missing()
        .defer_expecting(&mut conn, "odd", 1)
        .await
        .expect("held back");
    let held = conn.flush().await.expect_err("no row changed");
    let mut alone = Conn::Tx(pool.begin().await.expect("begin"));
    alone
        .execute_raw("CREATE TEMP TABLE odd (n bigint, k int)")
        .await
        .expect("a table");
    let immediate = missing()
        .defer_expecting(&mut alone, "odd", 1)
        .await
        .expect_err("no row changed");
    assert!(
        matches!(
            held,
            Error::Unavailable("the batch's reads changed under it")
        ),
        "{held:?}"
    );
    assert_eq!(format!("{held:?}"), format!("{immediate:?}"));

    // A constraint violation fails at the flush as the statement alone does.
    let mut conn = Conn::Pipe(connected.begin_pipe(None).await.expect("begin"));
    conn.execute_raw("CREATE TEMP TABLE once (k int PRIMARY KEY)")
        .await
        .expect("a table");
    for _ in 0..2 {
        sql::query("INSERT INTO once (k) VALUES ($1)")
            .bind(7i64)
            .defer(&mut conn)
            .await
            .expect("held back");
    }
    let held = conn.flush().await.expect_err("a duplicate key");
    assert_eq!(database_code(&held), Some("23505".to_owned()), "{held:?}");

    // In the writer: a batch whose held-back writes fail is rolled back, run
    // again request by request, and each purchase fails as it did before.
    writer_batches_fail_as_they_did(db).await;
}

/// A row of a table of `tables_go_as_typed_arrays_and_read_back_as_bound`.
type TableRow = (i64, Option<String>, Option<i64>);

/// A table's rows go to the writer's PostgreSQL connection as one typed
/// array a column (`store/sql/table.rs`, `UNNEST`): NULLs, odd texts and
/// the extreme numbers read back as bound, beside a fixed parameter and a
/// second table, alone or sent together, and in a held-back write; the
/// same as through sqlx (JSON). A statement keeps its one prepared text
/// whatever its rows.
async fn tables_go_as_typed_arrays_and_read_back_as_bound(db: &TestDb) {
    use tresor::store::sql::{self, ColumnType, Conn, FromRow as _};
    const COLUMNS: &[(&str, ColumnType)] = &[
        ("id", ColumnType::Int),
        ("name", ColumnType::Text),
        ("at", ColumnType::Int),
    ];
    let connected = db.connect().await;
    let ints = [0, 1, -1, 42, i64::MAX, i64::MIN, 1 << 53];
    let rows: Vec<TableRow> = odd_texts()
        .into_iter()
        .enumerate()
        .map(|(k, text)| {
            let at = (k % 4 != 2).then(|| ints[k % ints.len()]);
            (k as i64, (k % 3 != 1).then_some(text), at)
        })
        .collect();
    let wanted = |rows: &[TableRow]| -> Vec<TableRow> {
        rows.iter()
            .filter(|(id, _, _)| *id != 1)
            .map(|(id, name, at)| (*id, name.as_ref().map(|n| format!("{n}!")), *at))
            .collect()
    };
    let first = sql::table(false, 1, COLUMNS);
    let second = sql::table(false, 3, &[("id", ColumnType::Int)]);
    let text = format!(
        "SELECT d.id, d.name || $2, d.at FROM {first} AS d \
         WHERE d.id NOT IN (SELECT id FROM {second} AS e) ORDER BY d.id"
    );
    let read = |rows: &[TableRow]| {
        sql::query(&text)
            .bind_rows(&first, rows, |(id, name, at)| (id, name, at))
            .bind("!")
            .bind_rows(&second, &[1i64, 100], |id| [*id])
    };
    let decode = |rows: Vec<sql::Row>| -> Vec<TableRow> {
        rows.iter()
            .map(|row| TableRow::from_row(row).expect("a row"))
            .collect()
    };

    let mut conn = Conn::Pipe(connected.begin_pipe(None).await.expect("begin"));
    let alone = read(&rows).fetch_all(&mut conn).await.expect("read alone");
    assert_eq!(decode(alone), wanted(&rows));
    let (together, counts) = sql::counting(sql::fetch_each(
        &mut conn,
        vec![read(&rows), read(&rows[..3])],
    ))
    .await;
    let together = together.expect("read together");
    assert_eq!(counts.round_trips, 1, "{counts:?}");
    let together: Vec<Vec<TableRow>> = together.into_iter().map(decode).collect();
    assert_eq!(together, [wanted(&rows), wanted(&rows[..3])]);

    // One prepared statement whatever the rows, none at all included.
    let prepared = "SELECT COUNT(*) FROM pg_prepared_statements";
    let before: i64 = sql::query_scalar(prepared)
        .fetch_one(&mut conn)
        .await
        .expect("counted");
    for some in [&rows[..1], &rows[..0], &rows[..]] {
        let read = read(some).fetch_all(&mut conn).await.expect("read");
        assert_eq!(decode(read), wanted(some));
    }
    let after: i64 = sql::query_scalar(prepared)
        .fetch_one(&mut conn)
        .await
        .expect("counted");
    assert_eq!(after, before, "the same text for every number of rows");

    // Held back, then written together, the values kept.
    conn.execute_raw("CREATE TEMP TABLE kept (id bigint, name text, at bigint)")
        .await
        .expect("a table");
    let insert = format!("INSERT INTO kept (id, name, at) SELECT id, name, at FROM {first} AS d");
    sql::query(&insert)
        .bind_rows(&first, &rows, |(id, name, at)| (id, name, at))
        .defer_expecting(&mut conn, "kept", rows.len())
        .await
        .expect("held back");
    conn.flush().await.expect("written");
    let kept: Vec<TableRow> = sql::query_as("SELECT id, name, at FROM kept ORDER BY id")
        .fetch_all(&mut conn)
        .await
        .expect("read back");
    assert_eq!(kept, rows);

    // Through sqlx the same statement reads its tables as JSON.
    let mut tx = Conn::Tx(connected.pool.begin().await.expect("begin"));
    let json = read(&rows)
        .fetch_all(&mut tx)
        .await
        .expect("read through sqlx");
    assert_eq!(decode(json), wanted(&rows));
}

fn database_code(error: &Error) -> Option<String> {
    match error {
        Error::Database(sqlx::Error::Database(db)) => db.code().map(|c| c.into_owned()),
        _ => None,
    }
}

/// Purchases whose batch's writes fail in the database (a block update
/// that finds no row, a transfer that breaks a constraint): the batch is
/// refused whole, nothing of it stays, and the next batch sells again.
async fn writer_batches_fail_as_they_did(db: &TestDb) {
    let (service, _clock) = setup(db).await;
    let buyers = players(&service, "f", 3).await;
    let pool = &service.db.pool;
    let plays_before = scalar(pool, "SELECT COUNT(*) FROM plays").await;

    // Every update of a block skipped: the batch's update finds no row.
    for statement in [
        "CREATE FUNCTION skip_row() RETURNS trigger AS $$ BEGIN RETURN NULL; END $$ LANGUAGE plpgsql",
        "CREATE TRIGGER skip_block BEFORE UPDATE ON blocks FOR EACH ROW EXECUTE FUNCTION skip_row()",
    ] {
        sqlx::query(statement).execute(pool).await.expect(statement);
    }
    for result in buy_in_one_batch(&service, &buyers, "skipped").await {
        let error = result.expect_err("no block updated");
        assert!(
            matches!(
                error,
                Error::Unavailable("the batch's reads changed under it")
            ),
            "{error:?}"
        );
    }
    execute(pool, &["DROP TRIGGER skip_block ON blocks"]).await;

    // A transfer of 50 cents refused by a constraint.
    execute(
        pool,
        &["ALTER TABLE transfers ADD CONSTRAINT no_fifty CHECK (amount_cents <> 50) NOT VALID"],
    )
    .await;
    for result in buy_in_one_batch(&service, &buyers, "refused").await {
        let error = result.expect_err("a constraint refuses it");
        assert_eq!(database_code(&error), Some("23514".to_owned()), "{error:?}");
    }
    execute(pool, &["ALTER TABLE transfers DROP CONSTRAINT no_fifty"]).await;

    assert_eq!(
        scalar(pool, "SELECT COUNT(*) FROM plays").await,
        plays_before,
        "nothing of the failed batches stays"
    );
    for player in &buyers {
        assert_eq!(
            service
                .balance_cents(player.account_id)
                .await
                .expect("balance"),
            10_000
        );
    }
    for result in buy_in_one_batch(&service, &buyers, "again").await {
        result.expect("bought once the database takes it");
    }
    assert_ledger_balances(&service.db).await;
    assert_trail_verifies(&service.db).await;
}
