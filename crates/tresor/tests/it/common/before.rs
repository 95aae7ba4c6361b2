//! A database as older code left it: the schema of the migrations before N
//! only ([`TestDb::migrated_before`], the real old schema, not today's
//! reshaped), and rows in it written with plain `INSERT … SELECT`s.
//!
//! The rows come from a service of today ([`Today::service`]) that writes
//! in a scratch place of its own: another SQLite file, attached to the old
//! database's connection as `today`, or the schema `today` of the same
//! PostgreSQL database. [`Today::copy_into`] moves every table the old
//! schema has, over the columns it has: what the code of before wrote the
//! same way. What a migration reshaped (a table split, a column moved out
//! of another table) the test writes back the old way from the `today`
//! tables. Then the service of today opens the old database: its
//! migrations run on it as on any older installation's.

use super::START_MS;
use super::db::{TestDb, signed};
use super::ledger::execute;
use std::sync::Arc;
use tresor::service::{ManualClock, Service, Settings};
use tresor::store::{Backend, Db};

/// Where today's rows are written before they are moved.
#[derive(Debug)]
pub struct Today {
    backend: Backend,
    /// The scratch URL (a search path of its own on PostgreSQL).
    url: String,
    secrets_key: tresor::seal::SecretsKey,
    /// SQLite: the scratch database's folder.
    scratch: Option<TestDb>,
}

impl Today {
    /// A scratch place beside `db`, whose rows go into `db` later. Its
    /// block secrets are sealed with `db`'s key.
    pub async fn beside(db: &TestDb) -> Today {
        match db.backend {
            Backend::Sqlite => {
                let scratch = TestDb::sqlite().await;
                Today {
                    backend: db.backend,
                    url: scratch.url.clone(),
                    secrets_key: db.secrets_key.clone(),
                    scratch: Some(scratch),
                }
            }
            Backend::Postgres => {
                let pool = pool(&db.url).await;
                execute(&pool, &["CREATE SCHEMA today"]).await;
                pool.close().await;
                Today {
                    backend: db.backend,
                    url: format!("{}?options=-c%20search_path%3Dtoday", db.url),
                    secrets_key: db.secrets_key.clone(),
                    scratch: None,
                }
            }
        }
    }

    /// A service of today on the scratch place, its clock at [`START_MS`].
    pub async fn service(&self) -> (Service, Arc<ManualClock>) {
        let db = Db::connect(&self.url)
            .await
            .expect("connect to the scratch place")
            .with_secrets_key(self.secrets_key.clone());
        let clock = Arc::new(ManualClock::new(START_MS));
        let service = Service::new(signed(db).await, clock.clone(), Settings::default());
        service.open_secrets().await.expect("open the secrets");
        (service, clock)
    }

    /// Makes today's tables readable as `today.<table>` on `old` (the one
    /// connection of [`TestDb::migrated_before`]), and turns off the
    /// foreign keys' checks there, as a restore does: the tables are filled
    /// one by one.
    pub async fn open_on(&self, old: &sqlx::AnyPool) {
        let statements = match &self.scratch {
            Some(scratch) => vec![
                format!(
                    "ATTACH DATABASE '{}' AS today",
                    scratch.data_dir().unwrap().join("tresor.db").display()
                ),
                "PRAGMA foreign_keys = OFF".to_owned(),
            ],
            None => vec!["SET session_replication_role = replica".to_owned()],
        };
        for statement in statements {
            sqlx::query(&statement)
                .execute(old)
                .await
                .unwrap_or_else(|error| panic!("{statement}: {error}"));
        }
    }

    /// Copies every table of `old`'s schema from today's, over the columns
    /// both have (in place of the rows the old migrations seeded), and on
    /// PostgreSQL moves each identity past the ids copied.
    /// Returns the tables copied and their rows.
    pub async fn copy_into(&self, old: &sqlx::AnyPool) -> Vec<(String, i64)> {
        let tables: Vec<String> = sqlx::query_scalar(match self.backend {
            Backend::Sqlite => {
                "SELECT name FROM sqlite_master WHERE type = 'table' \
                 AND name NOT LIKE 'sqlite_%' AND name <> '_sqlx_migrations' ORDER BY name"
            }
            Backend::Postgres => {
                "SELECT CAST(table_name AS TEXT) FROM information_schema.tables \
                 WHERE table_schema = 'public' AND table_type = 'BASE TABLE' \
                 AND table_name <> '_sqlx_migrations' ORDER BY table_name"
            }
        })
        .fetch_all(old)
        .await
        .expect("the old schema's tables");
        let mut copied = Vec::new();
        for table in tables {
            let (before, now) = (
                self.columns(old, "main", &table).await,
                self.columns(old, "today", &table).await,
            );
            let both: Vec<String> = before
                .into_iter()
                .filter(|column| now.contains(column))
                .map(|column| format!("\"{column}\""))
                .collect();
            if both.is_empty() {
                continue; // a table of before that today's code no longer has
            }
            let both = both.join(", ");
            // The rows the old migrations seeded (the house's accounts, the
            // settings) are today's too, as use changed them since.
            let mut rows = 0;
            for statement in [
                format!("DELETE FROM {table}"),
                format!("INSERT INTO {table} ({both}) SELECT {both} FROM today.{table}"),
            ] {
                rows = sqlx::query(&statement)
                    .execute(old)
                    .await
                    .unwrap_or_else(|error| panic!("{statement}: {error}"))
                    .rows_affected();
            }
            copied.push((table, rows as i64));
        }
        if self.backend == Backend::Postgres {
            past_the_ids_copied(old).await;
        }
        copied
    }

    /// The columns of `table` in `schema` (`main`: the old database's).
    async fn columns(&self, old: &sqlx::AnyPool, schema: &str, table: &str) -> Vec<String> {
        let sql = match self.backend {
            Backend::Sqlite => format!("SELECT name FROM pragma_table_info('{table}', '{schema}')"),
            Backend::Postgres => format!(
                "SELECT CAST(column_name AS TEXT) FROM information_schema.columns \
                 WHERE table_schema = '{}' AND table_name = '{table}'",
                if schema == "main" { "public" } else { schema }
            ),
        };
        sqlx::query_scalar(&sql)
            .fetch_all(old)
            .await
            .unwrap_or_else(|error| panic!("{sql}: {error}"))
    }

    /// Forgets today's rows on `old` (detached, or the schema dropped) and
    /// turns the foreign keys' checks back on.
    pub async fn close_on(&self, old: &sqlx::AnyPool) {
        let statements = match self.backend {
            Backend::Sqlite => ["DETACH DATABASE today", "PRAGMA foreign_keys = ON"],
            Backend::Postgres => [
                "DROP SCHEMA today CASCADE",
                "SET session_replication_role = DEFAULT",
            ],
        };
        for statement in statements {
            sqlx::query(statement)
                .execute(old)
                .await
                .unwrap_or_else(|error| panic!("{statement}: {error}"));
        }
    }
}

/// Each identity or serial column of the old schema moved past the largest
/// id copied, as the code of before would have left it.
async fn past_the_ids_copied(old: &sqlx::AnyPool) {
    let columns: Vec<(String, String)> = sqlx::query_as(
        "SELECT CAST(table_name AS TEXT), CAST(column_name AS TEXT) \
         FROM information_schema.columns WHERE table_schema = 'public' \
         AND (is_identity = 'YES' OR column_default LIKE 'nextval%')",
    )
    .fetch_all(old)
    .await
    .expect("the identity columns");
    for (table, column) in columns {
        let statement = format!(
            "SELECT CAST(setval(pg_get_serial_sequence('public.{table}', '{column}'), \
             COALESCE(MAX({column}), 0) + 1, false) AS BIGINT) FROM {table}"
        );
        let _: i64 = sqlx::query_scalar(&statement)
            .fetch_one(old)
            .await
            .unwrap_or_else(|error| panic!("{statement}: {error}"));
    }
}

async fn pool(url: &str) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .expect("connect")
}
