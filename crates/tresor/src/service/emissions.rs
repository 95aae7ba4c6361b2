//! Emissions and blocks: creating, closing, suspending and listing them.

use super::games::GameRef;
use super::{Service, os_random_32, rfc3339};
use crate::error::Error;
use crate::games::Entry;
use crate::seal::SecretsKey;
use crate::store::{Conn, sql};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;
use tresor_game::{BlockSecret, ISLAND_ID, Stake, commitment_form};

/// A block: the secret only once it is published; for the public, units
/// sold only once the block is off sale (see [`Service::public_blocks`]).
#[derive(Debug, Clone, Serialize)]
pub struct BlockView {
    pub id: i64,
    pub emission: i64,
    /// The game's id (its emission's).
    pub game: String,
    pub stake_cents: i64,
    pub state: String,
    pub commitment: String,
    pub units_sold: Option<i64>,
    pub units_per_block: u32,
    pub secret: Option<String>,
    /// The SHA-256 of the definition its emission pinned.
    pub game_sha256: String,
    /// What its commitment is the hash of: `sha256(secret)` (the island),
    /// `sha256(secret || sha256(definition))` (every other game).
    pub commitment_form: &'static str,
}

/// An emission with its blocks, for the operator.
#[derive(Debug, Clone, Serialize)]
pub struct EmissionView {
    pub id: i64,
    pub name: String,
    /// The game it sells, as it pinned it (`None`: a game whose pinned
    /// definition does not read, which the start refuses).
    pub game: Option<GameRef>,
    /// The SHA-256 of the definition it pinned.
    pub game_sha256: String,
    pub state: String,
    pub created_at: String,
    pub blocks: Vec<BlockView>,
}

impl Service {
    /// Creates an emission of « L'Ile au Trésor » with `blocks_per_stake`
    /// blocks of each stake, each with a fresh secret from the OS CSPRNG.
    /// Returns the emission id.
    pub async fn create_emission(
        &self,
        name: &str,
        stakes: &[Stake],
        blocks_per_stake: u32,
    ) -> Result<i64, Error> {
        self.create_emission_as(Actor::Operator, name, stakes, blocks_per_stake)
            .await
    }

    /// [`Service::create_emission`], recorded in the trail as `actor`'s (the
    /// demo emission is the system's).
    pub async fn create_emission_as(
        &self,
        actor: Actor,
        name: &str,
        stakes: &[Stake],
        blocks_per_stake: u32,
    ) -> Result<i64, Error> {
        let stakes: Vec<i64> = stakes.iter().map(|s| s.cents()).collect();
        self.create_game_emission(actor, name, ISLAND_ID, &stakes, blocks_per_stake)
            .await
    }

    /// Creates an emission of the catalogue's game `game_id`, pinning its
    /// definition as the catalogue read it (id, SHA-256 and text): its
    /// blocks are dealt by `Game::outcomes` and committed to by
    /// `Game::commitment`, `blocks_per_stake` of each stake given (each one
    /// the game sells).
    pub async fn create_game_emission(
        &self,
        actor: Actor,
        name: &str,
        game_id: &str,
        stakes: &[i64],
        blocks_per_stake: u32,
    ) -> Result<i64, Error> {
        if stakes.is_empty() || !(1..=1000).contains(&blocks_per_stake) {
            return Err(Error::Validation(
                "an emission needs at least one stake and 1 to 1000 blocks".to_owned(),
            ));
        }
        let entry = self
            .settings
            .games
            .entry(game_id)
            .ok_or_else(|| Error::UnknownGame(game_id.to_owned()))?;
        let mut blocks = Vec::new();
        for &stake_cents in stakes {
            self.sold_stake(entry.game, stake_cents)?;
            for _ in 0..blocks_per_stake {
                blocks.push((stake_cents, BlockSecret::from_bytes(os_random_32())));
            }
        }
        let new = NewEmission {
            actor,
            name: name.to_owned(),
            entry,
            blocks,
            key: self.secrets_key()?.clone(),
            now_ms: self.now_ms(),
        };
        self.write(move |conn| {
            let new = new.clone();
            Box::pin(async move { new.insert(conn).await })
        })
        .await
    }

    /// Closes an emission: its sales stop and the secrets of its blocks are
    /// published. Units left unsold stay counted as such.
    pub async fn close_emission(&self, emission_id: i64) -> Result<(), Error> {
        self.close_emission_as(Actor::Operator, emission_id).await
    }

    /// [`Service::close_emission`], recorded in the trail as `actor`'s.
    pub async fn close_emission_as(&self, actor: Actor, emission_id: i64) -> Result<(), Error> {
        let request = json!({"emission_id": emission_id});
        self.write_recorded(actor, "emission_close", request, move |conn, now_ms| {
            Box::pin(async move {
                let state: Option<String> =
                    sql::query_scalar("SELECT state FROM emissions WHERE id = $1")
                        .bind(emission_id)
                        .fetch_optional(&mut *conn)
                        .await?;
                match state.as_deref() {
                    None => return Err(Error::NotFound),
                    Some("closed") => {
                        return Err(Error::Validation(format!(
                            "emission {emission_id} is already closed"
                        )));
                    }
                    Some(_) => {}
                }
                sql::query(
                    "UPDATE emissions SET state = 'closed', closed_at_ms = $1 WHERE id = $2",
                )
                .bind(now_ms)
                .bind(emission_id)
                .execute(&mut *conn)
                .await?;
                let closed: Vec<i64> = sql::query_scalar(
                    "UPDATE blocks SET state = 'closed', published_at_ms = $1 \
                     WHERE emission_id = $2 AND state IN ('open', 'suspended') RETURNING id",
                )
                .bind(now_ms)
                .bind(emission_id)
                .fetch_all(&mut *conn)
                .await?;
                Ok(((), json!({"blocks_closed": closed})))
            })
        })
        .await
    }

    /// Takes an open block out of sale; sales go on from the other open
    /// blocks of its stake, if any.
    pub async fn suspend_block(&self, block_id: i64) -> Result<(), Error> {
        self.suspend_block_as(Actor::Operator, block_id).await
    }

    /// [`Service::suspend_block`], recorded in the trail as `actor`'s.
    pub async fn suspend_block_as(&self, actor: Actor, block_id: i64) -> Result<(), Error> {
        self.move_block(actor, block_id, "open", "suspended", "block_suspend")
            .await
    }

    /// Puts a suspended block back on sale (its emission must be open).
    pub async fn resume_block(&self, block_id: i64) -> Result<(), Error> {
        self.resume_block_as(Actor::Operator, block_id).await
    }

    /// [`Service::resume_block`], recorded in the trail as `actor`'s.
    pub async fn resume_block_as(&self, actor: Actor, block_id: i64) -> Result<(), Error> {
        self.move_block(actor, block_id, "suspended", "open", "block_resume")
            .await
    }

    async fn move_block(
        &self,
        actor: Actor,
        block_id: i64,
        from: &'static str,
        to: &'static str,
        action: &'static str,
    ) -> Result<(), Error> {
        let request = json!({"block_id": block_id});
        self.write_recorded(actor, action, request, move |conn, _| {
            Box::pin(async move {
                let row: Option<(String, String)> = sql::query_as(
                    "SELECT b.state, e.state FROM blocks b JOIN emissions e ON e.id = b.emission_id \
                     WHERE b.id = $1",
                )
                .bind(block_id)
                .fetch_optional(&mut *conn)
                .await?;
                let Some((state, emission_state)) = row else {
                    return Err(Error::NotFound);
                };
                if state != from {
                    return Err(Error::Validation(format!(
                        "block {block_id} is {state}, not {from}"
                    )));
                }
                if emission_state != "open" {
                    return Err(Error::Validation(format!(
                        "the emission of block {block_id} is closed"
                    )));
                }
                sql::query("UPDATE blocks SET state = $1 WHERE id = $2 AND state = $3")
                    .bind(to)
                    .bind(block_id)
                    .bind(from)
                    .execute(&mut *conn)
                    .await?;
                Ok(((), json!({"state": to})))
            })
        })
        .await
    }

    fn block_view(&self, row: &sql::Row) -> Result<BlockView, Error> {
        let id: i64 = row.try_get("id")?;
        let published: Option<i64> = row.try_get("published_at_ms")?;
        // The secret leaves the server only once the block is closed: only
        // then is it opened.
        let secret = match published {
            Some(_) => {
                let sealed: Option<Vec<u8>> = row.try_get("sealed_secret")?;
                let secret = self
                    .secrets_key()?
                    .open(id, sealed.as_deref().unwrap_or_default())?;
                Some(hex::encode(secret.as_bytes()))
            }
            None => None,
        };
        let game: String = row.try_get("game_id")?;
        Ok(BlockView {
            id,
            emission: row.try_get("emission_id")?,
            game: game.clone(),
            stake_cents: row.try_get("stake_cents")?,
            state: row.try_get("state")?,
            commitment: row.try_get("commitment")?,
            units_sold: Some(row.try_get("units_sold")?),
            units_per_block: row.try_get::<i64, _>("units_per_block")? as u32,
            secret,
            game_sha256: row.try_get("game_sha256")?,
            commitment_form: commitment_form(&game),
        })
    }

    /// Every block, oldest first, with secrets only where published: the
    /// operator's view.
    pub async fn blocks(&self) -> Result<Vec<BlockView>, Error> {
        let rows = sql::query(
            "SELECT b.id, b.emission_id, b.game_id, b.stake_cents, b.units_per_block, b.state, \
             b.commitment, b.units_sold, b.sealed_secret, b.published_at_ms, e.game_sha256 \
             FROM blocks b JOIN emissions e ON e.id = b.emission_id ORDER BY b.id",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        rows.iter().map(|row| self.block_view(row)).collect()
    }

    /// One block of [`Service::blocks`], or [`Error::NotFound`].
    pub async fn block(&self, id: i64) -> Result<BlockView, Error> {
        let blocks = self.blocks().await?;
        blocks
            .into_iter()
            .find(|b| b.id == id)
            .ok_or(Error::NotFound)
    }

    /// One emission of [`Service::emissions`], or [`Error::NotFound`].
    pub async fn emission(&self, id: i64) -> Result<EmissionView, Error> {
        let emissions = self.emissions().await?;
        emissions
            .into_iter()
            .find(|e| e.id == id)
            .ok_or(Error::NotFound)
    }

    /// [`Service::blocks`] as the public sees them: the units sold of a
    /// block still on sale (open or suspended) are not shown, since with the
    /// prizes paid they would tell when its top prizes are still unsold.
    pub async fn public_blocks(&self) -> Result<Vec<BlockView>, Error> {
        let mut blocks = self.blocks().await?;
        for block in &mut blocks {
            if matches!(block.state.as_str(), "open" | "suspended") {
                block.units_sold = None;
            }
        }
        Ok(blocks)
    }

    pub async fn emissions(&self) -> Result<Vec<EmissionView>, Error> {
        let rows = sql::query(
            "SELECT id, name, state, created_at_ms, game_sha256, definition FROM emissions \
             ORDER BY id",
        )
        .fetch_all(&mut *self.db.conn().await?)
        .await?;
        let blocks = self.blocks().await?;
        let mut emissions = Vec::with_capacity(rows.len());
        for row in rows {
            let id: i64 = row.try_get("id")?;
            let sha: String = row.try_get("game_sha256")?;
            let definition: Option<String> = row.try_get("definition")?;
            let game = self.settings.games.pinned(&sha, definition.as_deref()).ok();
            emissions.push(EmissionView {
                id,
                name: row.try_get("name")?,
                game: game.map(GameRef::of),
                game_sha256: sha,
                state: row.try_get("state")?,
                created_at: rfc3339(row.try_get("created_at_ms")?),
                blocks: blocks
                    .iter()
                    .filter(|b| b.emission == id)
                    .cloned()
                    .collect(),
            });
        }
        Ok(emissions)
    }
}

/// An emission to create: its game as the catalogue has it, and its blocks'
/// stakes and fresh secrets.
#[derive(Clone)]
struct NewEmission {
    actor: Actor,
    name: String,
    entry: Entry,
    blocks: Vec<(i64, BlockSecret)>,
    key: SecretsKey,
    now_ms: i64,
}

impl NewEmission {
    /// The writer job: the emission, its blocks, and its trail record.
    async fn insert(&self, conn: &mut Conn) -> Result<i64, Error> {
        let Entry { game, text } = self.entry;
        let emission_id: i64 = sql::query_scalar(
            "INSERT INTO emissions (name, state, created_at_ms, game_id, game_sha256, \
             definition) VALUES ($1, 'open', $2, $3, $4, $5) RETURNING id",
        )
        .bind(&self.name)
        .bind(self.now_ms)
        .bind(game.id())
        .bind(game.sha256_hex())
        .bind(text)
        .fetch_one(&mut *conn)
        .await?;
        let mut created = Vec::with_capacity(self.blocks.len());
        for (stake_cents, secret) in &self.blocks {
            created.push(
                self.insert_block(conn, emission_id, *stake_cents, secret)
                    .await?,
            );
        }
        let stakes: Vec<i64> = self.blocks.iter().map(|(stake, _)| *stake).collect();
        // Every game's record names the definition its blocks were dealt
        // from (older island records have neither key).
        let request = json!({
            "name": self.name,
            "stakes_cents": stakes,
            "game": game.id(),
            "game_sha256": game.sha256_hex(),
        });
        trail::append(
            conn,
            self.now_ms,
            &self.actor,
            "emission_create",
            request,
            json!({"emission_id": emission_id, "blocks": created}),
        )
        .await?;
        Ok(emission_id)
    }

    /// One block, its secret sealed; what the trail records of it.
    async fn insert_block(
        &self,
        conn: &mut Conn,
        emission_id: i64,
        stake_cents: i64,
        secret: &BlockSecret,
    ) -> Result<serde_json::Value, Error> {
        let game = self.entry.game;
        // The island's is `sha256(secret)`, as before the catalogue; any
        // other game's covers its definition.
        let commitment = game.commitment(secret).to_hex();
        let block_id: i64 = sql::query_scalar(
            "INSERT INTO blocks (emission_id, game_id, stake_cents, units_per_block, \
             secret, commitment, state, created_at_ms) \
             VALUES ($1, $2, $3, $4, $5, $6, 'open', $7) RETURNING id",
        )
        .bind(emission_id)
        .bind(game.id())
        .bind(stake_cents)
        .bind(i64::from(game.units_per_block()))
        // Only the sealed secret is stored; it is sealed for the block's id,
        // known once the row is in.
        .bind(Vec::<u8>::new())
        .bind(&commitment)
        .bind(self.now_ms)
        .fetch_one(&mut *conn)
        .await?;
        sql::query("UPDATE blocks SET sealed_secret = $1 WHERE id = $2")
            .bind(self.key.seal(block_id, secret))
            .bind(block_id)
            .execute(&mut *conn)
            .await?;
        // The commitment is public from now on; the secret never enters the
        // trail.
        Ok(json!({
            "block_id": block_id,
            "stake_cents": stake_cents,
            "commitment": commitment,
        }))
    }
}
