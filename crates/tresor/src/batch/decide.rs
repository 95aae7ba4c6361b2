//! The batch's second step: every command decided in memory, one after the
//! other, on the state the prefetch read as the commands before it changed
//! it. A refusal is a result, never a rollback; what is accepted is
//! gathered as the writes of the third step (`writes.rs`).

use super::prefetch::State;
use super::{BuyCommand, Command, Context, Reply, ThrowCommand, product};
use crate::error::{Error, SessionEnd};
use crate::protect::StakeAllowance;
use crate::store::batch::{PlayState, Product, TransferRow};
use crate::trail::{self, Actor, Head, Record};
use serde_json::{Value, json};
use std::collections::{HashMap, HashSet};
use tresor_game::ISLAND_ID;

/// The replies and the book that `writes.rs` turns into the batch's
/// writes (writes depend on the decisions, never the other way round).
pub(super) enum Decided<'a> {
    Done(Vec<Result<Reply, Error>>, Book<'a>),
    NeedMoreBlocks,
}

/// A play the batch creates: its id, idempotency key, request hash, and
/// the leaf (log, index) of its purchase's record.
pub(super) type Created = (i64, String, String, Option<(i64, i64)>);

/// The batch's state as the commands change it, one after the other.
pub(super) struct Book<'a> {
    pub(super) state: State,
    context: &'a Context,
    /// Plays created by this batch (inserted rather than updated), with
    /// their idempotency key and request hash.
    pub(super) created: Vec<Created>,
    created_ids: HashSet<i64>,
    /// Plays read from the database and changed, with their throws before.
    pub(super) changed: HashMap<i64, i64>,
    pub(super) transfers: Vec<TransferRow>,
    pub(super) deltas: HashMap<i64, i64>,
    /// Blocks changed: units sold before the batch.
    pub(super) blocks_before: HashMap<i64, i64>,
    /// Hours of stakes moved out of the buyers' account rows, by (player, hour).
    pub(super) hours: HashMap<(i64, i64), i64>,
    /// The hour of stakes each buyer's account row holds after the batch,
    /// by account: (hour, stakes).
    pub(super) stake_hours: HashMap<i64, (i64, i64)>,
    pub(super) records: Vec<Record>,
    pub(super) head: Head,
    next_new_id: usize,
}

pub(super) fn decide<'a>(
    state: State,
    context: &'a Context,
    commands: &[&Command],
    head: Head,
) -> Decided<'a> {
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
    Decided::Done(results, book)
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

/// A purchase past its checks: what it settles first, and the block that
/// sells its unit.
struct Accepted {
    unfinished: Vec<i64>,
    block_position: usize,
    allowance: StakeAllowance,
}

impl Book<'_> {
    fn buy(&mut self, buy: &BuyCommand) -> Result<Reply, Refusal> {
        let actor = Actor::player(buy.player.id, &buy.player.username);
        let key = buy.idempotency_key.as_str();
        let mut request = json!({"stake_cents": buy.stake_cents, "idempotency_key": key});
        let product = product(buy);
        if product.0 != ISLAND_ID {
            // The island's records stay as they were before the catalogue.
            request["game"] = json!(product.0);
        }
        if let Some(session) = &buy.session
            && !self.state.live_sessions.contains(session)
        {
            // Ended since the request's session was read (a logout, here or
            // on another server, a password change, a suspension, an
            // exclusion): refused as the read would have, nothing recorded.
            return Err(Error::SessionEnded(SessionEnd::Ended).into());
        }
        if let Some((play_id, hash)) = self.state.earlier.get(&(buy.player.id, key.to_owned())) {
            if *hash != buy.request_hash {
                return Err(Error::IdempotencyConflict.into());
            }
            // A replay changes nothing but shows the play again: recorded too.
            let result = json!({"play_id": *play_id, "replayed": true});
            let play_id = *play_id;
            self.record(buy.now_ms, &actor, "buy", request, result);
            // The play's own receipt is read back with it.
            return Ok(Reply::Bought {
                play_id,
                fresh: None,
                receipt: None,
            });
        }
        let accepted = self.check(buy, &product)?;
        // Every check passed: from here on the purchase happens.
        let (play, result) = self.sell(buy, &product, accepted);
        self.record(buy.now_ms, &actor, "buy", request, result);
        // The play names its purchase's record (its receipt's leaf).
        let leaf = self.records.last().and_then(|r| r.log_id.zip(r.idx));
        if let Some(created) = self.created.last_mut() {
            created.3 = leaf;
        }
        Ok(Reply::Bought {
            play_id: play.id,
            fresh: Some(play),
            receipt: self.last_receipt(),
        })
    }

    /// A purchase's checks, in the order players are told of them: sales
    /// open, the 7-day caps, a unit left, the balance (with the prizes of
    /// the plays it settles first).
    fn check(&self, buy: &BuyCommand, product: &Product) -> Result<Accepted, Refusal> {
        if self.state.sales.held_after_restore {
            return Err(Error::SalesHeldAfterRestore.into());
        }
        let opens_at_ms = self.state.sales.opens_at_ms;
        if opens_at_ms.is_some_and(|t| t > buy.now_ms) {
            return Err(Error::SalesClosed { opens_at_ms }.into());
        }
        let player = &buy.player;
        let allowance = self
            .state
            .allowances
            .get(&player.id)
            .cloned()
            .unwrap_or_default();
        allowance.check(buy.stake_cents, buy.now_ms)?;
        // A game the player left mid-way is settled before the next one
        // starts: its prize counts towards paying for this one.
        let unfinished: Vec<i64> = self
            .state
            .unfinished
            .get(&player.id)
            .into_iter()
            .flatten()
            .copied()
            .filter(|id| !self.state.plays[id].finished)
            .collect();
        let block_position = self.pick_block_or_refuse(product)?;
        let prizes_cents: i64 = unfinished
            .iter()
            .map(|id| self.state.plays[id].prize_cents)
            .sum();
        let balance_cents = self.balance(player.account_id) + prizes_cents;
        if balance_cents < buy.stake_cents {
            return Err(Error::InsufficientFunds {
                balance_cents,
                needed_cents: buy.stake_cents,
            }
            .into());
        }
        Ok(Accepted {
            unfinished,
            block_position,
            allowance,
        })
    }

    /// The block that sells the next unit of `product`, or why none does.
    fn pick_block_or_refuse(&self, product: &Product) -> Result<usize, Refusal> {
        if let Some(position) = self.pick_block(product) {
            return Ok(position);
        }
        if self
            .state
            .blocks
            .get(product)
            .is_some_and(|(_, full)| *full)
        {
            return Err(Refusal::NeedMoreBlocks);
        }
        if self.state.never_on_sale.contains(product) {
            return Err(Error::SalesClosed { opens_at_ms: None }.into());
        }
        Err(Error::SoldOut.into())
    }

    /// Sells the unit: settles the player's unfinished plays, counts the
    /// stake, takes the unit, creates the play and moves the stake. Returns
    /// the play and its purchase's recorded result.
    fn sell(
        &mut self,
        buy: &BuyCommand,
        product: &Product,
        accepted: Accepted,
    ) -> (PlayState, Value) {
        let player = &buy.player;
        // The plays it settles are recorded in its own record (migration
        // 0022: one record, not one more each), with their reason and what
        // they paid.
        let settled: Vec<Value> = accepted
            .unfinished
            .into_iter()
            .filter_map(|id| self.settle(id, buy.now_ms, None, "next_purchase"))
            .collect();
        self.count_stake(buy, accepted.allowance);
        let (block_id, emission_id, unit_index, sold_out) =
            self.take_unit(product, accepted.block_position, buy.now_ms);
        let data = self
            .context
            .blocks
            .get(block_id)
            .expect("the prefetch shuffled every block on sale");
        let level = data.outcomes[unit_index as usize];
        let play = PlayState {
            id: self.state.new_play_ids[self.next_new_id],
            player_id: player.id,
            account_id: player.account_id,
            block_id,
            emission_id,
            unit_index,
            stake_cents: buy.stake_cents,
            level: i64::from(level.get()),
            prize_cents: data.prize_cents(level),
            throws_made: 0,
            finished: false,
            created_at_ms: buy.now_ms,
            finished_at_ms: None,
        };
        self.next_new_id += 1;
        self.create(buy, &play);
        let stakes = self.head.accounts.stakes;
        let balance_cents = self.transfer(
            player.account_id,
            stakes,
            buy.stake_cents,
            "stake",
            play.id,
            buy.now_ms,
        );
        let mut result = json!({
            "play_id": play.id,
            "emission_id": emission_id,
            "block_id": block_id,
            "unit_index": unit_index,
            "level": level.get(),
            "prize_cents": play.prize_cents,
            "balance_cents": balance_cents,
            "block_sold_out": sold_out,
        });
        if !settled.is_empty() {
            result["settled"] = Value::Array(settled);
        }
        (play, result)
    }

    /// The stake counts in the hour its account's row holds, written with
    /// the balance; an hour it leaves goes to `movement_hours`.
    fn count_stake(&mut self, buy: &BuyCommand, allowance: StakeAllowance) {
        let player = &buy.player;
        let allowance = self.state.allowances.entry(player.id).or_insert(allowance);
        if let Some((hour_ms, cents)) = allowance.count(buy.stake_cents, buy.now_ms) {
            *self.hours.entry((player.id, hour_ms)).or_default() += cents;
        }
        if let Some(hour) = allowance.hour() {
            self.stake_hours.insert(player.account_id, hour);
        }
    }

    /// Notes a play the purchase creates: inserted, the buyer's play in
    /// progress, found by its key by a replay later in the batch.
    fn create(&mut self, buy: &BuyCommand, play: &PlayState) {
        let key = buy.idempotency_key.as_str().to_owned();
        let hash = buy.request_hash.clone();
        self.state.plays.insert(play.id, play.clone());
        self.created
            .push((play.id, key.clone(), hash.clone(), None));
        self.created_ids.insert(play.id);
        self.state.unfinished.insert(buy.player.id, vec![play.id]);
        self.state
            .earlier
            .insert((buy.player.id, key), (play.id, hash));
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
    ) -> Option<Value> {
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
            let prizes = self.head.accounts.prizes;
            self.transfer(prizes, account_id, prize_cents, "prize", play_id, now_ms);
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

    pub(super) fn balance(&self, account_id: i64) -> i64 {
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

    fn record(&mut self, at_ms: i64, actor: &Actor, action: &str, request: Value, result: Value) {
        let record = self.head.chain(at_ms, actor, action, &request, &result);
        self.records.push(record);
    }

    /// The receipt of the record just appended, to be proven by the writer.
    fn last_receipt(&self) -> Option<Box<trail::Receipt>> {
        self.records
            .last()
            .map(|r| Box::new(trail::Receipt::pending(r, &self.head.origin)))
    }
}
