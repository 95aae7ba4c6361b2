//! PostgreSQL test databases at the end of their test: fenced off at once,
//! dropped later, many together.
//!
//! `DROP DATABASE` makes PostgreSQL (15) run an immediate checkpoint, which
//! writes every dirty page of every database on the server: one per test, as
//! some 250 PostgreSQL tests ended four at a time, took most of a test's
//! fixed cost and stalled every other test's writes meanwhile. Until issue 44
//! a test's database was instead emptied and kept as a blank *spare* for the
//! next test; now that a test's database starts migrated (a copy of a
//! template, `template.rs`), a blank spare would need the migrations again,
//! the very cost the template saves, so a database is *trash* at the end of
//! its test, and trash is dropped in batches of 64 (about four a run of the
//! suite), four drops at a time: their checkpoints follow one another with
//! little left to write.
//!
//! - **Nothing crosses from one test to the next.** A test's database is
//!   never given to another test. Renaming it is the fence: a connection of
//!   the old test (a server being killed, a writer thread starting again)
//!   names a database that no longer exists. Every session on it is ended
//!   first, and a rename refused because one came back is tried again; after
//!   a few refusals the database is dropped at once.
//! - **Trash is only ever dropped.** What a process leaves (its last batch,
//!   when it exits first) is dropped by the next test process on the server
//!   as it starts, with the blank spares of the scheme before, which nothing
//!   takes now.

use sqlx::{Connection, PgConnection};
use std::sync::Mutex;

/// How many databases are dropped together: a run of the suite (some 250
/// PostgreSQL tests) drops about four batches.
const BATCH: usize = 64;

/// The trash of this process not yet dropped, by name, on the default
/// server.
static TRASH: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A fresh random name with `prefix`.
pub fn fresh_name(prefix: &str) -> String {
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).expect("random bytes");
    format!("{prefix}{}", hex::encode(random))
}

/// Drops, once per process and on a thread of its own, the trash and
/// spares left on the server (at `base`) by earlier processes.
pub async fn adopt(conn: &mut PgConnection, base: &str) {
    static ADOPTED: std::sync::Once = std::sync::Once::new();
    if ADOPTED.is_completed() {
        return;
    }
    let left: Vec<String> = sqlx::query_scalar(
        "SELECT datname::text FROM pg_database \
         WHERE datname LIKE 'tresor\\_trash\\_%' OR datname LIKE 'tresor\\_spare\\_%'",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap_or_default();
    ADOPTED.call_once(|| {
        if !left.is_empty() {
            let base = base.to_owned();
            std::thread::spawn(move || drop_all(&base, left));
        }
    });
}

/// Fences the test database `name` of the server at `base` off as trash
/// (or drops it, when it cannot be fenced off); drops a batch when one is
/// full, on a thread of its own.
pub async fn give_back(base: &str, name: &str) {
    let Ok(mut conn) = PgConnection::connect(base).await else {
        return;
    };
    let trash = fresh_name("tresor_trash_");
    if fence(&mut conn, name, &trash).await {
        let mut all = TRASH.lock().unwrap();
        all.push(trash);
        if all.len() >= BATCH {
            let batch = std::mem::take(&mut *all);
            let base = base.to_owned();
            // Not waited for: a batch the process exits before is dropped
            // by the next one.
            std::thread::spawn(move || drop_all(&base, batch));
        }
    } else {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
    }
    let _ = conn.close().await;
}

/// How many connections a batch's drops use at once: the server's
/// connections are shared with every running test (100 in all).
const DROPPING_AT_ONCE: usize = 4;

/// Drops the databases `names` of the server at `base`, on
/// [`DROPPING_AT_ONCE`] connections at once, so that their checkpoints
/// are shared (one following another right away finds little to write).
fn drop_all(base: &str, names: Vec<String>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    runtime.block_on(async {
        let mut lanes = tokio::task::JoinSet::new();
        for lane in 0..DROPPING_AT_ONCE {
            let base = base.to_owned();
            let mine: Vec<String> = names
                .iter()
                .skip(lane)
                .step_by(DROPPING_AT_ONCE)
                .cloned()
                .collect();
            lanes.spawn(async move {
                let Ok(mut conn) = PgConnection::connect(&base).await else {
                    return;
                };
                for name in mine {
                    let drop = format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)");
                    let _ = sqlx::query(&drop).execute(&mut conn).await;
                }
                let _ = conn.close().await;
            });
        }
        while lanes.join_next().await.is_some() {}
    });
}

/// Ends every session on `name` and renames it `to`, out of reach of
/// anything that still has the old name; false if sessions keep coming back.
async fn fence(conn: &mut PgConnection, name: &str, to: &str) -> bool {
    for _ in 0..5 {
        let _ = sqlx::query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid()",
        )
        .bind(name)
        .execute(&mut *conn)
        .await;
        let rename = format!("ALTER DATABASE {name} RENAME TO {to}");
        if sqlx::query(&rename).execute(&mut *conn).await.is_ok() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}
