//! PostgreSQL test databases made migrated: copies of a template database.
//!
//! Running the ~26 migrations on each PostgreSQL test's database took most of
//! its fixed cost (about 1.6 s a test, against 0.15 s on SQLite, on a machine
//! loaded by other builds). The migrations now run once per migration set, in
//! a template database named after their checksums, and each test's database
//! is `CREATE DATABASE … TEMPLATE` of it: PostgreSQL 15's default strategy
//! (`WAL_LOG`) copies it block by block through the WAL, with no checkpoint
//! (the older `FILE_COPY` makes two). See BENCHMARKS.md, "The test suite".
//!
//! - **Made once, by one process**: every test process (several may run on
//!   the server at once, of other branches with other migrations) takes one
//!   advisory lock while it looks for the template and makes it if missing.
//!   It is migrated under a temporary name and renamed when done: a process
//!   killed half way leaves no half-migrated template, and the next one drops
//!   what it left. No connection is allowed to it afterwards, since a
//!   session on a template makes every copy of it fail.
//! - **A copy is a new installation**: the migrations give the installation a
//!   random id (0012); a copy gets a random id of its own, as its migration
//!   would have, so that two test databases are two installations.
//! - **A blank database on demand** ([`empty`]): a test of an older schema
//!   (`TestDb::migrated_before`) or of a start that must write nothing
//!   (`TestDb::blank`) empties its copy in place.

use sqlx::{Connection, PgConnection};
use tokio::sync::OnceCell;

/// The advisory lock under which templates are looked for and made.
const MAKING: i64 = 0x7472_6573_6f72_7431;

/// The template of this process's migrations, made if missing; its name.
pub async fn name(base: &str) -> &'static str {
    static NAME: OnceCell<String> = OnceCell::const_new();
    NAME.get_or_init(|| make(base)).await.as_str()
}

/// `tresor_template_` and a hash of the migrations' versions and checksums.
fn name_of_migrations() -> String {
    use sha2::{Digest, Sha256};
    let mut hash = Sha256::new();
    for migration in tresor::store::migrator(tresor::store::Backend::Postgres)
        .migrations
        .iter()
    {
        hash.update(migration.version.to_be_bytes());
        hash.update(&migration.checksum);
    }
    format!("tresor_template_{}", hex::encode(&hash.finalize()[..8]))
}

async fn make(base: &str) -> String {
    let name = name_of_migrations();
    let mut conn = PgConnection::connect(base)
        .await
        .expect("connect to the server");
    sqlx::query("SELECT pg_advisory_lock($1)")
        .bind(MAKING)
        .execute(&mut conn)
        .await
        .expect("the templates' lock");
    let found: Option<i32> = sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
        .bind(&name)
        .fetch_optional(&mut conn)
        .await
        .expect("look for the template");
    if found.is_none() {
        // Under the lock, a half-made template is one a killed process left.
        let left: Vec<String> = sqlx::query_scalar(
            "SELECT datname::text FROM pg_database WHERE datname LIKE 'tresor\\_making\\_%'",
        )
        .fetch_all(&mut conn)
        .await
        .expect("list the half-made templates");
        for old in left {
            let drop = format!("DROP DATABASE IF EXISTS {old} WITH (FORCE)");
            let _ = sqlx::query(&drop).execute(&mut conn).await;
        }
        migrate_as(&mut conn, base, &name).await;
    }
    sqlx::query("SELECT pg_advisory_unlock($1)")
        .bind(MAKING)
        .execute(&mut conn)
        .await
        .expect("release the templates' lock");
    let _ = conn.close().await;
    name
}

/// Makes the database `name` of the server `conn` is on, migrated, under a
/// temporary name renamed when done; then closed to connections.
async fn migrate_as(conn: &mut PgConnection, base: &str, name: &str) {
    let making = super::trash::fresh_name("tresor_making_");
    sqlx::query(&format!("CREATE DATABASE {making}"))
        .execute(&mut *conn)
        .await
        .expect("create the template");
    let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
    sqlx::any::install_default_drivers();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(&format!("{server}/{making}"))
        .await
        .expect("connect to the template");
    tresor::store::migrator(tresor::store::Backend::Postgres)
        .run(&pool)
        .await
        .expect("migrate the template");
    pool.close().await;
    // The closed session's backend may still be going away.
    let rename = format!("ALTER DATABASE {making} RENAME TO {name}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while let Err(error) = sqlx::query(&rename).execute(&mut *conn).await {
        assert!(std::time::Instant::now() < deadline, "{rename}: {error}");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sqlx::query(&format!("ALTER DATABASE {name} ALLOW_CONNECTIONS false"))
        .execute(&mut *conn)
        .await
        .expect("close the template to connections");
}

/// Makes the test database `name` of the server at `base` (`conn`): a copy
/// of the template, with an installation id of its own.
pub async fn copy(conn: &mut PgConnection, base: &str, name: &str) {
    let template = self::name(base).await;
    sqlx::query(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
        .execute(&mut *conn)
        .await
        .expect("create the test database");
    let (server, _) = base.rsplit_once('/').expect("a URL with a database name");
    let mut on_it = PgConnection::connect(&format!("{server}/{name}"))
        .await
        .expect("connect to the test database");
    // As migration 0012 makes it.
    sqlx::query(
        "UPDATE settings SET value = md5(random()::text || clock_timestamp()::text \
         || pg_backend_pid()::text) WHERE key = 'installation_id'",
    )
    .execute(&mut on_it)
    .await
    .expect("give the copy an installation id of its own");
    let _ = on_it.close().await;
}

/// Drops the schema `public` of the database `on_it` is connected to, with
/// everything in it, and makes it again as `CREATE DATABASE` makes it: a
/// blank database (other schemas, which a test made, are left).
pub async fn empty(on_it: &mut PgConnection) {
    sqlx::raw_sql(
        "DROP SCHEMA public CASCADE; \
         CREATE SCHEMA public AUTHORIZATION pg_database_owner; \
         COMMENT ON SCHEMA public IS 'standard public schema'; \
         GRANT USAGE ON SCHEMA public TO PUBLIC;",
    )
    .execute(&mut *on_it)
    .await
    .expect("empty the test database");
}
