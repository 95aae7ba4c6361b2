//! Following the PostgreSQL primary: multi-host URLs read as libpq reads
//! them (`postgres://h1:5432,h2:5433/db?target_session_attrs=read-write`),
//! the hosts tried in order, and a task that points the pool at the first
//! acceptable host again whenever the database seems lost.
//!
//! sqlx connects to one host, so the pool is given one host's options and
//! re-pointed (`Pool::set_connect_options`) by [`follow`]; connections opened
//! before a switch are dropped when next acquired, and a new connection to a
//! server of the wrong kind (a standby, a demoted primary) is refused at
//! once, which makes the pool try again on the options it has by then.

use sqlx::AnyConnection;
use sqlx::any::AnyConnectOptions;
use sqlx::{AnyPool, Connection};
use std::str::FromStr;
use std::sync::Weak;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// Which server a connection may be kept on, as libpq's
/// `target_session_attrs` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSessionAttrs {
    /// Any server that accepts the connection (libpq's default).
    Any,
    /// A server not in recovery (`pg_is_in_recovery()` false).
    Primary,
    /// A server that accepts writes: a primary whose
    /// `transaction_read_only` is off.
    ReadWrite,
}

impl FromStr for TargetSessionAttrs {
    type Err = String;
    fn from_str(value: &str) -> Result<Self, String> {
        match value {
            "any" => Ok(TargetSessionAttrs::Any),
            "primary" => Ok(TargetSessionAttrs::Primary),
            "read-write" => Ok(TargetSessionAttrs::ReadWrite),
            other => Err(format!(
                "target_session_attrs={other} is not supported: use any, primary or read-write"
            )),
        }
    }
}

impl TargetSessionAttrs {
    /// Whether the server of `conn` is one to keep.
    async fn accepts(self, conn: &mut AnyConnection) -> Result<bool, sqlx::Error> {
        let Some(check) = self.check() else {
            return Ok(true);
        };
        sqlx::query_scalar::<_, bool>(check).fetch_one(conn).await
    }

    /// The query (one boolean) that tells whether a server is of this kind;
    /// none when any is.
    pub fn check(self) -> Option<&'static str> {
        match self {
            TargetSessionAttrs::Any => None,
            TargetSessionAttrs::Primary => Some("SELECT NOT pg_is_in_recovery()"),
            TargetSessionAttrs::ReadWrite => Some(
                "SELECT NOT pg_is_in_recovery() AND current_setting('transaction_read_only') = 'off'",
            ),
        }
    }
}

/// A PostgreSQL URL split into one URL per host, in the order given.
#[derive(Debug, Clone)]
pub struct Hosts {
    /// `(host:port as written, the URL for that host alone)`.
    hosts: Vec<(String, String)>,
    pub attrs: TargetSessionAttrs,
}

impl Hosts {
    /// Parses `scheme://[user[:password]@]host[:port][,host[:port]…][/db][?params]`.
    pub fn parse(url: &str) -> Result<Hosts, String> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| "a PostgreSQL URL starts with postgres://".to_owned())?;
        let end = rest.find(['/', '?']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        let (userinfo, list) = match authority.rsplit_once('@') {
            Some((userinfo, list)) => (format!("{userinfo}@"), list),
            None => (String::new(), authority),
        };
        let (path, query) = tail.split_once('?').unwrap_or((tail, ""));
        let mut attrs = TargetSessionAttrs::Any;
        let mut params = Vec::new();
        for param in query.split('&').filter(|p| !p.is_empty()) {
            match param.split_once('=') {
                Some(("target_session_attrs", value)) => attrs = value.parse()?,
                _ => params.push(param),
            }
        }
        let query = if params.is_empty() {
            String::new()
        } else {
            format!("?{}", params.join("&"))
        };
        let hosts = list
            .split(',')
            .map(|host| {
                if host.is_empty() {
                    return Err(format!(
                        "an empty host in the database URL's host list {list:?}"
                    ));
                }
                Ok((
                    host.to_owned(),
                    format!("{scheme}://{userinfo}{host}{path}{query}"),
                ))
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Hosts { hosts, attrs })
    }

    /// The hosts as written, for messages.
    pub fn names(&self) -> Vec<&str> {
        self.hosts.iter().map(|(name, _)| name.as_str()).collect()
    }

    /// The options of the first host, in order, that accepts a connection
    /// and is of the kind asked for; why each one was passed over otherwise.
    pub async fn find(&self) -> Result<(&str, AnyConnectOptions), String> {
        let mut why = Vec::new();
        for (name, url) in &self.hosts {
            let options = AnyConnectOptions::from_str(url).map_err(|e| e.to_string())?;
            let connected = tokio::time::timeout(
                Duration::from_secs(2),
                AnyConnection::connect_with(&options),
            )
            .await;
            match connected {
                Ok(Ok(mut conn)) => {
                    let accepted = self.attrs.accepts(&mut conn).await;
                    let _ = conn.close().await;
                    match accepted {
                        Ok(true) => return Ok((name, options)),
                        Ok(false) => why.push(format!("{name}: not a {:?} server", self.attrs)),
                        Err(error) => why.push(format!("{name}: {error}")),
                    }
                }
                Ok(Err(error)) => why.push(format!("{name}: {error}")),
                Err(_) => why.push(format!("{name}: no answer within 2 s")),
            }
        }
        Err(why.join("; "))
    }
}

/// What the pool's hooks and the follower share.
#[derive(Debug)]
pub struct Watch {
    pub attrs: TargetSessionAttrs,
    /// Woken when the database seems lost.
    wake: Notify,
    origin: Instant,
    /// When the pool was last pointed at a host, in µs since `origin`.
    switched_us: AtomicU64,
}

impl Watch {
    pub fn new(attrs: TargetSessionAttrs) -> Watch {
        Watch {
            attrs,
            wake: Notify::new(),
            origin: Instant::now(),
            switched_us: AtomicU64::new(0),
        }
    }

    /// Asks the follower to find the primary again.
    pub fn lost(&self) {
        self.wake.notify_one();
    }

    /// Whether a connection `age` old was opened before the pool's last
    /// switch (it may be on the old server: drop it).
    pub fn opened_before_switch(&self, age: Duration) -> bool {
        let opened = self.origin.elapsed().saturating_sub(age);
        opened.as_micros() < u128::from(self.switched_us.load(Ordering::Acquire))
    }

    fn switched(&self) {
        let now = self.origin.elapsed().as_micros() as u64;
        self.switched_us.store(now, Ordering::Release);
    }

    /// The pool's check of a new connection: refuse a server of the wrong
    /// kind (and go look for the right one).
    pub async fn check_new(&self, conn: &mut AnyConnection) -> Result<(), sqlx::Error> {
        if self.attrs.accepts(conn).await? {
            return Ok(());
        }
        self.lost();
        Err(sqlx::Error::Protocol(format!(
            "the server is not a {:?} server (a standby or a demoted primary)",
            self.attrs
        )))
    }
}

/// Re-points `pool` at the first acceptable host each time the database
/// seems lost, until `alive` is gone (every `Db` holding the pool dropped).
pub async fn follow(pool: AnyPool, hosts: Hosts, watch: std::sync::Arc<Watch>, alive: Weak<()>) {
    loop {
        tokio::select! {
            () = watch.wake.notified() => {}
            () = tokio::time::sleep(Duration::from_secs(5)) => {
                if alive.strong_count() == 0 {
                    return;
                }
                continue;
            }
        }
        let started = Instant::now();
        for attempt in 0u64.. {
            if alive.strong_count() == 0 || pool.is_closed() {
                return;
            }
            match hosts.find().await {
                Ok((name, options)) => {
                    pool.set_connect_options(options);
                    watch.switched();
                    tracing::warn!(
                        host = name,
                        after_ms = started.elapsed().as_millis() as u64,
                        "the database was lost: the pool now connects to this host"
                    );
                    break;
                }
                Err(why) => {
                    // Once, then every two seconds or so: an outage is loud enough.
                    if attempt % 20 == 0 {
                        tracing::warn!(%why, "no acceptable PostgreSQL server yet");
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multi_host_url_becomes_one_url_per_host_in_order_without_the_target_attribute() {
        let hosts = Hosts::parse(
            "postgres://ana:pw@h1:5432,h2:5433/db?sslmode=disable&target_session_attrs=read-write",
        )
        .unwrap();
        assert_eq!(hosts.attrs, TargetSessionAttrs::ReadWrite);
        assert_eq!(hosts.names(), ["h1:5432", "h2:5433"]);
        assert_eq!(
            hosts.hosts[1].1,
            "postgres://ana:pw@h2:5433/db?sslmode=disable"
        );
    }

    #[test]
    fn a_single_host_url_is_kept_and_any_server_is_accepted_by_default() {
        let hosts = Hosts::parse("postgresql://postgres@127.0.0.1:5432/postgres").unwrap();
        assert_eq!(hosts.attrs, TargetSessionAttrs::Any);
        assert_eq!(
            hosts.hosts,
            [(
                "127.0.0.1:5432".to_owned(),
                "postgresql://postgres@127.0.0.1:5432/postgres".to_owned()
            )]
        );
    }

    #[test]
    fn an_unknown_target_attribute_or_an_empty_host_is_refused() {
        assert!(Hosts::parse("postgres://h1/db?target_session_attrs=standby").is_err());
        assert!(Hosts::parse("postgres://h1,,h2/db").is_err());
        assert_eq!(
            Hosts::parse("postgres://h/db?target_session_attrs=primary")
                .unwrap()
                .attrs,
            TargetSessionAttrs::Primary
        );
    }
}
