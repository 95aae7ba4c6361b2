//! The player account: opening with an identity (called by the
//! registration's job), its view, the rules version, the reminder,
//! closing (the IBAN the player gives: `iban.rs`), and the operator's side (listing and verifying accounts,
//! publishing rules, importing the national ban list, the reserves).

use super::{Service, rfc3339, sha256_hex};
use crate::account::{self, Iban, Identity, ReminderMinutes, Status, parse_ban_csv};
use crate::error::Error;
use crate::model::{PENDING_WITHDRAWALS_ACCOUNT, Player, RESERVES_ACCOUNT};
use crate::store::accounts::{self as store, AccountListing, NewAccount, ReserveRow, Transfer};
use crate::store::persons;
use crate::store::{Conn, bans};
use crate::trail::{self, Actor};
use serde::Serialize;
use serde_json::json;

/// What opening an account for real money adds to a registration.
#[derive(Debug, Clone)]
pub struct Opening {
    pub identity: Identity,
    pub marketing_consent: bool,
    pub iban: Option<Iban>,
}

/// Writes the account row of a player just registered, inside the
/// registration's job: with an opening, refuses a minor, a person on the
/// ban list or a person who has an account already (the whole registration
/// rolls back) and starts the provisional period.
pub(super) async fn on_register(
    conn: &mut Conn,
    player: &Player,
    opening: Option<&Opening>,
    provisional_ms: i64,
    now_ms: i64,
) -> Result<(), Error> {
    let rules_version = store::rules_version(conn).await?;
    if let Some(opening) = opening {
        opening.identity.refuse_minor(now_ms)?;
        if bans::is_banned(
            conn,
            &opening.identity.name_key(),
            &opening.identity.birth_date,
        )
        .await?
        {
            return Err(Error::Banned);
        }
        // One account per person, closed or not; the unique index on
        // `identities.person_key` holds it if this check ever let two by.
        if persons::account_of_person(conn, &opening.identity.person_key())
            .await?
            .is_some()
        {
            return Err(Error::PersonHasAccount);
        }
    }
    let inserted = store::insert_account(
        conn,
        &NewAccount {
            player_id: player.id,
            identity: opening.map(|o| &o.identity),
            provisional_until_ms: opening.map(|_| now_ms + provisional_ms),
            rules_version,
            marketing_consent: opening.is_some_and(|o| o.marketing_consent),
            iban: opening.and_then(|o| o.iban.as_ref()).map(Iban::as_str),
            now_ms,
        },
    )
    .await;
    match inserted {
        Err(error) if persons::is_second_account(&error) => return Err(Error::PersonHasAccount),
        other => other?,
    }
    if let Some(opening) = opening {
        // The trail keeps that an identity was given, not the identity.
        trail::append(
            conn,
            now_ms,
            &Actor::player(player.id, &player.username),
            "account_opened",
            json!({
                "identity": true,
                "rules_version": rules_version,
                "marketing_consent": opening.marketing_consent,
                "iban": opening.iban.as_ref().map(|i| Iban::masked(i.as_str())),
            }),
            json!({"status": "provisional", "provisional_until": rfc3339(now_ms + provisional_ms)}),
        )
        .await?;
    }
    Ok(())
}

/// The account as its player sees it.
#[derive(Debug, Clone, Serialize)]
pub struct AccountView {
    pub status: Status,
    pub has_identity: bool,
    pub identity: Option<Identity>,
    /// The IBAN given, masked.
    pub iban: Option<String>,
    pub banned: bool,
    /// Suspended by the operator: the player logs in to read (balance,
    /// statement, history) and may ask a withdrawal, held until the
    /// suspension is lifted; deposits and stakes are refused.
    pub suspended: bool,
    pub opened_at: String,
    pub verified_at: Option<String>,
    pub closed_at: Option<String>,
    /// A provisional account with an identity stakes until then.
    pub provisional_until: Option<String>,
    pub can_deposit: bool,
    pub can_stake: bool,
    pub can_withdraw: bool,
    pub rules_version_accepted: i64,
    pub rules_version_current: i64,
    pub marketing_consent: bool,
    pub reminder_every_minutes: Option<i64>,
    pub balance_cents: i64,
}

/// What closing an account did with its balance.
#[derive(Debug, Clone, Serialize)]
pub struct Closed {
    pub balance_cents: i64,
    /// The withdrawal to the verified IBAN, for the operator to pay.
    pub withdrawal_id: Option<i64>,
    /// What is kept in reserve (no verified IBAN to pay it to).
    pub reserved_cents: i64,
}

/// A ban-list import's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct BanImport {
    pub version: i64,
    pub entries: usize,
    pub sha256: String,
    /// Accounts excluded by this import.
    pub banned: Vec<String>,
    /// Accounts no longer on the list.
    pub lifted: Vec<String>,
}

impl Service {
    /// How long a provisional account may stake unverified.
    pub(super) fn provisional_ms(&self) -> i64 {
        self.settings.provisional_days * 24 * 3600 * 1000
    }

    pub async fn account(&self, player: &Player) -> Result<AccountView, Error> {
        let mut conn = self.db.conn().await?;
        let row = store::account(&mut conn, player.id).await?;
        let identity = store::identity(&mut conn, player.id).await?;
        let rules_current = store::rules_version(&mut conn).await?;
        let balance_cents = store::balance(&mut conn, player.account_id).await?;
        let now_ms = self.now_ms();
        // A person's second account takes no money in and no stake.
        let open = row.status != Status::Closed
            && row.banned_at_ms.is_none()
            && row.suspended_at_ms.is_none()
            && row.duplicate_of.is_none();
        Ok(AccountView {
            status: row.status,
            has_identity: row.has_identity,
            identity,
            iban: row.iban.as_deref().map(Iban::masked),
            banned: row.banned_at_ms.is_some(),
            suspended: row.suspended_at_ms.is_some(),
            opened_at: rfc3339(row.opened_at_ms),
            verified_at: row.verified_at_ms.map(rfc3339),
            closed_at: row.closed_at_ms.map(rfc3339),
            provisional_until: row.provisional_until_ms.map(rfc3339),
            can_deposit: open && row.has_identity,
            can_stake: open
                && row.provisional_until_ms.is_none_or(|t| t > now_ms)
                && row.rules_version >= rules_current,
            can_withdraw: row.status == Status::Verified,
            rules_version_accepted: row.rules_version,
            rules_version_current: rules_current,
            marketing_consent: row.marketing_consent,
            reminder_every_minutes: row.reminder_minutes,
            balance_cents,
        })
    }

    /// The account's row as stored: what the operator reviews (the whole
    /// IBAN, when it was given), who verified it, a person's second account.
    pub async fn account_row(&self, player: &Player) -> Result<store::AccountRow, Error> {
        store::account(&mut *self.db.conn().await?, player.id).await
    }

    /// The player accepts the rules of `version`, which must be the one in force.
    pub async fn accept_rules(&self, player: &Player, version: i64) -> Result<(), Error> {
        let request = json!({"version": version});
        let player_id = player.id;
        let actor = Actor::player(player.id, &player.username);
        self.write_recorded(actor, "rules_accepted", request, move |conn, _| {
            Box::pin(async move {
                let current = store::rules_version(conn).await?;
                if version != current {
                    return Err(Error::Validation(format!(
                        "version: the rules in force are version {current}"
                    )));
                }
                store::accept_rules(conn, player_id, version).await?;
                Ok(((), json!({})))
            })
        })
        .await
    }

    /// Gives or withdraws the marketing consent, at any time after opening
    /// (even on a closed account: it says only whether offers may be sent).
    pub async fn set_marketing_consent(&self, player: &Player, consent: bool) -> Result<(), Error> {
        let request = json!({"consent": consent});
        let player_id = player.id;
        let actor = Actor::player(player.id, &player.username);
        self.write_recorded(actor, "marketing_consent_set", request, move |conn, _| {
            Box::pin(async move {
                crate::store::sql::query(
                    "UPDATE player_accounts SET marketing_consent = $1 WHERE player_id = $2",
                )
                .bind(i64::from(consent))
                .bind(player_id)
                .execute(&mut *conn)
                .await?;
                Ok(((), json!({})))
            })
        })
        .await
    }

    /// Sets (or clears) the time reminder.
    pub async fn set_reminder(&self, player: &Player, every: ReminderMinutes) -> Result<(), Error> {
        let request = json!({"every_minutes": every.minutes()});
        let player_id = player.id;
        let actor = Actor::player(player.id, &player.username);
        self.write_recorded(actor, "reminder_set", request, move |conn, _| {
            Box::pin(async move {
                store::set_reminder(conn, player_id, every.minutes()).await?;
                Ok(((), json!({})))
            })
        })
        .await
    }

    /// Closes the account: a positive balance becomes a withdrawal to the
    /// verified IBAN or, without one, is kept in reserve; every session ends.
    pub async fn close_account(&self, player: &Player) -> Result<Closed, Error> {
        let now_ms = self.now_ms();
        let player = player.clone();
        self.write(move |conn| {
            let player = player.clone();
            Box::pin(async move {
                let row = store::account(conn, player.id).await?;
                if row.status == Status::Closed {
                    return Err(Error::AccountClosed);
                }
                if store::play_in_progress(conn, player.id).await? {
                    return Err(Error::Validation(
                        "finish the game in progress before closing the account".to_owned(),
                    ));
                }
                let balance_cents = store::balance(conn, player.account_id).await?;
                let mut closed = Closed {
                    balance_cents,
                    withdrawal_id: None,
                    reserved_cents: 0,
                };
                match (&row.iban, row.status) {
                    _ if balance_cents == 0 => {}
                    (Some(iban), Status::Verified) => {
                        let id = store::insert_withdrawal(
                            conn,
                            player.id,
                            balance_cents,
                            iban,
                            true,
                            now_ms,
                        )
                        .await?;
                        store::transfer(
                            conn,
                            Transfer {
                                debit: player.account_id,
                                credit: PENDING_WITHDRAWALS_ACCOUNT,
                                amount_cents: balance_cents,
                                kind: "withdrawal",
                                deposit_id: None,
                                withdrawal_id: Some(id),
                                now_ms,
                            },
                        )
                        .await?;
                        closed.withdrawal_id = Some(id);
                    }
                    _ => {
                        reserve(conn, &player, balance_cents, now_ms).await?;
                        closed.reserved_cents = balance_cents;
                    }
                }
                store::mark_closed(conn, player.id, now_ms).await?;
                let sessions = store::end_sessions(conn, player.id, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::player(player.id, &player.username),
                    "account_closed",
                    json!({}),
                    json!({
                        "balance_cents": balance_cents,
                        "withdrawal_id": closed.withdrawal_id,
                        "reserved_cents": closed.reserved_cents,
                        "sessions_ended": sessions,
                    }),
                )
                .await?;
                Ok(closed)
            })
        })
        .await
    }

    // -- The operator's side ------------------------------------------------

    pub async fn list_accounts(
        &self,
        status: Option<Status>,
    ) -> Result<Vec<AccountListing>, Error> {
        let mut conn = self.db.conn().await?;
        store::list_accounts(&mut conn, status.map(Status::as_str)).await
    }

    /// The operator has checked the identity documents and that `reviewed`,
    /// the IBAN they read on file, is in the player's name: the account is
    /// verified. Refused (`IbanChanged`) when the IBAN on file is no longer
    /// the one reviewed.
    pub async fn verify_account(&self, player: &Player, reviewed: &Iban) -> Result<(), Error> {
        self.verify_account_as(Actor::Operator, player, reviewed)
            .await
    }

    /// [`Service::verify_account`], recorded in the trail as `actor`'s (who
    /// then may not approve the account's withdrawals).
    pub async fn verify_account_as(
        &self,
        actor: Actor,
        player: &Player,
        reviewed: &Iban,
    ) -> Result<(), Error> {
        let now_ms = self.now_ms();
        let player_id = player.id;
        let player = player.clone();
        let reviewed = reviewed.clone();
        self.write(move |conn| {
            let player = player.clone();
            let actor = actor.clone();
            let reviewed = reviewed.clone();
            Box::pin(async move {
                let row = store::account(conn, player.id).await?;
                match row.status {
                    Status::Closed => return Err(Error::AccountClosed),
                    Status::Verified => {
                        return Err(Error::Validation(
                            "this account is already verified".to_owned(),
                        ));
                    }
                    Status::Provisional => {}
                }
                if !row.has_identity {
                    return Err(Error::Validation(
                        "this account has no identity to check (a demo registration)".to_owned(),
                    ));
                }
                let Some(iban) = row.iban else {
                    return Err(Error::Validation(
                        "this account has no IBAN yet: the player gives it first".to_owned(),
                    ));
                };
                let changed = || Error::IbanChanged {
                    current: Iban::masked(&iban),
                    set_at_ms: row.iban_set_at_ms.unwrap_or(row.opened_at_ms),
                };
                if iban != reviewed.as_str() {
                    return Err(changed());
                }
                if !super::documents::all_verified(conn, player.id).await? {
                    return Err(Error::DocumentsRequired);
                }
                // A proof checked before this IBAN was given proves another.
                super::documents::check_iban_proof_current(
                    conn,
                    player.id,
                    row.iban_set_at_ms.unwrap_or(row.opened_at_ms),
                )
                .await?;
                // The update checks the IBAN again: nothing can slip between.
                if !store::mark_verified(conn, player.id, &iban, &actor.label(), now_ms).await? {
                    return Err(changed());
                }
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "account_verified",
                    json!({"player_id": player.id, "username": player.username,
                           "iban": Iban::masked(&iban), "iban_reviewed": true}),
                    json!({"status": "verified", "verified_by": actor.label()}),
                )
                .await?;
                Ok(())
            })
        })
        .await?;
        self.notify(player_id, super::notify::Notice::AccountVerified)
            .await;
        Ok(())
    }

    /// Publishes a new version of the rules: every player accepts it before
    /// their next purchase. Returns the new version.
    pub async fn publish_rules(&self) -> Result<i64, Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                let version = store::rules_version(conn).await? + 1;
                store::set_rules_version(conn, version).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::Operator,
                    "rules_published",
                    json!({"version": version}),
                    json!({}),
                )
                .await?;
                Ok(version)
            })
        })
        .await
    }

    /// Imports the national ban list (CSV): it replaces the one in force as
    /// a new version, and every account it matches is excluded at once (its
    /// sessions end), in the same job.
    pub async fn import_ban_list(&self, csv: &str) -> Result<BanImport, Error> {
        self.import_ban_list_as(Actor::Operator, csv).await
    }

    /// [`Service::import_ban_list`], recorded in the trail as `actor`'s.
    pub async fn import_ban_list_as(&self, actor: Actor, csv: &str) -> Result<BanImport, Error> {
        let entries = parse_ban_csv(csv)?;
        let sha256 = sha256_hex(csv.as_bytes());
        let now_ms = self.now_ms();
        self.write(move |conn| {
            let entries = entries.clone();
            let sha256 = sha256.clone();
            let actor = actor.clone();
            Box::pin(async move {
                // Identities from before person keys are keyed first, so that
                // the new list is matched against every one as it is now.
                persons::rekey(conn, now_ms).await?;
                let version = bans::replace_ban_list(conn, &entries, &sha256, now_ms).await?;
                let (banned, lifted) = bans::apply_ban_list(conn, now_ms).await?;
                let names = |players: &[Player]| {
                    players
                        .iter()
                        .map(|p| p.username.clone())
                        .collect::<Vec<_>>()
                };
                trail::append(
                    conn,
                    now_ms,
                    &actor,
                    "ban_list_imported",
                    json!({"version": version, "entries": entries.len(), "sha256": sha256}),
                    json!({
                        "banned_player_ids": banned.iter().map(|p| p.id).collect::<Vec<_>>(),
                        "lifted_player_ids": lifted.iter().map(|p| p.id).collect::<Vec<_>>(),
                    }),
                )
                .await?;
                Ok(BanImport {
                    version,
                    entries: entries.len(),
                    sha256,
                    banned: names(&banned),
                    lifted: names(&lifted),
                })
            })
        })
        .await
    }

    /// Keys the identities and ban entries written before the names were
    /// normalised as they are now (`account::names`), marks a person's
    /// second account, and matches every identity against the ban list in
    /// force again, banning at once those it now names; in one writer job,
    /// in the trail when it changed anything. Run by `tresor serve` at start,
    /// as `backfill_username_skeletons` is.
    pub async fn rematch_identities(&self) -> Result<persons::Rekeyed, Error> {
        let now_ms = self.now_ms();
        self.write(move |conn| {
            Box::pin(async move {
                let rekeyed = persons::rekey(conn, now_ms).await?;
                if rekeyed == persons::Rekeyed::default() {
                    return Ok(rekeyed);
                }
                let (banned, lifted) = bans::apply_ban_list(conn, now_ms).await?;
                trail::append(
                    conn,
                    now_ms,
                    &Actor::System,
                    "identities_rematched",
                    json!({"identities": rekeyed.identities, "ban_entries": rekeyed.ban_entries}),
                    json!({
                        "banned_player_ids": banned.iter().map(|p| p.id).collect::<Vec<_>>(),
                        "lifted_player_ids": lifted.iter().map(|p| p.id).collect::<Vec<_>>(),
                        "second_accounts": rekeyed.duplicates.iter()
                            .map(|(account, first)| json!({"player_id": account, "first_player_id": first}))
                            .collect::<Vec<_>>(),
                    }),
                )
                .await?;
                Ok(rekeyed)
            })
        })
        .await
    }

    pub async fn reserves(&self) -> Result<Vec<ReserveRow>, Error> {
        store::reserves(&mut *self.db.conn().await?).await
    }
}

/// Moves a closed account's money to the reserves, kept six years.
pub(super) async fn reserve(
    conn: &mut Conn,
    player: &Player,
    amount_cents: i64,
    now_ms: i64,
) -> Result<(), Error> {
    store::transfer(
        conn,
        Transfer {
            debit: player.account_id,
            credit: RESERVES_ACCOUNT,
            amount_cents,
            kind: "reserve",
            deposit_id: None,
            withdrawal_id: None,
            now_ms,
        },
    )
    .await?;
    store::add_reserve(
        conn,
        player.id,
        amount_cents,
        now_ms + account::RESERVE_KEEP_MS,
        now_ms,
    )
    .await
}
