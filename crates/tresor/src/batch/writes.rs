//! The batch's third step: what the decisions changed, gathered into rows
//! in a fixed order, then written with one statement a table
//! (`store::batch`), held back on PostgreSQL until the batch's end.

use super::decide::Book;
use crate::error::Error;
use crate::store::Conn;
use crate::store::batch::{
    self as store, AccountUpdate, BlockUpdate, HourCount, NewPlayRow, PlayState, PlayUpdate,
    TransferRow,
};
use crate::trail::{self, Head, Record};
use std::collections::{HashMap, HashSet};

/// Everything the batch writes, gathered while deciding.
#[derive(Debug)]
pub(crate) struct Writes {
    new_plays: Vec<NewPlayRow>,
    play_updates: Vec<PlayUpdate>,
    transfers: Vec<TransferRow>,
    /// Balance changes and hours of stakes by account.
    accounts: Vec<AccountUpdate>,
    block_updates: Vec<BlockUpdate>,
    hours: Vec<HourCount>,
    pub(super) records: Vec<Record>,
    pub(super) head: Head,
}

impl Book<'_> {
    pub(super) fn into_writes(mut self) -> Writes {
        let block_updates = self.block_updates();
        let accounts = self.account_updates();
        let plays = &self.state.plays;
        let row = |id: &i64| -> &PlayState { &plays[id] };
        let new_plays = std::mem::take(&mut self.created)
            .into_iter()
            .map(|(id, key, hash, leaf)| NewPlayRow::from_state(row(&id), key, hash, leaf))
            .collect();
        let mut play_updates: Vec<PlayUpdate> = self
            .changed
            .iter()
            .map(|(id, before)| PlayUpdate::from_state(row(id), *before))
            .collect();
        play_updates.sort_by_key(|u| u.id);
        let mut hours: Vec<HourCount> = self
            .hours
            .into_iter()
            .map(|((player_id, hour_ms), amount_cents)| HourCount {
                player_id,
                hour_ms,
                amount_cents,
            })
            .collect();
        hours.sort_by_key(|h| (h.player_id, h.hour_ms));
        Writes {
            new_plays,
            play_updates,
            transfers: self.transfers,
            accounts,
            block_updates,
            hours,
            records: self.records,
            head: self.head,
        }
    }

    /// The blocks sold from, by id.
    fn block_updates(&self) -> Vec<BlockUpdate> {
        let mut updates = Vec::new();
        for (blocks, _) in self.state.blocks.values() {
            for block in blocks {
                if let Some(&before) = self.blocks_before.get(&block.id) {
                    updates.push(BlockUpdate {
                        id: block.id,
                        units_sold_before: before,
                        units_sold: block.units_sold,
                        sold_out_at_ms: block.sold_out_at_ms,
                    });
                }
            }
        }
        updates.sort_by_key(|u| u.id);
        updates
    }

    fn account_updates(&self) -> Vec<AccountUpdate> {
        account_updates(&self.deltas, &self.stake_hours)
    }
}

/// The accounts a transfer names or whose hour of stakes changed, by id: a
/// fixed order, so that two servers never lock accounts crosswise. An
/// account whose moves net to zero is updated too: the update's row count,
/// checked before the batch commits, then proves that every account the
/// batch's transfers name exists, which PostgreSQL no longer checks with
/// foreign keys, one locked row each (ARCHITECTURE.md, "Invariants": money).
fn account_updates(
    deltas: &HashMap<i64, i64>,
    stake_hours: &HashMap<i64, (i64, i64)>,
) -> Vec<AccountUpdate> {
    let mut accounts: Vec<AccountUpdate> = deltas
        .keys()
        .chain(stake_hours.keys())
        .copied()
        .collect::<HashSet<i64>>()
        .into_iter()
        .map(|id| AccountUpdate {
            id,
            delta_cents: deltas.get(&id).copied().unwrap_or(0),
            stake_hour: stake_hours.get(&id).copied(),
        })
        .collect();
    accounts.sort_unstable_by_key(|a| a.id);
    accounts
}

pub(super) async fn write(conn: &mut Conn, sqlite: bool, writes: &Writes) -> Result<(), Error> {
    store::write(conn, sqlite, &writes.new_plays).await?;
    store::insert_purchase_keys(conn, sqlite, &writes.new_plays).await?;
    store::write(conn, sqlite, &writes.play_updates).await?;
    store::write(conn, sqlite, &writes.transfers).await?;
    store::write(conn, sqlite, &writes.accounts).await?;
    store::write(conn, sqlite, &writes.block_updates).await?;
    store::write(conn, sqlite, &writes.hours).await?;
    trail::defer_records(conn, sqlite, &writes.records).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buyer whose stake and prize cancel out, and a house account named
    /// by a transfer, are updated all the same, in id order.
    #[test]
    fn every_account_a_transfer_names_is_updated_even_at_zero() {
        let deltas = HashMap::from([(7, 0), (-1002, 200), (-1003, -200), (9, 0)]);
        let stake_hours = HashMap::from([(9, (3_600_000, 200)), (11, (0, 100))]);
        let updates = account_updates(&deltas, &stake_hours);
        let ids: Vec<i64> = updates.iter().map(|a| a.id).collect();
        assert_eq!(ids, [-1003, -1002, 7, 9, 11]);
        let seven = &updates[2];
        assert_eq!((seven.delta_cents, seven.stake_hour), (0, None));
        assert_eq!(updates[3].stake_hour, Some((3_600_000, 200)));
        assert_eq!(updates[4].delta_cents, 0);
    }
}
