//! The operator's side: reports that match the ledger and the prize table,
//! block suspension, the sales opening and the site message, and the public
//! block list that never shows a secret too early. Each test runs on SQLite
//! and on PostgreSQL, through the real `tresor` binary and the HTTP router.

use crate::common::{Api, TestDb, assert_exit, describe, player, purchase, scalar};

use axum::http::StatusCode;
use serde_json::{Value, json};
use std::collections::HashMap;
use tresor::service::{Service, rfc3339};
use tresor::trail;
use tresor_game::{Stake, UNITS_PER_BLOCK};

mod blocks;
mod browser;
mod report;
mod sales;
mod writers;

/// The ids of the blocks, in the service's order.
async fn block_ids(service: &Service) -> Vec<i64> {
    service
        .blocks()
        .await
        .expect("blocks")
        .iter()
        .map(|b| b.id)
        .collect()
}

/// Runs `tresor report --format json` and parses it.
fn report_json(db: &TestDb, extra: &[&str]) -> Value {
    let mut args = vec!["report", "--format", "json"];
    args.extend_from_slice(extra);
    let output = db.tresor_ok(&args);
    serde_json::from_slice(&output.stdout).expect("the report is JSON")
}

fn blocks_of(report: &Value) -> Vec<Value> {
    let mut blocks = Vec::new();
    for emission in crate::common::items(&report["emissions"], "emissions") {
        for stake in crate::common::items(&emission["stakes"], "stakes") {
            for block in crate::common::items(&stake["blocks"], "blocks") {
                blocks.push(block.clone());
            }
        }
    }
    blocks
}

/// The trail's actions, in order.
async fn actions(service: &Service) -> Vec<String> {
    trail::all(&service.db.pool)
        .await
        .expect("the trail")
        .into_iter()
        .map(|r| r.action)
        .collect()
}
