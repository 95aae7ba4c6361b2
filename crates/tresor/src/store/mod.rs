//! Storage: one code path over two real databases (SQLite by default,
//! PostgreSQL with a `postgres://` URL), its migrations, and the SQL the
//! writer runs (`sql`, `batch`).

pub mod accounts;
pub mod arg;
pub mod bans;
pub mod batch;
pub mod deferred;
mod deposits;
pub mod documents;
mod ledger;
pub mod lock;
mod migrations;
pub mod oversight;
pub mod persons;
pub mod pipe;
pub mod plays;
pub mod primary;
pub mod record;
mod reserves;
pub mod sql;
pub mod suspension;
pub mod withdrawals;
pub mod writer_accounts;

pub use migrations::migrator;
pub use sql::Conn;

use crate::error::Error;
use crate::seal::SecretsKey;
use anyhow::Context;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions};
use sqlx::{AnyPool, Executor};
use std::future::Future;
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
    /// On PostgreSQL, what keeps the pool on the primary.
    primary: Option<Following>,
    /// Whether the database is new: it had no schema, or nothing was ever
    /// written into its schema ([`written`]: a database migrated and never
    /// opened to write, as a copy of a migrated template is, is new).
    pub fresh: bool,
    /// The key that seals and opens block secrets (`crate::seal`), kept
    /// outside the database and given by the operator.
    pub secrets_key: Option<SecretsKey>,
    /// The writer's name: its log is `tresor/<installation>/<writer>`
    /// (`--writer`; `server` unless told).
    pub writer: Arc<str>,
    /// The key that signs the log's checkpoints, kept outside the database
    /// (`crate::trail::key`).
    pub log_key: Option<crate::logkey::LogKey>,
    /// The longest a connection (or a transaction's BEGIN) is waited for:
    /// the pool's own timeout, cut to the outage budget
    /// ([`Db::with_outage_budget`]).
    acquire_within: Duration,
}

/// A PostgreSQL pool's link to its follower ([`primary::follow`]), which
/// stops when the last clone of the `Db` is dropped.
#[derive(Debug, Clone)]
struct Following {
    watch: Arc<primary::Watch>,
    _alive: Arc<()>,
}

/// How long a connection may take to come before the primary is looked for
/// (the wait goes on meanwhile): a dead host makes sqlx retry it quietly.
const SLOW_ACQUIRE: Duration = Duration::from_millis(500);
/// How long a request waits for a PostgreSQL connection before it is
/// answered "unavailable" (an outage, not a slow query, makes it wait).
const POSTGRES_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(5);
/// The same on SQLite, whose pool only waits for its own connections.
const SQLITE_ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

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

/// The database URL for the SQLite file under `data_dir`.
pub fn sqlite_url(data_dir: &Path) -> String {
    format!("sqlite://{}?mode=rwc", data_dir.join("tresor.db").display())
}

impl Db {
    /// Connects to `url` (`sqlite://…` or `postgres://…`) and brings its schema
    /// up to date.
    pub async fn connect(url: &str) -> anyhow::Result<Db> {
        sqlx::any::install_default_drivers();
        let backend = Backend::of_url(url)?;
        let hosts = match backend {
            Backend::Sqlite => None,
            Backend::Postgres => Some(primary::Hosts::parse(url).map_err(anyhow::Error::msg)?),
        };
        let options = match &hosts {
            None => AnyConnectOptions::from_str(url).context("invalid database URL")?,
            Some(hosts) => Self::first_primary(hosts).await?,
        };
        let acquire_within = match backend {
            Backend::Sqlite => SQLITE_ACQUIRE_TIMEOUT,
            Backend::Postgres => POSTGRES_ACQUIRE_TIMEOUT,
        };
        let watch = hosts
            .as_ref()
            .map(|hosts| Arc::new(primary::Watch::new(hosts.attrs)));
        let pool = pool_options(backend, acquire_within, watch.as_ref())
            .connect_with(options)
            .await
            .with_context(|| format!("cannot open the {backend:?} database"))?;
        let primary = hosts
            .zip(watch)
            .map(|(hosts, watch)| follow(&pool, hosts, watch));
        let had_schema = has_schema(&pool, backend).await?;
        migrator(backend)
            .run(&pool)
            .await
            .context("cannot migrate the database")?;
        let fresh = !had_schema || !written(&mut *pool.acquire().await?).await?;
        Ok(Db {
            pool,
            backend,
            sqlite_path: sqlite_path(backend, url)?,
            readers: Arc::default(),
            primary,
            fresh,
            secrets_key: None,
            writer: Arc::from("server"),
            log_key: None,
            acquire_within,
        })
    }

    /// This database with the key of its block secrets.
    pub fn with_secrets_key(mut self, key: SecretsKey) -> Db {
        self.secrets_key = Some(key);
        self
    }

    /// This database waiting at most `budget` for a connection (never longer
    /// than the pool's own timeout): a request must be answered within the
    /// outage budget, so its wait for a connection cannot take all of it
    /// and more.
    pub fn with_outage_budget(mut self, budget: Duration) -> Db {
        self.acquire_within = self.acquire_within.min(budget);
        self
    }

    /// This database written to as the writer `name` (its own log).
    pub fn with_writer(mut self, name: &str) -> Db {
        self.writer = Arc::from(name);
        self
    }

    /// This database with the key that signs its log's checkpoints (named
    /// after the installation).
    pub async fn with_log_seed(mut self, seed: &crate::logkey::LogSeed) -> anyhow::Result<Db> {
        let installation: Option<String> =
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'installation_id'")
                .fetch_optional(&self.pool)
                .await?;
        self.log_key = Some(seed.named(&installation.unwrap_or_default()));
        Ok(self)
    }

    /// The installation's current log key (the last one listed), if any.
    pub async fn current_log_vkey(&self) -> anyhow::Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT vkey FROM log_keys ORDER BY id DESC LIMIT 1")
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// Lists this database's log key as the installation's first when it
    /// has none yet; refuses a key that is not the installation's current one.
    pub async fn register_log_key(&self, now_ms: i64) -> anyhow::Result<()> {
        let Some(key) = &self.log_key else {
            anyhow::bail!("no log key was given");
        };
        match self.current_log_vkey().await? {
            Some(current) if current == key.vkey() => Ok(()),
            Some(current) => anyhow::bail!(
                "the log key given (verifier key {}) is not the installation's current one ({current})",
                key.vkey()
            ),
            None => {
                // An installation whose logs were signed names its key: a
                // list emptied by hand would let any key be taken for the
                // installation's first.
                let signed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM checkpoints")
                    .fetch_one(&self.pool)
                    .await?;
                if signed > 0 {
                    anyhow::bail!(
                        "the database holds {signed} signed checkpoints but names no log key \
                         (log_keys is empty): it was edited; run tresor audit verify"
                    );
                }
                sqlx::query("INSERT INTO log_keys (vkey, since_ms) VALUES ($1, $2)")
                    .bind(key.vkey())
                    .bind(now_ms)
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }
        }
    }

    /// The key check this database keeps (see `crate::seal`), if any.
    pub async fn secrets_key_check(&self) -> anyhow::Result<Option<String>> {
        Ok(
            sqlx::query_scalar("SELECT value FROM settings WHERE key = 'secrets_key_check'")
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    /// The first host of the URL that is of the kind asked for, waiting a
    /// little for one (a server starting, a standby being promoted).
    async fn first_primary(hosts: &primary::Hosts) -> anyhow::Result<AnyConnectOptions> {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            match hosts.find().await {
                Ok((_, options)) => return Ok(options),
                Err(why) if std::time::Instant::now() > deadline => {
                    anyhow::bail!("cannot open the Postgres database: {why}")
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(200)).await,
            }
        }
    }

    /// Tells the follower of the primary that `error` was met, if it is the
    /// kind an outage or a failover gives; returns `error`.
    pub fn noticed(&self, error: Error) -> Error {
        if let Some(following) = &self.primary
            && error.is_outage()
        {
            following.watch.lost();
        }
        error
    }

    /// Waits for `future` (one of the pool's), telling the follower when it
    /// fails as an outage would or takes suspiciously long.
    async fn watched<T>(
        &self,
        future: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, Error> {
        // Past the budget the wait counts as the pool's own timeout: an outage.
        let result = tokio::time::timeout(self.acquire_within, self.followed(future))
            .await
            .unwrap_or(Err(sqlx::Error::PoolTimedOut));
        result.map_err(|error| self.noticed(error.into()))
    }

    /// Waits for `future`, waking the follower of the primary when it takes
    /// longer than [`SLOW_ACQUIRE`].
    async fn followed<T>(
        &self,
        future: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, sqlx::Error> {
        let mut future = std::pin::pin!(future);
        match tokio::time::timeout(SLOW_ACQUIRE, &mut future).await {
            Ok(result) => result,
            Err(_) => {
                if let Some(following) = &self.primary {
                    following.watch.lost();
                }
                future.await
            }
        }
    }

    /// A transaction on the pool (the writer's on PostgreSQL), on the primary.
    pub async fn begin(&self) -> Result<sqlx::Transaction<'static, sqlx::Any>, Error> {
        self.watched(self.pool.begin()).await
    }

    /// The writer's own PostgreSQL connection (`store::pipe`), a
    /// transaction begun with its first message: `idle` again while it is
    /// open and was opened since the pool last switched host, else a new
    /// one to the host the pool is on (of the kind the URL asks for).
    /// `BEGIN` goes in front of the first message rather than alone, that
    /// message cut at the outage budget all the same (`Pipe::begin_later`),
    /// so the writer's outage probe costs no round trip of its own. An
    /// error of that message is the caller's to tell [`Db::noticed`].
    pub async fn begin_pipe(
        &self,
        idle: Option<Box<pipe::Pipe>>,
    ) -> Result<Box<pipe::Pipe>, Error> {
        let switched = |pipe: &pipe::Pipe| {
            self.primary
                .as_ref()
                .is_some_and(|following| following.watch.opened_before_switch(pipe.age()))
        };
        let mut pipe = match idle.filter(|pipe| !pipe.is_closed() && !switched(pipe)) {
            Some(pipe) => pipe,
            None => {
                let url = self.pool.connect_options().database_url.to_string();
                let check = self
                    .primary
                    .as_ref()
                    .and_then(|following| following.watch.attrs.check());
                Box::new(self.watched(pipe::Pipe::connect(&url, check)).await?)
            }
        };
        pipe.begin_later(self.acquire_within);
        Ok(pipe)
    }

    /// A connection of the pool, on the primary.
    pub async fn acquire(&self) -> Result<sqlx::pool::PoolConnection<sqlx::Any>, Error> {
        self.watched(self.pool.acquire()).await
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
            None => Conn::Pooled(self.acquire().await?),
        };
        Ok(ReadConn {
            conn: Some(conn),
            idle: self.readers.clone(),
        })
    }

    /// Opens the SQLite database under `data_dir`, creating the folder. The
    /// folder is made readable by its owner only (0700), and so are the
    /// database files (0600; SQLite gives its WAL and shared-memory files the
    /// database file's mode).
    pub async fn open_data_dir(data_dir: &Path) -> anyhow::Result<Db> {
        std::fs::create_dir_all(data_dir)
            .with_context(|| format!("cannot create the data folder {}", data_dir.display()))?;
        restrict(data_dir, 0o700)?;
        let file = data_dir.join("tresor.db");
        let mut options = std::fs::OpenOptions::new();
        options.append(true).create(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        options
            .open(&file)
            .with_context(|| format!("cannot create {}", file.display()))?;
        for name in ["tresor.db", "tresor.db-wal", "tresor.db-shm"] {
            let path = data_dir.join(name);
            if path.exists() {
                restrict(&path, 0o600)?;
            }
        }
        Db::connect(&sqlite_url(data_dir)).await
    }
}

impl Backend {
    /// The database a URL names.
    fn of_url(url: &str) -> anyhow::Result<Backend> {
        if url.starts_with("sqlite:") {
            Ok(Backend::Sqlite)
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Ok(Backend::Postgres)
        } else {
            anyhow::bail!("unsupported database URL: use sqlite://PATH or postgres://…");
        }
    }
}

/// The pool's settings: its size, how long a connection is waited for, and
/// what every new connection is checked or set with.
fn pool_options(
    backend: Backend,
    acquire_within: Duration,
    watch: Option<&Arc<primary::Watch>>,
) -> AnyPoolOptions {
    let options = AnyPoolOptions::new()
        .max_connections(if backend == Backend::Sqlite { 8 } else { 16 })
        .acquire_timeout(acquire_within);
    match watch {
        // WAL lets readers run beside the one writer; synchronous=FULL makes
        // every acknowledged commit survive a power cut.
        None => options.after_connect(|conn, _| {
            Box::pin(async move {
                conn.execute(
                    "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; \
                     PRAGMA foreign_keys = ON; PRAGMA busy_timeout = 10000;",
                )
                .await?;
                Ok(())
            })
        }),
        // A new connection must reach the kind of server asked for; one
        // opened before the pool last switched host may be on the old one.
        Some(watch) => {
            let (on_connect, on_acquire) = (watch.clone(), watch.clone());
            options
                .after_connect(move |conn, _| {
                    let watch = on_connect.clone();
                    Box::pin(async move { watch.check_new(conn).await })
                })
                .before_acquire(move |_, meta| {
                    let keep = !on_acquire.opened_before_switch(meta.age);
                    Box::pin(async move { Ok(keep) })
                })
        }
    }
}

/// Starts the task that keeps a PostgreSQL pool on the primary
/// ([`primary::follow`]), stopped when the last clone of the `Db` is dropped.
fn follow(pool: &AnyPool, hosts: primary::Hosts, watch: Arc<primary::Watch>) -> Following {
    let alive = Arc::new(());
    tokio::spawn(primary::follow(
        pool.clone(),
        hosts,
        watch.clone(),
        Arc::downgrade(&alive),
    ));
    Following {
        watch,
        _alive: alive,
    }
}

/// The SQLite file a URL names (none in memory, nor on PostgreSQL).
fn sqlite_path(backend: Backend, url: &str) -> anyhow::Result<Option<Arc<Path>>> {
    if backend == Backend::Postgres {
        return Ok(None);
    }
    let options =
        sqlx::sqlite::SqliteConnectOptions::from_str(url).context("invalid database URL")?;
    let path = options.get_filename();
    Ok((path != Path::new(":memory:")).then(|| Arc::from(path)))
}

/// Whether the database already has a schema (its migrations table).
async fn has_schema(pool: &AnyPool, backend: Backend) -> anyhow::Result<bool> {
    let sql = match backend {
        Backend::Sqlite => {
            "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = '_sqlx_migrations'"
        }
        Backend::Postgres => {
            "SELECT CAST(COUNT(*) AS BIGINT) FROM information_schema.tables \
             WHERE table_schema = current_schema() AND table_name = '_sqlx_migrations'"
        }
    };
    let count: i64 = sqlx::query_scalar(sql)
        .fetch_one(pool)
        .await
        .context("cannot read the database's schema")?;
    Ok(count > 0)
}

/// Whether anything was ever written into the database's (migrated)
/// schema: a log key listed (every opening to write lists one), the block
/// secrets' key check (every opening of the service writes it), a record
/// of the trail (every change since the trail, migration 0002), a player or
/// an emission (before it). Only the migrations' own rows (the installation
/// id, the system accounts…) may be there in a new database. An older
/// schema without one of these tables is an error, which a caller reading
/// before migrating takes for "written".
pub async fn written(conn: &mut sqlx::AnyConnection) -> anyhow::Result<bool> {
    let found: i64 = sqlx::query_scalar(
        "SELECT CAST(CASE WHEN EXISTS (SELECT 1 FROM log_keys) \
         OR EXISTS (SELECT 1 FROM settings WHERE key = 'secrets_key_check') \
         OR EXISTS (SELECT 1 FROM trail) OR EXISTS (SELECT 1 FROM players) \
         OR EXISTS (SELECT 1 FROM emissions) THEN 1 ELSE 0 END AS BIGINT)",
    )
    .fetch_one(conn)
    .await
    .context("cannot read whether the database was written")?;
    Ok(found != 0)
}

/// Sets `path`'s permission bits (Unix only).
fn restrict(path: &Path, mode: u32) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("cannot restrict the permissions of {}", path.display()))?;
    }
    #[cfg(not(unix))]
    let _ = (path, mode);
    Ok(())
}
