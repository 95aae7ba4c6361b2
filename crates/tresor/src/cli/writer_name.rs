//! `tresor serve`'s writer name when `--writer` is not given, and the
//! warning when another live server already appends under the name.
//!
//! Two servers of one name share one log and wait for each other's lock
//! (issue 35: two servers then sold 0.84× one). So the default is unique
//! to the server: its host name and the port of its players' listener
//! (`web1-8080`), two servers on one machine listening on two ports. A
//! database whose log was made under the old default (`server`) keeps it,
//! verified and published like any other log, frozen; the server appends
//! to its own from then on (`--writer server` keeps the old one).
//!
//! On PostgreSQL (the only database several servers share: SQLite's folder
//! is locked by one), a server holds a session advisory lock on its writer
//! name for its whole life; a second one that cannot take it warns at
//! start, and again while it runs.

use sha2::{Digest, Sha256};
use std::time::Duration;

/// The name given to a writer when the host says nothing usable.
const FALLBACK: &str = "server";

/// The machine's host name, as the kernel has it.
pub fn host_name() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
}

/// `host` and `port` as a writer name (1 to 64 letters, digits, `-`, `_`
/// or `.`; not starting with `.`).
pub fn name_of(host: Option<&str>, port: Option<u16>) -> String {
    let host: String = host
        .unwrap_or(FALLBACK)
        .to_ascii_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let host = host.trim_start_matches('.');
    let host = if host.is_empty() { FALLBACK } else { host };
    let suffix = port.map(|p| format!("-{p}")).unwrap_or_default();
    let room = 64 - suffix.len();
    let host: String = host.chars().take(room).collect();
    format!("{host}{suffix}")
}

/// The default writer name of a server listening on `listen`.
pub fn default_for(listen: &str) -> String {
    let port = listen
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse::<u16>().ok());
    name_of(host_name().as_deref(), port)
}

/// The advisory lock key of a writer name.
fn lock_key(writer: &str) -> i64 {
    let digest = Sha256::digest(format!("tresor writer {writer}").as_bytes());
    i64::from_be_bytes(digest[..8].try_into().expect("8 bytes"))
}

/// On PostgreSQL (`url`), holds the writer name's advisory lock for the
/// server's life; warns (log and stdout) at start when another live server
/// holds it, and retries every 30 s (a lost connection, the other gone).
pub async fn guard(url: &str, writer: &str) {
    let warning = |writer: &str| {
        let text = format!(
            "another live server already appends under the writer name {writer:?}: both share \
             one log and wait for each other; give each server its own --writer"
        );
        tracing::warn!("{text}");
        println!("warning: {text}");
    };
    let holding = take(url, writer).await;
    match &holding {
        Ok(None) => warning(writer),
        Err(error) => tracing::warn!(%error, "cannot check the writer name's other users"),
        Ok(Some(_)) => {}
    }
    let (url, writer) = (url.to_owned(), writer.to_owned());
    tokio::spawn(async move {
        let mut held = holding.ok().flatten();
        let mut warned = held.is_none();
        loop {
            tokio::time::sleep(Duration::from_secs(30)).await;
            if let Some(conn) = held.as_mut() {
                use sqlx::Connection;
                if conn.ping().await.is_ok() {
                    continue;
                }
                held = None;
            }
            match take(&url, &writer).await {
                Ok(Some(conn)) => {
                    held = Some(conn);
                    warned = false;
                }
                Ok(None) if !warned => {
                    warning(&writer);
                    warned = true;
                }
                _ => {}
            }
        }
    });
}

/// A connection holding the name's lock, or `None` when another has it.
async fn take(url: &str, writer: &str) -> anyhow::Result<Option<sqlx::AnyConnection>> {
    use sqlx::Connection;
    let mut conn = sqlx::AnyConnection::connect(url).await?;
    let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
        .bind(lock_key(writer))
        .fetch_one(&mut conn)
        .await?;
    Ok(taken.then_some(conn))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_host_and_port_as_a_writer_name() {
        assert_eq!(
            name_of(Some("Web1.example.org"), Some(8080)),
            "web1.example.org-8080"
        );
        assert_eq!(name_of(Some("été box"), Some(80)), "-t--box-80");
        assert_eq!(name_of(Some(".."), None), "server");
        assert_eq!(name_of(None, Some(1)), "server-1");
        let long = "h".repeat(100);
        let name = name_of(Some(&long), Some(65535));
        assert_eq!(name.len(), 64);
        assert!(name.ends_with("-65535"));
        assert_eq!(default_for("[::1]:9000").rsplit('-').next(), Some("9000"));
    }
}
