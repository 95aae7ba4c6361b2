//! Mail to players and console accounts (password resets, address
//! confirmations, notifications of money and verification), sent with
//! `lettre`: over SMTP when a server is configured (`--smtp-url`,
//! `TRESOR_SMTP_URL`), otherwise written as RFC 5322 files (`.eml`) to an
//! outbox folder (`--mail-outbox`, `<data>/outbox` by default) that the demo
//! and the tests read. A leaf: it knows nothing of the rest of the crate.
//!
//! Mail leaves after the change it tells of has committed, from a task of
//! its own ([`Mailer::send_later`]): a request never waits on the mail
//! server, and answers in the same time whether a message went or not.

use lettre::message::header::ContentType;
use lettre::message::{Body, Mailbox};
use lettre::{AsyncFileTransport, AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One message: plain text, in French then English.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mail {
    pub to: String,
    pub subject: String,
    pub body: String,
}

enum Sender {
    Outbox(AsyncFileTransport<Tokio1Executor>, PathBuf),
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
}

/// Sends mail from one address, by SMTP or to the outbox.
#[derive(Clone)]
pub struct Mailer {
    from: Mailbox,
    /// The players' site as the player reaches it, for links in messages.
    site_url: String,
    sender: Arc<Sender>,
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = match &*self.sender {
            Sender::Outbox(_, dir) => format!("outbox {}", dir.display()),
            Sender::Smtp(_) => "smtp".to_owned(),
        };
        f.debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .field("site_url", &self.site_url)
            .field("sender", &how)
            .finish()
    }
}

fn mailbox(text: &str, what: &str) -> Result<Mailbox, String> {
    text.parse::<Mailbox>()
        .map_err(|error| format!("{what}: not an e-mail address ({error}): {text}"))
}

impl Mailer {
    /// Messages written as `.eml` files to `dir` (made if missing).
    pub fn outbox(dir: &Path, from: &str, site_url: &str) -> Result<Mailer, String> {
        std::fs::create_dir_all(dir)
            .map_err(|error| format!("the mail outbox {}: {error}", dir.display()))?;
        Ok(Mailer {
            from: mailbox(from, "--mail-from")?,
            site_url: site_url.trim_end_matches('/').to_owned(),
            sender: Arc::new(Sender::Outbox(
                AsyncFileTransport::new(dir),
                dir.to_path_buf(),
            )),
        })
    }

    /// Messages sent over SMTP to the server `url` names: `smtp://host:587`
    /// (STARTTLS when offered; `?tls=required` to insist), `smtps://host`
    /// (TLS from the start), with `user:password@` for authentication.
    pub fn smtp(url: &str, from: &str, site_url: &str) -> Result<Mailer, String> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            .map_err(|error| format!("--smtp-url: {error}"))?
            .build();
        Ok(Mailer {
            from: mailbox(from, "--mail-from")?,
            site_url: site_url.trim_end_matches('/').to_owned(),
            sender: Arc::new(Sender::Smtp(transport)),
        })
    }

    /// The players' site, without a trailing slash: links start here.
    pub fn site_url(&self) -> &str {
        &self.site_url
    }

    /// The outbox folder, when messages go there.
    pub fn outbox_dir(&self) -> Option<&Path> {
        match &*self.sender {
            Sender::Outbox(_, dir) => Some(dir),
            Sender::Smtp(_) => None,
        }
    }

    /// Sends `mail` now.
    pub async fn send(&self, mail: &Mail) -> Result<(), String> {
        // lettre chooses the encoding (quoted-printable or base64 for lines
        // past 76 characters or letters past ASCII).
        let body = Body::new(mail.body.clone());
        let message = Message::builder()
            .from(self.from.clone())
            .to(mailbox(&mail.to, "to")?)
            .subject(mail.subject.clone())
            .header(ContentType::TEXT_PLAIN)
            .body(body)
            .map_err(|error| format!("the message: {error}"))?;
        match &*self.sender {
            Sender::Outbox(transport, _) => transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|error| error.to_string()),
            Sender::Smtp(transport) => transport
                .send(message)
                .await
                .map(|_| ())
                .map_err(|error| error.to_string()),
        }
    }

    /// Sends `mail` from a task of its own; a failure is logged (the
    /// message is not kept: the player can ask again).
    pub fn send_later(&self, mail: Mail) {
        let mailer = self.clone();
        tokio::spawn(async move {
            if let Err(error) = mailer.send(&mail).await {
                tracing::warn!(error = %error, subject = %mail.subject, "a message could not be sent");
            }
        });
    }
}
