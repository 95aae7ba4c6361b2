//! PostgreSQL test databases given back blank rather than dropped.
//!
//! `DROP DATABASE` makes PostgreSQL (15) run an immediate checkpoint, which
//! writes every dirty page of every database on the server: with a test
//! database dropped at the end of each of some 250 PostgreSQL tests, four at
//! a time, the suite spent most of a PostgreSQL test's fixed cost there, and
//! stalled every other test's writes meanwhile. A test's database is instead
//! renamed out of reach, emptied (every schema of its own dropped, `public`
//! made again as `CREATE DATABASE` makes it) and kept as a *spare*; the next
//! test renames a spare to its own fresh name.
//!
//! - **Nothing crosses from one test to the next.** The renaming is the
//!   fence: a connection of the old test (a server being killed, a writer
//!   thread starting again) names a database that no longer exists. Every
//!   session on it is ended first, and a rename refused because one came
//!   back is tried again; after a few refusals the database is dropped.
//! - **A spare is blank**: only a database whose emptying finished is named
//!   `tresor_spare_…` (it is `tresor_emptying_…` until then), so another test
//!   process, which may adopt spares left by an earlier run, never takes a
//!   half-emptied one. Taking a spare is one atomic rename: two processes
//!   cannot both take it.

use sqlx::{Connection, PgConnection};
use std::sync::Mutex;

/// The spares this process emptied, by name, on the default server.
static SPARES: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// A fresh random name with `prefix`.
pub fn fresh_name(prefix: &str) -> String {
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).expect("random bytes");
    format!("{prefix}{}", hex::encode(random))
}

/// A blank database of the server `conn` is connected to, named `name`: a
/// spare renamed, or one created.
pub async fn take(conn: &mut PgConnection, name: &str) {
    while let Some(spare) = next_spare(conn).await {
        let rename = format!("ALTER DATABASE {spare} RENAME TO {name}");
        if sqlx::query(&rename).execute(&mut *conn).await.is_ok() {
            return;
        }
    }
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut *conn)
        .await
        .expect("create the test database");
}

/// The next spare to try: this process's own, else one left on the server
/// by an earlier run (listed once).
async fn next_spare(conn: &mut PgConnection) -> Option<String> {
    static ADOPTED: std::sync::Once = std::sync::Once::new();
    if !ADOPTED.is_completed() {
        let left: Vec<String> = sqlx::query_scalar(
            "SELECT datname::text FROM pg_database WHERE datname LIKE 'tresor\\_spare\\_%'",
        )
        .fetch_all(&mut *conn)
        .await
        .unwrap_or_default();
        ADOPTED.call_once(|| SPARES.lock().unwrap().extend(left));
    }
    SPARES.lock().unwrap().pop()
}

/// Gives the test database `name` of the server at `base` back as a spare
/// (or drops it, when it cannot be fenced off).
pub async fn give_back(base: &str, name: &str) {
    let Ok(mut conn) = PgConnection::connect(base).await else {
        return;
    };
    let emptying = fresh_name("tresor_emptying_");
    if !fence(&mut conn, name, &emptying).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
        return;
    }
    let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
    let emptied = match PgConnection::connect(&format!("{server}/{emptying}")).await {
        Ok(mut on_it) => {
            let emptied = empty(&mut on_it).await;
            let _ = on_it.close().await;
            emptied
        }
        Err(_) => false,
    };
    let spare = fresh_name("tresor_spare_");
    let named = emptied
        && sqlx::query(&format!("ALTER DATABASE {emptying} RENAME TO {spare}"))
            .execute(&mut conn)
            .await
            .is_ok();
    if named {
        SPARES.lock().unwrap().push(spare);
    } else {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {emptying} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
    }
    let _ = conn.close().await;
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
            let _ = sqlx::query(&format!("ALTER DATABASE {to} RESET ALL"))
                .execute(&mut *conn)
                .await;
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    false
}

/// Drops every schema of the database `on_it` is connected to and makes
/// `public` again as `CREATE DATABASE` makes it.
async fn empty(on_it: &mut PgConnection) -> bool {
    let schemas: Vec<String> = match sqlx::query_scalar(
        "SELECT nspname::text FROM pg_namespace \
         WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'",
    )
    .fetch_all(&mut *on_it)
    .await
    {
        Ok(schemas) => schemas,
        Err(_) => return false,
    };
    let mut script: String = schemas
        .iter()
        .map(|schema| format!("DROP SCHEMA \"{schema}\" CASCADE; "))
        .collect();
    script.push_str(
        "CREATE SCHEMA public AUTHORIZATION pg_database_owner; \
         COMMENT ON SCHEMA public IS 'standard public schema'; \
         GRANT USAGE ON SCHEMA public TO PUBLIC;",
    );
    sqlx::raw_sql(&script).execute(&mut *on_it).await.is_ok()
}
