//! Durations in exactly Go's `time.ParseDuration` grammar (`15s`, `1.5s`, `300ms`, `1h30m`,
//! `2h45m30.5s`; units `ns`, `us`, `µs`, `ms`, `s`, `m`, `h`), through one parser for the Katalog
//! and for service answers alike: `ork_protocol`'s, with Go's exact values. ork bounds every
//! duration to one year.

use std::fmt;
use std::str::FromStr;

use ork_protocol::{DurationError as GoDurationError, parse_go_duration};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A duration read from a Go duration string such as `1h30m`; written back in Go's format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Duration(pub std::time::Duration);

/// The longest duration ork accepts anywhere: one year of 365 days (`8760h`).
pub const MAX: std::time::Duration = std::time::Duration::from_secs(365 * 24 * 3600);

const NANOS_PER_SEC: u128 = 1_000_000_000;

impl Duration {
    pub const fn from_secs(secs: u64) -> Duration {
        Duration(std::time::Duration::from_secs(secs))
    }

    pub const fn from_millis(millis: u64) -> Duration {
        Duration(std::time::Duration::from_millis(millis))
    }

    pub fn get(self) -> std::time::Duration {
        self.0
    }

    pub fn is_zero(self) -> bool {
        self.0.is_zero()
    }

    /// Parses like Go's `time.ParseDuration` without ork's one-year bound (negative durations
    /// are still refused: nothing in ork waits a negative time).
    ///
    /// # Errors
    /// As [`FromStr`], minus the bound.
    pub fn parse_unbounded(s: &str) -> Result<Duration, DurationError> {
        parse_go(s).map(|nanos| Duration(from_nanos(nanos)))
    }
}

/// Why a duration string was refused: the input, the reason and, when useful, how to write it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid duration \"{input}\": {reason}{}", hint.as_deref().map(|h| format!(" ({h})")).unwrap_or_default())]
pub struct DurationError {
    pub input: String,
    pub reason: String,
    pub hint: Option<String>,
}

impl DurationError {
    fn new(input: &str, reason: impl Into<String>) -> DurationError {
        DurationError {
            input: input.to_string(),
            reason: reason.into(),
            hint: Some("use Go duration syntax, e.g. 15s, 1.5s, 300ms, 1h30m".into()),
        }
    }
}

impl FromStr for Duration {
    type Err = DurationError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let nanos = parse_go(s)?;
        let d = from_nanos(nanos);
        if d > MAX {
            return Err(DurationError {
                input: s.to_string(),
                reason: "longer than one year".into(),
                hint: Some("ork accepts durations up to 8760h".into()),
            });
        }
        Ok(Duration(d))
    }
}

fn from_nanos(nanos: u128) -> std::time::Duration {
    // parse_go keeps nanos ≤ i64::MAX, so both parts fit.
    let secs = u64::try_from(nanos / NANOS_PER_SEC).unwrap_or(u64::MAX);
    let sub = u32::try_from(nanos % NANOS_PER_SEC).unwrap_or(0);
    std::time::Duration::new(secs, sub)
}

/// Go's `time.ParseDuration` through [`ork_protocol::parse_go_duration`], the one parser of
/// ork (SPEC §1); its errors said with a reason and a hint for a Katalog's author. Returns
/// nanoseconds (never negative).
fn parse_go(input: &str) -> Result<u128, DurationError> {
    let nanos = parse_go_duration(input).map_err(|e| match e {
        GoDurationError::Invalid(_) => invalid(input),
        GoDurationError::MissingUnit(_) => DurationError::new(input, "missing unit"),
        GoDurationError::UnknownUnit { unit, .. } => unknown_unit(input, &unit),
        GoDurationError::Overflow(_) => DurationError {
            input: input.to_string(),
            reason: "too large (overflows Go's 292-year limit)".into(),
            hint: Some("ork accepts durations up to 8760h".into()),
        },
    })?;
    u128::try_from(nanos.as_nanos()).map_err(|_| DurationError {
        input: input.to_string(),
        reason: "negative".into(),
        hint: Some("write a positive duration such as 30s".into()),
    })
}

/// Outside the grammar: empty, spaces around it, or something other than a number where a
/// number must come.
fn invalid(input: &str) -> DurationError {
    let reason = if input.trim_start_matches(['+', '-']).is_empty() {
        "empty"
    } else if input.trim() != input {
        "surrounding spaces"
    } else {
        "each part must be a number followed by a unit"
    };
    DurationError::new(input, reason)
}

fn unknown_unit(input: &str, unit: &str) -> DurationError {
    let word = unit.trim().to_ascii_lowercase();
    let (suggested, note) = match word.as_str() {
        "sec" | "secs" | "second" | "seconds" => ("s", None),
        "min" | "mins" | "minute" | "minutes" => ("m", None),
        "hr" | "hrs" | "hour" | "hours" => ("h", None),
        "msec" | "millis" | "millisecond" | "milliseconds" => ("ms", None),
        "d" | "day" | "days" => ("h", Some("24h is one day")),
        "w" | "week" | "weeks" => ("h", Some("168h is one week")),
        _ => ("", None),
    };
    let mut e = DurationError::new(input, format!("unknown unit \"{unit}\""));
    if let Some(note) = note {
        e.hint = Some(format!("Go durations have no days or weeks: {note}"));
    } else if !suggested.is_empty() {
        let number: String = input
            .trim_start_matches(['+', '-'])
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .collect();
        e.hint = Some(format!(
            "units are ns, us, ms, s, m, h with no space: write {number}{suggested}"
        ));
    } else {
        e.hint = Some("units are ns, us (or µs), ms, s, m, h, e.g. 1h30m or 250ms".into());
    }
    e
}

impl fmt::Display for Duration {
    /// Go's `Duration.String`: `1h30m0s`, `1.5s`, `300ms`, `0s`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nanos = self.0.as_nanos();
        if nanos == 0 {
            return f.write_str("0s");
        }
        if nanos < NANOS_PER_SEC {
            let (unit, per) = if nanos < 1_000 {
                ("ns", 1)
            } else if nanos < 1_000_000 {
                ("\u{b5}s", 1_000)
            } else {
                ("ms", 1_000_000)
            };
            return write!(f, "{}{unit}", decimal(nanos, per));
        }
        let hours = nanos / (3600 * NANOS_PER_SEC);
        let minutes = nanos / (60 * NANOS_PER_SEC) % 60;
        let seconds = nanos % (60 * NANOS_PER_SEC);
        if hours > 0 {
            write!(f, "{hours}h")?;
        }
        if hours > 0 || minutes > 0 {
            write!(f, "{minutes}m")?;
        }
        write!(f, "{}s", decimal(seconds, NANOS_PER_SEC))
    }
}

/// `value / per` as a decimal without trailing zeros.
fn decimal(value: u128, per: u128) -> String {
    let whole = value / per;
    let frac = value % per;
    if frac == 0 {
        return whole.to_string();
    }
    let width = per.ilog10() as usize;
    let digits = format!("{frac:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
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
            "description": "A Go duration (time.ParseDuration) such as 15s, 1.5s, 300ms or 1h30m; at most one year (8760h).",
            "pattern": "^([0-9]*(\\.[0-9]*)?(ns|us|µs|μs|ms|s|m|h))+$|^0$",
            "examples": ["15s", "5m", "1h30m"]
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> std::time::Duration {
        s.parse::<Duration>().expect("valid duration").get()
    }

    #[test]
    fn go_syntax_parses_exactly() {
        assert_eq!(d("15s"), std::time::Duration::from_secs(15));
        assert_eq!(d("1.5s"), std::time::Duration::from_millis(1500));
        assert_eq!(d("300ms"), std::time::Duration::from_millis(300));
        assert_eq!(d("1h30m"), std::time::Duration::from_secs(5400));
        assert_eq!(
            d("2h45m30.5s"),
            std::time::Duration::from_millis(((2 * 60 + 45) * 60 + 30) * 1000 + 500)
        );
        assert_eq!(d("1us"), std::time::Duration::from_micros(1));
        assert_eq!(d("1µs"), std::time::Duration::from_micros(1));
        assert_eq!(d("1μs"), std::time::Duration::from_micros(1));
        assert_eq!(d("7ns"), std::time::Duration::from_nanos(7));
        assert_eq!(d(".5m"), std::time::Duration::from_secs(30));
        assert_eq!(d("5.s"), std::time::Duration::from_secs(5));
        assert_eq!(d("+5s"), std::time::Duration::from_secs(5));
        assert_eq!(d("0"), std::time::Duration::ZERO);
        assert_eq!(d("0s"), std::time::Duration::ZERO);
        assert_eq!(d("1h1h"), std::time::Duration::from_secs(7200));
    }

    #[test]
    fn fractions_have_go_values_to_the_nanosecond() {
        // Go multiplies the fraction in floating point; the exact quotient is a nanosecond off.
        for (input, nanos) in [
            ("0.3333333333333333333h", 20 * 60 * 1_000_000_000),
            (
                "0.830103483285477580700h",
                49 * 60 * 1_000_000_000 + 48_372_539_827,
            ),
            ("1.00000000000000000000000000000000000001s", 1_000_000_000),
        ] {
            assert_eq!(d(input), std::time::Duration::from_nanos(nanos), "{input}");
            let answer = ork_protocol::parse_go_duration(input).map(|g| g.to_std());
            assert_eq!(
                answer,
                Ok(Some(d(input))),
                "{input}: the Katalog and answers read one value"
            );
        }
    }

    #[test]
    fn english_is_an_error_with_a_hint() {
        let err = "5 seconds".parse::<Duration>().expect_err("not Go syntax");
        assert!(err.to_string().contains("unknown unit"), "{err}");
        assert!(err.to_string().contains("write 5s"), "{err}");
        let err = "7d".parse::<Duration>().expect_err("days are no Go unit");
        assert!(err.to_string().contains("24h is one day"), "{err}");
        for bad in ["", "s", "5", "1.5", ".", "-", "5S", "1h 30m", " 5s", "five"] {
            assert!(bad.parse::<Duration>().is_err(), "{bad:?} must be refused");
        }
        for (bad, reason) in [
            ("", "empty"),
            ("-", "empty"),
            (" 5s", "surrounding spaces"),
            ("five", "each part must be a number followed by a unit"),
            ("5", "missing unit"),
        ] {
            let err = bad.parse::<Duration>().expect_err("refused");
            assert_eq!(err.reason, reason, "{bad:?}");
        }
    }

    #[test]
    fn nothing_above_one_year_and_no_overflow() {
        assert_eq!(d("8760h"), MAX);
        let err = "8761h".parse::<Duration>().expect_err("above a year");
        assert!(err.reason.contains("longer than one year"));
        let err = "9999999999999999999h"
            .parse::<Duration>()
            .expect_err("overflow");
        assert!(err.reason.contains("too large"), "{err}");
        assert!(
            "99999999999999999999999999999999999999999999ns"
                .parse::<Duration>()
                .is_err()
        );
        assert!("2562047h47m16.854775808s".parse::<Duration>().is_err());
        assert!(Duration::parse_unbounded("2562047h47m16.854775807s").is_ok());
        assert!(Duration::parse_unbounded("2562047h47m16.854775808s").is_err());
    }

    #[test]
    fn negative_durations_are_refused() {
        let err = "-5s".parse::<Duration>().expect_err("negative");
        assert_eq!(err.reason, "negative");
        let err = Duration::parse_unbounded("-9223372036854775808ns").expect_err("negative");
        assert_eq!(err.reason, "negative");
        assert_eq!(d("-0"), std::time::Duration::ZERO);
    }

    #[test]
    fn display_is_go_format_and_round_trips() {
        for (input, shown) in [
            ("1h30m", "1h30m0s"),
            ("1.5s", "1.5s"),
            ("300ms", "300ms"),
            ("90s", "1m30s"),
            ("0", "0s"),
            ("1500us", "1.5ms"),
            ("2h45m30.5s", "2h45m30.5s"),
            ("12ns", "12ns"),
        ] {
            let parsed: Duration = input.parse().expect("valid");
            assert_eq!(parsed.to_string(), shown);
            assert_eq!(shown.parse::<Duration>().ok(), Some(parsed));
        }
    }
}
