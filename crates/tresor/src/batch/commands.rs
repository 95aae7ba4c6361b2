//! The hot commands as the service hands them to the writer, what each
//! answers, and what the batch needs from the service (`Context`).

use crate::blocks::BlockCache;
use crate::error::Error;
use crate::games::Catalog;
use crate::model::{IdempotencyKey, Player};
use crate::store::batch::PlayState;
use crate::trail;
use std::sync::Arc;
use tresor_game::Game;

/// A hot command, as the service hands it to the writer.
#[derive(Debug, Clone)]
pub enum Command {
    Buy(BuyCommand),
    Throw(ThrowCommand),
    Settle(SettleCommand),
}

/// Buy the next unit of `game`'s stake for `player` (see `Service::buy`):
/// from a block of that game and stake, dealt by the version its emission
/// pinned.
#[derive(Debug, Clone)]
pub struct BuyCommand {
    pub player: Player,
    pub game: &'static Game,
    pub stake_cents: i64,
    pub idempotency_key: IdempotencyKey,
    pub request_hash: String,
    /// The hash of the session's token the purchase came in, when the
    /// caller took the session from its cache (`service::session_cache`):
    /// the batch refuses the purchase if that session is no longer live.
    pub session: Option<String>,
    pub now_ms: i64,
}

/// Reveal the next throw of one of `player`'s plays.
#[derive(Debug, Clone)]
pub struct ThrowCommand {
    pub player: Player,
    pub play_id: i64,
    pub now_ms: i64,
}

/// Settle plays left unfinished (the background settler).
#[derive(Debug, Clone)]
pub struct SettleCommand {
    pub play_ids: Vec<i64>,
    pub now_ms: i64,
}

/// What a command did.
#[derive(Debug, Clone)]
pub enum Reply {
    /// A purchase: the play bought (`fresh`), or the id of the earlier one
    /// its idempotency key replays (`fresh: None`).
    Bought {
        play_id: i64,
        fresh: Option<PlayState>,
        /// The receipt of its `buy` record: its proof and checkpoint are
        /// added by the writer before COMMIT (`None` without a log key).
        receipt: Option<Box<trail::Receipt>>,
    },
    /// A throw: the play after it.
    Thrown(PlayState),
    /// How many plays a settlement finished.
    Settled(usize),
}

/// What the batch needs from the service: the shuffled blocks, and which
/// open block of a stake this server sells from first.
#[derive(Debug)]
pub struct Context {
    pub blocks: Arc<BlockCache>,
    /// The catalogue, and the definitions emissions pinned.
    pub games: Arc<Catalog>,
    pub block_offset: i64,
    /// The key that opens the sealed block secrets (`None`: they cannot be read).
    pub secrets_key: Option<crate::seal::SecretsKey>,
}

impl Context {
    pub(super) fn secrets(&self) -> Result<&crate::seal::SecretsKey, Error> {
        self.secrets_key
            .as_ref()
            .ok_or(Error::Secrets(crate::seal::SealError::Key(
                "no secrets key was given: block secrets cannot be opened".to_owned(),
            )))
    }
}
