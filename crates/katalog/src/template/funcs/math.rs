//! Orkestra's math notes: whole results as integers, others as floats.

use serde_json::{Number, Value};

use crate::template::args::{Call, to_f64};
use crate::template::error::{TemplateError, err};
use crate::template::print::text;

/// `add`, `sub`, `mul`, `div`, `mod`, `min`, `max`.
pub(super) fn arithmetic(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let n = numbers(name, a)?;
    let (x, y) = (n[0], n[1]);
    Ok(match name {
        "add" => native(x + y),
        "sub" => native(x - y),
        "mul" => native(x * y),
        "div" if y == 0.0 => return Err(err("div: division by zero")),
        "div" => native(x / y),
        "mod" => {
            let (xi, yi) = (x as i64, y as i64);
            if yi == 0 {
                return Err(err("mod: division by zero"));
            }
            Value::from(xi.wrapping_rem(yi))
        }
        "min" => native(x.min(y)),
        _ => native(x.max(y)),
    })
}

/// `clamp`.
pub(super) fn clamp(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    let n = numbers(name, a)?;
    Ok(native(if n[0] < n[1] {
        n[1]
    } else if n[0] > n[2] {
        n[2]
    } else {
        n[0]
    }))
}

/// `abs`.
pub(super) fn abs(call: &Call<'_>) -> Result<Value, TemplateError> {
    let Call { name, args: a, .. } = *call;
    Ok(native(numbers(name, a)?[0].abs()))
}

/// An int when whole (as Orkestra's math notes return), else a float.
fn native(f: f64) -> Value {
    if f.is_finite() && f.fract() == 0.0 && f.abs() < 9.0e15 {
        Value::from(f as i64)
    } else {
        Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

fn numbers(name: &str, args: &[&Value]) -> Result<Vec<f64>, TemplateError> {
    args.iter()
        .map(|a| to_f64(a).ok_or_else(|| err(format!("{name}: non-numeric argument {}", text(a)))))
        .collect()
}
