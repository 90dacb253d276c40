//! Printing values as Go's `fmt` does for templates: `%v` of JSON-shaped data, `print`,
//! `println` and a `printf` covering the verbs Katalogs use.

use serde_json::{Number, Value};

use super::value::{Meter, NODE_BYTES};

/// What printing a float costs besides its text: Go's shortest `%v` is slow to find.
const FLOAT_BYTES: u64 = 256;

/// Go's `%v` of a value; `nil` prints as the empty string (Orkestra strips `<no value>`).
pub fn text(v: &Value) -> String {
    text_in(v, &Meter::default())
}

/// [`text`], its work charged to `m`.
pub(super) fn text_in(v: &Value, m: &Meter) -> String {
    let mut out = String::new();
    write_value(&mut out, v, true, usize::MAX, m);
    m.charge_len(&out);
    out
}

/// The first `chars` characters of [`text`], without printing the rest.
fn text_prefix(v: &Value, chars: usize, m: &Meter) -> String {
    let mut out = String::new();
    write_value(&mut out, v, true, chars.saturating_mul(4), m);
    m.charge_len(&out);
    out.chars().take(chars).collect()
}

/// Writes `v` to `out`, stopping soon after `out` reaches `limit` bytes; charges `m` for the
/// nodes it prints (the text itself is the caller's to charge).
fn write_value(out: &mut String, v: &Value, top: bool, limit: usize, m: &Meter) {
    if out.len() >= limit {
        return;
    }
    m.charge(NODE_BYTES);
    match v {
        Value::Null => {
            if !top {
                out.push_str("<nil>");
            }
        }
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                m.charge(FLOAT_BYTES);
            }
            out.push_str(&number(n));
        }
        Value::String(s) => {
            let mut end = s.len().min(limit.saturating_sub(out.len()));
            while !s.is_char_boundary(end) {
                end += 1;
            }
            out.push_str(&s[..end]);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if out.len() >= limit {
                    return;
                }
                if i > 0 {
                    out.push(' ');
                }
                write_value(out, item, false, limit, m);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push_str("map[");
            for (i, (k, item)) in map.iter().enumerate() {
                if out.len() >= limit {
                    return;
                }
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_value(out, item, false, limit, m);
            }
            out.push(']');
        }
    }
}

/// A JSON number as Go prints it: integers exactly, floats like `%v` (`1.5`, `1e+06`).
pub fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        return i.to_string();
    }
    if let Some(u) = n.as_u64() {
        return u.to_string();
    }
    float_g(n.as_f64().unwrap_or(0.0), None)
}

/// Go's `%g` with the shortest representation (`prec` None) or `prec` significant digits.
pub fn float_g(f: f64, prec: Option<usize>) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    let sci = match prec {
        None => format!("{f:e}"),
        Some(p) => format!("{f:.*e}", p.max(1) - 1),
    };
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if prec.is_some() {
        while digits.len() > 1 && digits.ends_with('0') {
            digits.pop();
        }
    }
    let eprec = match prec {
        None => 6,
        Some(p) => p.max(1) as i32,
    };
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if exp < -4 || exp >= eprec {
        out.push_str(&digits[..1]);
        if digits.len() > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push_str(&format!(
            "e{}{:02}",
            if exp < 0 { '-' } else { '+' },
            exp.abs()
        ));
    } else if exp < 0 {
        out.push_str("0.");
        for _ in 0..(-exp - 1) {
            out.push('0');
        }
        out.push_str(&digits);
    } else {
        let point = exp as usize + 1;
        if digits.len() <= point {
            out.push_str(&digits);
            for _ in digits.len()..point {
                out.push('0');
            }
        } else {
            out.push_str(&digits[..point]);
            out.push('.');
            out.push_str(&digits[point..]);
        }
    }
    out
}

/// Go's `fmt.Sprint`: a space between operands when neither is a string. Stops once the text
/// is longer than `max` bytes.
pub fn sprint(args: &[&Value], max: usize, m: &Meter) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if out.len() > max {
            break;
        }
        if i > 0 && !a.is_string() && !args[i - 1].is_string() {
            out.push(' ');
        }
        out.push_str(&text_or_nil(a, m));
    }
    out
}

/// Go's `fmt.Sprintln`: spaces between all operands and a final newline. Stops once the text
/// is longer than `max` bytes.
pub fn sprintln(args: &[&Value], max: usize, m: &Meter) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if out.len() > max {
            return out;
        }
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&text_or_nil(a, m));
    }
    out.push('\n');
    out
}

fn text_or_nil(v: &Value, m: &Meter) -> String {
    if v.is_null() {
        "<nil>".into()
    } else {
        text_in(v, m)
    }
}

#[derive(Default)]
struct Spec {
    minus: bool,
    plus: bool,
    space: bool,
    zero: bool,
    sharp: bool,
    width: Option<usize>,
    prec: Option<usize>,
}

/// Go's `fmt.Sprintf` for the verbs `v s q d t f F e E g G x X o b c U %`. Stops once the text
/// is longer than `max` bytes.
pub fn sprintf(format: &str, args: &[&Value], max: usize, m: &Meter) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let chars: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        if out.len() > max {
            return out;
        }
        let c = chars[i];
        i += 1;
        if c != '%' {
            out.push(c);
            continue;
        }
        let mut spec = Spec::default();
        while i < chars.len() {
            match chars[i] {
                '-' => spec.minus = true,
                '+' => spec.plus = true,
                ' ' => spec.space = true,
                '0' => spec.zero = true,
                '#' => spec.sharp = true,
                _ => break,
            }
            i += 1;
        }
        let read_num = |i: &mut usize| -> Option<usize> {
            let start = *i;
            while *i < chars.len() && chars[*i].is_ascii_digit() {
                *i += 1;
            }
            let digits: String = chars[start..*i].iter().collect();
            digits.parse().ok().map(|n: usize| n.min(1024))
        };
        spec.width = read_num(&mut i);
        if i < chars.len() && chars[i] == '.' {
            i += 1;
            spec.prec = Some(read_num(&mut i).unwrap_or(0));
        }
        let Some(&verb) = chars.get(i) else {
            out.push_str("%!(NOVERB)");
            break;
        };
        i += 1;
        if verb == '%' {
            out.push('%');
            continue;
        }
        let Some(arg) = args.next() else {
            out.push_str(&format!("%!{verb}(MISSING)"));
            continue;
        };
        let body = format_one(verb, &spec, arg, m);
        out.push_str(&pad(body, &spec, verb));
    }
    let extra: Vec<String> = args
        .map(|a| format!("{}={}", go_type(a), text_in(a, m)))
        .collect();
    if !extra.is_empty() {
        out.push_str(&format!("%!(EXTRA {})", extra.join(", ")));
    }
    out
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn pad(body: String, spec: &Spec, verb: char) -> String {
    let Some(width) = spec.width else {
        return body;
    };
    let len = body.chars().count();
    if len >= width {
        return body;
    }
    let fill = width - len;
    if spec.minus {
        format!("{body}{}", " ".repeat(fill))
    } else if spec.zero && "dfFeEgGxXob".contains(verb) {
        let (sign, digits) = match body.strip_prefix(['-', '+']) {
            Some(d) => (&body[..1], d),
            None => ("", body.as_str()),
        };
        format!("{sign}{}{digits}", "0".repeat(fill))
    } else {
        format!("{}{body}", " ".repeat(fill))
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        _ => None,
    }
}

fn as_i128(v: &Value) -> Option<i128> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from)),
        Value::Bool(_) | Value::Null | Value::String(_) | Value::Array(_) | Value::Object(_) => {
            None
        }
    }
}

fn signed(s: String, negative: bool, spec: &Spec) -> String {
    if negative {
        format!("-{s}")
    } else if spec.plus {
        format!("+{s}")
    } else if spec.space {
        format!(" {s}")
    } else {
        s
    }
}

fn format_one(verb: char, spec: &Spec, arg: &Value, m: &Meter) -> String {
    let bad = || format!("%!{verb}({}={})", go_type(arg), text_in(arg, m));
    match verb {
        'v' => {
            if spec.plus || spec.sharp {
                return serde_json::to_string(arg).unwrap_or_default();
            }
            text_or_nil(arg, m)
        }
        's' => match arg {
            Value::Number(_) | Value::Bool(_) => bad(),
            Value::Null => {
                let s = text_or_nil(arg, m);
                match spec.prec {
                    Some(p) => s.chars().take(p).collect(),
                    None => s,
                }
            }
            _ => match spec.prec {
                Some(p) => text_prefix(arg, p, m),
                None => text_in(arg, m),
            },
        },
        'q' => match arg {
            Value::String(s) => quote(s),
            _ => match as_i128(arg)
                .and_then(|n| u32::try_from(n).ok())
                .and_then(char::from_u32)
            {
                Some(ch) => format!("{ch:?}"),
                None => bad(),
            },
        },
        't' => match arg {
            Value::Bool(b) => b.to_string(),
            _ => bad(),
        },
        'd' => match as_i128(arg) {
            Some(n) => signed(n.unsigned_abs().to_string(), n < 0, spec),
            None => bad(),
        },
        'c' => match as_i128(arg)
            .and_then(|n| u32::try_from(n).ok())
            .and_then(char::from_u32)
        {
            Some(ch) => ch.to_string(),
            None => bad(),
        },
        'U' => match as_i128(arg) {
            Some(n) => format!("U+{n:04X}"),
            None => bad(),
        },
        'x' | 'X' | 'o' | 'b' => {
            if let Some(n) = as_i128(arg) {
                let mag = n.unsigned_abs();
                let body = match verb {
                    'x' => format!("{mag:x}"),
                    'X' => format!("{mag:X}"),
                    'o' => format!("{mag:o}"),
                    _ => format!("{mag:b}"),
                };
                let prefix = match (spec.sharp, verb) {
                    (true, 'x') => "0x",
                    (true, 'X') => "0X",
                    (true, 'o') => "0",
                    (true, 'b') => "0b",
                    _ => "",
                };
                return signed(format!("{prefix}{body}"), n < 0, spec);
            }
            if let Value::String(s) = arg
                && matches!(verb, 'x' | 'X')
            {
                let hex: String = s.bytes().map(|b| format!("{b:02x}")).collect();
                return if verb == 'X' { hex.to_uppercase() } else { hex };
            }
            bad()
        }
        'f' | 'F' | 'e' | 'E' | 'g' | 'G' => {
            let Some(f) = as_f64(arg) else {
                return bad();
            };
            let body = match verb {
                'f' | 'F' => format!("{:.*}", spec.prec.unwrap_or(6), f.abs()),
                'e' | 'E' => {
                    let s = format!("{:.*e}", spec.prec.unwrap_or(6), f.abs());
                    let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
                    let e: i32 = e.parse().unwrap_or(0);
                    format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
                }
                _ => float_g(f.abs(), spec.prec),
            };
            let body = if verb.is_ascii_uppercase() {
                body.to_uppercase()
            } else {
                body
            };
            signed(body, f.is_sign_negative() && f != 0.0, spec)
        }
        _ => format!("%!{verb}({}={})", go_type(arg), text_in(arg, m)),
    }
}

/// Go's `strconv.Quote`.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let n = u32::from(c);
                if n < 0x100 {
                    out.push_str(&format!("\\x{n:02x}"));
                } else {
                    out.push_str(&format!("\\u{n:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sprintf(format: &str, args: &[Value]) -> String {
        super::sprintf(
            format,
            &args.iter().collect::<Vec<_>>(),
            usize::MAX,
            &Meter::default(),
        )
    }

    fn sprint(args: &[Value]) -> String {
        super::sprint(
            &args.iter().collect::<Vec<_>>(),
            usize::MAX,
            &Meter::default(),
        )
    }

    fn sprintln(args: &[Value]) -> String {
        super::sprintln(
            &args.iter().collect::<Vec<_>>(),
            usize::MAX,
            &Meter::default(),
        )
    }

    #[test]
    fn values_print_as_go_does() {
        assert_eq!(text(&json!(null)), "");
        assert_eq!(text(&json!(3)), "3");
        assert_eq!(text(&json!(1.5)), "1.5");
        assert_eq!(text(&json!(1e6)), "1e+06");
        assert_eq!(text(&json!(123456.0)), "123456");
        assert_eq!(text(&json!(0.0001)), "0.0001");
        assert_eq!(text(&json!(0.00001)), "1e-05");
        assert_eq!(text(&json!([1, "a", null])), "[1 a <nil>]");
        assert_eq!(text(&json!({"b": 1, "a": [true]})), "map[a:[true] b:1]");
    }

    #[test]
    fn printf_verbs() {
        assert_eq!(sprintf("%s-%d", &[json!("web"), json!(2)]), "web-2");
        assert_eq!(
            sprintf("%5d|%-4s|", &[json!(42), json!("ab")]),
            "   42|ab  |"
        );
        assert_eq!(sprintf("%05.1f", &[json!(4.25)]), "004.2");
        assert_eq!(
            sprintf("%q %v %t", &[json!("a\"b"), json!([1]), json!(true)]),
            "\"a\\\"b\" [1] true"
        );
        assert_eq!(
            sprintf("%x %X %o %b", &[json!(255), json!(255), json!(8), json!(5)]),
            "ff FF 10 101"
        );
        assert_eq!(sprintf("100%%", &[]), "100%");
        assert_eq!(sprintf("%d", &[json!("x")]), "%!d(string=x)");
        assert_eq!(sprintf("%s", &[]), "%!s(MISSING)");
        assert_eq!(sprintf("a", &[json!(1)]), "a%!(EXTRA int=1)");
        assert_eq!(sprint(&[json!(1), json!(2), json!("a"), json!(3)]), "1 2a3");
        assert_eq!(sprintln(&[json!(1), json!("a")]), "1 a\n");
    }
}
