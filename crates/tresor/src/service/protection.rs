//! Protecting players, as the service does it: reading a player's caps,
//! changing them, excluding a player (the rules and their storage are in
//! `crate::protect`).

use super::Service;
use crate::error::Error;
use crate::model::Player;
use crate::protect::{self, ExclusionLength, LimitChange, LimitsView};
use crate::trail::Actor;

impl Service {
    /// The player's caps, what is used and left of them, and any pending
    /// raise; and the end of an exclusion in force.
    pub async fn protection(&self, player: &Player) -> Result<(LimitsView, Option<i64>), Error> {
        let mut conn = self.db.conn().await?;
        protect::protection(&mut conn, player.id, self.now_ms()).await
    }

    /// Changes one cap or both (recorded in the trail); returns the caps.
    pub async fn change_limits(
        &self,
        player: &Player,
        change: LimitChange,
    ) -> Result<LimitsView, Error> {
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let player = player.clone();
            Box::pin(async move { protect::change_limits(conn, &player, change, now_ms).await })
        })
        .await
    }

    /// Excludes a player from play for `length` from now, at the player's
    /// request or the operator's: every session of the player ends, and play,
    /// deposits and login are refused until the returned time. An exclusion
    /// can be lengthened, never shortened.
    pub async fn exclude(
        &self,
        player: &Player,
        by: Actor,
        length: ExclusionLength,
    ) -> Result<i64, Error> {
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let (player, by) = (player.clone(), by.clone());
            Box::pin(async move { protect::exclude(conn, &player, &by, length, now_ms).await })
        })
        .await
    }
}
