//! The batch's first step: everything its commands need, read in a few
//! multi-row statements (one round trip on PostgreSQL, the buyers' rows
//! locked first), then the rare reads (a stake never on sale, blocks not
//! yet shuffled).

use super::{Command, Context, product};
use crate::blocks;
use crate::error::Error;
use crate::protect::{self, StakeAllowance};
use crate::store::batch::{self as store, BlockOnSale, LoadedPlay, PlayState, Product};
use crate::store::{Conn, sql};
use std::collections::{HashMap, HashSet};

/// Everything the batch reads before deciding.
#[derive(Debug, Default)]
pub(super) struct State {
    pub(super) sales: store::SalesGate,
    /// Earlier purchases by (player, idempotency key): play id and request hash.
    pub(super) earlier: HashMap<(i64, String), (i64, String)>,
    pub(super) plays: HashMap<i64, PlayState>,
    /// Each buyer's plays in progress.
    pub(super) unfinished: HashMap<i64, Vec<i64>>,
    pub(super) balances: HashMap<i64, i64>,
    pub(super) allowances: HashMap<i64, StakeAllowance>,
    /// Open blocks with units left, by game and stake, in id order; `full`
    /// when the read stopped at its window (more may exist).
    pub(super) blocks: HashMap<Product, (Vec<BlockOnSale>, bool)>,
    /// Ids for the plays this batch may create, one per purchase.
    pub(super) new_play_ids: Vec<i64>,
    /// Games' stakes bought in this batch that have no block at all (not
    /// sold out: never on sale), read only when one has no block on sale.
    pub(super) never_on_sale: HashSet<Product>,
    /// The sessions of the purchases that named one which are still live.
    pub(super) live_sessions: HashSet<String>,
}

/// What the batch's commands name: the rows its reads look for.
struct Wanted<'a> {
    /// Purchases: how many, and the earliest of their times.
    buys: usize,
    min_now_ms: i64,
    /// Plays named by id (thrown, settled).
    play_ids: Vec<i64>,
    /// Buyers, by id, once each; their accounts; their (player, key) pairs.
    buyers: Vec<i64>,
    accounts: Vec<i64>,
    keys: Vec<(i64, &'a str)>,
    /// The sessions the purchases came in, where they name one.
    sessions: Vec<&'a str>,
    /// The (game, stake) pairs bought, once each.
    products: Vec<Product>,
}

impl<'a> Wanted<'a> {
    fn of(commands: &[&'a Command]) -> Self {
        let mut buys = Vec::new();
        let mut play_ids = Vec::new();
        for &command in commands {
            match command {
                Command::Buy(buy) => buys.push(buy),
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
        Wanted {
            buys: buys.len(),
            min_now_ms: buys.iter().map(|b| b.now_ms).min().unwrap_or(i64::MAX),
            play_ids,
            buyers,
            accounts: buys.iter().map(|b| b.player.account_id).collect(),
            keys: buys
                .iter()
                .map(|b| (b.player.id, b.idempotency_key.as_str()))
                .collect(),
            sessions: buys.iter().filter_map(|b| b.session.as_deref()).collect(),
            products,
        }
    }

    fn reads_plays(&self) -> bool {
        !self.play_ids.is_empty() || !self.buyers.is_empty()
    }

    /// Every read, in the order [`State::read`] takes their rows: the
    /// buyers' lock first, so that the reads after it run once it is
    /// granted and see what the batches that held it committed.
    fn queries(&self, sqlite: bool, block_window: i64) -> Vec<sql::Query<'static>> {
        let mut queries = Vec::new();
        if self.buys > 0 {
            queries.extend(store::lock_players(sqlite, &self.buyers));
            queries.push(store::sales_gate());
            queries.push(store::live_sessions(sqlite, &self.sessions));
            queries.push(store::earlier_purchases(sqlite, &self.keys));
            queries.push(protect::stake_allowances(
                sqlite,
                &self.buyers,
                self.min_now_ms,
            ));
            queries.push(store::blocks_on_sale(sqlite, &self.products, block_window));
            queries.push(store::new_play_ids(sqlite, self.buys));
        }
        if self.reads_plays() {
            queries.push(store::plays_for_batch(sqlite, &self.play_ids, &self.buyers));
            queries.push(store::balances(sqlite, &self.accounts, &self.play_ids));
        }
        queries
    }
}

pub(super) async fn prefetch(
    conn: &mut Conn,
    sqlite: bool,
    context: &Context,
    commands: &[&Command],
    block_window: i64,
) -> Result<State, Error> {
    let wanted = Wanted::of(commands);
    let results = sql::fetch_each(conn, wanted.queries(sqlite, block_window)).await?;
    let mut state = State::default();
    state.read(&wanted, sqlite, block_window, results)?;
    state
        .find_never_on_sale(conn, sqlite, wanted.products)
        .await?;
    state.shuffle_blocks(conn, context).await?;
    Ok(state)
}

impl State {
    /// Takes each read's rows, in the order of [`Wanted::queries`].
    fn read(
        &mut self,
        wanted: &Wanted<'_>,
        sqlite: bool,
        block_window: i64,
        results: Vec<Vec<sql::Row>>,
    ) -> Result<(), Error> {
        let mut results = results.into_iter();
        let mut next = move || results.next().expect("one result per read");
        if wanted.buys > 0 {
            if !sqlite {
                next(); // the lock
            }
            self.sales = store::read_sales_gate(&next())?;
            self.live_sessions = store::read_live_sessions(&next())?;
            for (player_id, key, play_id, hash) in store::read_earlier_purchases(&next())? {
                self.earlier.insert((player_id, key), (play_id, hash));
            }
            self.allowances = protect::read_stake_allowances(&next())?;
            for block in store::read_blocks_on_sale(&next())? {
                let product = (block.game_id.clone(), block.stake_cents);
                self.blocks.entry(product).or_default().0.push(block);
            }
            for (blocks, full) in self.blocks.values_mut() {
                *full = blocks.len() as i64 >= block_window;
            }
            self.new_play_ids = store::read_new_play_ids(sqlite, wanted.buys, &next())?;
        }
        if wanted.reads_plays() {
            for loaded in store::read_plays_for_batch(&next())? {
                self.add_play(loaded);
            }
            self.balances = store::read_balances(&next())?;
        }
        for list in self.unfinished.values_mut() {
            list.sort_unstable();
            list.dedup();
        }
        Ok(())
    }

    fn add_play(&mut self, loaded: LoadedPlay) {
        let LoadedPlay {
            play,
            in_progress_of_buyer,
        } = loaded;
        if in_progress_of_buyer && !play.finished {
            let unfinished = self.unfinished.entry(play.player_id).or_default();
            unfinished.push(play.id);
        }
        self.plays.insert(play.id, play);
    }

    /// Rare: a game's stake with no block on sale, never on sale or sold out?
    async fn find_never_on_sale(
        &mut self,
        conn: &mut Conn,
        sqlite: bool,
        products: Vec<Product>,
    ) -> Result<(), Error> {
        let without: Vec<Product> = products
            .into_iter()
            .filter(|product| !self.blocks.contains_key(product))
            .collect();
        if without.is_empty() {
            return Ok(());
        }
        let with_blocks = store::products_with_blocks(conn, sqlite, &without).await?;
        self.never_on_sale = without
            .into_iter()
            .filter(|product| !with_blocks.contains(product))
            .collect();
        Ok(())
    }

    /// The blocks sold from, and those of the plays thrown or settled, must
    /// be shuffled (their game known): normally the service has warmed the
    /// cache before the command reached the writer, and nothing is read.
    async fn shuffle_blocks(&self, conn: &mut Conn, context: &Context) -> Result<(), Error> {
        let needed: Vec<i64> = self
            .blocks
            .values()
            .flat_map(|(blocks, _)| blocks.iter().map(|b| b.id))
            .chain(self.plays.values().map(|p| p.block_id))
            .filter(|id| context.blocks.get(*id).is_none())
            .collect();
        if needed.is_empty() {
            return Ok(());
        }
        let secrets = context.secrets()?;
        blocks::load(conn, &needed, secrets, &context.games, &context.blocks).await
    }
}
