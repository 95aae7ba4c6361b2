//! Personal names as the ban list and the one-account-per-person rule
//! compare them: one normalisation ([`name_part_key`]), used for every
//! comparison of names (an opening, the ban list's import, the re-keying of
//! older identities at start), and the check of a name typed at opening
//! ([`check_name`]).
//!
//! The key of a name is: NFKC (full-width letters, ligatures and other
//! compatibility forms become plain letters); format characters (Unicode
//! `Cf`: soft hyphen, zero-width space and joiners, direction marks)
//! removed; decomposed (NFD) and its marks removed (accents, a combining
//! diaeresis typed apart); case folded; a few letters that do not decompose
//! spelled out (æ, œ, ø, ł, đ, ı); the TR39 confusable skeleton, as the
//! usernames have it (`model::Username`), so a Cyrillic "о" is a Latin "o";
//! and every run of what is not a letter (spaces, hyphens, apostrophes,
//! dots) one space. Banned "Dupont" is thus also `Dup\u{AD}ont`,
//! `Dup\u{200B}ont` and `Dup\u{43E}nt`, and "Müller" is `Mu\u{308}ller`.

use crate::error::Error;
use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, GeneralCategoryGroup, UnicodeGeneralCategory};
use unicode_security::MixedScript;

fn is_format(c: char) -> bool {
    c.general_category() == GeneralCategory::Format
}

fn is_mark(c: char) -> bool {
    c.general_category_group() == GeneralCategoryGroup::Mark
}

/// The characters besides letters (and their marks) that a name holds.
fn is_name_punctuation(c: char) -> bool {
    matches!(
        c,
        ' ' | '-' | '\u{2010}' | '\u{2011}' | '\'' | '\u{2019}' | '\u{2BC}' | '.'
    )
}

/// Checks a name typed at opening (`field` names it in the refusal) and
/// returns it as stored: NFKC, format characters removed, spaces collapsed.
/// Refused: empty, longer than `max`, a character a name does not hold
/// (digits, symbols, controls, other punctuation: letters, spaces, hyphens,
/// apostrophes and dots are names), or letters of several scripts (Latin
/// and Cyrillic mixed, as a look-alike would be).
pub fn check_name(field: &str, text: &str, max: usize) -> Result<String, Error> {
    let cleaned: String = text.nfkc().filter(|c| !is_format(*c)).collect();
    let cleaned = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    let count = cleaned.chars().count();
    if count == 0 || count > max {
        return Err(Error::Validation(format!("{field}: 1 to {max} characters")));
    }
    if let Some(c) = cleaned
        .chars()
        .find(|&c| !(c.is_alphabetic() || is_mark(c) || is_name_punctuation(c)))
    {
        return Err(Error::Validation(format!(
            "{field}: letters, spaces, hyphens, apostrophes and dots only, not {c:?}"
        )));
    }
    if !cleaned.chars().any(char::is_alphabetic) {
        return Err(Error::Validation(format!("{field}: at least one letter")));
    }
    if !cleaned.as_str().is_single_script() {
        return Err(Error::Validation(format!(
            "{field}: the letters of one script only (Latin, Greek, Cyrillic…), not mixed"
        )));
    }
    Ok(cleaned)
}

/// The key of one name, as described at the top of this file. It never
/// refuses: the ban list's names are keyed whatever they hold.
pub fn name_part_key(text: &str) -> String {
    let cleaned: String = text.nfkc().filter(|c| !is_format(*c)).collect();
    let plain: String = cleaned.nfd().filter(|c| !is_mark(*c)).collect();
    let folded = caseless::default_case_fold_str(&plain);
    let mut spelled = String::with_capacity(folded.len());
    for c in folded.chars() {
        match c {
            'æ' => spelled.push_str("ae"),
            'œ' => spelled.push_str("oe"),
            'ø' => spelled.push('o'),
            'ł' => spelled.push('l'),
            'đ' => spelled.push('d'),
            'ı' => spelled.push('i'),
            c => spelled.push(c),
        }
    }
    let skeleton: String = unicode_security::skeleton(&spelled)
        .filter(|c| !is_mark(*c))
        .map(|c| if c.is_alphanumeric() { c } else { ' ' })
        .collect();
    skeleton.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The key the ban list and the identities are matched on (with the birth
/// date): the birth name's key, then the first names' key.
pub fn name_key(birth_name: &str, first_names: &str) -> String {
    format!(
        "{}|{}",
        name_part_key(birth_name),
        name_part_key(first_names)
    )
}

/// The key of a person: the name key and the birth date (`YYYY-MM-DD`).
pub fn person_key(name_key: &str, birth_date: &str) -> String {
    format!("{name_key}|{birth_date}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invisible_look_alike_and_combining_variants_have_the_banned_key() {
        let dupont = name_part_key("Dupont");
        for variant in [
            "Dup\u{AD}ont",
            "Dup\u{200B}ont",
            "Dup\u{43E}nt",
            "DUPONT",
            "Ｄupont",
            " Du\u{200D}pont ",
        ] {
            assert_eq!(name_part_key(variant), dupont, "{variant:?}");
        }
        assert_eq!(name_part_key("Mu\u{308}ller"), name_part_key("Müller"));
        assert_eq!(name_part_key("MÜLLER"), name_part_key("Muller"));
        assert_eq!(
            name_key("Lefèvre-Dupont", "Hélène  Marie"),
            name_key("LEFEVRE DUPONT", "helene marie")
        );
        assert_eq!(name_part_key("Lætitia"), name_part_key("Laetitia"));
        assert_ne!(name_part_key("Dupond"), dupont);
        // The key of a key is itself: re-keying is stable.
        for text in ["Dup\u{43E}nt", "Lefèvre-Dupont", "Œdipe", "Straße"] {
            let key = name_part_key(text);
            assert_eq!(name_part_key(&key), key, "{text:?}");
        }
    }

    #[test]
    fn a_name_is_letters_of_one_script_spaces_hyphens_apostrophes_and_dots() {
        for good in [
            "Dupont",
            "Jean-Pierre",
            "O'Brien",
            "N\u{2019}Diaye",
            "St. John",
            "Mu\u{308}ller",
            "Μαρία",
            "Иванова",
        ] {
            assert!(check_name("birth_name", good, 100).is_ok(), "{good:?}");
        }
        // Format characters are removed, not refused: the name is matched.
        assert_eq!(
            check_name("birth_name", "Dup\u{AD}ont", 100).unwrap(),
            "Dupont"
        );
        for (bad, why) in [
            ("Dup\u{43E}nt", "one script"),
            ("Dup0nt", "letters, spaces"),
            ("Dupont$", "letters, spaces"),
            ("Du\u{7}pont", "letters, spaces"),
            ("Dupont, dit Bob", "letters, spaces"),
            ("\u{200B}", "1 to"),
            ("- '", "one letter"),
        ] {
            match check_name("birth_name", bad, 100) {
                Err(Error::Validation(message)) => {
                    assert!(
                        message.starts_with("birth_name: ") && message.contains(why),
                        "{bad:?}: {message}"
                    );
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }
}
