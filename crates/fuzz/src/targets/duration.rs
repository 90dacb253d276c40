//! Durations (SPEC §1: Go's `time.ParseDuration` grammar, one parser for the Katalog and the
//! answers, nothing above one year): `ork_katalog::Duration` (bounded and unbounded) and
//! `ork_protocol::parse_go_duration`, against a line-by-line port of Go's own function
//! ([`go_parse_duration`]) as the oracle, and through `decide` as a `requeueAfter`.
//!
//! Properties: the protocol parser is Go's (accept, reject, value); the Katalog parser accepts
//! exactly Go's non-negative durations, with Go's value, and its bounded form exactly those up
//! to one year; a Katalog duration prints (Go's `String`) as text that parses back to it;
//! `decide` takes a `requeueAfter` exactly when Go's value is in [1s, 1 year] (`0` with `ok`).

use std::str::FromStr;

use ork_protocol::{Outcome, decide, parse_go_duration};

use crate::generate::Gen;
use crate::runner::{Case, Target};

#[derive(Debug)]
pub struct Durations;

const NS: i128 = 1;
const US: i128 = 1_000;
const MS: i128 = 1_000_000;
const S: i128 = 1_000_000_000;
const M: i128 = 60 * S;
const H: i128 = 60 * M;
const YEAR: i128 = 8760 * H;

/// Go's `time.ParseDuration` (go/src/time/format.go), statement by statement: nanoseconds, or
/// `None` where Go returns an error.
pub fn go_parse_duration(input: &str) -> Option<i64> {
    let mut s = input.as_bytes();
    let mut d: u64 = 0;
    let mut neg = false;
    if let Some(&c) = s.first()
        && (c == b'-' || c == b'+')
    {
        neg = c == b'-';
        s = &s[1..];
    }
    if s == b"0" {
        return Some(0);
    }
    if s.is_empty() {
        return None;
    }
    while !s.is_empty() {
        let mut f: u64 = 0;
        let mut scale: f64 = 1.0;
        if !(s[0] == b'.' || s[0].is_ascii_digit()) {
            return None;
        }
        let pl = s.len();
        let (v0, rest) = leading_int(s)?;
        let mut v = v0;
        s = rest;
        let pre = pl != s.len();
        let mut post = false;
        if !s.is_empty() && s[0] == b'.' {
            s = &s[1..];
            let pl = s.len();
            let (ff, sc, rest) = leading_fraction(s);
            f = ff;
            scale = sc;
            s = rest;
            post = pl != s.len();
        }
        if !pre && !post {
            return None;
        }
        let i = s
            .iter()
            .position(|&c| c == b'.' || c.is_ascii_digit())
            .unwrap_or(s.len());
        if i == 0 {
            return None;
        }
        let u = &s[..i];
        s = &s[i..];
        let unit: u64 = match u {
            b"ns" => 1,
            b"us" => 1_000,
            b"\xc2\xb5s" | b"\xce\xbcs" => 1_000,
            b"ms" => 1_000_000,
            b"s" => 1_000_000_000,
            b"m" => 60_000_000_000,
            b"h" => 3_600_000_000_000,
            _ => return None,
        };
        if v > (1u64 << 63) / unit {
            return None;
        }
        v *= unit;
        if f > 0 {
            v += (f as f64 * (unit as f64 / scale)) as u64;
            if v > 1 << 63 {
                return None;
            }
        }
        d = d.wrapping_add(v);
        if d > 1 << 63 {
            return None;
        }
    }
    if neg {
        return Some((d as i64).wrapping_neg());
    }
    if d > (1 << 63) - 1 {
        return None;
    }
    Some(d as i64)
}

fn leading_int(s: &[u8]) -> Option<(u64, &[u8])> {
    let mut x: u64 = 0;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() {
            break;
        }
        if x > (1 << 63) / 10 {
            return None;
        }
        x = x * 10 + u64::from(c - b'0');
        if x > 1 << 63 {
            return None;
        }
        i += 1;
    }
    Some((x, &s[i..]))
}

fn leading_fraction(s: &[u8]) -> (u64, f64, &[u8]) {
    let mut x: u64 = 0;
    let mut scale = 1.0;
    let mut overflow = false;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if !c.is_ascii_digit() {
            break;
        }
        i += 1;
        if overflow {
            continue;
        }
        if x > ((1u64 << 63) - 1) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(c - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[i..])
}

impl Target for Durations {
    fn name(&self) -> &'static str {
        "duration"
    }

    fn about(&self) -> &'static str {
        "Katalog and protocol duration parsers vs a port of Go's ParseDuration; requeueAfter via decide"
    }

    fn run(&self, g: &mut Gen, case: &mut Case) {
        let input = duration_text(g);
        case.note("duration", &format!("{input:?}"));
        case.begin();
        check(&input, case);
        requeue(g, &input, case);
    }
}

/// Every property for one input.
fn check(input: &str, case: &mut Case) {
    let go = go_parse_duration(input);
    let protocol = parse_go_duration(input).ok().map(|d| d.as_nanos());
    case.check(protocol == go, "duration-protocol-is-go", || {
        format!("{input:?}: parse_go_duration gives {protocol:?} ns, Go gives {go:?}")
    });

    let unbounded = ork_katalog::Duration::parse_unbounded(input)
        .ok()
        .map(|d| d.get().as_nanos());
    let want = go.filter(|n| *n >= 0).map(|n| n.unsigned_abs() as u128);
    case.check(unbounded == want, "duration-katalog-is-go", || {
        format!(
            "{input:?}: ork_katalog::Duration::parse_unbounded gives {unbounded:?} ns, Go gives {go:?}"
        )
    });

    let bounded = ork_katalog::Duration::from_str(input).ok();
    let in_year = go.is_some_and(|n| (0..=YEAR).contains(&i128::from(n)));
    if bounded.is_some() != in_year {
        case.fail(
            "duration-katalog-bound",
            format!(
                "{input:?}: the Katalog {} it, Go's value is {go:?} ns (bound: 8760h)",
                if bounded.is_some() {
                    "accepts"
                } else {
                    "refuses"
                }
            ),
        );
    }
    if let Some(d) = bounded {
        let shown = d.to_string();
        let back = ork_katalog::Duration::from_str(&shown).ok();
        case.check(back == Some(d), "duration-display-round-trip", || {
            format!(
                "{input:?} parses to {:?}, prints as {shown:?}, which parses to {back:?}",
                d.get()
            )
        });
        let go_back = go_parse_duration(&shown).map(i128::from);
        case.check(
            go_back == Some(d.get().as_nanos() as i128),
            "duration-display-is-go",
            || {
                format!(
                    "{shown:?} (printed from {input:?}) reads as {go_back:?} ns in Go, not {}",
                    d.get().as_nanos()
                )
            },
        );
    }
}

/// `requeueAfter` through `decide`: accepted exactly in [1s, 1 year], `0` only with `ok`.
fn requeue(g: &mut Gen, input: &str, case: &mut Case) {
    let result = *g.pick(&["requeue", "ok", ""]);
    let mut body = String::from("{\"result\":\"");
    body.push_str(result);
    body.push_str("\",\"requeueAfter\":");
    crate::doc::json_string(input, &mut body);
    body.push('}');
    let policy = crate::targets::answer::small_policy();
    let decision = decide(body.as_bytes(), &policy);
    let go = go_parse_duration(input).map(i128::from);
    let in_range = go.is_some_and(|n| (S..=YEAR).contains(&n));
    let want = if input.is_empty() {
        result != "requeue"
    } else {
        in_range || (go == Some(0) && result != "requeue")
    };
    if decision.is_ok() != want {
        case.fail(
            "requeue-after-bounds",
            format!(
                "{body}: decide {} it; Go reads {go:?} ns",
                if decision.is_ok() {
                    "accepts"
                } else {
                    "refuses"
                }
            ),
        );
    }
    if let Ok(d) = decision {
        let after = match d.outcome {
            Outcome::Requeue { after } => Some(after),
            Outcome::Ok { requeue_after } => requeue_after,
            Outcome::Error { .. } => None,
        };
        if let (Some(after), Some(go)) = (after, go) {
            case.check(
                after.as_nanos() as i128 == go,
                "requeue-after-value",
                || format!("{body}: decide waits {after:?}, Go reads {go} ns"),
            );
        }
    }
}

/// Duration text: well formed with values near every bound, in random unit splits; or broken
/// in one of Go's ways (no unit, unknown unit, spaces, signs, exponents, overflow).
fn duration_text(g: &mut Gen) -> String {
    match g.below(6) {
        0 => (*g.pick(SPECIAL)).to_string(),
        1 | 2 => {
            let nanos = interesting_nanos(g);
            spell(g, nanos)
        }
        3 => {
            // Structured but random: sign, segments of digits, fraction, unit.
            let mut s = String::new();
            s.push_str(g.word(&["", "", "", "-", "+", "--", " "]));
            for _ in 0..1 + g.below(4) {
                let digits = g.len(3, 25, 400);
                for _ in 0..digits {
                    s.push(char::from(b'0' + u8::try_from(g.below(10)).unwrap_or(0)));
                }
                if g.one_in(3) {
                    s.push('.');
                    for _ in 0..g.len(3, 30, 400) {
                        s.push(char::from(b'0' + u8::try_from(g.below(10)).unwrap_or(0)));
                    }
                }
                s.push_str(g.word(UNITS));
            }
            s
        }
        4 => {
            let nanos = interesting_nanos(g);
            let s = spell(g, nanos);
            g.mutate_str(&s)
        }
        _ => g.hostile_str(),
    }
}

const UNITS: &[&str] = &[
    "ns",
    "us",
    "µs",
    "μs",
    "ms",
    "s",
    "m",
    "h",
    "",
    "S",
    "H",
    "d",
    "w",
    "y",
    "sec",
    "secs",
    "seconds",
    " s",
    "s ",
    "mss",
    "µ",
    "μ",
    "hh",
    "é",
    "ns\0",
    "n",
    "u",
    "M",
    "Ms",
    "mS",
    "\u{2009}s",
];

const SPECIAL: &[&str] = &[
    "",
    "0",
    "-0",
    "+0",
    "00",
    "0.0",
    "0s",
    "-0s",
    ".",
    ".s",
    "-.s",
    "+.s",
    "s",
    "1",
    "1.",
    "1.s",
    ".5s",
    "1e3s",
    "0x10s",
    "1_000s",
    " 5s",
    "5s ",
    "5 s",
    "1h 30m",
    "5 seconds",
    "7d",
    "1h-5m",
    "--5s",
    "-+5s",
    "1s1",
    "1.1.1s",
    "8760h",
    "8760h0m0.000000001s",
    "8759h59m59.999999999s",
    "8760h1ns",
    "525600m",
    "31536000s",
    "31536000.000000001s",
    "31536000000ms",
    "999ms",
    "999.999999999ms",
    "1000ms",
    "0.999999999s",
    "1s",
    "1ns",
    "-1ns",
    "9223372036854775807ns",
    "9223372036854775808ns",
    "-9223372036854775808ns",
    "-9223372036854775809ns",
    "2562047h47m16.854775807s",
    "2562047h47m16.854775808s",
    "2562048h",
    "9223372036854775.807us",
    "9223372036854775.808us",
    "0.3333333333333333333h",
    "0.1h",
    "0.7h",
    "1.1h",
    "1.000000000000000000001s",
    "0.830103483285477580700h",
    "18446744073709551616ns",
    "99999999999999999999999999999s",
];

/// A nanosecond count near a bound: 0, 1s, one year, Go's limit, or anywhere.
fn interesting_nanos(g: &mut Gen) -> i128 {
    let base = *g.pick(&[0, NS, MS, S, M, H, YEAR, i128::from(i64::MAX), 1i128 << 63]);
    let jitter = match g.below(5) {
        0 => 0,
        1 => i128::try_from(g.below(3)).unwrap_or(0) - 1,
        2 => i128::try_from(g.below(2001)).unwrap_or(0) - 1000,
        3 => i128::from(g.u64() >> g.below(64)),
        _ => i128::from(g.u64() % 1_000_000_000_000),
    };
    let n = base + jitter;
    if g.one_in(8) { -n } else { n }
}

/// `nanos` written in Go's syntax in a random split: `1h2m3.5s`, `3723500ms`, `.5s`…
fn spell(g: &mut Gen, nanos: i128) -> String {
    let mut out = String::new();
    if nanos < 0 {
        out.push('-');
    } else if g.one_in(10) {
        out.push('+');
    }
    let mut rest = nanos.abs();
    if rest == 0 {
        out.push_str(g.word(&["0", "0s", "0ns", "0.0h", ".0s", "0h0m"]));
        return out;
    }
    let units: [(i128, &str); 8] = [
        (H, "h"),
        (M, "m"),
        (S, "s"),
        (MS, "ms"),
        (US, "us"),
        (US, "µs"),
        (US, "μs"),
        (NS, "ns"),
    ];
    let start = g.below(units.len());
    for (i, &(per, name)) in units.iter().enumerate().skip(start) {
        let last = i == units.len() - 1 || g.one_in(3);
        let whole = rest / per;
        let frac = rest % per;
        if last && frac != 0 && per > 1 && per <= S {
            let width = usize::try_from(per.ilog10()).unwrap_or(0);
            out.push_str(&format!("{whole}.{frac:0width$}{name}"));
            return out;
        }
        if whole > 0 || (last && rest == 0) {
            out.push_str(&format!("{whole}{name}"));
        }
        rest = frac;
        if rest == 0 && (last || g.coin()) {
            break;
        }
        if last {
            out.push_str(&format!("{rest}ns"));
            return out;
        }
    }
    if rest != 0 {
        out.push_str(&format!("{rest}ns"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oracle_is_go() {
        for (input, want) in [
            ("0", Some(0)),
            ("-0", Some(0)),
            ("1.5s", Some(1_500_000_000)),
            ("1h2m3s4ms5us6ns", Some(3_723_004_005_006)),
            ("0.3333333333333333333h", Some(1_200_000_000_000)),
            ("9223372036854775807ns", Some(i64::MAX)),
            ("9223372036854775808ns", None),
            ("-9223372036854775808ns", Some(i64::MIN)),
            ("12µs", Some(12_000)),
            ("12μs", Some(12_000)),
            ("", None),
            ("3", None),
            (".s", None),
            ("1d", None),
            (" 1s", None),
        ] {
            assert_eq!(go_parse_duration(input), want, "{input}");
        }
    }

    #[test]
    fn spelled_durations_read_back_as_their_value() {
        for seed in 0..2000 {
            let mut g = Gen::new(seed, crate::Profile::Full, false);
            let nanos = interesting_nanos(&mut g);
            let text = spell(&mut g, nanos);
            if let Ok(n) = i64::try_from(nanos) {
                // Go multiplies fractions in floating point: a nanosecond off at most.
                let got = go_parse_duration(&text).map(|v| (i128::from(v) - i128::from(n)).abs());
                assert!(got.is_some_and(|d| d <= 1), "{text} for {nanos}: {got:?}");
            }
        }
    }
}
