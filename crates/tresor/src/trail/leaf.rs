//! A v2 record as a leaf of its writer's log (docs/AUDIT.md, "The log"):
//! the leaf data is the netstring encoding of a version tag, the log's
//! origin, the leaf's index and the record's fields, ending with a random
//! salt, so that a published leaf hash never confirms a guess about a record.

use tlog_tiles::Hash;

/// The version tag that starts every v2 leaf.
pub const LEAF_TAG: &str = "tresor-trail-v2";

/// The fields of a record that its leaf covers.
#[derive(Debug, Clone, Copy)]
pub struct Leaf<'a> {
    pub origin: &'a str,
    pub idx: u64,
    pub at_ms: i64,
    pub actor: &'a str,
    pub action: &'a str,
    pub request: &'a str,
    pub result: &'a str,
    /// 64 hex digits (32 random bytes).
    pub salt: &'a str,
}

impl Leaf<'_> {
    /// The leaf data: every field as a netstring (`LENGTH:BYTES,`), numbers
    /// in decimal. Length prefixes make it unambiguous.
    pub fn data(&self) -> Vec<u8> {
        let idx = self.idx.to_string();
        let at_ms = self.at_ms.to_string();
        let fields = [
            LEAF_TAG,
            self.origin,
            idx.as_str(),
            at_ms.as_str(),
            self.actor,
            self.action,
            self.request,
            self.result,
            self.salt,
        ];
        let mut data = Vec::with_capacity(fields.iter().map(|f| f.len() + 8).sum());
        for field in fields {
            data.extend_from_slice(field.len().to_string().as_bytes());
            data.push(b':');
            data.extend_from_slice(field.as_bytes());
            data.push(b',');
        }
        data
    }

    /// The leaf hash: SHA-256(0x00 || data) (RFC 6962).
    pub fn hash(&self) -> Hash {
        tlog_tiles::record_hash(&self.data())
    }
}

/// A fresh salt: 32 bytes from the operating system, in hex.
pub fn new_salt() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random generator works");
    hex::encode(bytes)
}

/// A hash as the database's text columns and the receipts' hex give it.
pub fn hash_hex(hash: &Hash) -> String {
    hex::encode(hash.0)
}

/// A hash from hex (either case).
pub fn hash_from_hex(text: &str) -> Option<Hash> {
    let bytes = hex::decode(text.trim()).ok()?;
    Some(Hash(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf<'a>(actor: &'a str, action: &'a str) -> Leaf<'a> {
        Leaf {
            origin: "tresor/x/server",
            idx: 1,
            at_ms: 2,
            actor,
            action,
            request: "{}",
            result: "{}",
            salt: "00",
        }
    }

    #[test]
    fn the_encoding_tells_apart_fields_that_concatenate_alike() {
        assert_ne!(leaf("ab", "c").hash(), leaf("a", "bc").hash());
    }

    #[test]
    fn the_leaf_is_the_documented_netstrings() {
        let data = leaf("operator", "x").data();
        assert_eq!(
            String::from_utf8(data).unwrap(),
            "15:tresor-trail-v2,15:tresor/x/server,1:1,1:2,8:operator,1:x,2:{},2:{},2:00,"
        );
        let mut prefixed = vec![0u8];
        prefixed.extend(leaf("operator", "x").data());
        use sha2::Digest;
        assert_eq!(
            leaf("operator", "x").hash().0.to_vec(),
            sha2::Sha256::digest(&prefixed).to_vec(),
            "RFC 6962's leaf hash"
        );
    }
}
