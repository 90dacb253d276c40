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

/// Edit distance over chars where swapping two neighbours is one edit (optimal string
/// alignment): `noet` is one edit from `note`, as a typist sees it.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: two back (for a swap), the previous one and the current one.
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut row: Vec<usize> = vec![0; b.len() + 1];
    for i in 1..=a.len() {
        row[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            row[j] = (prev[j] + 1).min(row[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                row[j] = row[j].min(before[j - 2] + 1);
            }
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
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
    fn two_letters_swapped_are_one_typo() {
        assert_eq!(distance("noet", "note"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(closest("nmae", ["name", "namespace"]), Some("name"));
    }

    #[test]
    fn unrelated_word_finds_nothing() {
        assert_eq!(closest("banana", ["endpoint", "timeout"]), None);
    }
}
