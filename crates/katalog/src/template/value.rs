//! Values during a render, and what they cost. A value is borrowed from what the render reads
//! (the CR, the facts, the template's literals) or made by the render and shared, so handing a
//! value on (`$`, `.`, a variable, a function's argument or result) never copies it. Work that
//! does grow with a value's size — making a value, copying part of a made one, comparing,
//! converting to text — is charged to the render's [`Meter`] by the bytes it touches, so the
//! step budget bounds a render's time whatever the size of the CR.

use std::cell::Cell;
use std::ops::Deref;
use std::rc::Rc;

use serde_json::Value;

static NULL: Value = Value::Null;
static TRUE: Value = Value::Bool(true);
static FALSE: Value = Value::Bool(false);

/// Bytes of work (made, copied, compared or printed) one step stands for.
pub(crate) const BYTES_PER_STEP: u64 = 64;
/// What one node of a value costs besides its text: an allocation and a slot.
pub(crate) const NODE_BYTES: u64 = 32;

/// A value as the evaluator and the functions pass it around.
#[derive(Clone, Debug)]
pub(crate) enum Val<'d> {
    /// Part of the data the render reads; lives as long as the render.
    Ref(&'d Value),
    /// Made by the render, shared by every holder.
    Own(Rc<Value>),
}

impl Deref for Val<'_> {
    type Target = Value;

    fn deref(&self) -> &Value {
        match self {
            Val::Ref(v) => v,
            Val::Own(v) => v,
        }
    }
}

impl<'d> Val<'d> {
    pub fn null() -> Val<'d> {
        Val::Ref(&NULL)
    }

    pub fn bool(b: bool) -> Val<'d> {
        Val::Ref(if b { &TRUE } else { &FALSE })
    }

    /// A value the render made; its size beyond what one step covers is charged to `meter`.
    pub fn fresh(v: Value, meter: &Meter) -> Val<'d> {
        meter.charge(weight(&v).saturating_sub(BYTES_PER_STEP));
        Val::Own(Rc::new(v))
    }

    /// The part of this value `pick` selects, `null` when it selects nothing: borrowed when
    /// this value is, else copied (and the copy charged).
    ///
    /// # Errors
    /// Those of `pick`.
    pub fn part<E>(
        &self,
        meter: &Meter,
        pick: impl for<'x> FnOnce(&'x Value) -> Result<Option<&'x Value>, E>,
    ) -> Result<Val<'d>, E> {
        Ok(match self {
            Val::Ref(v) => pick(v)?.map_or_else(Val::null, Val::Ref),
            Val::Own(rc) => match pick(rc)? {
                None => Val::null(),
                Some(p) if std::ptr::eq(p, &**rc) => self.clone(),
                Some(p) => Val::fresh(p.clone(), meter),
            },
        })
    }

    /// [`Val::part`] for a `pick` that cannot fail.
    pub fn get(
        &self,
        meter: &Meter,
        pick: impl for<'x> FnOnce(&'x Value) -> Option<&'x Value>,
    ) -> Val<'d> {
        match self.part(meter, |v| Ok::<_, std::convert::Infallible>(pick(v))) {
            Ok(v) => v,
            Err(never) => match never {},
        }
    }
}

/// The work a render has done, in bytes: every step counts [`BYTES_PER_STEP`].
#[derive(Debug, Default)]
pub(crate) struct Meter {
    bytes: Cell<u64>,
}

impl Meter {
    pub fn charge(&self, bytes: u64) {
        self.bytes.set(self.bytes.get().saturating_add(bytes));
    }

    /// Charges the length of `s`.
    pub fn charge_len(&self, s: &str) {
        self.charge(s.len() as u64);
    }

    pub fn step(&self) {
        self.charge(BYTES_PER_STEP);
    }

    /// The bytes of work so far, for [`Meter::forgive_since`].
    pub fn mark(&self) -> u64 {
        self.bytes.get()
    }

    /// Takes back up to one step's worth of the work done since `mark`: the step that did it
    /// covers that much (so small values cost no more than the step that makes them).
    pub fn forgive_since(&self, mark: u64) {
        let now = self.bytes.get();
        let done = now.saturating_sub(mark);
        self.bytes.set(now - done.min(BYTES_PER_STEP));
    }

    /// Steps used so far, the bytes of work included.
    pub fn steps(&self) -> u64 {
        self.bytes.get() / BYTES_PER_STEP
    }
}

/// What making (or copying) `v` costs: its text and its nodes.
pub(crate) fn weight(v: &Value) -> u64 {
    NODE_BYTES
        + match v {
            Value::String(s) => s.len() as u64,
            Value::Array(items) => items.iter().map(weight).sum(),
            Value::Object(m) => m.iter().map(|(k, v)| k.len() as u64 + weight(v)).sum(),
            Value::Null | Value::Bool(_) | Value::Number(_) => 0,
        }
}

/// `a == b` as JSON values, charging `meter` for every node compared.
pub(crate) fn same(meter: &Meter, a: &Value, b: &Value) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    meter.charge(NODE_BYTES);
    match (a, b) {
        (Value::String(x), Value::String(y)) => {
            meter.charge(x.len().min(y.len()) as u64);
            x == y
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(meter, a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    meter.charge(k.len() as u64);
                    y.get(k).is_some_and(|w| same(meter, v, w))
                })
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_part_of_borrowed_data_is_borrowed_and_costs_nothing() {
        let data = json!({"spec": {"list": vec!["x"; 100]}});
        let meter = Meter::default();
        let v = Val::Ref(&data).get(&meter, |v| v.get("spec"));
        assert!(matches!(v, Val::Ref(r) if std::ptr::eq(r, &data["spec"])));
        assert_eq!(meter.steps(), 0);
        assert!(Val::Ref(&data).get(&meter, |v| v.get("nothing")).is_null());
    }

    #[test]
    fn a_part_of_a_made_value_is_a_charged_copy_and_the_whole_is_shared() {
        let meter = Meter::default();
        let made = Val::fresh(json!({"a": "x".repeat(704)}), &meter);
        let after_making = meter.steps();
        assert!(after_making >= 10, "{after_making}");
        let whole = made.get(&meter, |v| Some(v));
        assert!(matches!((&whole, &made), (Val::Own(a), Val::Own(b)) if Rc::ptr_eq(a, b)));
        assert_eq!(meter.steps(), after_making);
        let part = made.get(&meter, |v| v.get("a"));
        assert_eq!(part.as_str().map(str::len), Some(704));
        assert!(meter.steps() >= after_making + 10);
    }

    #[test]
    fn a_small_made_value_costs_nothing_beyond_its_step() {
        let meter = Meter::default();
        let _ = Val::fresh(json!(12345), &meter);
        let _ = Val::fresh(json!("a short name"), &meter);
        assert_eq!(meter.mark(), 0);
        let mark = meter.mark();
        meter.charge(10);
        meter.forgive_since(mark);
        assert_eq!(meter.mark(), 0);
        meter.charge(BYTES_PER_STEP * 3);
        meter.forgive_since(mark);
        assert_eq!(meter.steps(), 2);
    }

    #[test]
    fn comparing_charges_what_it_compares_except_a_value_with_itself() {
        let a = json!({"list": ["y".repeat(6400)]});
        let b = a.clone();
        let meter = Meter::default();
        assert!(same(&meter, &a, &a));
        assert_eq!(meter.steps(), 0);
        assert!(same(&meter, &a, &b));
        assert!(meter.steps() >= 100);
        assert!(!same(&meter, &a, &json!({"list": ["y"]})));
    }
}
