//! `tresor operator add|list|role|disable|reset-totp`: the console's
//! accounts (`docs/CONSOLE.md`), made and changed at the command line only,
//! each change in the game trail as the operator's.

use super::Usage;
use super::db::{DbArgs, ListArgs, open_service};
use crate::error::Error;
use crate::service::{Service, Settings};
use crate::staff::{Role, StaffName};
use anyhow::Context;
use clap::{Args, Subcommand, ValueEnum};
use std::io::BufRead;

#[derive(Debug, Subcommand)]
pub enum StaffCommand {
    /// Make a console account. Its password is read from the terminal
    /// (without echo), or from the first line of stdin with --password-stdin;
    /// its second factor (TOTP) is enrolled at its first login.
    Add {
        #[command(flatten)]
        who: StaffNameArg,
        #[arg(long, value_enum)]
        role: RoleArg,
        /// Read the password from the first line of stdin.
        #[arg(long)]
        password_stdin: bool,
        #[command(flatten)]
        db: DbArgs,
    },
    /// List the console accounts.
    List {
        #[command(flatten)]
        list: ListArgs,
    },
    /// Change an account's role (from its next request on).
    Role {
        #[command(flatten)]
        who: StaffNameArg,
        #[arg(long, value_enum)]
        role: RoleArg,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Disable an account: its sessions end and it cannot log in.
    Disable {
        #[command(flatten)]
        who: StaffNameArg,
        #[command(flatten)]
        db: DbArgs,
    },
    /// Forget an account's TOTP secret (a lost phone): it enrols again at
    /// its next login; its sessions end.
    ResetTotp {
        #[command(flatten)]
        who: StaffNameArg,
        #[command(flatten)]
        db: DbArgs,
    },
}

#[derive(Debug, Clone, Args)]
pub struct StaffNameArg {
    /// The account's name: a-z 0-9 . _ - (upper case is lowered).
    #[arg(long)]
    pub username: String,
}

impl StaffNameArg {
    fn parse(&self) -> Result<StaffName, Usage> {
        StaffName::parse(&self.username).ok_or_else(|| Usage(StaffName::RULE.to_owned()))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RoleArg {
    Viewer,
    Operator,
    Auditor,
}

impl From<RoleArg> for Role {
    fn from(role: RoleArg) -> Role {
        match role {
            RoleArg::Viewer => Role::Viewer,
            RoleArg::Operator => Role::Operator,
            RoleArg::Auditor => Role::Auditor,
        }
    }
}

fn read_password(from_stdin: bool) -> anyhow::Result<String> {
    if from_stdin {
        let mut line = String::new();
        std::io::stdin()
            .lock()
            .read_line(&mut line)
            .context("reading the password from stdin")?;
        return Ok(line.trim_end_matches(['\r', '\n']).to_owned());
    }
    let first = rpassword::prompt_password("password: ")
        .context("reading the password from the terminal (or pass --password-stdin)")?;
    let again = rpassword::prompt_password("password again: ")
        .context("reading the password from the terminal")?;
    if first != again {
        return Err(Usage("the two passwords differ".to_owned()).into());
    }
    Ok(first)
}

/// A refusal of the service as the command line says it.
fn refusal(error: Error, name: &StaffName) -> anyhow::Error {
    match error {
        Error::Validation(message) => Usage(message).into(),
        Error::NotFound => Usage(format!("no console account named {}", name.as_str())).into(),
        Error::UsernameTaken => {
            Usage(format!("a console account named {} exists", name.as_str())).into()
        }
        other => other.into(),
    }
}

/// The console account `who` names, and the service on `db`.
async fn named(who: &StaffNameArg, db: &DbArgs) -> anyhow::Result<(StaffName, Service)> {
    let name = who.parse()?;
    Ok((name, open_service(db, Settings::default()).await?))
}

pub async fn run_staff(command: StaffCommand) -> anyhow::Result<()> {
    match command {
        StaffCommand::Add {
            who,
            role,
            password_stdin,
            db,
        } => {
            let name = who.parse()?;
            let password = read_password(password_stdin)?;
            let service = open_service(&db, Settings::default()).await?;
            let member = service
                .add_staff(&name, role.into(), &password)
                .await
                .map_err(|e| refusal(e, &name))?;
            println!(
                "console account {} ({}) made; it enrols its second factor at its first login",
                member.username,
                member.role.as_str()
            );
        }
        StaffCommand::List { list } => list_staff(&list).await?,
        StaffCommand::Role { who, role, db } => {
            let (name, service) = named(&who, &db).await?;
            let role: Role = role.into();
            let changed = service.set_staff_role(&name, role).await;
            changed.map_err(|e| refusal(e, &name))?;
            println!("{} is now {}", name.as_str(), role.as_str());
        }
        StaffCommand::Disable { who, db } => {
            let (name, service) = named(&who, &db).await?;
            let ended = service.disable_staff(&name).await;
            let ended = ended.map_err(|e| refusal(e, &name))?;
            let name = name.as_str();
            println!("{name} is disabled; {ended} session(s) of theirs ended");
        }
        StaffCommand::ResetTotp { who, db } => {
            let (name, service) = named(&who, &db).await?;
            let reset = service.reset_staff_totp(&name).await;
            reset.map_err(|e| refusal(e, &name))?;
            let name = name.as_str();
            println!("{name} enrols a new second factor at their next login");
        }
    }
    Ok(())
}

/// `tresor staff list`: the console accounts, as a table or JSON.
async fn list_staff(list: &ListArgs) -> anyhow::Result<()> {
    let service = open_service(&list.db, Settings::default()).await?;
    let staff = service.list_staff().await?;
    if list.json {
        println!("{}", serde_json::to_string_pretty(&staff)?);
        return Ok(());
    }
    println!(
        "{:<32} {:<9} {:<9} {:<9} created",
        "username", "role", "totp", "state"
    );
    for s in &staff {
        println!(
            "{:<32} {:<9} {:<9} {:<9} {}",
            s.username,
            s.role.as_str(),
            if s.enrolled { "enrolled" } else { "to enrol" },
            if s.disabled { "disabled" } else { "active" },
            &s.created_at[..19]
        );
    }
    Ok(())
}
