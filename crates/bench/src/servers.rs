//! The servers the bench spawns (`--spawn`): where each keeps its data (a
//! fresh SQLite folder or PostgreSQL database), starting and stopping
//! `tresor serve`, and the flags that lift its throttles.

use crate::args::BenchArgs;
use crate::players::client;
use anyhow::{Context, bail};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A `tresor serve` started by the bench, stopped when dropped.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) base: String,
    pub(crate) store: Store,
}

/// Where a spawned server keeps its data.
pub(crate) enum Store {
    Sqlite {
        _dir: Option<tempfile_dir::Dir>,
        path: PathBuf,
    },
    Postgres {
        admin_url: String,
        name: String,
        url: String,
    },
}

/// A temporary folder removed on drop, without a dependency for it.
mod tempfile_dir {
    use std::path::PathBuf;

    #[derive(Debug)]
    pub struct Dir(pub PathBuf);

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Store {
    /// A fresh database (or the `--data` folder) for a run; on PostgreSQL
    /// its servers reach it `via` the delay proxy when there is one.
    pub(crate) async fn fresh(
        args: &BenchArgs,
        run: &str,
        via: Option<SocketAddr>,
    ) -> anyhow::Result<Store> {
        if let Some(admin_url) = &args.database_url {
            use sqlx::Connection;
            let name = format!("tresor_bench_{run}_{}", std::process::id());
            let mut admin = sqlx::PgConnection::connect(admin_url)
                .await
                .with_context(|| format!("cannot reach PostgreSQL at {admin_url}"))?;
            sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                .execute(&mut admin)
                .await?;
            sqlx::query(&format!("CREATE DATABASE {name}"))
                .execute(&mut admin)
                .await?;
            let (server, _) = admin_url
                .rsplit_once('/')
                .context("a PostgreSQL URL ends with a database name")?;
            let url = format!("{server}/{name}");
            Ok(Store::Postgres {
                admin_url: admin_url.clone(),
                url: match via {
                    Some(proxy) => through(&url, proxy)?,
                    None => url,
                },
                name,
            })
        } else if let Some(path) = &args.data {
            Ok(Store::Sqlite {
                _dir: None,
                path: path.clone(),
            })
        } else {
            let path = std::env::temp_dir().join(format!(
                "tresor-bench-{run}-{}-{}",
                std::process::id(),
                hex::encode(tresor::service::os_random_32())[..8].to_owned()
            ));
            std::fs::create_dir_all(&path)?;
            Ok(Store::Sqlite {
                _dir: Some(tempfile_dir::Dir(path.clone())),
                path,
            })
        }
    }

    /// The same PostgreSQL database for another server (none on SQLite:
    /// one server per folder).
    pub(crate) fn shared(&self) -> Option<Store> {
        match self {
            Store::Postgres {
                admin_url,
                name,
                url,
            } => Some(Store::Postgres {
                admin_url: admin_url.clone(),
                name: name.clone(),
                url: url.clone(),
            }),
            Store::Sqlite { .. } => None,
        }
    }

    /// The sum of every account's balance, which double entry keeps at
    /// zero: read once a run is over, as a guard on what it measured.
    pub(crate) async fn ledger_sum(&self) -> anyhow::Result<i64> {
        use sqlx::Connection;
        const SUM: &str = "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts";
        Ok(match self {
            Store::Sqlite { path, .. } => {
                let mut conn =
                    sqlx::SqliteConnection::connect(&tresor::store::sqlite_url(path)).await?;
                sqlx::query_scalar(SUM).fetch_one(&mut conn).await?
            }
            Store::Postgres {
                admin_url, name, ..
            } => {
                let (server, _) = admin_url
                    .rsplit_once('/')
                    .context("a PostgreSQL URL ends with a database name")?;
                let mut conn = sqlx::PgConnection::connect(&format!("{server}/{name}")).await?;
                sqlx::query_scalar(SUM).fetch_one(&mut conn).await?
            }
        })
    }

    /// The measurement's guard: the run's ledger sums to zero (one query,
    /// once its servers stopped), else the run is reported as failed.
    pub(crate) async fn check_ledger(&self) -> anyhow::Result<()> {
        let sum = self
            .ledger_sum()
            .await
            .context("cannot read the ledger after the run")?;
        if sum != 0 {
            bail!(
                "the ledger sums to {sum} cents after the run, not zero: the measurement is void"
            );
        }
        println!("    ledger after the run: the balances sum to zero");
        Ok(())
    }

    /// Whether the bench made this database (its key is the bench's own);
    /// a `--data` folder given to it keeps the operator's key.
    pub(crate) fn is_fresh(&self) -> bool {
        !matches!(self, Store::Sqlite { _dir: None, .. })
    }

    pub(crate) fn db_args(&self) -> Vec<String> {
        match self {
            Store::Sqlite { path, .. } => vec!["--data".to_owned(), path.display().to_string()],
            Store::Postgres { url, .. } => vec!["--database-url".to_owned(), url.clone()],
        }
    }

    /// The database's size on disk, in bytes.
    pub(crate) async fn size_bytes(&self) -> Option<u64> {
        match self {
            Store::Sqlite { path, .. } => {
                let mut total = 0;
                for name in ["tresor.db", "tresor.db-wal"] {
                    total += std::fs::metadata(path.join(name)).map_or(0, |m| m.len());
                }
                Some(total)
            }
            Store::Postgres {
                admin_url, name, ..
            } => {
                use sqlx::Connection;
                let mut admin = sqlx::PgConnection::connect(admin_url).await.ok()?;
                let size: i64 = sqlx::query_scalar("SELECT pg_database_size($1)")
                    .bind(name)
                    .fetch_one(&mut admin)
                    .await
                    .ok()?;
                Some(size as u64)
            }
        }
    }

    pub(crate) async fn drop_database(&self) {
        if let Store::Postgres {
            admin_url, name, ..
        } = self
        {
            use sqlx::Connection;
            if let Ok(mut admin) = sqlx::PgConnection::connect(admin_url).await {
                let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&mut admin)
                    .await;
            }
            let _ = std::fs::remove_dir_all(kept_dir(name));
        }
    }
}

/// Where the servers of the bench's PostgreSQL database `name` keep their
/// checkpoints: a private folder of its own, not the temporary folder
/// itself, which anyone may write.
fn kept_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("tresor-bench-kept-{name}"))
}

/// The `tresor` binary the bench spawns: `--tresor PATH`, else the one
/// beside this binary (cargo builds both into the same target folder).
pub(crate) fn tresor_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_owned(),
        None => std::env::current_exe()
            .context("cannot find the tresor-bench binary")?
            .with_file_name("tresor"),
    };
    if !path.is_file() {
        bail!(
            "no tresor binary at {}: build it (cargo build --release -p tresor) or give --tresor PATH",
            path.display()
        );
    }
    Ok(path)
}

/// Flags that lift the per-player and per-address throttles, for those the
/// binary `exe` has: every simulated player comes from 127.0.0.1 and buys as fast
/// as it can, which is the point of a load test and nothing a player does.
pub(crate) fn unthrottled(exe: &Path) -> Vec<String> {
    let help = Command::new(exe)
        .args(["serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    tresor::cli::serve::LOAD_TEST_LIFTS
        .into_iter()
        .filter(|flag| help.contains(flag))
        .flat_map(|flag| [flag.to_owned(), "100000000".to_owned()])
        .collect()
}

/// The key of the block secrets of the bench's own databases: one per run,
/// given to its servers and commands, so that no key file is left behind.
pub(crate) fn bench_secrets_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| tresor::seal::SecretsKey::generate().to_hex())
}

/// The log's signing key of the bench's own databases, one per run like
/// [`bench_secrets_key`]: every server of a run signs with it.
pub(crate) fn bench_log_key() -> &'static str {
    static KEY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    KEY.get_or_init(|| tresor::logkey::LogSeed::generate().to_hex())
}

/// The address of the PostgreSQL server of `url` (port 5432 by default).
pub(crate) fn postgres_address(url: &str) -> anyhow::Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    let parsed = reqwest::Url::parse(url).with_context(|| format!("not a URL: {url}"))?;
    let host = parsed
        .host_str()
        .with_context(|| format!("{url} names no host to put the delay proxy in front of"))?;
    (host, parsed.port().unwrap_or(5432))
        .to_socket_addrs()?
        .next()
        .with_context(|| format!("{host} has no address"))
}

/// `url` with its host and port replaced by the proxy's.
pub(crate) fn through(url: &str, proxy: SocketAddr) -> anyhow::Result<String> {
    let mut parsed = reqwest::Url::parse(url).with_context(|| format!("not a URL: {url}"))?;
    parsed
        .set_ip_host(proxy.ip())
        .map_err(|()| anyhow::anyhow!("{url}: cannot name the proxy's host"))?;
    parsed
        .set_port(Some(proxy.port()))
        .map_err(|()| anyhow::anyhow!("{url}: cannot name the proxy's port"))?;
    Ok(parsed.to_string())
}

pub(crate) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Server {
    /// Starts `exe serve` on `store` with `flags` besides the bench's own
    /// (its writer's name, its block offset), and adds `extra_blocks`.
    pub(crate) async fn start(
        exe: &Path,
        store: Store,
        max_batch: usize,
        extra_blocks: u32,
        flags: &[String],
    ) -> anyhow::Result<Server> {
        let port = free_port()?;
        let mut command = Command::new(exe);
        command
            .args(["serve", "--demo", "--listen", &format!("127.0.0.1:{port}")])
            .args(["--admin-listen", "127.0.0.1:0"])
            .args(store.db_args())
            .args(flags)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        if store.is_fresh() {
            // The bench's own database: its keys, and the checkpoints its
            // servers keep (--kept-checkpoints, a private folder) thrown
            // away with it, not left in the working folder.
            let kept = match &store {
                Store::Sqlite { path, .. } => path.clone(),
                Store::Postgres { name, .. } => kept_dir(name),
            };
            tresor::private::folder(&kept, tresor::private::Loose::Refuse)
                .with_context(|| format!("the bench's kept checkpoints {}", kept.display()))?;
            command
                .env("TRESOR_SECRETS_KEY", bench_secrets_key())
                .env("TRESOR_LOG_KEY", bench_log_key())
                .env("TRESOR_KEPT_CHECKPOINTS", kept);
        }
        if max_batch > 0 {
            command.env("TRESOR_MAX_BATCH", max_batch.to_string());
        }
        command.args(unthrottled(exe));
        let child = command
            .spawn()
            .with_context(|| format!("cannot start {} serve", exe.display()))?;
        let server = Server {
            child,
            base: format!("http://127.0.0.1:{port}"),
            store,
        };
        server.wait_healthy().await?;
        if extra_blocks > 0 {
            server.add_blocks(exe, extra_blocks)?;
        }
        Ok(server)
    }

    /// More units for long runs: an operator's emission of `blocks` beside
    /// the demo one, created by the operator's own command.
    fn add_blocks(&self, exe: &Path, blocks: u32) -> anyhow::Result<()> {
        let mut create = Command::new(exe);
        create
            .args(["emission", "create", "--name", "Bench"])
            .args(["--blocks", &blocks.to_string()])
            .args(self.store.db_args())
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null());
        if self.store.is_fresh() {
            create
                .env("TRESOR_SECRETS_KEY", bench_secrets_key())
                .env("TRESOR_LOG_KEY", bench_log_key());
        }
        let status = create
            .status()
            .context("cannot run tresor emission create")?;
        if !status.success() {
            bail!("tresor emission create failed");
        }
        Ok(())
    }

    pub(crate) async fn wait_healthy(&self) -> anyhow::Result<()> {
        let client = client()?;
        for _ in 0..600 {
            if let Ok(response) = client.get(format!("{}/healthz", self.base)).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("the spawned server did not answer /healthz within 30 s")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    pub(crate) async fn stop(mut self) -> Store {
        // SIGTERM lets the server finish its batch and shut down cleanly.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        for _ in 0..100 {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::mem::replace(
            &mut self.store,
            Store::Sqlite {
                _dir: None,
                path: PathBuf::new(),
            },
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_reaches_postgres_through_the_proxy_with_its_user_and_database() {
        let proxy: SocketAddr = "127.0.0.1:40123".parse().expect("an address");
        assert_eq!(
            through("postgres://postgres@127.0.0.1:5432/tresor_bench_x_1", proxy).expect("a URL"),
            "postgres://postgres@127.0.0.1:40123/tresor_bench_x_1"
        );
        assert_eq!(
            through("postgres://u:p@localhost/db?sslmode=disable", proxy).expect("a URL"),
            "postgres://u:p@127.0.0.1:40123/db?sslmode=disable"
        );
        assert_eq!(
            postgres_address("postgres://postgres@127.0.0.1/postgres").expect("an address"),
            "127.0.0.1:5432".parse::<SocketAddr>().expect("an address")
        );
        assert!(postgres_address("postgres:///postgres?host=/run/postgresql").is_err());
    }
}
