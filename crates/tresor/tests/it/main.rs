//! The integration tests, one binary: each module is an area (its own
//! database per test, its own servers), all sharing the one harness in
//! `common/`. One binary links the crate graph once, where one per area
//! linked it thirty-three times (issue 33).
//!
//! Run one area with a filter: `cargo test --test it -- account::`.
#![allow(
    clippy::too_many_lines,
    reason = "a test's flow may read better whole; src/ holds every function to 80 lines"
)]

#[macro_use]
mod common;

mod account;
mod account_fixes;
mod account_guard;
mod api;
mod architecture;
mod audit;
mod backup;
mod batches;
mod bench;
mod browser_reuse;
mod catalog;
mod checkpoints;
mod cli_game;
mod commitments;
mod console_api;
mod credit_race;
mod documents;
mod durability;
mod edge_controls;
mod email_undo;
mod entries;
mod failover;
mod faults;
mod free_tries;
mod full_disk;
mod game_sheet;
mod games_sold;
mod hostile;
mod identity;
mod intake;
mod kept;
mod multi_server;
mod new_database;
mod no_store;
mod operate;
mod ops;
mod outbox;
mod passwords;
mod pg_locks;
mod protect;
mod replays;
mod report_periods;
mod report_rollup;
mod retired_keys;
mod secrets;
mod settings;
mod slowloris;
mod start_refusals;
mod suspended_payout;
mod suspension;
mod tile_edges;
mod tlog;
mod tlog_interop;
mod transport;
mod unstaged;
mod watch;
mod witness;
