//! What `GET /log/` lists of the installation's keys and witnesses
//! (docs/AUDIT.md, "Monitoring the log"), and a receipt checked against it
//! as the fairness page checks one (`web/assets/js/proof.js`): its key is
//! one the site lists; a retired key verifies a checkpoint only up to the
//! last size it signed of that log; every witness listed has cosigned the
//! checkpoint. `tresor audit receipt --log` and the page agree on every
//! receipt.

use super::{
    CheckError, Included, Receipt, VerifierKey, WitnessKey, check_cosigned, check_receipt, fail,
    open_checkpoint,
};
use serde::{Deserialize, Serialize};

/// The keys and witnesses of `GET /log/` (its `logs` are not read here).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// The key that signs checkpoints now.
    pub key: Option<String>,
    /// Every key the installation has signed with, oldest first.
    #[serde(default)]
    pub keys: Vec<ListedKey>,
    /// The witnesses whose cosignatures the site takes (verifier keys).
    #[serde(default)]
    pub witnesses: Vec<String>,
}

/// A key as `GET /log/` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedKey {
    pub vkey: String,
    pub since_ms: i64,
    /// For a retired key (every one but the current), the size of the last
    /// checkpoint it signed of each log it signed: its checkpoints past that
    /// are not the site's. Absent for the current key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_signed: Option<Vec<LastSigned>>,
}

/// The last checkpoint a retired key signed of the log `origin`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastSigned {
    pub origin: String,
    pub size: u64,
}

/// What a receipt checked against a listing proved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingVerdict {
    pub included: Included,
    /// The key that signed the checkpoint, retired since (within the last
    /// size it signed of the receipt's log).
    pub retired: bool,
    /// Each listed witness and the time it cosigned at (Unix seconds).
    pub cosigned: Vec<(String, u64)>,
}

impl Listing {
    /// Checks `receipt` as the fairness page does: the key it names is one
    /// the listing lists (and the one pinned, when one is); the checkpoint
    /// is signed by it and is of the receipt's log; a retired key's
    /// checkpoint is no larger than the last it signed of that log; the
    /// record's leaf and proof lead to the checkpoint's root; every listed
    /// witness cosigned it.
    pub fn check_receipt(
        &self,
        receipt: &Receipt,
        pinned: Option<&VerifierKey>,
    ) -> Result<ListingVerdict, CheckError> {
        let named = receipt.key.trim();
        if let Some(pinned) = pinned {
            if pinned.as_str() != named {
                return fail(format!(
                    "the receipt names the key {named}, not the pinned key {}",
                    pinned.as_str()
                ));
            }
            if !self.lists(pinned.as_str()) {
                return fail(format!(
                    "the site's listing does not list the key you pinned, {}",
                    pinned.as_str()
                ));
            }
        }
        if !self.lists(named) {
            return fail(format!(
                "the receipt names the key {named}, which the site does not list"
            ));
        }
        let key = VerifierKey::parse(named)?;
        let checkpoint = open_checkpoint(&receipt.checkpoint, &key)?;
        if checkpoint.origin != receipt.origin {
            return fail(format!(
                "the checkpoint is of the log {}, the receipt of {}",
                checkpoint.origin, receipt.origin
            ));
        }
        let retired = self.key.as_deref().map(str::trim) != Some(named);
        if retired {
            self.within_retired(named, &checkpoint.origin, checkpoint.size)?;
        }
        let included = check_receipt(receipt, &key)?;
        let mut cosigned = Vec::with_capacity(self.witnesses.len());
        for witness in &self.witnesses {
            let witness = WitnessKey::parse(witness)
                .map_err(|e| CheckError(format!("the site lists a witness {e}")))?;
            let time = check_cosigned(&receipt.checkpoint, &witness)?;
            cosigned.push((witness.as_str().to_owned(), time));
        }
        Ok(ListingVerdict {
            included,
            retired,
            cosigned,
        })
    }

    fn lists(&self, vkey: &str) -> bool {
        self.key.as_deref().map(str::trim) == Some(vkey)
            || self.keys.iter().any(|k| k.vkey.trim() == vkey)
    }

    /// A retired key's checkpoint of `size` records of the log `origin`:
    /// refused past the last size the listing says it signed of that log.
    fn within_retired(&self, vkey: &str, origin: &str, size: u64) -> Result<(), CheckError> {
        let last = self
            .keys
            .iter()
            .filter(|k| k.vkey.trim() == vkey)
            .flat_map(|k| k.last_signed.iter().flatten())
            .filter(|l| l.origin == origin)
            .map(|l| l.size)
            .max();
        match last {
            Some(last) if size <= last => Ok(()),
            Some(last) => fail(format!(
                "the checkpoint ({size} records of the log {origin}) is signed with the key \
                 {vkey}, which the site retired: it signed that log up to {last} records \
                 only, so a checkpoint past that is not the site's"
            )),
            None => fail(format!(
                "the checkpoint ({size} records of the log {origin}) is signed with the key \
                 {vkey}, which the site retired, and which signed nothing of that log"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listing_reads_what_the_site_publishes_and_keeps_the_current_key_unbounded() {
        let text = r#"{"key": "b", "keys": [
            {"vkey": "a", "since_ms": 1, "last_signed": [{"origin": "o/cli", "size": 4}]},
            {"vkey": "b", "since_ms": 2}], "witnesses": ["w"], "logs": []}"#;
        let listing: Listing = serde_json::from_str(text).unwrap();
        assert!(listing.lists("a") && listing.lists("b") && !listing.lists("c"));
        assert!(listing.within_retired("a", "o/cli", 4).is_ok());
        let past = listing.within_retired("a", "o/cli", 5).unwrap_err();
        assert!(past.0.contains("up to 4 records only"), "{past}");
        let other = listing.within_retired("a", "o/server", 1).unwrap_err();
        assert!(other.0.contains("signed nothing of that log"), "{other}");
        let again = serde_json::to_value(&listing.keys).unwrap();
        assert!(again[1].get("last_signed").is_none(), "{again}");
    }
}
