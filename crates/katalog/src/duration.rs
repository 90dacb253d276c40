//! Durations written as Go/humantime strings (`15s`, `5m`, `1h30m`, `250ms`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration read from a string such as `1h30m`; serialised back the same way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

impl Duration {
    pub const fn from_secs(secs: u64) -> Duration {
        Duration(std::time::Duration::from_secs(secs))
    }

    pub fn get(self) -> std::time::Duration {
        self.0
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }
}

/// Why a duration string did not parse.
#[derive(Debug, thiserror::Error)]
#[error("invalid duration \"{input}\": {reason} (use e.g. 15s, 5m, 1h30m, 250ms)")]
pub struct DurationError {
    input: String,
    reason: String,
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let trimmed = s.trim();
        if trimmed == "0" {
            return Ok(Duration::default());
        }
        humantime::parse_duration(trimmed)
            .map(Duration)
            .map_err(|e| DurationError {
                input: s.to_string(),
                reason: e.to_string(),
            })
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}",
            humantime::format_duration(self.0)
                .to_string()
                .replace(' ', "")
        )
    }
}

impl<'de> Deserialize<'de> for Duration {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Serialize for Duration {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl schemars::JsonSchema for Duration {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Duration".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A duration such as 15s, 5m, 1h30m or 250ms.",
            "examples": ["15s", "5m", "1h30m"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_style_durations_parse() {
        assert_eq!(
            "15s".parse::<Duration>().ok(),
            Some(Duration::from_secs(15))
        );
        assert_eq!(
            "1h30m".parse::<Duration>().ok(),
            Some(Duration::from_secs(5400))
        );
        assert_eq!(
            "250ms"
                .parse::<Duration>()
                .map(|d| d.get().as_millis())
                .ok(),
            Some(250)
        );
    }

    #[test]
    fn bad_duration_says_how_to_write_one() {
        let err = "fifteen seconds".parse::<Duration>().expect_err("invalid");
        assert!(err.to_string().contains("use e.g. 15s"));
    }

    #[test]
    fn display_round_trips() {
        let d: Duration = "1h30m".parse().expect("valid");
        assert_eq!(d.to_string().parse::<Duration>().ok(), Some(d));
    }
}
