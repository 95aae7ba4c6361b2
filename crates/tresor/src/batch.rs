//! The hot jobs — purchases, throws and settlements — run as one set per
//! batch, in three steps read top to bottom: **prefetch** what the batch
//! needs in a few multi-row statements, **decide** every command in memory
//! (a refusal is a result, never a rollback), then **write** every effect
//! with multi-row statements. The number of statements a batch runs does not
//! grow with the number of commands in it (TigerBeetle's state machine: a
//! cost per batch, not per request).
//!
//! The writer runs this inside its transaction, after locking its own log's
//! row. On PostgreSQL the prefetch's reads go in one round trip and the
//! writes are held back, to go with the log's in one more before COMMIT
//! (`store::deferred`). The prefetch first locks the buyers' rows (in id
//! order), so a player's purchases on two servers decide one after the
//! other; what other players do cannot change a buyer's decision. The
//! updates still check what they overwrite (units sold, throws made,
//! balances never below zero), as a guard.

use crate::blocks;
use crate::error::Error;
use crate::protect::{self, StakeAllowance};
use crate::store::batch as store;
pub use crate::store::batch::PlayState;
use crate::store::batch::{
    AccountUpdate, BlockOnSale, BlockUpdate, HourCount, LoadedPlay, NewPlayRow, PlayUpdate,
    Product, TransferRow,
};
use crate::store::{Conn, sql};
use crate::trail::{self, Actor, Head, Record};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use tresor_game::ISLAND_ID;

mod commands;
pub use commands::{BuyCommand, Command, Context, Reply, SettleCommand, ThrowCommand};

/// Runs the hot commands of one batch inside the writer's transaction.
/// Returns one result per command, in order, and whether anything was
/// written; an `Err` of the whole means the transaction must be rolled back
/// (a database failure, never a refusal).
pub async fn run(
    conn: &mut Conn,
    context: &Context,
    commands: &[&Command],
) -> Result<(Vec<Result<Reply, Error>>, bool), Error> {
    let sqlite = conn.is_sqlite();
    let mut window = context.block_offset + 4;
    loop {
        let state = prefetch(conn, sqlite, context, commands, window).await?;
        let head = trail::batch_head().expect("inside the writer's batch");
        match decide(state, context, commands, head) {
            Decided::Done(results, writes) => {
                // Every accepted command leaves a trail record; refusals none.
                let wrote = !writes.records.is_empty();
                write(conn, sqlite, &writes).await?;
                trail::reset_batch_head(writes.head);
                return Ok((results, wrote));
            }
            // More blocks sold out in this batch than were read: read more.
            Decided::NeedMoreBlocks => window *= 4,
        }
    }
}

// ---------------------------------------------------------------------------
// 1. Prefetch.

/// Everything the batch reads before deciding.
#[derive(Debug, Default)]
struct State {
    sales: store::SalesGate,
    /// Earlier purchases by (player, idempotency key): play id and request hash.
    earlier: HashMap<(i64, String), (i64, String)>,
    plays: HashMap<i64, PlayState>,
    /// Each buyer's plays in progress.
    unfinished: HashMap<i64, Vec<i64>>,
    balances: HashMap<i64, i64>,
    allowances: HashMap<i64, StakeAllowance>,
    /// Open blocks with units left, by game and stake, in id order; `full`
    /// when the read stopped at its window (more may exist).
    blocks: HashMap<Product, (Vec<BlockOnSale>, bool)>,
    /// Ids for the plays this batch may create, one per purchase.
    new_play_ids: Vec<i64>,
    /// Games' stakes bought in this batch that have no block at all (not
    /// sold out: never on sale), read only when one has no block on sale.
    never_on_sale: HashSet<Product>,
}

async fn prefetch(
    conn: &mut Conn,
    sqlite: bool,
    context: &Context,
    commands: &[&Command],
    block_window: i64,
) -> Result<State, Error> {
    let mut buys = Vec::new();
    let mut play_ids = Vec::new();
    let mut min_now_ms = i64::MAX;
    for &command in commands {
        match command {
            Command::Buy(buy) => {
                buys.push(buy);
                min_now_ms = min_now_ms.min(buy.now_ms);
            }
            Command::Throw(throw) => play_ids.push(throw.play_id),
            Command::Settle(settle) => play_ids.extend(&settle.play_ids),
        }
    }
    let mut buyers: Vec<i64> = buys.iter().map(|b| b.player.id).collect();
    buyers.sort_unstable();
    buyers.dedup();
    let mut products: Vec<Product> = buys.iter().map(|b| product(b)).collect();
    products.sort_unstable();
    products.dedup();
    let accounts: Vec<i64> = buys.iter().map(|b| b.player.account_id).collect();
    let keys: Vec<(i64, &str)> = buys
        .iter()
        .map(|b| (b.player.id, b.idempotency_key.as_str()))
        .collect();
    let reads_plays = !play_ids.is_empty() || !buyers.is_empty();

    // Every read in one round trip on PostgreSQL, the buyers' lock first:
    // the reads after it run once it is granted, and see what the batches
    // that held it committed.
    let mut queries = Vec::new();
    if !buys.is_empty() {
        queries.extend(store::lock_players(sqlite, &buyers));
        queries.push(store::sales_gate());
        queries.push(store::earlier_purchases(sqlite, &keys));
        queries.push(protect::stake_allowances(sqlite, &buyers, min_now_ms));
        queries.push(store::blocks_on_sale(sqlite, &products, block_window));
        queries.push(store::new_play_ids(sqlite, buys.len()));
    }
    if reads_plays {
        queries.push(store::plays_for_batch(sqlite, &play_ids, &buyers));
        queries.push(store::balances(sqlite, &accounts, &play_ids));
    }
    let mut results = sql::fetch_each(conn, queries).await?.into_iter();
    let mut next = move || results.next().expect("one result per read");

    let mut state = State::default();
    if !buys.is_empty() {
        if !sqlite {
            next(); // the lock
        }
        state.sales = store::read_sales_gate(&next())?;
        for (player_id, key, play_id, hash) in store::read_earlier_purchases(&next())? {
            state.earlier.insert((player_id, key), (play_id, hash));
        }
        state.allowances = protect::read_stake_allowances(&next())?;
        for block in store::read_blocks_on_sale(&next())? {
            state
                .blocks
                .entry((block.game_id.clone(), block.stake_cents))
                .or_default()
                .0
                .push(block);
        }
        for (blocks, full) in state.blocks.values_mut() {
            *full = blocks.len() as i64 >= block_window;
        }
        state.new_play_ids = store::read_new_play_ids(sqlite, buys.len(), &next())?;
    }
    if reads_plays {
        for LoadedPlay {
            play,
            in_progress_of_buyer,
        } in store::read_plays_for_batch(&next())?
        {
            if in_progress_of_buyer && !play.finished {
                state
                    .unfinished
                    .entry(play.player_id)
                    .or_default()
                    .push(play.id);
            }
            state.plays.insert(play.id, play);
        }
        state.balances = store::read_balances(&next())?;
    }
    for list in state.unfinished.values_mut() {
        list.sort_unstable();
        list.dedup();
    }
    // Rare: a game's stake with no block on sale, never on sale or sold out?
    let without: Vec<Product> = products
        .into_iter()
        .filter(|product| !state.blocks.contains_key(product))
        .collect();
    if !without.is_empty() {
        let with_blocks = store::products_with_blocks(conn, sqlite, &without).await?;
        state.never_on_sale = without
            .into_iter()
            .filter(|product| !with_blocks.contains(product))
            .collect();
    }
    // The blocks sold from, and those of the plays thrown or settled, must
    // be shuffled (their game known): normally the service has warmed the
    // cache before the command reached the writer, and nothing is read.
    let needed: Vec<i64> = state
        .blocks
        .values()
        .flat_map(|(blocks, _)| blocks.iter().map(|b| b.id))
        .chain(state.plays.values().map(|p| p.block_id))
        .filter(|id| context.blocks.get(*id).is_none())
        .collect();
    if !needed.is_empty() {
        blocks::load(
            conn,
            &needed,
            context.secrets()?,
            &context.games,
            &context.blocks,
        )
        .await?;
    }
    Ok(state)
}

// ---------------------------------------------------------------------------
// 2. Decide, in memory.

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
    records: Vec<Record>,
    head: Head,
}

enum Decided {
    Done(Vec<Result<Reply, Error>>, Writes),
    NeedMoreBlocks,
}

/// A play the batch creates: its id, idempotency key, request hash, and
/// the leaf (log, index) of its purchase's record.
type Created = (i64, String, String, Option<(i64, i64)>);

/// The batch's state as the commands change it, one after the other.
struct Book<'a> {
    state: State,
    context: &'a Context,
    /// Plays created by this batch (inserted rather than updated), with
    /// their idempotency key and request hash.
    created: Vec<Created>,
    created_ids: HashSet<i64>,
    /// Plays read from the database and changed, with their throws before.
    changed: HashMap<i64, i64>,
    transfers: Vec<TransferRow>,
    deltas: HashMap<i64, i64>,
    /// Blocks changed: units sold before the batch.
    blocks_before: HashMap<i64, i64>,
    /// Hours of stakes moved out of the buyers' account rows, by (player, hour).
    hours: HashMap<(i64, i64), i64>,
    /// The hour of stakes each buyer's account row holds after the batch,
    /// by account: (hour, stakes).
    stake_hours: HashMap<i64, (i64, i64)>,
    records: Vec<Record>,
    head: Head,
    next_new_id: usize,
}

/// The (game, stake) a purchase buys.
fn product(buy: &BuyCommand) -> Product {
    (buy.game.id().to_owned(), buy.stake_cents)
}

fn decide(state: State, context: &Context, commands: &[&Command], head: Head) -> Decided {
    let mut book = Book {
        state,
        context,
        created: Vec::new(),
        created_ids: HashSet::new(),
        changed: HashMap::new(),
        transfers: Vec::new(),
        deltas: HashMap::new(),
        blocks_before: HashMap::new(),
        hours: HashMap::new(),
        stake_hours: HashMap::new(),
        records: Vec::new(),
        head,
        next_new_id: 0,
    };
    let mut results = Vec::with_capacity(commands.len());
    for &command in commands {
        let result = match command {
            Command::Buy(buy) => match book.buy(buy) {
                Err(Refusal::NeedMoreBlocks) => return Decided::NeedMoreBlocks,
                Err(Refusal::Error(error)) => Err(error),
                Ok(reply) => Ok(reply),
            },
            Command::Throw(throw) => book.throw(throw),
            Command::Settle(settle) => {
                let actor = Actor::System;
                let count = settle
                    .play_ids
                    .iter()
                    .filter(|&&id| {
                        book.settle(id, settle.now_ms, Some(&actor), "abandoned")
                            .is_some()
                    })
                    .count();
                Ok(Reply::Settled(count))
            }
        };
        results.push(result);
    }
    Decided::Done(results, book.into_writes())
}

enum Refusal {
    Error(Error),
    NeedMoreBlocks,
}

impl From<Error> for Refusal {
    fn from(error: Error) -> Self {
        Refusal::Error(error)
    }
}

impl Book<'_> {
    fn buy(&mut self, buy: &BuyCommand) -> Result<Reply, Refusal> {
        let player = &buy.player;
        let actor = Actor::player(player.id, &player.username);
        let stake_cents = buy.stake_cents;
        let product = product(buy);
        let key = buy.idempotency_key.as_str();
        let mut request = json!({"stake_cents": stake_cents, "idempotency_key": key});
        if product.0 != ISLAND_ID {
            // The island's records stay as they were before the catalogue.
            request["game"] = json!(product.0);
        }
        if let Some((play_id, hash)) = self.state.earlier.get(&(player.id, key.to_owned())) {
            if *hash != buy.request_hash {
                return Err(Error::IdempotencyConflict.into());
            }
            // A replay changes nothing but shows the play again: recorded too.
            let play_id = *play_id;
            self.record(
                buy.now_ms,
                &actor,
                "buy",
                request,
                json!({"play_id": play_id, "replayed": true}),
            );
            return Ok(Reply::Bought {
                play_id,
                fresh: None,
                // The play's own receipt is read back with it.
                receipt: None,
            });
        }
        if self.state.sales.held_after_restore {
            return Err(Error::SalesHeldAfterRestore.into());
        }
        let opens_at_ms = self.state.sales.opens_at_ms;
        if opens_at_ms.is_some_and(|t| t > buy.now_ms) {
            return Err(Error::SalesClosed { opens_at_ms }.into());
        }
        let allowance = self
            .state
            .allowances
            .get(&player.id)
            .cloned()
            .unwrap_or_default();
        allowance.check(stake_cents, buy.now_ms)?;
        // A game the player left mid-way is settled before the next one
        // starts: its prize counts towards paying for this one.
        let unfinished: Vec<i64> = self
            .state
            .unfinished
            .get(&player.id)
            .map(|ids| {
                ids.iter()
                    .copied()
                    .filter(|id| !self.state.plays[id].finished)
                    .collect()
            })
            .unwrap_or_default();
        let prizes_cents: i64 = unfinished
            .iter()
            .map(|id| self.state.plays[id].prize_cents)
            .sum();
        let Some(block_position) = self.pick_block(&product) else {
            if self
                .state
                .blocks
                .get(&product)
                .is_some_and(|(_, full)| *full)
            {
                return Err(Refusal::NeedMoreBlocks);
            }
            if self.state.never_on_sale.contains(&product) {
                return Err(Error::SalesClosed { opens_at_ms: None }.into());
            }
            return Err(Error::SoldOut.into());
        };
        let balance_cents = self.balance(player.account_id) + prizes_cents;
        if balance_cents < stake_cents {
            return Err(Error::InsufficientFunds {
                balance_cents,
                needed_cents: stake_cents,
            }
            .into());
        }

        // Every check passed: from here on the purchase happens. The plays
        // it settles are recorded in its own record (migration 0022: one
        // record, not one more each), with their reason and what they paid.
        let settled: Vec<serde_json::Value> = unfinished
            .into_iter()
            .filter_map(|id| self.settle(id, buy.now_ms, None, "next_purchase"))
            .collect();
        // The stake counts in the hour its account's row holds, written
        // with the balance; an hour it leaves goes to movement_hours.
        let allowance = self.state.allowances.entry(player.id).or_insert(allowance);
        if let Some((hour_ms, cents)) = allowance.count(stake_cents, buy.now_ms) {
            *self.hours.entry((player.id, hour_ms)).or_default() += cents;
        }
        if let Some(hour) = allowance.hour() {
            self.stake_hours.insert(player.account_id, hour);
        }
        let (block_id, emission_id, unit_index, sold_out) =
            self.take_unit(&product, block_position, buy.now_ms);
        let data = self
            .context
            .blocks
            .get(block_id)
            .expect("the prefetch shuffled every block on sale");
        let level = data.outcomes[unit_index as usize];
        let prize_cents = data.prize_cents(level);
        let play_id = self.state.new_play_ids[self.next_new_id];
        self.next_new_id += 1;
        let play = PlayState {
            id: play_id,
            player_id: player.id,
            account_id: player.account_id,
            block_id,
            emission_id,
            unit_index,
            stake_cents,
            level: i64::from(level.get()),
            prize_cents,
            throws_made: 0,
            finished: false,
            created_at_ms: buy.now_ms,
            finished_at_ms: None,
        };
        self.state.plays.insert(play_id, play.clone());
        self.created
            .push((play_id, key.to_owned(), buy.request_hash.clone(), None));
        self.created_ids.insert(play_id);
        self.state.unfinished.insert(player.id, vec![play_id]);
        self.state.earlier.insert(
            (player.id, key.to_owned()),
            (play_id, buy.request_hash.clone()),
        );
        let balance_cents = self.transfer(
            player.account_id,
            self.head.accounts.stakes,
            stake_cents,
            "stake",
            play_id,
            buy.now_ms,
        );
        let mut result = json!({
            "play_id": play_id,
            "emission_id": emission_id,
            "block_id": block_id,
            "unit_index": unit_index,
            "level": level.get(),
            "prize_cents": prize_cents,
            "balance_cents": balance_cents,
            "block_sold_out": sold_out,
        });
        if !settled.is_empty() {
            result["settled"] = serde_json::Value::Array(settled);
        }
        self.record(buy.now_ms, &actor, "buy", request, result);
        // The play names its purchase's record (its receipt's leaf).
        let leaf = self.records.last().and_then(|r| r.log_id.zip(r.idx));
        if let Some(created) = self.created.last_mut() {
            created.3 = leaf;
        }
        Ok(Reply::Bought {
            play_id,
            fresh: Some(play),
            receipt: self.last_receipt(),
        })
    }

    fn throw(&mut self, throw: &ThrowCommand) -> Result<Reply, Error> {
        let player = &throw.player;
        let Some(play) = self.state.plays.get(&throw.play_id) else {
            return Err(Error::NotFound);
        };
        if play.player_id != player.id {
            return Err(Error::NotFound);
        }
        // Four throws of the island, one scratch of a card.
        let reveals = self.reveals(play.block_id);
        if play.finished || play.throws_made >= reveals {
            return Err(Error::PlayFinished);
        }
        let throws_made = play.throws_made;
        let actor = Actor::player(player.id, &player.username);
        self.record(
            throw.now_ms,
            &actor,
            "throw",
            json!({"play_id": throw.play_id}),
            json!({"throw": throws_made + 1, "throws_left": reveals - 1 - throws_made}),
        );
        if throws_made == reveals - 1 {
            let reason = if reveals == 4 {
                "fourth_throw"
            } else {
                "revealed"
            };
            self.settle(throw.play_id, throw.now_ms, Some(&actor), reason);
        } else {
            self.touch(throw.play_id);
            let play = self
                .state
                .plays
                .get_mut(&throw.play_id)
                .expect("read above");
            play.throws_made += 1;
        }
        Ok(Reply::Thrown(self.state.plays[&throw.play_id].clone()))
    }

    /// Finishes a play and credits its win, once: a play already finished
    /// (or unknown) is left as it is. Returns the settlement as recorded
    /// (`None`: nothing to settle): in a `settle` record of its own by
    /// `actor`, or, without one, in the record of the purchase that settles
    /// it (its `settled`), which the caller writes.
    fn settle(
        &mut self,
        play_id: i64,
        now_ms: i64,
        actor: Option<&Actor>,
        reason: &str,
    ) -> Option<serde_json::Value> {
        match self.state.plays.get(&play_id) {
            Some(play) if !play.finished => {}
            _ => return None,
        }
        self.touch(play_id);
        let reveals = self.reveals(self.state.plays[&play_id].block_id);
        let play = self.state.plays.get_mut(&play_id).expect("checked above");
        play.finished = true;
        play.throws_made = reveals;
        play.finished_at_ms = Some(now_ms);
        let (player_id, account_id, prize_cents) =
            (play.player_id, play.account_id, play.prize_cents);
        if prize_cents > 0 {
            self.transfer(
                self.head.accounts.prizes,
                account_id,
                prize_cents,
                "prize",
                play_id,
                now_ms,
            );
        }
        let balance_cents = self.balance(account_id);
        if let Some(actor) = actor {
            self.record(
                now_ms,
                actor,
                "settle",
                json!({"play_id": play_id, "reason": reason}),
                json!({
                    "player_id": player_id,
                    "prize_cents": prize_cents,
                    "credited_cents": prize_cents,
                    "balance_cents": balance_cents,
                }),
            );
        }
        Some(json!({
            "play_id": play_id,
            "reason": reason,
            "prize_cents": prize_cents,
            "credited_cents": prize_cents,
            "balance_cents": balance_cents,
        }))
    }

    /// Notes a play read from the database as changed (with its throws as
    /// read, which the update checks).
    fn touch(&mut self, play_id: i64) {
        if self.created_ids.contains(&play_id) {
            return;
        }
        let before = self.state.plays[&play_id].throws_made;
        self.changed.entry(play_id).or_insert(before);
    }

    /// How many reveals a play of `block_id` takes (the prefetch loaded
    /// every play's block).
    fn reveals(&self, block_id: i64) -> i64 {
        self.context
            .blocks
            .get(block_id)
            .map_or(4, |data| data.reveals())
    }

    fn balance(&self, account_id: i64) -> i64 {
        self.state.balances.get(&account_id).copied().unwrap_or(0)
            + self.deltas.get(&account_id).copied().unwrap_or(0)
    }

    /// Moves money between two accounts; returns the debited account's new
    /// balance. A player's balance was checked before, so it never goes
    /// below zero (and the database's `CHECK` would refuse the batch).
    fn transfer(
        &mut self,
        debit: i64,
        credit: i64,
        amount_cents: i64,
        kind: &'static str,
        play_id: i64,
        now_ms: i64,
    ) -> i64 {
        assert!(amount_cents > 0, "a transfer moves a positive amount");
        *self.deltas.entry(debit).or_default() -= amount_cents;
        *self.deltas.entry(credit).or_default() += amount_cents;
        self.transfers.push(TransferRow {
            debit_account_id: debit,
            credit_account_id: credit,
            amount_cents,
            kind,
            play_id,
            created_at_ms: now_ms,
        });
        self.balance(debit)
    }

    /// Which of the stake's blocks sells the next unit: the server's
    /// preferred one (see `Settings::block_offset`), else the first one with
    /// units left. `None` when none has any.
    fn pick_block(&self, product: &Product) -> Option<usize> {
        let (blocks, _) = self.state.blocks.get(product)?;
        let mut with_units = blocks
            .iter()
            .enumerate()
            .filter(|(_, b)| b.units_sold < b.units_per_block)
            .map(|(position, _)| position);
        let first = with_units.clone().next()?;
        Some(
            with_units
                .nth(self.context.block_offset as usize)
                .unwrap_or(first),
        )
    }

    /// Takes the next unit of a block: (block, emission, unit index, whether
    /// it was the block's last unit).
    fn take_unit(
        &mut self,
        product: &Product,
        position: usize,
        now_ms: i64,
    ) -> (i64, i64, i64, bool) {
        let (blocks, _) = self.state.blocks.get_mut(product).expect("picked");
        let block = &mut blocks[position];
        self.blocks_before
            .entry(block.id)
            .or_insert(block.units_sold);
        let unit_index = block.units_sold;
        block.units_sold += 1;
        let sold_out = block.units_sold == block.units_per_block;
        if sold_out {
            // The last unit: the block is sold out and its secret published.
            block.sold_out_at_ms = Some(now_ms);
        }
        (block.id, block.emission_id, unit_index, sold_out)
    }

    fn record(
        &mut self,
        at_ms: i64,
        actor: &Actor,
        action: &str,
        request: serde_json::Value,
        result: serde_json::Value,
    ) {
        let record = self.head.chain(at_ms, actor, action, &request, &result);
        self.records.push(record);
    }

    /// The receipt of the record just appended, to be proven by the writer.
    fn last_receipt(&self) -> Option<Box<trail::Receipt>> {
        self.records
            .last()
            .map(|r| Box::new(trail::Receipt::pending(r, &self.head.origin)))
    }

    fn into_writes(self) -> Writes {
        let plays = &self.state.plays;
        let row = |id: &i64| -> &PlayState { &plays[id] };
        let new_plays = self
            .created
            .into_iter()
            .map(|(id, key, hash, leaf)| NewPlayRow::from_state(row(&id), key, hash, leaf))
            .collect();
        let mut play_updates: Vec<PlayUpdate> = self
            .changed
            .iter()
            .map(|(id, before)| PlayUpdate::from_state(row(id), *before))
            .collect();
        play_updates.sort_by_key(|u| u.id);
        let mut block_updates = Vec::new();
        for (blocks, _) in self.state.blocks.values() {
            for block in blocks {
                if let Some(&before) = self.blocks_before.get(&block.id) {
                    block_updates.push(BlockUpdate {
                        id: block.id,
                        units_sold_before: before,
                        units_sold: block.units_sold,
                        sold_out_at_ms: block.sold_out_at_ms,
                    });
                }
            }
        }
        block_updates.sort_by_key(|u| u.id);
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
        // A fixed order, so that two servers never lock accounts crosswise.
        accounts.sort_unstable_by_key(|a| a.id);
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
}

// ---------------------------------------------------------------------------
// 3. Write.

async fn write(conn: &mut Conn, sqlite: bool, writes: &Writes) -> Result<(), Error> {
    store::insert_plays(conn, sqlite, &writes.new_plays).await?;
    store::insert_purchase_keys(conn, sqlite, &writes.new_plays).await?;
    store::update_plays(conn, sqlite, &writes.play_updates).await?;
    store::insert_transfers(conn, sqlite, &writes.transfers).await?;
    store::update_accounts(conn, sqlite, &writes.accounts).await?;
    store::update_blocks(conn, sqlite, &writes.block_updates).await?;
    store::count_stake_hours(conn, sqlite, &writes.hours).await?;
    trail::defer_records(conn, sqlite, &writes.records).await?;
    Ok(())
}
