//! The one test harness every test binary shares (the API tests include this
//! file by path).
//!
//! A test that touches a database runs on SQLite and on PostgreSQL through
//! one macro, [`on_both!`]: it wraps an ordinary `async fn` body, and makes
//! `name::on_sqlite` and `name::on_postgres`, each on a fresh database of its
//! own. The body names what it needs by the type of its one parameter (a
//! [`Fixture`]):
//!
//! ```ignore
//! on_both!(the_trail_verifies, |db: &TestDb| { … });    // the bare database
//! on_both!(a_kill_loses_nothing, |h: &Harness| { … });  // all of it:
//! // h.service(), h.app_with(settings), h.server(&flags), h.tresor(&args),
//! // h.proxy() (PostgreSQL), and every TestDb method through Deref.
//! on_both!(a_player_registers, |app| { … });           // a TestApp, in short
//! on_both!(a_login_waits, settings, |app| { … });      // …with `settings`
//! on_both!(already_written_fn, another_fn);             // `async fn f(x: Fixture)`s
//! ```
//!
//! A test for one database only (the PostgreSQL proxy, two servers on one
//! PostgreSQL, a COMMIT that fails inside SQLite) says so with [`on_postgres!`] or
//! [`on_sqlite!`], the same macro for one database; attributes such as
//! `#[ignore = "…"]` go before the name. Tests that need no database run the
//! binary with [`tresor`] (the only place, with [`tresor_command`], that
//! starts it, `tresor serve` included: [`Server`]).
//!
//! The parts: [`TestDb`] (a database per test), [`Api`] (the router
//! in-process), [`TestApp`] (a real HTTP server in-process), [`Server`] (the
//! real `tresor serve` process), [`client`] (HTTP clients for it),
//! [`proxy`] (a TCP proxy that cuts a COMMIT), and [`ledger`] (players,
//! purchases and the ledger's invariants).
#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different part of the helpers"
)]

pub mod api;
pub mod app;
pub mod axe;
pub mod before;
pub mod browser;
pub mod buying;
pub mod chromedriver;
pub mod cli;
pub mod client;
pub mod cluster;
pub mod cookie;
pub mod db;
pub mod games;
pub mod ledger;
pub mod metrics;
pub mod mirror;
pub mod opening;
pub mod page;
pub mod players;
pub mod process;
pub mod procs;
pub mod proxy;
pub mod rfc9162;
pub mod sellout;
pub mod staff;
pub mod template;
pub mod trail;
pub mod trash;
pub mod wait;
pub mod wire;

pub use api::{Answer, Api};
pub use app::{TestApp, demo_on_sale, expect};
pub use cli::assert_exit;
pub use client::{
    buy_and_play, buy_at, cookie_client, fetch_json, get_json, get_response, header, maybe_header,
    players_at, post, register_and_deposit, throw_at, upload_document,
};
pub use db::TestDb;
pub use ledger::{assert_ledger_balances, block_secrets, execute, player, purchase, scalar, texts};
pub use players::{NewPlayer, Player};
pub use process::{
    Server, describe, free_port, kept_checkpoints_dir, tresor, tresor_command, unthrottled_flags,
};

use proxy::Proxy;
use std::sync::Arc;
use tresor::service::Settings;
use tresor::store::Backend;

/// 2026-01-01T00:00:00Z: the tests' clock starts here.
pub const START_MS: i64 = 1_767_225_600_000;

/// The time now, in milliseconds since the epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The items of a JSON array that must hold some: a loop over them then
/// checks something (an empty or missing array panics, naming `what`).
pub fn items<'a>(value: &'a serde_json::Value, what: &str) -> &'a [serde_json::Value] {
    let items = value
        .as_array()
        .unwrap_or_else(|| panic!("{what}: not an array: {value}"));
    assert!(!items.is_empty(), "{what}: none");
    items
}

/// Gives `path` to another user (nobody, or root when this process is
/// nobody), as a test of another user's folder needs: only root may. Not
/// root, the check is skipped with a word, unless `TRESOR_REQUIRE_ROOT=1`
/// (as in CI, which runs as root), where that is a failure.
pub fn given_to_another_user(path: &std::path::Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let mine = std::fs::metadata(path).unwrap().uid();
    let other = if mine == 65534 { 0 } else { 65534 };
    match std::os::unix::fs::chown(path, Some(other), Some(other)) {
        Ok(()) => true,
        Err(error) => {
            assert_ne!(
                std::env::var("TRESOR_REQUIRE_ROOT").as_deref(),
                Ok("1"),
                "TRESOR_REQUIRE_ROOT=1 but {} cannot be given to another user ({error}): \
                 run the tests as root",
                path.display()
            );
            eprintln!("(not root: the folder of another user is checked by the unit test only)");
            false
        }
    }
}

/// One test's world: its database, and what starts on it.
#[derive(Debug)]
pub struct Harness {
    /// Shared with the [`TestApp`]s started on it.
    db: Arc<TestDb>,
}

impl Harness {
    /// A fresh database on `backend`; `None` as [`TestDb::postgres`] says.
    pub async fn new(backend: Backend) -> Option<Harness> {
        let db = Arc::new(TestDb::new(backend).await?);
        Some(Harness { db })
    }

    /// A real HTTP server in-process on this database, with
    /// [`TestApp::settings`].
    pub async fn app(&self) -> TestApp {
        self.app_with(TestApp::settings()).await
    }

    /// A real HTTP server in-process on this database, with `settings`.
    pub async fn app_with(&self, settings: Settings) -> TestApp {
        TestApp::on(self.db.clone(), settings).await
    }

    /// `tresor serve --demo` on this database on a port the kernel gives
    /// it, with `flags`.
    pub async fn server(&self, flags: &[String]) -> Server {
        Server::start(&self.db, flags).await
    }

    /// `tresor serve --demo` on this database on `port` (to restart one
    /// where it was), with `flags`.
    pub async fn server_at(&self, port: u16, flags: &[String]) -> Server {
        Server::start_at(&self.db, port, flags).await
    }

    /// A PostgreSQL primary of this test's own, on a free port (to kill or
    /// restart without touching the shared server); `None` as
    /// [`cluster::Cluster::primary`] says.
    pub fn cluster_primary(&self) -> Option<cluster::Cluster> {
        cluster::Cluster::primary()
    }

    /// A PostgreSQL primary of this test's own and its synchronous standby,
    /// streaming (to kill the primary and promote the standby).
    pub fn cluster_with_standby(&self) -> Option<cluster::Cluster> {
        cluster::Cluster::with_standby()
    }

    /// A [`Proxy`] in front of this test's PostgreSQL server, and the URL of
    /// this test's database through it.
    pub async fn proxy(&self) -> (Proxy, String) {
        assert_eq!(self.backend, Backend::Postgres, "the proxy is PostgreSQL's");
        let (server, _) = self.url.rsplit_once('/').expect("a database URL");
        let (_, upstream) = server.rsplit_once('@').expect("a host");
        let proxy = Proxy::start(upstream.to_owned()).await;
        let url = self
            .url
            .replacen(upstream, &format!("127.0.0.1:{}", proxy.port), 1);
        (proxy, url)
    }
}

impl std::ops::Deref for Harness {
    type Target = TestDb;

    fn deref(&self) -> &TestDb {
        &self.db
    }
}

/// What a test body asks for by the type of its parameter, made from the
/// test's [`Harness`].
pub trait Fixture<'h>: Sized {
    fn make(harness: &'h Harness) -> impl Future<Output = Self>;
}

impl<'h> Fixture<'h> for &'h Harness {
    async fn make(harness: &'h Harness) -> Self {
        harness
    }
}

impl<'h> Fixture<'h> for &'h TestDb {
    async fn make(harness: &'h Harness) -> Self {
        harness
    }
}

impl<'h> Fixture<'h> for TestApp {
    async fn make(harness: &'h Harness) -> Self {
        harness.app().await
    }
}

/// Runs `body` on the fixture it asks for (the macros' one call). A test
/// skipped on its way ([`browser::skip`]: a tool it needs is missing and not
/// required) ends here as passed; any other panic goes on, a failure.
pub async fn run_with<'h, F: Fixture<'h>, R: Future<Output = ()>>(
    harness: &'h Harness,
    body: impl FnOnce(F) -> R,
) {
    let run = std::panic::AssertUnwindSafe(async { body(F::make(harness).await).await });
    if let Err(payload) = futures_util::FutureExt::catch_unwind(run).await
        && !payload.is::<browser::Skipped>()
    {
        std::panic::resume_unwind(payload);
    }
}

/// Runs a test on SQLite and on PostgreSQL, as `name::on_sqlite` and
/// `name::on_postgres`, each on a fresh database:
///
/// - `on_both!(name, |x: F| { body })`: the body gets the [`Fixture`] `F`;
/// - `on_both!(name, |app| { body })`: the same with `app: TestApp`;
/// - `on_both!(name, settings, |app| { body })`: a [`TestApp`] with `settings`;
/// - `on_both!(f, g)`: `async fn`s that take one [`Fixture`] each.
///
/// Attributes such as `#[ignore = "…"]` go before the name.
#[macro_export]
macro_rules! on_both {
    ($($test:tt)*) => {
        $crate::harness_test!([on_sqlite: Sqlite, on_postgres: Postgres] $($test)*);
    };
}

/// [`on_both!`] on SQLite alone, as `name::on_sqlite`.
#[macro_export]
macro_rules! on_sqlite {
    ($($test:tt)*) => {
        $crate::harness_test!([on_sqlite: Sqlite] $($test)*);
    };
}

/// [`on_both!`] on PostgreSQL alone, as `name::on_postgres`.
#[macro_export]
macro_rules! on_postgres {
    ($($test:tt)*) => {
        $crate::harness_test!([on_postgres: Postgres] $($test)*);
    };
}

/// The macros' one expansion: a module `name` with a test per database.
#[doc(hidden)]
#[macro_export]
macro_rules! harness_test {
    (@tests [] $attrs:tt $run:path) => {};
    (@tests [$test:ident: $backend:ident $(, $tests:ident: $backends:ident)*]
        [$(#[$attr:meta])*] $run:path) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        $(#[$attr])*
        async fn $test() {
            let backend = ::tresor::store::Backend::$backend;
            if let Some(harness) = $crate::common::Harness::new(backend).await {
                $crate::common::run_with(&harness, $run).await;
            }
        }
        $crate::harness_test!(@tests [$($tests: $backends),*] [$(#[$attr])*] $run);
    };
    (@fns $dbs:tt $attrs:tt) => {};
    (@fns $dbs:tt $attrs:tt $name:ident $($names:ident)*) => {
        mod $name {
            $crate::harness_test!(@tests $dbs $attrs super::$name);
        }
        $crate::harness_test!(@fns $dbs $attrs $($names)*);
    };
    ($dbs:tt $(#[$attr:meta])* $name:ident, |$x:ident: $ty:ty| $body:block) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            async fn run($x: $ty) $body

            $crate::harness_test!(@tests $dbs [$(#[$attr])*] run);
        }
    };
    ($dbs:tt $(#[$attr:meta])* $name:ident, |$x:ident| $body:block) => {
        $crate::harness_test!($dbs $(#[$attr])* $name, |$x: $crate::common::TestApp| $body);
    };
    ($dbs:tt $(#[$attr:meta])* $name:ident, $settings:expr, |$x:ident| $body:block) => {
        $crate::harness_test!($dbs $(#[$attr])* $name, |harness: &$crate::common::Harness| {
            let $x = harness.app_with($settings).await;
            $body
        });
    };
    ($dbs:tt $(#[$attr:meta])* $($name:ident),+ $(,)?) => {
        $crate::harness_test!(@fns $dbs [$(#[$attr])*] $($name)+);
    };
}
