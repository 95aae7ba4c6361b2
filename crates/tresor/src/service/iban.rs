//! The IBAN the player gives for the operator to check (issue 32, finding
//! 2): the current password asked, refused once verified or while the
//! account is suspended; a new one puts its proof of IBAN back to review
//! and the player is told by mail.

use super::Service;
use super::notify::Notice;
use super::reauth::{PasswordConfirmed, PasswordOf};
use crate::account::{Iban, Status};
use crate::error::Error;
use crate::model::Player;
use crate::store::accounts as store;
use crate::store::suspension;
use crate::trail::{self, Actor};
use serde_json::json;

impl Service {
    /// Gives the IBAN the operator will check; only before verification
    /// (after it, the operator changes it with the identity check), the
    /// current password `confirmed`. A new IBAN puts its proof back to
    /// review (it proved the old one), and the player is told by mail. A
    /// suspended account's is refused (`account_suspended`, issue 42).
    pub async fn set_iban(
        &self,
        player: &Player,
        confirmed: PasswordConfirmed,
        iban: Iban,
    ) -> Result<(), Error> {
        confirmed.check(PasswordOf::Player(player.id))?;
        let now_ms = self.now_ms();
        let who = player.clone();
        let masked = Iban::masked(iban.as_str());
        let changed = self
            .write(move |conn| {
                let player = who.clone();
                let iban = iban.clone();
                Box::pin(async move {
                    suspension::refuse_changes(conn, player.id).await?;
                    let row = store::account(conn, player.id).await?;
                    match row.status {
                        Status::Closed => return Err(Error::AccountClosed),
                        Status::Verified => {
                            return Err(Error::Validation(
                                "iban: a verified account's IBAN is changed by the operator, with a new check"
                                    .to_owned(),
                            ));
                        }
                        Status::Provisional => {}
                    }
                    // The same IBAN again changes nothing (not its date either:
                    // a proof checked since still proves it).
                    let changed = row.iban.as_deref() != Some(iban.as_str());
                    let proof = if changed {
                        store::set_iban(conn, player.id, iban.as_str(), now_ms).await?;
                        super::documents::iban_proof_back_to_review(conn, &player, now_ms).await?
                    } else {
                        None
                    };
                    trail::append(
                        conn,
                        now_ms,
                        &Actor::player(player.id, &player.username),
                        "iban_set",
                        json!({"iban": Iban::masked(iban.as_str())}),
                        json!({"changed": changed, "proof_back_to_review": proof}),
                    )
                    .await?;
                    Ok(changed)
                })
            })
            .await?;
        if changed {
            let username = player.username.clone();
            self.notify(
                player.id,
                Notice::IbanChanged {
                    username,
                    iban: masked,
                },
            )
            .await;
        }
        Ok(())
    }
}
