//! `tresor serve`'s mail settings: an SMTP server, or the outbox folder.

use super::Usage;
use crate::mail::Mailer;
use clap::Args;
use std::path::{Path, PathBuf};

/// Where mail to players goes (`docs/ACCOUNT.md`, "Passwords and e-mail").
#[derive(Clone, Args)]
pub struct MailArgs {
    /// The SMTP server: `smtp://host:587` (STARTTLS when offered,
    /// `?tls=required` to insist) or `smtps://host:465`, with
    /// `user:password@` to log in. Without it, each message is written as an
    /// `.eml` file to the outbox folder (the demo, the tests).
    #[arg(long, env = "TRESOR_SMTP_URL")]
    pub smtp_url: Option<String>,
    /// The sender of every message.
    #[arg(
        long,
        env = "TRESOR_SMTP_FROM",
        default_value = "L'Ile au Tresor <no-reply@localhost>"
    )]
    pub smtp_from: String,
    /// The outbox folder, where messages are written as `.eml` files with
    /// no SMTP server: private (0700, its files 0600; a folder another user
    /// made first is refused). Outside demo mode the server starts only
    /// with this or `--smtp-url`. In demo mode it defaults to the data
    /// folder's `outbox`, or, with `--database-url`, a new folder of random
    /// name in the system's temporary folder (its path printed at start).
    #[arg(long, env = "TRESOR_MAIL_OUTBOX")]
    pub mail_outbox: Option<PathBuf>,
    /// The players' site as players reach it (`https://jeu.example.fr`), for
    /// the links in messages (default: `http://` and the address `--listen`
    /// bound).
    #[arg(long, env = "TRESOR_PUBLIC_URL")]
    pub public_url: Option<String>,
}

impl std::fmt::Debug for MailArgs {
    /// Without the SMTP URL, which may hold a password.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailArgs")
            .field("smtp_url", &self.smtp_url.as_ref().map(|_| "…"))
            .field("smtp_from", &self.smtp_from)
            .field("mail_outbox", &self.mail_outbox)
            .field("public_url", &self.public_url)
            .finish()
    }
}

impl MailArgs {
    /// Whether the operator said where mail goes: an SMTP server or an
    /// outbox folder (an empty value names none).
    pub fn named(&self) -> bool {
        self.smtp_url.as_deref().is_some_and(|url| !url.is_empty())
            || self
                .mail_outbox
                .as_deref()
                .is_some_and(|dir| !dir.as_os_str().is_empty())
    }

    /// Refuses to serve real money with mail nobody named: reset links
    /// would lie in a folder chosen by default.
    pub fn refuse_outside_demo(&self) -> Result<(), Usage> {
        if self.named() {
            return Ok(());
        }
        Err(Usage(
            "outside demo mode, say where mail goes: --smtp-url (TRESOR_SMTP_URL), or an outbox \
             folder of this user's with --mail-outbox DIR (TRESOR_MAIL_OUTBOX); password reset \
             links travel by mail"
                .to_owned(),
        ))
    }

    /// The players' site as links in messages name it: `--public-url`, or
    /// `http://` and the address listened on.
    pub fn site(&self, listen: &str) -> Result<String, Usage> {
        let site = self
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{listen}"));
        if !(site.starts_with("http://") || site.starts_with("https://")) {
            return Err(Usage(format!("--public-url: an http(s) URL, not {site}")));
        }
        Ok(site)
    }

    /// The mailer these flags describe. Without `--smtp-url` nor
    /// `--mail-outbox`, the outbox is `default_outbox` (the data folder's),
    /// or with none (PostgreSQL) a new private folder of random name in the
    /// system's temporary folder: never a path someone could make first.
    pub fn mailer(&self, default_outbox: Option<&Path>, listen: &str) -> anyhow::Result<Mailer> {
        let site = self.site(listen)?;
        let named = |value: &Option<String>| value.clone().filter(|v| !v.is_empty());
        let mailer = match (named(&self.smtp_url), &self.mail_outbox) {
            (Some(url), _) => Mailer::smtp(&url, &self.smtp_from, &site),
            (None, Some(dir)) if !dir.as_os_str().is_empty() => {
                Mailer::outbox(dir, &self.smtp_from, &site)
            }
            (None, _) => {
                let outbox = match default_outbox {
                    Some(dir) => dir.to_path_buf(),
                    None => new_temporary_outbox()?,
                };
                Mailer::outbox(&outbox, &self.smtp_from, &site)
            }
        };
        Ok(mailer.map_err(Usage)?)
    }
}

/// A new folder, 0700, of random name in the system's temporary folder:
/// made with `mkdir` (never one already there).
fn new_temporary_outbox() -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let mut bytes = [0u8; 12];
    getrandom::fill(&mut bytes).expect("the operating system's random generator works");
    let dir = std::env::temp_dir().join(format!("tresor-outbox-{}", hex::encode(bytes)));
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .map_err(|error| Usage(format!("the mail outbox {}: {error}", dir.display())))?;
    Ok(dir)
}
