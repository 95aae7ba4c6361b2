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
use std::collections::HashSet;

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

    /// The accounts whose balance or hour of stakes changed, by id: a fixed
    /// order, so that two servers never lock accounts crosswise.
    fn account_updates(&self) -> Vec<AccountUpdate> {
        let mut accounts: Vec<AccountUpdate> = self
            .deltas
            .iter()
            .filter(|(_, d)| **d != 0)
            .map(|(&id, _)| id)
            .chain(self.stake_hours.keys().copied())
            .collect::<HashSet<i64>>()
            .into_iter()
            .map(|id| AccountUpdate {
                id,
                delta_cents: self.deltas.get(&id).copied().unwrap_or(0),
                stake_hour: self.stake_hours.get(&id).copied(),
            })
            .collect();
        accounts.sort_unstable_by_key(|a| a.id);
        accounts
    }
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
