//! The messages mail carries to players, in French then English, and their
//! sending: each after the change it tells of has committed, to the address
//! on file (none: nothing is sent), from a task of its own.

use super::Service;
use crate::error::Error;
use crate::mail::Mail;
use crate::model::euros;
use crate::store::sql;

/// What a player is told by mail.
#[derive(Debug, Clone)]
pub enum Notice {
    /// A password reset link (`link`), valid until `until`.
    PasswordReset {
        username: String,
        link: String,
        until: String,
    },
    /// An address to confirm with `link`.
    ConfirmEmail {
        username: String,
        link: String,
    },
    /// The password changed (by the player, or through a reset).
    PasswordChanged {
        username: String,
    },
    /// To the old address: the address on file changed; `link` undoes it
    /// until `until`.
    EmailChanged {
        username: String,
        link: String,
        until: String,
    },
    /// The IBAN changed (masked): its proof is reviewed again.
    IbanChanged {
        username: String,
        iban: String,
    },
    DepositCredited {
        amount_cents: i64,
    },
    /// A deposit that will be refunded, with the reason's code.
    DepositRefunded {
        amount_cents: i64,
        reason: String,
    },
    WithdrawalPaid {
        amount_cents: i64,
    },
    WithdrawalRejected {
        amount_cents: i64,
        reason: String,
    },
    AccountVerified,
}

impl Notice {
    /// The subject and the text, French then English.
    pub fn render(&self) -> (String, String) {
        let (fr_subject, en_subject, fr, en) = match self {
            Notice::PasswordReset {
                username,
                link,
                until,
            } => password_reset(username, link, until),
            Notice::ConfirmEmail { username, link } => confirm_email(username, link),
            Notice::PasswordChanged { username } => password_changed(username),
            Notice::EmailChanged {
                username,
                link,
                until,
            } => email_changed(username, link, until),
            Notice::IbanChanged { username, iban } => iban_changed(username, iban),
            Notice::DepositCredited { amount_cents } => deposit_credited(*amount_cents),
            Notice::DepositRefunded {
                amount_cents,
                reason,
            } => deposit_refunded(*amount_cents, reason),
            Notice::WithdrawalPaid { amount_cents } => withdrawal_paid(*amount_cents),
            Notice::WithdrawalRejected {
                amount_cents,
                reason,
            } => withdrawal_rejected(*amount_cents, reason),
            Notice::AccountVerified => account_verified(),
        };
        (
            format!("L'Ile au Trésor : {fr_subject} / {en_subject}"),
            format!("{fr}\n\n-- \n\n{en}\n"),
        )
    }
}

/// A notice's words: (French subject, English subject, French text,
/// English text).
type Words = (&'static str, &'static str, String, String);

fn password_reset(username: &str, link: &str, until: &str) -> Words {
    (
        "Réinitialiser votre mot de passe",
        "Reset your password",
        format!(
            "Bonjour {username},\n\nPour choisir un nouveau mot de passe, ouvrez ce lien (valable une fois, jusqu'au {until}) :\n{link}\n\nSi vous n'avez rien demandé, ignorez ce message : votre mot de passe ne change pas."
        ),
        format!(
            "Hello {username},\n\nTo choose a new password, open this link (valid once, until {until}):\n{link}\n\nIf you did not ask for it, ignore this message: your password does not change."
        ),
    )
}

fn confirm_email(username: &str, link: &str) -> Words {
    (
        "Confirmez votre adresse e-mail",
        "Confirm your e-mail address",
        format!("Bonjour {username},\n\nPour confirmer cette adresse, ouvrez ce lien :\n{link}"),
        format!("Hello {username},\n\nTo confirm this address, open this link:\n{link}"),
    )
}

fn password_changed(username: &str) -> Words {
    (
        "Votre mot de passe a changé",
        "Your password changed",
        format!(
            "Bonjour {username},\n\nLe mot de passe de votre compte vient de changer, et vos autres sessions sont fermées. Si ce n'est pas vous, demandez une réinitialisation et prévenez l'opérateur."
        ),
        format!(
            "Hello {username},\n\nYour account's password has just changed, and your other sessions are closed. If it was not you, ask for a reset and tell the operator."
        ),
    )
}

fn email_changed(username: &str, link: &str, until: &str) -> Words {
    (
        "L'adresse e-mail de votre compte a changé",
        "Your account's e-mail address changed",
        format!(
            "Bonjour {username},\n\nL'adresse e-mail de votre compte vient d'être remplacée : ce message est le dernier envoyé ici. Si ce n'est pas vous, ouvrez ce lien (valable une fois, jusqu'au {until}) : il remet cette adresse, ferme toutes les sessions, et vous pourrez demander une réinitialisation du mot de passe.\n{link}"
        ),
        format!(
            "Hello {username},\n\nYour account's e-mail address has just been replaced: this is the last message sent here. If it was not you, open this link (valid once, until {until}): it puts this address back, closes every session, and you may then ask for a password reset.\n{link}"
        ),
    )
}

fn iban_changed(username: &str, iban: &str) -> Words {
    (
        "L'IBAN de votre compte a changé",
        "Your account's IBAN changed",
        format!(
            "Bonjour {username},\n\nL'IBAN de votre compte est maintenant {iban}. Son justificatif sera vérifié à nouveau avant tout retrait. Si ce n'est pas vous, changez votre mot de passe et prévenez l'opérateur."
        ),
        format!(
            "Hello {username},\n\nYour account's IBAN is now {iban}. Its proof will be checked again before any withdrawal. If it was not you, change your password and tell the operator."
        ),
    )
}

fn deposit_credited(amount_cents: i64) -> Words {
    (
        "Dépôt crédité",
        "Deposit credited",
        format!(
            "Votre dépôt de {} est crédité sur votre compte.",
            euros(amount_cents)
        ),
        format!(
            "Your deposit of {} is credited to your account.",
            euros(amount_cents)
        ),
    )
}

fn deposit_refunded(amount_cents: i64, reason: &str) -> Words {
    (
        "Dépôt remboursé",
        "Deposit refunded",
        format!(
            "Votre dépôt de {} n'a pas pu être crédité ({reason}) : il vous sera remboursé.",
            euros(amount_cents)
        ),
        format!(
            "Your deposit of {} could not be credited ({reason}): it will be refunded to you.",
            euros(amount_cents)
        ),
    )
}

fn withdrawal_paid(amount_cents: i64) -> Words {
    (
        "Retrait payé",
        "Withdrawal paid",
        format!(
            "Votre retrait de {} est payé sur votre compte bancaire.",
            euros(amount_cents)
        ),
        format!(
            "Your withdrawal of {} is paid to your bank account.",
            euros(amount_cents)
        ),
    )
}

fn withdrawal_rejected(amount_cents: i64, reason: &str) -> Words {
    (
        "Retrait refusé",
        "Withdrawal rejected",
        format!(
            "Votre retrait de {} est refusé ({reason}) : la somme est revenue sur votre solde.",
            euros(amount_cents)
        ),
        format!(
            "Your withdrawal of {} was rejected ({reason}): the amount is back in your balance.",
            euros(amount_cents)
        ),
    )
}

fn account_verified() -> Words {
    (
        "Compte vérifié",
        "Account verified",
        "Votre identité et votre IBAN sont vérifiés : vous pouvez retirer vos gains.".to_owned(),
        "Your identity and IBAN are verified: you may withdraw your winnings.".to_owned(),
    )
}

impl Service {
    /// The site's address for links, when mail is configured.
    pub(super) fn site_url(&self) -> Option<String> {
        self.settings.mail.as_ref().map(|m| m.site_url().to_owned())
    }

    /// Sends `notice` to `to` (after the change committed); without mail
    /// configured, nothing.
    pub(super) fn send_notice(&self, to: &str, notice: &Notice) {
        if let Some(mailer) = &self.settings.mail {
            let (subject, body) = notice.render();
            mailer.send_later(Mail {
                to: to.to_owned(),
                subject,
                body,
            });
        }
    }

    /// Sends `notice` to the address on file of `player_id`, if any. A
    /// failure to read it is logged: the change it tells of has committed.
    pub(super) async fn notify(&self, player_id: i64, notice: Notice) {
        if self.settings.mail.is_none() {
            return;
        }
        match self.email_of(player_id).await {
            Ok(Some(email)) => self.send_notice(&email, &notice),
            Ok(None) => {}
            Err(error) => tracing::warn!(%error, player_id, "no notice sent"),
        }
    }

    /// The address on file of `player_id`, if any.
    pub(super) async fn email_of(&self, player_id: i64) -> Result<Option<String>, Error> {
        Ok(
            sql::query_scalar("SELECT email FROM identities WHERE player_id = $1")
                .bind(player_id)
                .fetch_optional(&mut *self.db.conn().await?)
                .await?
                .flatten(),
        )
    }
}
