//! Identity documents, pure: their kinds, the file types taken (found from
//! the file's first bytes, never from its name or the browser's word), the
//! size limit, and the name shown.

use crate::error::Error;

/// The default largest document, in bytes (5 MiB): a phone's photo or a
/// scanned page.
pub const DEFAULT_MAX_DOCUMENT_BYTES: usize = 5 * 1024 * 1024;

/// What a document proves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentKind {
    /// An identity document (identity card, passport).
    Identity,
    /// A proof that the IBAN is the player's (a bank's account details).
    IbanProof,
}

impl DocumentKind {
    pub const ALL: [DocumentKind; 2] = [DocumentKind::Identity, DocumentKind::IbanProof];

    pub fn parse(text: &str) -> Result<DocumentKind, Error> {
        match text {
            "identity" => Ok(DocumentKind::Identity),
            "iban_proof" => Ok(DocumentKind::IbanProof),
            other => Err(Error::Document {
                code: "document_kind",
                message: format!(
                    "unknown kind of document {other:?}: identity (an identity document) or \
                     iban_proof (a proof that the IBAN is yours)"
                ),
            }),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DocumentKind::Identity => "identity",
            DocumentKind::IbanProof => "iban_proof",
        }
    }
}

/// A document's review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocumentStatus {
    Pending,
    Verified,
    Refused,
}

impl DocumentStatus {
    pub fn parse(text: &str) -> DocumentStatus {
        match text {
            "verified" => DocumentStatus::Verified,
            "refused" => DocumentStatus::Refused,
            _ => DocumentStatus::Pending,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DocumentStatus::Pending => "pending",
            DocumentStatus::Verified => "verified",
            DocumentStatus::Refused => "refused",
        }
    }
}

/// The file's type from its magic number: JPEG, PNG or PDF, else `None`.
pub fn sniff(bytes: &[u8]) -> Option<&'static str> {
    if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if bytes.starts_with(b"%PDF-") {
        Some("application/pdf")
    } else {
        None
    }
}

/// Checks an upload: not empty, at most `max_bytes`, a JPEG, PNG or PDF by
/// its bytes. The content type found.
pub fn check_file(bytes: &[u8], max_bytes: usize) -> Result<&'static str, Error> {
    if bytes.is_empty() {
        return Err(Error::Document {
            code: "document_empty",
            message: "the file is empty: choose the photo or PDF of the document".to_owned(),
        });
    }
    if bytes.len() > max_bytes {
        return Err(too_large(max_bytes));
    }
    sniff(bytes).ok_or_else(|| Error::Document {
        code: "document_type",
        message: "this file is not a JPEG or PNG photo nor a PDF (judged by its content, \
                  not its name): send a photo or a PDF of the document"
            .to_owned(),
    })
}

/// The refusal of a file larger than `max_bytes`.
pub fn too_large(max_bytes: usize) -> Error {
    Error::Document {
        code: "document_too_large",
        message: format!(
            "the file is larger than {} MB: send a smaller photo or PDF",
            max_bytes as f64 / (1024.0 * 1024.0)
        ),
    }
}

/// The name shown for the file: what the player's browser gave, without
/// folders, control characters or format characters (Unicode category Cf:
/// a right-to-left override shows `passwd\u{202E}fdp.exe` as
/// "passwdexe.pdf"), at most 120 characters; `document` for none.
pub fn display_name(name: &str) -> String {
    use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};
    let base = name.rsplit(['/', '\\']).next().unwrap_or("");
    let clean: String = base
        .chars()
        .filter(|c| !c.is_control() && c.general_category() != GeneralCategory::Format)
        .take(120)
        .collect();
    let clean = clean.trim();
    if clean.is_empty() {
        "document".to_owned()
    } else {
        clean.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_is_read_from_the_bytes() {
        assert_eq!(sniff(b"\xFF\xD8\xFF\xE0rest"), Some("image/jpeg"));
        assert_eq!(sniff(b"\x89PNG\r\n\x1a\nrest"), Some("image/png"));
        assert_eq!(sniff(b"%PDF-1.7\n"), Some("application/pdf"));
        assert_eq!(sniff(b"GIF89a"), None);
        assert_eq!(sniff(b"<html>%PDF-"), None);
    }

    #[test]
    fn empty_too_large_and_unknown_files_are_refused() {
        let code = |r: Result<&str, Error>| match r {
            Err(Error::Document { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(check_file(b"", 10)), "document_empty");
        assert_eq!(
            code(check_file(b"%PDF-1.7 and more", 10)),
            "document_too_large"
        );
        assert_eq!(code(check_file(b"plain text", 100)), "document_type");
        assert_eq!(check_file(b"%PDF-1.7", 100).unwrap(), "application/pdf");
    }

    #[test]
    fn names_lose_their_folders_and_control_characters() {
        assert_eq!(display_name("C:\\Users\\a\\passport.jpg"), "passport.jpg");
        assert_eq!(display_name("../../etc/pass\u{7}wd"), "passwd");
        assert_eq!(display_name("  "), "document");
        assert_eq!(display_name(&"x".repeat(300)).len(), 120);
        // Format characters (Cf): bidirectional overrides and isolates,
        // zero-width ones, the soft hyphen, a BOM.
        assert_eq!(display_name("passwd\u{202E}fdp.exe"), "passwdfdp.exe");
        assert_eq!(
            display_name("\u{2066}a\u{200B}b\u{00AD}c\u{FEFF}.pdf\u{2069}"),
            "abc.pdf"
        );
        assert_eq!(display_name("\u{202E}\u{200D}"), "document");
        assert_eq!(display_name("carte d'identité.pdf"), "carte d'identité.pdf");
    }
}
