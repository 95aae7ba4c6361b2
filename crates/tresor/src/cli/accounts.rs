//! The operator's commands for player accounts: `account list|verify`,
//! `withdrawal list|approve|reject`, `banlist import`, `reserves`, `rules
//! publish`; and `serve`'s payment-provider flags. Every change is recorded
//! in the game trail as the operator's.

use super::Usage;
use super::db::{DbArgs, ListArgs, open_service};
use crate::account::{Iban, Status};
use crate::error::Error;
use crate::service::{FourEyes, Payments, Service, Settings, Settlement, rfc3339};
use crate::trail::Actor;
use anyhow::Context;
use clap::{Args, Subcommand};
use std::path::PathBuf;

/// `tresor serve`'s payment provider and provisional accounts.
#[derive(Debug, Clone, Args)]
pub struct PaymentArgs {
    /// The payment provider's name, stored with each deposit.
    #[arg(long, env = "TRESOR_PAYMENT_PROVIDER", default_value = "sandbox")]
    pub payment_provider: String,
    /// The provider's payment page; `{deposit_id}` and `{amount_cents}` are
    /// filled in. The default is the demo's sandbox.
    #[arg(
        long,
        env = "TRESOR_PAYMENT_PAY_URL",
        default_value = "/sandbox/pay?deposit={deposit_id}"
    )]
    pub payment_pay_url: String,
    /// The secret shared with the provider for the webhook's HMAC, in hex
    /// (none: a random one, which only the sandbox can use).
    #[arg(long, env = "TRESOR_PAYMENT_WEBHOOK_SECRET")]
    pub payment_webhook_secret: Option<String>,
    /// Days a provisional account may stake before the operator verifies it.
    #[arg(long, env = "TRESOR_PROVISIONAL_DAYS", default_value_t = crate::account::DEFAULT_PROVISIONAL_DAYS)]
    pub provisional_days: i64,
}

impl PaymentArgs {
    /// The settings these flags give.
    pub fn apply(&self, settings: Settings) -> anyhow::Result<Settings> {
        let webhook_secret = self
            .payment_webhook_secret
            .as_deref()
            .map(hex::decode)
            .transpose()
            .map_err(|_| {
                Usage(
                    "--payment-webhook-secret (TRESOR_PAYMENT_WEBHOOK_SECRET): hexadecimal digits"
                        .to_owned(),
                )
            })?;
        // An empty key signs for anyone: HMAC takes it without complaint.
        if let Some(secret) = &webhook_secret
            && secret.len() < MIN_WEBHOOK_SECRET_BYTES
        {
            return Err(Usage(format!(
                "--payment-webhook-secret (TRESOR_PAYMENT_WEBHOOK_SECRET): {} bytes, where at \
                 least {MIN_WEBHOOK_SECRET_BYTES} are needed ({} hex digits): a short or empty \
                 secret lets anyone sign a deposit's confirmation",
                secret.len(),
                2 * MIN_WEBHOOK_SECRET_BYTES
            ))
            .into());
        }
        if self.provisional_days < 1 {
            return Err(Usage("--provisional-days: at least 1".to_owned()).into());
        }
        Ok(Settings {
            provisional_days: self.provisional_days,
            payments: Payments {
                provider: self.payment_provider.clone(),
                pay_url: self.payment_pay_url.clone(),
                webhook_secret,
            },
            ..settings
        })
    }
}

/// The shortest webhook secret `tresor serve` takes (the HMAC's own size).
pub const MIN_WEBHOOK_SECRET_BYTES: usize = 32;

impl PaymentArgs {
    /// Refuses, outside demo mode, what would take real money with the
    /// demo's provider: no webhook secret (a random one nobody else can sign
    /// with, so no deposit ever completes) or the sandbox's pay URL (which
    /// answers 404 there).
    pub fn refuse_outside_demo(&self) -> Result<(), Usage> {
        if self.payment_webhook_secret.is_none() {
            return Err(Usage(
                "--payment-webhook-secret (TRESOR_PAYMENT_WEBHOOK_SECRET) is required outside \
                 demo mode: the secret shared with the payment provider, at least 32 bytes in hex"
                    .to_owned(),
            ));
        }
        if self.payment_pay_url.starts_with("/sandbox/") {
            return Err(Usage(format!(
                "--payment-pay-url (TRESOR_PAYMENT_PAY_URL) is the demo's sandbox ({}) outside \
                 demo mode: give the payment provider's page",
                self.payment_pay_url
            )));
        }
        Ok(())
    }
}

/// Four eyes on money (`tresor serve`, `player credit`, `withdrawal
/// approve`): give the same values to the server and to the commands (the
/// environment variables do). The command line counts as one operator,
/// `operator`, whoever types it.
#[derive(Debug, Clone, Args)]
pub struct FourEyesArgs {
    /// The installation has a single operator: the approver of a withdrawal
    /// may be the one who credited or verified the account (off by default:
    /// another operator approves).
    #[arg(long, env = "TRESOR_SINGLE_OPERATOR")]
    pub single_operator: bool,
    /// The largest single credit an operator makes, in cents.
    #[arg(long, env = "TRESOR_CREDIT_MAX_CENTS", default_value_t = FourEyes::default().credit_max_cents)]
    pub credit_max_cents: i64,
    /// What one operator may credit in 24 hours, all players together, in cents.
    #[arg(long, env = "TRESOR_CREDIT_MAX_PER_DAY_CENTS", default_value_t = FourEyes::default().credit_max_per_day_cents)]
    pub credit_max_per_day_cents: i64,
}

impl FourEyesArgs {
    /// The settings these flags give, refusing a limit below one cent.
    pub fn apply(&self, settings: Settings) -> anyhow::Result<Settings> {
        for (flag, value) in [
            ("--credit-max-cents", self.credit_max_cents),
            ("--credit-max-per-day-cents", self.credit_max_per_day_cents),
        ] {
            if value < 1 {
                return Err(Usage(format!("{flag}: at least 1 cent")).into());
            }
        }
        Ok(Settings {
            four_eyes: FourEyes {
                single_operator: self.single_operator,
                credit_max_cents: self.credit_max_cents,
                credit_max_per_day_cents: self.credit_max_per_day_cents,
            },
            ..settings
        })
    }

    /// The service on `db` with these settings.
    pub async fn service(&self, db: &DbArgs) -> anyhow::Result<Service> {
        open_service(db, self.apply(Settings::default())?).await
    }
}

/// `tresor account`.
#[derive(Debug, Subcommand)]
pub enum AccountCommand {
    /// List accounts (all, or of one status).
    List {
        /// provisional, verified or closed.
        #[arg(long)]
        status: Option<String>,
        #[command(flatten)]
        list: ListArgs,
    },
    /// Mark an account verified: identity documents checked, and the IBAN on
    /// file (`account list` shows it) is in the player's name.
    Verify {
        /// The player's username.
        #[arg(long)]
        username: String,
        /// The IBAN reviewed: refused if the account's is no longer this one.
        #[arg(long)]
        iban: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Suspend an account: its sessions end; stakes and deposits are
    /// refused (the player is told neutrally) and its withdrawals held until
    /// it is unsuspended; the player may still log in to read the account.
    Suspend {
        /// The player's username.
        username: String,
        /// Why (kept for the staff and in the trail, never shown to the player).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Lift an account's suspension.
    Unsuspend {
        /// The player's username.
        username: String,
        /// Why (kept in the trail).
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        db: DbArgs,
    },
}

/// `tresor withdrawal`.
#[derive(Debug, Subcommand)]
pub enum WithdrawalCommand {
    /// List withdrawals (pending by default).
    List {
        /// pending, paid, rejected, cancelled or all.
        #[arg(long, default_value = "pending")]
        state: String,
        #[command(flatten)]
        list: ListArgs,
    },
    /// Mark a pending withdrawal paid (the transfer to the IBAN was made).
    /// Four eyes: refused if the command line (`operator`) credited or
    /// verified the account, unless --single-operator.
    Approve {
        /// The withdrawal's id.
        #[arg(long)]
        id: i64,
        #[command(flatten)]
        four_eyes: FourEyesArgs,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Refuse a pending withdrawal: the money goes back to the player.
    Reject {
        /// The withdrawal's id.
        #[arg(long)]
        id: i64,
        /// Why, as the player will read it.
        #[arg(long)]
        reason: String,
        #[command(flatten)]
        db: DbArgs,
    },
}

/// `tresor banlist`.
#[derive(Debug, Subcommand)]
pub enum BanlistCommand {
    /// Import the national ban list (CSV: birth_name,first_names,birth_date):
    /// it replaces the list in force, and matching accounts are excluded at once.
    Import {
        /// The CSV file.
        #[arg(long)]
        file: PathBuf,
        #[command(flatten)]
        db: DbArgs,
    },
}

/// `tresor rules`.
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Publish a new version of the rules: every player accepts it before
    /// their next purchase.
    Publish {
        #[command(flatten)]
        db: DbArgs,
    },
}

/// `tresor reserves`.
pub type ReservesArgs = ListArgs;

pub(super) fn refusal(error: Error) -> anyhow::Error {
    match error {
        Error::Validation(message) => Usage(message).into(),
        Error::NotFound => Usage("not found".to_owned()).into(),
        Error::IbanChanged { .. } => Usage(error.to_string()).into(),
        Error::Database(_) | Error::Sqlite(_) | Error::Unavailable(_) => error.into(),
        other => anyhow::anyhow!("refused: {other}"),
    }
}

pub(super) async fn service(db: &DbArgs) -> anyhow::Result<Service> {
    open_service(db, Settings::default()).await
}

pub async fn run_account(command: AccountCommand) -> anyhow::Result<()> {
    match command {
        AccountCommand::List {
            status,
            list: ListArgs { json, db },
        } => list_accounts(status.as_deref(), json, &db).await,
        AccountCommand::Verify { username, iban, db } => verify(&username, &iban, &db).await,
        AccountCommand::Suspend {
            username,
            reason,
            db,
        } => suspend(&username, &reason, &db, true).await,
        AccountCommand::Unsuspend {
            username,
            reason,
            db,
        } => suspend(&username, &reason, &db, false).await,
    }
}

/// `tresor account list [--status S] [--json]`.
async fn list_accounts(status: Option<&str>, json: bool, db: &DbArgs) -> anyhow::Result<()> {
    let status = match status {
        None => None,
        Some("provisional") => Some(Status::Provisional),
        Some("verified") => Some(Status::Verified),
        Some("closed") => Some(Status::Closed),
        Some(other) => {
            return Err(Usage(format!(
                "--status: provisional, verified or closed, not {other}"
            ))
            .into());
        }
    };
    let accounts = service(db).await?.list_accounts(status).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&accounts)?);
        return Ok(());
    }
    println!(
        "{:>6}  {:<20} {:<12} {:<8} {:<6} {:<20} {:<20} iban",
        "id", "username", "status", "identity", "banned", "opened", "iban given"
    );
    for a in &accounts {
        println!(
            "{:>6}  {:<20} {:<12} {:<8} {:<6} {:<20} {:<20} {}{}{}",
            a.player_id,
            a.username,
            a.status,
            if a.has_identity { "yes" } else { "no" },
            if a.banned { "yes" } else { "no" },
            &rfc3339(a.opened_at_ms)[..19],
            a.iban_set_at_ms
                .map_or("-".to_owned(), |t| rfc3339(t)[..19].to_owned()),
            a.iban.as_deref().unwrap_or("-"),
            if a.iban_changes > 0 {
                format!("  (changed {} time(s))", a.iban_changes)
            } else {
                String::new()
            },
            a.duplicate_of.map_or(String::new(), |first| format!(
                "  (second account of player {first})"
            )),
        );
    }
    Ok(())
}

/// `tresor account verify --username U --iban I`: the IBAN reviewed.
async fn verify(username: &str, iban: &str, db: &DbArgs) -> anyhow::Result<()> {
    let reviewed = Iban::parse(iban).map_err(|e| Usage(format!("--{e}")))?;
    let service = service(db).await?;
    let player = service
        .player_by_username(username)
        .await
        .map_err(|_| Usage(format!("no player named {username}")))?;
    service
        .verify_account(&player, &reviewed)
        .await
        .map_err(refusal)?;
    println!(
        "{} is verified: withdrawals are open, and staking has no deadline",
        player.username
    );
    Ok(())
}

/// `tresor account suspend|unsuspend --username U --reason R`.
async fn suspend(username: &str, reason: &str, db: &DbArgs, suspend: bool) -> anyhow::Result<()> {
    let service = service(db).await?;
    let player = service
        .player_by_username(username)
        .await
        .map_err(|_| Usage(format!("no player named {username}")))?;
    if suspend {
        service
            .suspend_account(Actor::Operator, &player, reason)
            .await
            .map_err(refusal)?;
        println!(
            "{} is suspended: sessions ended; stakes and deposits refused, withdrawals held; logins read only",
            player.username
        );
    } else {
        service
            .unsuspend_account(Actor::Operator, &player, reason)
            .await
            .map_err(refusal)?;
        println!("{} is no longer suspended", player.username);
    }
    Ok(())
}

pub async fn run_withdrawal(command: WithdrawalCommand) -> anyhow::Result<()> {
    match command {
        WithdrawalCommand::List {
            state,
            list: ListArgs { json, db },
        } => {
            let state = match state.as_str() {
                "all" => None,
                "pending" | "paid" | "rejected" | "cancelled" => Some(state.as_str()),
                other => {
                    return Err(Usage(format!(
                        "--state: pending, paid, rejected, cancelled or all, not {other}"
                    ))
                    .into());
                }
            };
            // Every one, page after page: pending ones oldest first.
            let service = service(&db).await?;
            let (mut rows, mut cursor) = service.list_withdrawals(state, None, 500).await?;
            while let Some(after) = cursor {
                let (page, next) = service.list_withdrawals(state, Some(after), 500).await?;
                rows.extend(page);
                cursor = next;
            }
            if json {
                println!("{}", serde_json::to_string_pretty(&rows)?);
            } else {
                println!(
                    "{:>6}  {:<20} {:>14}  {:<10} {:<20} iban",
                    "id", "username", "amount", "state", "requested"
                );
                for w in &rows {
                    println!(
                        "{:>6}  {:<20} {:>14}  {:<10} {:<20} {}{}",
                        w.id,
                        w.username,
                        crate::model::euros(w.amount_cents),
                        w.state,
                        &rfc3339(w.requested_at_ms)[..19],
                        w.iban,
                        if w.closing { "  (closing)" } else { "" }
                    );
                }
            }
        }
        WithdrawalCommand::Approve { id, four_eyes, db } => {
            let w = four_eyes
                .service(&db)
                .await?
                .decide_withdrawal(id, Settlement::Paid, None)
                .await
                .map_err(refusal)?;
            println!(
                "withdrawal {} of {} is paid",
                w.id,
                crate::model::euros(w.amount_cents)
            );
        }
        WithdrawalCommand::Reject { id, reason, db } => {
            let w = service(&db)
                .await?
                .decide_withdrawal(id, Settlement::Rejected, Some(reason))
                .await
                .map_err(refusal)?;
            println!(
                "withdrawal {} of {} is rejected: the money is back on the account",
                w.id,
                crate::model::euros(w.amount_cents)
            );
        }
    }
    Ok(())
}

pub async fn run_banlist(command: BanlistCommand) -> anyhow::Result<()> {
    match command {
        BanlistCommand::Import { file, db } => {
            let csv = std::fs::read_to_string(&file)
                .with_context(|| format!("cannot read {}", file.display()))?;
            let import = service(&db)
                .await?
                .import_ban_list(&csv)
                .await
                .map_err(refusal)?;
            println!(
                "ban list version {} imported: {} entries (sha256 {}); {} account(s) excluded{}; {} lifted",
                import.version,
                import.entries,
                import.sha256,
                import.banned.len(),
                if import.banned.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", import.banned.join(", "))
                },
                import.lifted.len()
            );
        }
    }
    Ok(())
}

pub async fn run_rules(command: RulesCommand) -> anyhow::Result<()> {
    match command {
        RulesCommand::Publish { db } => {
            let version = service(&db).await?.publish_rules().await.map_err(refusal)?;
            println!(
                "rules version {version} is in force: players accept it before their next purchase"
            );
        }
    }
    Ok(())
}

pub async fn run_reserves(args: ReservesArgs) -> anyhow::Result<()> {
    let reserves = service(&args.db).await?.reserves().await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reserves)?);
    } else {
        let total: i64 = reserves.iter().map(|r| r.amount_cents).sum();
        println!(
            "{:>6}  {:<20} {:>14}  kept until",
            "id", "username", "amount"
        );
        for r in &reserves {
            println!(
                "{:>6}  {:<20} {:>14}  {}",
                r.player_id,
                r.username,
                crate::model::euros(r.amount_cents),
                &rfc3339(r.kept_until_ms)[..10]
            );
        }
        println!("total in reserve: {}", crate::model::euros(total));
    }
    Ok(())
}
