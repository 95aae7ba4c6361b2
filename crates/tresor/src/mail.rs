//! Mail to players and console accounts (password resets, address
//! confirmations, notifications of money and verification), sent with
//! `lettre`: over SMTP when a server is configured (`--smtp-url`,
//! `TRESOR_SMTP_URL`), otherwise written as RFC 5322 files (`.eml`) to an
//! outbox folder (`--mail-outbox`; in demo mode `<data>/outbox` by default)
//! that the demo and the tests read. A leaf: it knows nothing of the rest of
//! the crate but its private folders (`private.rs`).
//!
//! The outbox holds reset links: it is private. Its folder is made 0700, or,
//! already there, taken only if this user owns it (a folder another user
//! made first, or a symbolic link, is refused; this user's own is made
//! 0700); each message is written 0600 under a random name, then renamed
//! into place whole.
//!
//! Mail leaves after the change it tells of has committed, from a task of
//! its own ([`Mailer::send_later`]): a request never waits on the mail
//! server, and answers in the same time whether a message went or not.

use lettre::message::header::ContentType;
use lettre::message::{Body, Mailbox};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
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
    Outbox(PathBuf),
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
            Sender::Outbox(dir) => format!("outbox {}", dir.display()),
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
    /// Messages written as `.eml` files (0600) to `dir`, a private folder
    /// ([`private_folder`]: made 0700 if missing).
    pub fn outbox(dir: &Path, from: &str, site_url: &str) -> Result<Mailer, String> {
        private_folder(dir)
            .map_err(|error| format!("the mail outbox {}: {error}", dir.display()))?;
        Ok(Mailer {
            from: mailbox(from, "--mail-from")?,
            site_url: site_url.trim_end_matches('/').to_owned(),
            sender: Arc::new(Sender::Outbox(dir.to_path_buf())),
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
            Sender::Outbox(dir) => Some(dir),
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
            Sender::Outbox(dir) => {
                let (dir, bytes) = (dir.clone(), message.formatted());
                tokio::task::spawn_blocking(move || write_private(&dir, &bytes))
                    .await
                    .map_err(|error| error.to_string())?
                    .map_err(|error| format!("the mail outbox: {error}"))
            }
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

/// Makes `dir` a folder only this user reads ([`crate::private::folder`]):
/// created 0700 if missing; if it is there, it must be a folder (not a
/// symbolic link) that this user owns, and it is made 0700. A folder
/// another user made first, even one anyone may write to, is refused.
pub fn private_folder(dir: &Path) -> std::io::Result<()> {
    crate::private::folder(dir, crate::private::Loose::Tighten)
}

/// Writes one message to `dir` as `<random>.eml`, 0600: first under a
/// hidden name, then renamed, so that a reader never sees half of it.
fn write_private(dir: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let name = format!("{}.eml", crate::private::random_name());
    crate::private::write_whole(dir, name.as_ref(), bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::private::tests::mode;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn the_outbox_is_made_private_and_a_link_is_refused() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/outbox");
        private_folder(&dir).unwrap();
        assert_eq!(mode(&dir), 0o700);
        // This user's own folder, too open: made private.
        let open = root.path().join("open");
        std::fs::create_dir(&open).unwrap();
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).unwrap();
        private_folder(&open).unwrap();
        assert_eq!(mode(&open), 0o700);
        // A symbolic link, even to a folder of this user's, is refused.
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&open, &link).unwrap();
        assert!(private_folder(&link).is_err());
        // No probe left behind.
        assert_eq!(std::fs::read_dir(&open).unwrap().count(), 0);
    }

    #[test]
    fn a_message_is_written_whole_and_private() {
        let root = tempfile::tempdir().unwrap();
        write_private(root.path(), b"To: a@b.c\r\n\r\nhello").unwrap();
        let files: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].extension().unwrap(), "eml");
        assert_eq!(mode(&files[0]), 0o600);
    }
}
