//! [`MacMemo`]: an account key with a memo of the MAC tags of the SAS strings to sign it
//! verified recently, so that a token sent again and again (every request of a client that
//! holds one SAS) costs a lookup instead of an HMAC.
//!
//! Why the answer is the same as [`AccountKey::verify`]'s, always: a signature verifies when
//! it encodes `HMAC-SHA256(key, string to sign)` ([`signature_matches`]). The memo maps a
//! string to sign to exactly that tag, computed by [`AccountKey::mac`] with the memo's own
//! key, which never changes (the memo owns it; another key is another memo). HMAC is a
//! function of the key and the string, so a remembered tag is the tag that would be
//! computed now; the given signature is still decoded and compared with it in constant
//! time. Only what the signature covers is memoised: the token's time window (`st`, `se`),
//! its stored access policy, protocol and address range are checked on every request
//! afterwards (`SignedToken::grant` in `crate::auth::sas`), never remembered.
//!
//! What gets in: only strings whose signature verified, i.e. tokens signed with the
//! account's key — a client without the key cannot fill or flush the memo. It holds at
//! most [`CAPACITY`] strings; a new one then replaces the oldest. A lookup compares strings
//! to sign, which are no secret (they are made of the token's own query parameters).
//!
//! ```text
//! verify(s, sig):  s remembered → tag          → signature_matches(tag, sig)
//!                  not          → tag = mac(s) → signature_matches(tag, sig), remember s if true
//! ```

use std::sync::Mutex;
use tableq_client::sign::{AccountKey, MacTag, signature_matches};

/// How many strings to sign one account remembers.
pub(crate) const CAPACITY: usize = 32;

/// An account key and the tags of the strings to sign it verified recently (see the
/// module docs).
#[derive(Debug)]
pub(crate) struct MacMemo {
    key: AccountKey,
    entries: Mutex<Entries>,
}

/// The remembered strings to sign with their tags, oldest replaced first.
#[derive(Debug, Default)]
struct Entries {
    slots: Vec<(Box<str>, MacTag)>,
    /// The slot a new string replaces once all [`CAPACITY`] are taken.
    next: usize,
}

impl MacMemo {
    /// A memo for `key`, empty.
    pub(crate) fn new(key: AccountKey) -> MacMemo {
        MacMemo {
            key,
            entries: Mutex::new(Entries::default()),
        }
    }

    /// The key.
    pub(crate) fn key(&self) -> &AccountKey {
        &self.key
    }

    /// Whether `signature` (base64) is the key's signature of `string_to_sign`: exactly
    /// [`AccountKey::verify`]'s answer (see the module docs).
    pub(crate) fn verify(&self, string_to_sign: &str, signature: &str) -> bool {
        if let Some(tag) = self.remembered(string_to_sign) {
            return signature_matches(&tag, signature);
        }
        let tag = self.key.mac(string_to_sign);
        let verified = signature_matches(&tag, signature);
        if verified {
            self.remember(string_to_sign, tag);
        }
        verified
    }

    fn remembered(&self, string_to_sign: &str) -> Option<MacTag> {
        // The entries are consistent whenever the lock is free: a panic elsewhere while
        // holding it (there is no code that could) would leave nothing half-written.
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        entries
            .slots
            .iter()
            .find(|(text, _)| &**text == string_to_sign)
            .map(|(_, tag)| *tag)
    }

    fn remember(&self, string_to_sign: &str, tag: MacTag) {
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        // Another request may have remembered it meanwhile.
        if entries
            .slots
            .iter()
            .any(|(text, _)| &**text == string_to_sign)
        {
            return;
        }
        let entry = (Box::from(string_to_sign), tag);
        if entries.slots.len() < CAPACITY {
            entries.slots.push(entry);
        } else {
            let next = entries.next;
            entries.slots[next] = entry;
            entries.next = (next + 1) % CAPACITY;
        }
    }

    /// How many strings are remembered (for tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.lock().map(|e| e.slots.len()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_as_the_key_does_and_remembers_only_what_verified() {
        let key = AccountKey::development();
        let memo = MacMemo::new(key.clone());
        let text = "devstoreaccount1\nr\nt\no\n\n2099-01-01T00:00:00Z\n\n\n2019-02-02\n";
        let good = key.sign(text);
        let bad = key.sign("another string");
        // A wrong signature of a new string: refused, and nothing is remembered.
        assert!(!memo.verify(text, &bad));
        assert_eq!(memo.len(), 0);
        // The right one verifies and is remembered; then every answer is the key's again.
        for _ in 0..3 {
            assert!(memo.verify(text, &good));
            assert!(!memo.verify(text, &bad));
            assert!(!memo.verify(text, ""));
            assert!(!memo.verify(text, "not base64"));
            assert!(!memo.verify(&format!("{text}x"), &good));
        }
        assert_eq!(memo.len(), 1);
        // Another account's key never verifies this account's tokens, memo or not.
        let other = MacMemo::new(AccountKey::new("other1", "AAAA").unwrap());
        assert!(!other.verify(text, &good));
    }

    #[test]
    fn the_oldest_string_makes_room() {
        let key = AccountKey::development();
        let memo = MacMemo::new(key.clone());
        let texts: Vec<String> = (0..CAPACITY + 5).map(|i| format!("string {i}")).collect();
        for text in &texts {
            assert!(memo.verify(text, &key.sign(text)));
        }
        assert_eq!(memo.len(), CAPACITY);
        // Forgotten or not, every string still verifies with its signature only.
        for text in &texts {
            assert!(memo.verify(text, &key.sign(text)), "{text}");
            assert!(!memo.verify(text, &key.sign("x")), "{text}");
        }
        assert_eq!(memo.len(), CAPACITY);
    }
}
