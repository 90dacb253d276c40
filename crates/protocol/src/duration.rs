//! Go's `time.ParseDuration` grammar, exactly: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` with the units
//! `ns`, `us`, `µs`, `μs`, `ms`, `s`, `m`, `h`, or the bare `0` (SPEC §1).

use std::time::Duration;

/// The largest magnitude Go's `time.Duration` can hold, in nanoseconds (2^63).
const LIMIT: u128 = 1 << 63;

/// A signed duration in nanoseconds, as Go's `time.Duration` holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoDuration(i64);

impl GoDuration {
    pub fn as_nanos(self) -> i64 {
        self.0
    }

    /// The duration as a `std` one; `None` when negative.
    pub fn to_std(self) -> Option<Duration> {
        u64::try_from(self.0).ok().map(Duration::from_nanos)
    }
}

/// Why a string is not a Go duration.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("invalid duration {0:?} (e.g. \"90s\", \"1.5s\", \"1h30m\")")]
    Invalid(String),
    #[error("missing unit in duration {0:?} (units: ns, us, ms, s, m, h)")]
    MissingUnit(String),
    #[error("unknown unit {unit:?} in duration {input:?} (units: ns, us, ms, s, m, h)")]
    UnknownUnit { unit: String, input: String },
    #[error("duration {0:?} is out of range (at most about 292 years)")]
    Overflow(String),
}

/// Parses `input` as Go's `time.ParseDuration` does: `1.5s`, `300ms`, `1h30m`, `-2m`, `+5s`,
/// `0`. No spaces, no other units, no exponent.
///
/// # Errors
/// Anything outside the grammar, an unknown unit, or a value Go's `time.Duration` cannot hold.
pub fn parse_go_duration(input: &str) -> Result<GoDuration, DurationError> {
    let invalid = || DurationError::Invalid(input.to_string());
    let overflow = || DurationError::Overflow(input.to_string());
    let (negative, mut rest) = match input.as_bytes().first() {
        Some(b'-') => (true, &input[1..]),
        Some(b'+') => (false, &input[1..]),
        _ => (false, input),
    };
    if rest == "0" {
        return Ok(GoDuration(0));
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        if !rest.starts_with(|c: char| c == '.' || c.is_ascii_digit()) {
            return Err(invalid());
        }
        let (whole, whole_digits, after) = leading_whole(rest).ok_or_else(overflow)?;
        rest = after;
        let mut fraction = Fraction::default();
        if let Some(after_dot) = rest.strip_prefix('.') {
            let (f, after) = leading_fraction(after_dot);
            fraction = f;
            rest = after;
        }
        if whole_digits == 0 && fraction.digits == 0 {
            return Err(invalid());
        }
        let unit_len = rest
            .find(|c: char| c == '.' || c.is_ascii_digit())
            .unwrap_or(rest.len());
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(input.to_string()));
        }
        let (unit, after) = rest.split_at(unit_len);
        rest = after;
        let per_unit: u128 = match unit {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60 * 1_000_000_000,
            "h" => 3_600 * 1_000_000_000,
            _ => {
                return Err(DurationError::UnknownUnit {
                    unit: unit.to_string(),
                    input: input.to_string(),
                });
            }
        };
        if whole > LIMIT / per_unit {
            return Err(overflow());
        }
        let mut value = whole * per_unit;
        if fraction.value > 0 {
            // As Go does, in floating point: exact to the nanosecond for fractions of an hour.
            let part = (fraction.value as f64 * (per_unit as f64 / fraction.scale)) as u128;
            value += part;
            if value > LIMIT {
                return Err(overflow());
            }
        }
        total += value;
        if total > LIMIT {
            return Err(overflow());
        }
    }
    let signed = if negative {
        -i128::try_from(total).map_err(|_| overflow())?
    } else {
        i128::try_from(total).map_err(|_| overflow())?
    };
    i64::try_from(signed)
        .map(GoDuration)
        .map_err(|_| overflow())
}

/// The digits after a decimal point: their value, `10^digits` kept (as Go does, precision stops
/// accumulating once the value would pass 2^63), and how many there were.
#[derive(Default)]
struct Fraction {
    value: u64,
    scale: f64,
    digits: usize,
}

/// The leading `[0-9]*` of `s`: its value (`None` past 2^63), how many digits, the rest.
fn leading_whole(s: &str) -> Option<(u128, usize, &str)> {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = s.split_at(digits);
    let mut value: u128 = 0;
    for b in number.bytes() {
        value = value * 10 + u128::from(b - b'0');
        if value > LIMIT {
            return None;
        }
    }
    Some((value, digits, rest))
}

fn leading_fraction(s: &str) -> (Fraction, &str) {
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    let (number, rest) = s.split_at(digits);
    let mut fraction = Fraction {
        value: 0,
        scale: 1.0,
        digits,
    };
    let mut saturated = false;
    for b in number.bytes() {
        if saturated {
            continue;
        }
        // Go's bounds: stop gaining precision before the value would pass 2^63.
        if u128::from(fraction.value) > (LIMIT - 1) / 10 {
            saturated = true;
            continue;
        }
        let next = u128::from(fraction.value) * 10 + u128::from(b - b'0');
        match u64::try_from(next) {
            Ok(v) if next <= LIMIT => {
                fraction.value = v;
                fraction.scale *= 10.0;
            }
            _ => saturated = true,
        }
    }
    (fraction, rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(s: &str) -> i64 {
        parse_go_duration(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .as_nanos()
    }

    const SEC: i64 = 1_000_000_000;

    #[test]
    fn go_durations_parse_as_go_parses_them() {
        for (input, want) in [
            ("0", 0),
            ("-0", 0),
            ("+0", 0),
            ("0s", 0),
            ("5s", 5 * SEC),
            ("30s", 30 * SEC),
            ("1478s", 1478 * SEC),
            ("-5s", -5 * SEC),
            ("+5s", 5 * SEC),
            ("1.5s", 1_500_000_000),
            ("1.s", SEC),
            (".5s", 500_000_000),
            ("1.0s", SEC),
            ("1.004s", 1_004_000_000),
            ("100.00100s", 100 * SEC + 1_000_000),
            ("10ns", 10),
            ("11us", 11_000),
            ("12µs", 12_000),
            ("12μs", 12_000),
            ("13ms", 13_000_000),
            ("14s", 14 * SEC),
            ("15m", 15 * 60 * SEC),
            ("16h", 16 * 3600 * SEC),
            ("3h30m", (3 * 3600 + 30 * 60) * SEC),
            ("10.5s4m", 4 * 60 * SEC + 10_500_000_000),
            ("-2m3.4s", -(2 * 60 * SEC + 3_400_000_000)),
            ("1h2m3s4ms5us6ns", 3_723_004_005_006),
            ("39h9m14.425s", 140_954_425_000_000),
            ("52763797000ns", 52_763_797_000),
            ("0.3333333333333333333h", 20 * 60 * SEC),
            ("9007199254740993ns", 9_007_199_254_740_993),
            ("9223372036854775807ns", i64::MAX),
            ("9223372036854775.807us", i64::MAX),
            ("9223372036s854ms775us807ns", i64::MAX),
            ("-9223372036854775808ns", i64::MIN),
            ("-9223372036854775.808us", i64::MIN),
            ("0.100000000000000000000h", 6 * 60 * SEC),
            ("0.830103483285477580700h", 49 * 60 * SEC + 48_372_539_827),
        ] {
            assert_eq!(nanos(input), want, "{input}");
        }
    }

    #[test]
    fn anything_outside_go_grammar_is_an_error() {
        for input in [
            "",
            "3",
            "-",
            "s",
            ".",
            "-.",
            ".s",
            "+.s",
            "1d",
            "1.1.1s",
            "5 seconds",
            "1h 30m",
            " 5s",
            "5s ",
            "5S",
            "1e3s",
            "1h-5m",
            "0x10s",
            "00",
            "--5s",
        ] {
            assert!(parse_go_duration(input).is_err(), "{input:?} accepted");
        }
        assert_eq!(
            parse_go_duration("5 seconds"),
            Err(DurationError::UnknownUnit {
                unit: " seconds".into(),
                input: "5 seconds".into()
            })
        );
        assert_eq!(
            parse_go_duration("3"),
            Err(DurationError::MissingUnit("3".into()))
        );
    }

    #[test]
    fn overflow_is_an_error_never_a_panic() {
        for input in [
            "9223372036854775808ns",
            "-9223372036854775809ns",
            "9223372036854775.808us",
            "9223372036854ms775us808ns",
            "3000000h",
            "99999999999999999999999999999999s",
            "1000000000000000000000000000000000000000000h",
            "2562048h",
        ] {
            assert!(
                matches!(parse_go_duration(input), Err(DurationError::Overflow(_))),
                "{input:?}: {:?}",
                parse_go_duration(input)
            );
        }
        // A long fraction stops gaining precision instead of overflowing, as in Go.
        assert_eq!(nanos("1.00000000000000000000000000000000000001s"), SEC);
    }

    #[test]
    fn negative_durations_have_no_std_equivalent() {
        let d = parse_go_duration("-1s").expect("valid");
        assert_eq!(d.to_std(), None);
        assert_eq!(
            parse_go_duration("1m").expect("valid").to_std(),
            Some(Duration::from_secs(60))
        );
    }
}
