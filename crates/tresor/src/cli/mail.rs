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
    /// Where messages are written with no SMTP server (default: the data
    /// folder's `outbox`; with `--database-url`, `outbox` in the system's
    /// temporary folder's `tresor-mail`).
    #[arg(long, env = "TRESOR_MAIL_OUTBOX")]
    pub mail_outbox: Option<PathBuf>,
    /// The players' site as players reach it (`https://jeu.example.fr`), for
    /// the links in messages (default: `http://` and `--listen`).
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
    /// The mailer these flags describe; `data` is the data folder.
    pub fn mailer(&self, data: &Path, listen: &str) -> anyhow::Result<Mailer> {
        let site = self
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{listen}"));
        if !(site.starts_with("http://") || site.starts_with("https://")) {
            return Err(Usage(format!("--public-url: an http(s) URL, not {site}")).into());
        }
        let mailer = match &self.smtp_url {
            Some(url) => Mailer::smtp(url, &self.smtp_from, &site),
            None => {
                let outbox = self
                    .mail_outbox
                    .clone()
                    .unwrap_or_else(|| data.join("outbox"));
                Mailer::outbox(&outbox, &self.smtp_from, &site)
            }
        };
        Ok(mailer.map_err(Usage)?)
    }
}
