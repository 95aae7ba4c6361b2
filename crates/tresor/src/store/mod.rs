//! Storage: one code path over two real databases (SQLite by default,
//! PostgreSQL with a `postgres://` URL), its migrations, and the SQL the
//! writer runs (`sql`, `batch`).

pub mod accounts;
pub mod batch;
pub mod plays;
pub mod sql;

pub use sql::Conn;

use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};
use std::path::Path;
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Which database a [`Db`] talks to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A connected, migrated database.
#[derive(Debug, Clone)]
pub struct Db {
    pub pool: AnyPool,
    pub backend: Backend,
    /// The SQLite file, which the writer opens on its own thread.
    pub sqlite_path: Option<Arc<Path>>,
    /// Idle SQLite connections for the reads on every request (the session),
    /// run where the request runs (see [`Db::conn`]).
    readers: Arc<Mutex<Vec<rusqlite::Connection>>>,
}

/// A connection for reads that share the writer's SQL ([`sql`]); a SQLite
/// one goes back to [`Db`]'s idle list when dropped.
#[derive(Debug)]
pub struct ReadConn {
    conn: Option<Conn>,
    idle: Arc<Mutex<Vec<rusqlite::Connection>>>,
}

impl std::ops::Deref for ReadConn {
    type Target = Conn;
    fn deref(&self) -> &Conn {
        self.conn.as_ref().expect("until dropped")
    }
}

impl std::ops::DerefMut for ReadConn {
    fn deref_mut(&mut self) -> &mut Conn {
        self.conn.as_mut().expect("until dropped")
    }
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        if let Some(Conn::Lite(conn)) = self.conn.take()
            && let Ok(mut idle) = self.idle.lock()
            && idle.len() < MAX_IDLE_READERS
        {
            idle.push(conn);
        }
    }
}

const MAX_IDLE_READERS: usize = 16;

static SQLITE_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/sqlite");
static POSTGRES_MIGRATIONS: sqlx::migrate::Migrator = sqlx::migrate!("./migrations/postgres");

/// The database URL for the SQLite file under `data_dir`.
pub fn sqlite_url(data_dir: &Path) -> String {
    format!("sqlite://{}?mode=rwc", data_dir.join("tresor.db").display())
}

impl Db {
    /// Connects to `url` (`sqlite://…` or `postgres://…`) and brings its schema
    /// up to date.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            anyhow::bail!("unsupported database URL: use sqlite://PATH or postgres://…");
        };
        let options = AnyConnectOptions::from_str(url).context("invalid database URL")?;
        let pool_options = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 8 } else { 16 })
            .acquire_timeout(Duration::from_secs(30));
        let pool_options = match backend {
            // WAL lets readers run beside the one writer; synchronous=FULL makes
            // every acknowledged commit survive a power cut.
            Backend::Sqlite => pool_options.after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute(
                        "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
                         PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;",
                    )
                    .await?;
                    Ok(())
                })
            }),
            Backend::Postgres => pool_options,
        };
        let pool = pool_options
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the {backend:?} database"))?;
        let migrator = match backend {
            Backend::Sqlite => &SQLITE_MIGRATIONS,
            Backend::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator
            .run(&pool)
            .await
            .context("cannot migrate the database")?;
        let sqlite_path = match backend {
            Backend::Sqlite => {
                let options = sqlx::sqlite::SqliteConnectOptions::from_str(url)
                    .context("invalid database URL")?;
                let path = options.get_filename();
                (path != Path::new(":memory:")).then(|| Arc::from(path))
            }
            Backend::Postgres => None,
        };
        Ok(Db {
            pool,
            backend,
            sqlite_path,
            readers: Arc::default(),
        })
    }

    /// A connection for reads that share code with the writer. On SQLite it
    /// is a plain connection used right where the request runs: a read by
    /// primary key takes microseconds in the page cache, far less than the
    /// two thread switches of a round trip to sqlx's driver thread, and it
    /// reads the last committed state (WAL), so nothing is cached or stale.
    pub async fn conn(&self) -> Result<ReadConn, crate::error::Error> {
        let conn = match &self.sqlite_path {
            Some(path) => {
                let idle = self.readers.lock().ok().and_then(|mut idle| idle.pop());
                let conn = match idle {
                    Some(conn) => conn,
                    None => {
                        let conn = sql::open_lite(path)?;
                        conn.execute_batch("PRAGMA query_only = ON")?;
                        conn
                    }
                };
                Conn::Lite(conn)
            }
            None => Conn::Pooled(self.pool.acquire().await?),
        };
        Ok(ReadConn {
            conn: Some(conn),
            idle: self.readers.clone(),
        })
    }

    /// Opens the SQLite database under `data_dir`, creating the folder.
    pub async fn open_data_dir(data_dir: &Path) -> anyhow::Result<Db> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
        Db::connect(&sqlite_url(data_dir)).await
    }
}
