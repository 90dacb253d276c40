//! "Did you mean" suggestions by edit distance.

/// The known name closest to `got`, if it is close enough to be a likely typo.
pub fn closest<'a>(got: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let got_lower = got.to_ascii_lowercase();
    known
        .into_iter()
        .map(|k| (distance(&got_lower, &k.to_ascii_lowercase()), k))
        .filter(|(d, k)| *d <= (k.len().max(got.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance over chars.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = if ca == *cb {
                prev
            } else {
                1 + prev.min(row[j]).min(cur)
            };
            prev = cur;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typo_finds_the_field() {
        assert_eq!(
            closest("timout", ["endpoint", "timeout", "args"]),
            Some("timeout")
        );
        assert_eq!(
            closest("managedResource", ["managedResources"]),
            Some("managedResources")
        );
    }

    #[test]
    fn unrelated_word_finds_nothing() {
        assert_eq!(closest("banana", ["endpoint", "timeout"]), None);
    }
}
