//! Whole blocks sold through the service: the island's 450,000 units and
//! « Trésor Express »'s 100,000, each on SQLite and on PostgreSQL, paying
//! exactly their tables. They take minutes, so they are `#[ignore]`d by the
//! plain test command; `.ci/run` runs them with `--ignored`.
//!
//! A test binary of their own, sharing the harness of `tests/it/common/`:
//! it builds in a fraction of the time the integration binary `tests/it`
//! takes, so that CI starts selling these blocks while that binary and the
//! rest still compile (BENCHMARKS.md, "The test suite").
#![allow(
    clippy::too_many_lines,
    reason = "a test's flow may read better whole; src/ holds every function to 80 lines"
)]

#[macro_use]
#[path = "../it/common/mod.rs"]
mod common;

use common::games::shipped;
use common::sellout::{Reveal, Table, buy_until_sold_out, sell_a_whole_block, sold};
use common::{TestDb, assert_exit, assert_ledger_balances, now_ms, scalar, tresor};
use std::sync::Arc;
use tresor::protect::Limits;
use tresor::service::{ManualClock, Registration, Service, Settings};
use tresor_game::{LEVELS, Stake};

on_both!(
    #[ignore = "sells 450,000 units (2 to 4 minutes): .ci/run runs it while the rest builds"]
    a_whole_block_of_the_island_sold_through_the_service_pays_exactly_its_table
);

/// A whole block of the island (450,000 units at 2 €) sold through the
/// service by 256 concurrent players, each one's last play left to the
/// settler: every level holds exactly its units and prizes, the ledger
/// balances, and the published block verifies.
async fn a_whole_block_of_the_island_sold_through_the_service_pays_exactly_its_table(db: &TestDb) {
    let store = db.connect().await;
    let clock = Arc::new(ManualClock::new(now_ms()));
    let settings = Settings {
        password_cost: tresor::service::PasswordCost::Least,
        ..Settings::default()
    };
    let service = Service::new(store, clock.clone(), settings);
    service.open_secrets().await.unwrap();
    let stake = Stake::try_from(200).unwrap();
    service
        .create_emission("Whole block", &[stake], 1)
        .await
        .unwrap();
    const PLAYERS: usize = 256;
    let units = tresor_game::UNITS_PER_BLOCK as usize;
    let mut tasks = Vec::new();
    for p in 0..PLAYERS {
        let service = service.clone();
        tasks.push(tokio::spawn(async move {
            let player = service
                .register(
                    Registration::parse(&format!("player{p}"), "a long password", true, true)
                        .unwrap()
                        .with_limits(Limits::highest()),
                )
                .await
                .unwrap();
            service
                .deposit(&player, 200 * (units / PLAYERS + 1) as i64)
                .await
                .unwrap();
            let island = tresor_game::ile_au_tresor();
            buy_until_sold_out(&service, &player, island, stake.cents(), false).await
        }));
    }
    assert_eq!(
        sold(tasks).await,
        units,
        "exactly the block's units were sold"
    );
    // Each player's last play is left unfinished: the settler pays it.
    clock.advance_ms(service.settings.auto_settle_after_s * 1000 + 1);
    while service.settle_abandoned().await.unwrap() > 0 {}
    let pool = &service.db.pool;
    for spec in &LEVELS {
        let (count, prizes): (i64, i64) = sqlx::query_as(
            "SELECT COUNT(*), CAST(COALESCE(SUM(prize_cents), 0) AS BIGINT) FROM plays WHERE level = $1",
        )
        .bind(i64::from(spec.level))
        .fetch_one(pool)
        .await
        .unwrap();
        assert_eq!(
            count,
            i64::from(spec.units_per_block),
            "level {}",
            spec.level
        );
        assert_eq!(
            prizes,
            i64::from(spec.units_per_block) * spec.prize_cents_at_50 * 4
        );
    }
    let paid: i64 = scalar(
        pool,
        "SELECT CAST(SUM(amount_cents) AS BIGINT) FROM transfers WHERE kind = 'prize'",
    )
    .await;
    assert_eq!(
        paid,
        stake.block_prizes_cents(),
        "the block paid exactly its table"
    );
    assert_ledger_balances(&service.db).await;
    let blocks = service.blocks().await.unwrap();
    let block = &blocks[0];
    assert_eq!(block.state, "sold_out");
    let secret = block
        .secret
        .as_deref()
        .expect("a sold-out block's secret is published");
    let output = tresor(&[
        "block",
        "verify",
        "--secret",
        secret,
        "--commitment",
        &block.commitment,
        "--stake",
        "200",
    ]);
    assert!(
        output.status.success(),
        "tresor block verify accepts it: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

on_both!(
    #[ignore = "sells 100,000 units (about a minute): .ci/run runs it while the rest builds"]
    a_whole_block_of_tresor_express_sold_through_the_service_pays_exactly_its_table
);

/// A whole block of the catalogue's own scratch card, « Trésor Express »
/// (100,000 units at 1 €), sold through the service by 64 concurrent
/// players: each purchase settles the buyer's previous card and the settler
/// the last ones. It pays exactly its table, and its published block is
/// re-derived from the definition file alone.
async fn a_whole_block_of_tresor_express_sold_through_the_service_pays_exactly_its_table(
    db: &TestDb,
) {
    // games/tresor-express.toml's figures at 1 €.
    let table = Table {
        units: 100_000,
        prizes_cents: 6_500_000,
        counts: &[68_775, 1, 4, 20, 200, 500, 2_000, 8_500, 20_000],
        payout_percent: "65.00",
    };
    let service = sell_a_whole_block(db, "tresor-express", 100, 64, Reveal::Never, &table).await;
    let blocks = service.blocks().await.unwrap();
    let block = blocks
        .iter()
        .find(|block| block.state == "sold_out")
        .expect("the sold-out block");
    let file = shipped("tresor-express.toml");
    let verify = tresor(&[
        "block",
        "verify",
        "--game",
        file.to_str().unwrap(),
        "--secret",
        block
            .secret
            .as_deref()
            .expect("a sold-out block's secret is published"),
        "--commitment",
        &block.commitment,
        "--stake",
        "100",
    ]);
    assert_exit(&verify, 0);
}
