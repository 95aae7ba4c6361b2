//! The signed log's key rotation (docs/AUDIT.md, "Keys"): the new key is
//! announced in the log itself, by a record that the current key signs.

use super::Service;
use crate::error::Error;
use crate::logkey::LogSeed;
use crate::store::sql;
use crate::trail::{self, Actor};
use serde_json::json;

impl Service {
    /// Appends a `log_key_rotated` record naming the new key's verifier key
    /// and lists the key as the installation's current one (with the
    /// record that announced it), in one writer job: the transaction's
    /// checkpoint is signed with the current key. Returns the new vkey.
    /// Every writer must then be started again with the new key.
    pub async fn rotate_log_key(&self, actor: Actor, new: &LogSeed) -> Result<String, Error> {
        let installation = trail::log::installation_id(&mut *self.db.conn().await?).await?;
        let vkey = new.named(&installation).vkey().to_owned();
        if self.db.log_key.as_ref().map(|k| k.vkey()) == Some(vkey.as_str()) {
            return Err(Error::Validation(
                "the new log key is the current one".to_owned(),
            ));
        }
        let now_ms = self.now_ms();
        let announced = vkey.clone();
        self.write(move |conn| {
            let (actor, vkey) = (actor.clone(), announced.clone());
            Box::pin(async move {
                let idx = trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "log_key_rotated",
                    json!({"vkey": vkey}),
                    json!({}),
                )
                .await?;
                let log_id = trail::batch_head().map(|h| h.log_id);
                sql::query(
                    "INSERT INTO log_keys (vkey, since_ms, log_id, idx) VALUES ($1, $2, $3, $4)",
                )
                .bind(vkey)
                .bind(now_ms)
                .bind(log_id)
                .bind(idx)
                .execute(conn)
                .await?;
                Ok(())
            })
        })
        .await?;
        Ok(vkey)
    }
}
