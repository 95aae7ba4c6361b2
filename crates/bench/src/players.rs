//! The simulated players: each with its own keep-alive connection and its
//! session, registered and funded before any measurement.

use crate::report::progress;
use anyhow::{Context, bail};
use serde::Deserialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// One simulated player: its connection and its session cookie.
#[derive(Debug, Clone)]
pub(crate) struct Player {
    pub(crate) client: reqwest::Client,
    pub(crate) cookie: String,
}

impl Player {
    /// A JSON `POST` of the logged-in player, as the page sends it: its
    /// session's cookie and the CSRF header.
    pub(crate) fn post(&self, url: impl reqwest::IntoUrl) -> reqwest::RequestBuilder {
        self.client
            .post(url)
            .header("content-type", "application/json")
            .header("x-requested-with", "tresor")
            .header("cookie", &self.cookie)
    }
}

/// A client of one connection, as a player's browser keeps one.
pub(crate) fn client() -> anyhow::Result<reqwest::Client> {
    // One connection per player, kept alive: a pool of at most one idle
    // connection, and no proxy lookups.
    reqwest::Client::builder()
        .pool_max_idle_per_host(1)
        .tcp_nodelay(true)
        .no_proxy()
        .timeout(Duration::from_secs(60))
        .build()
        .context("cannot build the HTTP client")
}

/// The answer to a purchase, of which the bench reads the play's id.
#[derive(Deserialize)]
pub(crate) struct PlayId {
    pub(crate) id: i64,
}

/// A new player of `base` named `name`, with a session and money.
pub(crate) async fn register(base: &str, name: &str) -> anyhow::Result<Player> {
    register_with_stake_cap(base, name, 1_000_000).await
}

/// [`register`] with a 7-day stake cap of `stake_limit_cents`.
pub(crate) async fn register_with_stake_cap(
    base: &str,
    name: &str,
    stake_limit_cents: i64,
) -> anyhow::Result<Player> {
    let client = client()?;
    let body = format!(
        "{{\"username\":\"{name}\",\"password\":\"a long bench password\",\"adult\":true,\"accept_rules\":true,\
         \"deposit_limit_cents\":1000000,\"stake_limit_cents\":{stake_limit_cents}}}"
    );
    let response = client
        .post(format!("{base}/api/register"))
        .header("content-type", "application/json")
        .header("x-requested-with", "tresor")
        .body(body)
        .send()
        .await
        .context("cannot register a player")?;
    if response.status().as_u16() != 201 {
        bail!(
            "registering {name}: {} {}",
            response.status(),
            response.text().await.unwrap_or_default()
        );
    }
    let cookie = response
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tresor_session="))
        .and_then(|v| v.split(';').next())
        .context("no session cookie after registration")?
        .to_owned();
    let player = Player { client, cookie };
    deposit(base, &player).await?;
    Ok(player)
}

/// A demo deposit of 1,000 € (the server must run in demo mode).
pub(crate) async fn deposit(base: &str, player: &Player) -> anyhow::Result<()> {
    let response = player
        .post(format!("{base}/api/demo/deposit"))
        .body(r#"{"amount_cents":100000}"#)
        .send()
        .await?;
    if !response.status().is_success() {
        bail!(
            "demo deposit refused ({}): the server must run in demo mode",
            response.status()
        );
    }
    Ok(())
}

/// Registers `count` players, a few at a time: registration hashes a
/// password with argon2id (19 MiB each), which must not swamp the server.
pub(crate) async fn register_players(
    base: &str,
    count: usize,
    run: &str,
) -> anyhow::Result<Vec<Player>> {
    let bar = progress(count as u64, "registering players");
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..8.min(count) {
        let base = base.to_owned();
        let next = next.clone();
        let bar = bar.clone();
        let run = run.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut players = Vec::new();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed) as usize;
                if n >= count {
                    return anyhow::Ok(players);
                }
                players.push(register(&base, &format!("b{run}{n}")).await?);
                bar.inc(1);
            }
        }));
    }
    let mut players = Vec::with_capacity(count);
    for task in tasks {
        players.extend(task.await??);
    }
    bar.finish_and_clear();
    Ok(players)
}

/// A short random name for one go's players and databases, so that two
/// goes against one server never collide.
pub(crate) fn run_id() -> String {
    hex::encode(&tresor::service::os_random_32()[..4])
}
