//! `--target-label-selector` (Metacontroller's flag of the same name): this ork runs only the
//! controllers whose labels the selector selects, so several instances can split the
//! controllers of one cluster between them. The selector is Kubernetes' label selector text;
//! the cluster's controllers are watched through it (the API server selects), the files'
//! controllers are selected here by the same rules.

use std::collections::BTreeMap;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    DoesNotExist(String),
}

/// A parsed label selector: every requirement must hold.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetSelector {
    text: String,
    requirements: Vec<Requirement>,
}

impl TargetSelector {
    /// Parses `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k` and `!k`,
    /// comma-separated.
    ///
    /// # Errors
    /// A requirement of another shape, named.
    pub fn parse(text: &str) -> Result<TargetSelector, String> {
        let mut requirements = Vec::new();
        for part in split_top(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(requirement(part).ok_or_else(|| {
                format!(
                    "--target-label-selector: {part:?} is not a label requirement (key=value, key!=value, key in (a,b), key notin (a,b), key or !key)"
                )
            })?);
        }
        Ok(TargetSelector {
            text: text.trim().to_string(),
            requirements,
        })
    }

    /// The selector as the API server takes it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether an object with `labels` is selected.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::NotEquals(k, v) => labels.get(k) != Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|v| vs.contains(v)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|v| !vs.contains(v)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }
}

/// `text` split at the commas outside parentheses.
fn split_top(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn requirement(part: &str) -> Option<Requirement> {
    let valid = |k: &str| {
        !k.is_empty()
            && k.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
    };
    let values = |rest: &str| -> Option<Vec<String>> {
        let inner = rest.trim().strip_prefix('(')?.strip_suffix(')')?;
        let vs: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
        vs.iter().all(|v| valid(v) || v.is_empty()).then_some(vs)
    };
    if let Some((k, v)) = part.split_once("!=") {
        let (k, v) = (k.trim(), v.trim());
        return (valid(k) && (valid(v) || v.is_empty()))
            .then(|| Requirement::NotEquals(k.into(), v.into()));
    }
    if let Some((k, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
        let (k, v) = (k.trim(), v.trim());
        return (valid(k) && (valid(v) || v.is_empty()))
            .then(|| Requirement::Equals(k.into(), v.into()));
    }
    if let Some((k, rest)) = part.split_once(" notin ") {
        let k = k.trim();
        return valid(k).then(|| Some(Requirement::NotIn(k.into(), values(rest)?)))?;
    }
    if let Some((k, rest)) = part.split_once(" in ") {
        let k = k.trim();
        return valid(k).then(|| Some(Requirement::In(k.into(), values(rest)?)))?;
    }
    if let Some(k) = part.strip_prefix('!') {
        let k = k.trim();
        return valid(k).then(|| Requirement::DoesNotExist(k.into()));
    }
    valid(part).then(|| Requirement::Exists(part.into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_requirement_of_a_selector_must_hold() {
        let s = TargetSelector::parse("team=a, tier in (web, api), !legacy, env!=prod")
            .expect("parses");
        assert!(s.selects(&labels(&[("team", "a"), ("tier", "web")])));
        assert!(!s.selects(&labels(&[("team", "b"), ("tier", "web")])));
        assert!(!s.selects(&labels(&[("team", "a"), ("tier", "db")])));
        assert!(!s.selects(&labels(&[("team", "a"), ("tier", "web"), ("legacy", "y")])));
        assert!(!s.selects(&labels(&[("team", "a"), ("tier", "web"), ("env", "prod")])));
        let s = TargetSelector::parse("shard notin (b), owner").expect("parses");
        assert!(s.selects(&labels(&[("owner", "x")])));
        assert!(!s.selects(&labels(&[("owner", "x"), ("shard", "b")])));
        assert!(!s.selects(&labels(&[])));
        assert!(
            TargetSelector::parse("foo==bar")
                .expect("parses")
                .selects(&labels(&[("foo", "bar")]))
        );
    }

    #[test]
    fn a_malformed_requirement_is_named() {
        for bad in ["team=(a", "tier in web", "a b"] {
            let e = TargetSelector::parse(bad).expect_err(bad);
            assert!(e.contains("--target-label-selector"), "{e}");
        }
    }
}
