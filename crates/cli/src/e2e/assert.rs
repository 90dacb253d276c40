//! Orkestra's output assertions (`equals`, `outputContains`, `regex`, `greaterThan`, `oneOf`,
//! …): each set field is checked on the trimmed output; the first that fails says what was
//! expected and what was found.

use serde::Deserialize;

/// A YAML scalar read as text, as Orkestra reads `equals: 2` (a number) as `"2"`.
#[derive(Debug, Clone, PartialEq)]
pub struct Scalar(pub String);

impl<'de> Deserialize<'de> for Scalar {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Scalar;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string, number or boolean")
            }
            fn visit_str<E>(self, v: &str) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_bool<E>(self, v: bool) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Scalar, E> {
                Ok(Scalar(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

/// The assertion fields of one entry.
#[derive(Debug, Default, Clone)]
pub struct Assertions {
    pub equals: Option<Scalar>,
    pub not_equals: Option<Scalar>,
    pub output_contains: Option<Scalar>,
    pub output_not_contains: Option<Scalar>,
    pub regex: Option<String>,
    pub greater_than: Option<Scalar>,
    pub less_than: Option<Scalar>,
    pub greater_than_or_equal: Option<Scalar>,
    pub less_than_or_equal: Option<Scalar>,
    pub between: Option<Scalar>,
    pub not_between: Option<Scalar>,
    pub exists: bool,
    pub not_exists: bool,
    pub one_of: Vec<Scalar>,
    pub not_one_of: Vec<Scalar>,
}

/// Why an output did not hold: what the spec expects and what was found.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub expected: String,
    pub found: String,
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "expected {}, found {:?}", self.expected, self.found)
    }
}

impl Assertions {
    /// Checks `output` (trimmed) against every set field.
    ///
    /// # Errors
    /// The first assertion that does not hold.
    pub fn check(&self, output: &str) -> Result<(), Mismatch> {
        let out = output.trim();
        let fail = |expected: String| {
            Err(Mismatch {
                expected,
                found: out.to_string(),
            })
        };
        let num = |s: &str| s.trim().parse::<f64>().ok();
        let range = |s: &Scalar| {
            let (a, b) = s.0.split_once(',')?;
            Some((num(a)?, num(b)?))
        };
        if let Some(s) = &self.output_contains
            && !out.contains(&s.0)
        {
            return fail(format!("output containing {:?}", s.0));
        }
        if let Some(s) = &self.output_not_contains
            && out.contains(&s.0)
        {
            return fail(format!("output not containing {:?}", s.0));
        }
        if let Some(re) = &self.regex {
            match regex_lite::Regex::new(re) {
                Ok(r) if r.is_match(out) => {}
                Ok(_) => return fail(format!("output matching /{re}/")),
                Err(e) => return fail(format!("a valid regex (/{re}/: {e})")),
            }
        }
        if let Some(s) = &self.equals
            && out != s.0
        {
            return fail(format!("{:?}", s.0));
        }
        if let Some(s) = &self.not_equals
            && out == s.0
        {
            return fail(format!("anything but {:?}", s.0));
        }
        if !self.one_of.is_empty() && !self.one_of.iter().any(|s| s.0 == out) {
            return fail(format!("one of {:?}", texts(&self.one_of)));
        }
        if self.not_one_of.iter().any(|s| s.0 == out) {
            return fail(format!("none of {:?}", texts(&self.not_one_of)));
        }
        if self.exists && out.is_empty() {
            return fail("a value (exists)".into());
        }
        if self.not_exists && !out.is_empty() {
            return fail("no value (notExists)".into());
        }
        let value = num(out);
        let compare = [
            (
                &self.greater_than,
                ">",
                (|a, b| a > b) as fn(f64, f64) -> bool,
            ),
            (&self.less_than, "<", |a, b| a < b),
            (&self.greater_than_or_equal, ">=", |a, b| a >= b),
            (&self.less_than_or_equal, "<=", |a, b| a <= b),
        ];
        for (bound, op, holds) in compare {
            if let Some(b) = bound {
                match (value, num(&b.0)) {
                    (Some(v), Some(b)) if holds(v, b) => {}
                    _ => return fail(format!("a number {op} {}", b.0)),
                }
            }
        }
        if let Some(r) = &self.between {
            match (value, range(r)) {
                (Some(v), Some((lo, hi))) if (lo..=hi).contains(&v) => {}
                _ => return fail(format!("a number between {}", r.0)),
            }
        }
        if let Some(r) = &self.not_between {
            match (value, range(r)) {
                (Some(v), Some((lo, hi))) if !(lo..=hi).contains(&v) => {}
                _ => return fail(format!("a number outside {}", r.0)),
            }
        }
        Ok(())
    }
}

fn texts(list: &[Scalar]) -> Vec<&str> {
    list.iter().map(|s| s.0.as_str()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<Scalar> {
        Some(Scalar(v.into()))
    }

    #[test]
    fn equals_compares_the_trimmed_output_and_says_what_it_found() {
        let a = Assertions {
            equals: s("2"),
            ..Default::default()
        };
        assert_eq!(a.check(" 2\n"), Ok(()));
        let m = a.check("3").expect_err("fails");
        assert_eq!(m.to_string(), r#"expected "2", found "3""#);
    }

    #[test]
    fn numeric_bounds_fail_on_text_that_is_no_number() {
        let a = Assertions {
            greater_than: s("1"),
            between: s("1,5"),
            ..Default::default()
        };
        assert!(a.check("3").is_ok());
        assert!(a.check("1").is_err());
        assert!(a.check("many").is_err());
        assert!(a.check("6").is_err());
    }

    #[test]
    fn contains_regex_and_one_of_combine() {
        let a = Assertions {
            output_contains: s("Running"),
            regex: Some("^Run".into()),
            one_of: vec![Scalar("Running".into()), Scalar("Ready".into())],
            ..Default::default()
        };
        assert!(a.check("Running").is_ok());
        assert!(a.check("Pending").is_err());
    }
}
