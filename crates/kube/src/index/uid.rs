//! A UID as the index keeps it: the API server's UIDs are UUIDs, 16 bytes as numbers rather
//! than 36 as text plus a heap block each. The index holds several per object (the CR's, each
//! child's and its owner's, the owner index's keys), so at 100,000 CRs this is tens of MB.

use std::fmt;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Uid {
    /// A UUID in its canonical text form (lowercase, hyphenated), as 16 bytes.
    Uuid([u8; 16]),
    /// Anything else, as it is (test fixtures, other API servers).
    Text(Box<str>),
}

impl Uid {
    pub fn new(text: &str) -> Uid {
        uuid(text).map_or_else(|| Uid::Text(text.into()), Uid::Uuid)
    }
}

/// The bytes of a UUID in canonical text form; `None` for any other text, so that the text
/// given back is always the one taken.
fn uuid(text: &str) -> Option<[u8; 16]> {
    let b = text.as_bytes();
    if b.len() != 36 {
        return None;
    }
    let mut out = [0u8; 16];
    let mut nibbles = 0;
    for (i, c) in b.iter().enumerate() {
        if matches!(i, 8 | 13 | 18 | 23) {
            if *c != b'-' {
                return None;
            }
            continue;
        }
        let v = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            _ => return None,
        };
        out[nibbles / 2] |= if nibbles % 2 == 0 { v << 4 } else { v };
        nibbles += 1;
    }
    Some(out)
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uid::Text(t) => f.write_str(t),
            Uid::Uuid(b) => {
                for (i, byte) in b.iter().enumerate() {
                    if matches!(i, 4 | 6 | 8 | 10) {
                        f.write_str("-")?;
                    }
                    write!(f, "{byte:02x}")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.to_string(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uid_reads_back_as_it_was_given() {
        for text in [
            "26230b94-c81a-4f7f-be42-03d622f6b653",
            "00000000-0000-0000-0000-000000000000",
            "26230B94-C81A-4F7F-BE42-03D622F6B653",
            "26230b94c81a-4f7f-be42-03d622f6b653-",
            "uid-a",
            "",
        ] {
            assert_eq!(Uid::new(text).to_string(), text);
        }
        assert!(matches!(
            Uid::new("26230b94-c81a-4f7f-be42-03d622f6b653"),
            Uid::Uuid(_)
        ));
        assert!(matches!(
            Uid::new("26230B94-C81A-4F7F-BE42-03D622F6B653"),
            Uid::Text(_)
        ));
        assert_ne!(
            Uid::new("26230b94-c81a-4f7f-be42-03d622f6b653"),
            Uid::new("26230b94-c81a-4f7f-be42-03d622f6b654")
        );
        assert_eq!(std::mem::size_of::<Uid>(), 24);
    }
}
