//! Executing a parsed template against a [`RenderContext`], with a step and output budget so no
//! template (or CR it reads) can make a render run away. Values are borrowed or shared
//! ([`Val`]), never copied to be passed on; work that grows with a value's size is charged to
//! the same budget ([`Meter`]), so the budget bounds a render's time, not only its steps.

use std::cell::OnceCell;

use serde_json::Value;

use super::args::{truthy, type_name};
use super::compiled::Note;
use super::compiled::Notes;
use super::context::{FACTS_KEYS, RenderContext};
use super::error::{TemplateError, err};
use super::funcs;
use super::parse::{Arg, Cmd, Node, Pipe};
use super::print::{text, text_in};
use super::value::{Meter, Val};
use crate::sentinel::Sentinel;

/// Evaluation steps (commands, nodes, range iterations; and every [`super::value::BYTES_PER_STEP`]
/// bytes of work) one render may take.
const MAX_STEPS: u64 = 1_000_000;
/// Bytes one render may output.
const MAX_OUTPUT: usize = 1 << 20;
/// How deep notes may call notes.
const MAX_NOTE_DEPTH: usize = 16;

/// The value of `.`: the root data (with `.ork`) or a value reached by `with`/`range`.
#[derive(Clone)]
enum Dot<'c> {
    Root,
    Val(Val<'c>),
}

enum Flow {
    Normal,
    Break,
    Continue,
}

/// Values a render makes at most once, on first use, and lends from then on: the root object
/// (the data with `.ork`) and the `.ork` facts.
#[derive(Debug, Default)]
pub(crate) struct Cells {
    root: OnceCell<Value>,
    ork: OnceCell<Value>,
}

pub(crate) struct Eval<'c> {
    ctx: &'c RenderContext<'c>,
    notes: Option<&'c Notes>,
    cells: &'c Cells,
    vars: Vec<(String, Val<'c>)>,
    meter: Meter,
    note_depth: usize,
    /// Rendering a URL: what an action prints past the authority is percent-encoded.
    url: bool,
}

impl<'c> Eval<'c> {
    pub fn new(ctx: &'c RenderContext<'c>, bound: Option<&'c Notes>, cells: &'c Cells) -> Eval<'c> {
        Eval {
            ctx,
            notes: ctx.notes.or(bound),
            cells,
            vars: Vec::new(),
            meter: Meter::default(),
            note_depth: 0,
            url: false,
        }
    }

    /// Renders as a URL: see [`crate::template::Template::render_url`].
    pub fn for_url(mut self) -> Eval<'c> {
        self.url = true;
        self
    }

    pub fn render(&mut self, nodes: &'c [Node]) -> Result<String, TemplateError> {
        let mut out = String::new();
        self.nodes(nodes, &Dot::Root, &mut out)?;
        Ok(out)
    }

    fn step(&mut self) -> Result<(), TemplateError> {
        self.meter.step();
        self.within_budget()
    }

    fn within_budget(&self) -> Result<(), TemplateError> {
        if self.meter.steps() > MAX_STEPS {
            return Err(err(format!(
                "the template takes more than {MAX_STEPS} steps; simplify it"
            )));
        }
        Ok(())
    }

    /// The root object: the data with the facts under `ork` (and inrun's `inrun`), made on
    /// first use.
    fn root(&self) -> &'c Value {
        let cells: &'c Cells = self.cells;
        let ctx = self.ctx;
        cells.root.get_or_init(|| {
            let mut data = ctx.data.clone();
            if data.is_null() {
                data = Value::Object(serde_json::Map::new());
            }
            if let Value::Object(m) = &mut data {
                for key in FACTS_KEYS {
                    m.insert(key.into(), ctx.facts.as_value());
                }
            }
            data
        })
    }

    fn ork(&self) -> &'c Value {
        let cells: &'c Cells = self.cells;
        let facts = self.ctx.facts;
        cells.ork.get_or_init(|| facts.as_value())
    }

    fn push(&self, out: &mut String, s: &str) -> Result<(), TemplateError> {
        let mark = self.meter.mark();
        self.meter.charge_len(s);
        self.meter.forgive_since(mark);
        push(out, s)
    }

    fn nodes(
        &mut self,
        nodes: &'c [Node],
        dot: &Dot<'c>,
        out: &mut String,
    ) -> Result<Flow, TemplateError> {
        for node in nodes {
            self.step()?;
            match node {
                Node::Text(t) => self.push(out, t)?,
                Node::Action(pipe) => {
                    let v = self.pipe(pipe, dot)?;
                    if pipe.is_output() {
                        let mark = self.meter.mark();
                        let mut text = text_in(&v, &self.meter);
                        if self.url && past_authority(out) {
                            text = ork_protocol::text::percent_encode(&text);
                        } else if self.url && in_authority(out) {
                            refuse_outside_host(&text)?;
                        }
                        self.meter.forgive_since(mark);
                        self.push(out, &text)?;
                    }
                }
                Node::If {
                    pipe,
                    then,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(pipe, dot)?;
                    let flow = if truthy(&v) {
                        self.nodes(then, dot, out)?
                    } else {
                        self.nodes(otherwise, dot, out)?
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::With {
                    pipe,
                    then,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let v = self.pipe(pipe, dot)?;
                    let flow = if truthy(&v) {
                        self.nodes(then, &Dot::Val(v), out)?
                    } else {
                        self.nodes(otherwise, dot, out)?
                    };
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Range {
                    pipe,
                    body,
                    otherwise,
                } => {
                    let mark = self.vars.len();
                    let flow = self.range(pipe, body, otherwise, dot, out)?;
                    self.vars.truncate(mark);
                    if !matches!(flow, Flow::Normal) {
                        return Ok(flow);
                    }
                }
                Node::Break => return Ok(Flow::Break),
                Node::Continue => return Ok(Flow::Continue),
            }
        }
        Ok(Flow::Normal)
    }

    /// `range`: one item at a time, as Go does, so a range that stops early (or at the budget)
    /// never holds more than the item it is on.
    fn range(
        &mut self,
        pipe: &'c Pipe,
        body: &'c [Node],
        otherwise: &'c [Node],
        dot: &Dot<'c>,
        out: &mut String,
    ) -> Result<Flow, TemplateError> {
        let v = self.commands(&pipe.cmds, dot)?;
        let keyed = pipe.vars.len() >= 2;
        let ran = match &*v {
            Value::Array(items) => {
                for i in 0..items.len() {
                    let key = if keyed {
                        Val::fresh(Value::from(i), &self.meter)
                    } else {
                        Val::null()
                    };
                    let item = v.get(&self.meter, |v| v.get(i));
                    if self.iteration(pipe, body, key, item, out)? {
                        break;
                    }
                }
                !items.is_empty()
            }
            Value::Object(map) => {
                for k in map.keys() {
                    let key = if keyed {
                        Val::fresh(Value::String(k.clone()), &self.meter)
                    } else {
                        Val::null()
                    };
                    let item = v.get(&self.meter, |v| v.get(k));
                    if self.iteration(pipe, body, key, item, out)? {
                        break;
                    }
                }
                !map.is_empty()
            }
            Value::Null => false,
            Value::Number(n) => {
                let count = n
                    .as_i64()
                    .ok_or_else(|| err(format!("range can't iterate over {n}")))?;
                for i in 0..count.max(0) {
                    let item = Val::fresh(Value::from(i), &self.meter);
                    if self.iteration(pipe, body, item.clone(), item, out)? {
                        break;
                    }
                }
                count > 0
            }
            other => {
                return Err(err(format!(
                    "range can't iterate over {}",
                    type_name(other)
                )));
            }
        };
        if ran {
            Ok(Flow::Normal)
        } else {
            self.nodes(otherwise, dot, out)
        }
    }

    /// One item of a `range`; true when the body says `break`.
    fn iteration(
        &mut self,
        pipe: &'c Pipe,
        body: &'c [Node],
        key: Val<'c>,
        value: Val<'c>,
        out: &mut String,
    ) -> Result<bool, TemplateError> {
        self.step()?;
        let mark = self.vars.len();
        match pipe.vars.as_slice() {
            [] => {}
            [one] => self.set_var(one, value.clone(), pipe.assign)?,
            [k, v, ..] => {
                self.set_var(k, key, pipe.assign)?;
                self.set_var(v, value.clone(), pipe.assign)?;
            }
        }
        let flow = self.nodes(body, &Dot::Val(value), out)?;
        self.vars.truncate(mark);
        Ok(matches!(flow, Flow::Break))
    }

    fn set_var(&mut self, name: &str, value: Val<'c>, assign: bool) -> Result<(), TemplateError> {
        if assign {
            let slot = self
                .vars
                .iter_mut()
                .rev()
                .find(|(n, _)| n == name)
                .ok_or_else(|| err(format!("undefined variable: {name}")))?;
            slot.1 = value;
        } else {
            self.vars.push((name.to_string(), value));
        }
        Ok(())
    }

    fn pipe(&mut self, pipe: &'c Pipe, dot: &Dot<'c>) -> Result<Val<'c>, TemplateError> {
        let v = self.commands(&pipe.cmds, dot)?;
        for name in &pipe.vars {
            self.set_var(name, v.clone(), pipe.assign)?;
        }
        Ok(v)
    }

    /// A pipeline's commands, each one's value passed to the next.
    fn commands(&mut self, cmds: &'c [Cmd], dot: &Dot<'c>) -> Result<Val<'c>, TemplateError> {
        let mut piped: Option<Val<'c>> = None;
        for cmd in cmds {
            piped = Some(self.cmd(cmd, dot, piped)?);
        }
        Ok(piped.unwrap_or_else(Val::null))
    }

    fn cmd(
        &mut self,
        cmd: &'c Cmd,
        dot: &Dot<'c>,
        piped: Option<Val<'c>>,
    ) -> Result<Val<'c>, TemplateError> {
        self.step()?;
        match &cmd.args[0] {
            Arg::Func(name) if funcs::is_lazy(name) => {
                let rest = &cmd.args[1..];
                let count = rest.len() + usize::from(piped.is_some());
                if count == 0 {
                    return Err(err(format!("{name} needs at least one argument")));
                }
                let want = name == "or";
                let mut last = Val::null();
                for arg in rest {
                    last = self.arg(arg, dot)?;
                    if truthy(&last) == want {
                        return Ok(last);
                    }
                }
                if let Some(p) = piped {
                    last = p;
                }
                Ok(last)
            }
            Arg::Func(name) => {
                let mut args = Vec::with_capacity(cmd.args.len());
                for arg in &cmd.args[1..] {
                    args.push(self.arg(arg, dot)?);
                }
                if let Some(p) = piped {
                    args.push(p);
                }
                self.call(name, args)
            }
            other => {
                if cmd.args.len() > 1 || piped.is_some() {
                    return Err(err(format!(
                        "can't give an argument to a non-function ({})",
                        describe(other)
                    )));
                }
                self.arg(other, dot)
            }
        }
    }

    fn arg(&mut self, arg: &'c Arg, dot: &Dot<'c>) -> Result<Val<'c>, TemplateError> {
        match arg {
            Arg::Literal(v) => Ok(Val::Ref(v)),
            Arg::Func(name) => {
                if funcs::is_lazy(name) {
                    return Err(err(format!("{name} needs arguments")));
                }
                self.call(name, Vec::new())
            }
            Arg::Field(chain) => self.field(dot, chain),
            Arg::Var(name, chain) => {
                if name == "$" {
                    return self.field(&Dot::Root, chain);
                }
                let v = self
                    .vars
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
                    .ok_or_else(|| err(format!("undefined variable: {name}")))?;
                self.walk(&v, chain)
            }
            Arg::Sub(pipe, chain) => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                self.vars.truncate(mark);
                self.walk(&v, chain)
            }
        }
    }

    fn field(&self, dot: &Dot<'c>, chain: &[String]) -> Result<Val<'c>, TemplateError> {
        match dot {
            Dot::Val(v) => self.walk(v, chain),
            Dot::Root => match chain.split_first() {
                None => Ok(Val::Ref(self.root())),
                Some((first, rest)) if FACTS_KEYS.contains(&first.as_str()) => {
                    self.walk(&Val::Ref(self.ork()), rest)
                }
                Some(_) => self.walk(&Val::Ref(self.ctx.data), chain),
            },
        }
    }

    /// Follows `.a.b` from `v`; a missing key (at any depth) is nil.
    fn walk(&self, v: &Val<'c>, chain: &[String]) -> Result<Val<'c>, TemplateError> {
        if chain.is_empty() {
            return Ok(v.clone());
        }
        v.part(&self.meter, |v| walk(v, chain))
    }

    fn call(&mut self, name: &str, args: Vec<Val<'c>>) -> Result<Val<'c>, TemplateError> {
        if let Some(s) = Sentinel::from_name(name) {
            if !args.is_empty() {
                return Err(err(format!("sentinel {name} takes no arguments")));
            }
            return Ok(Val::bool(
                self.ctx
                    .sentinels
                    .and_then(|m| m.get(&s).copied())
                    .unwrap_or(false),
            ));
        }
        if let Some(note) = self.notes.and_then(|n| n.get(name)) {
            return self.note(name, note, args);
        }
        let mark = self.meter.mark();
        // A call reads the text it is given (compares, scans, parses, copies it).
        for a in &args {
            if let Value::String(s) = &**a {
                self.meter.charge_len(s);
            }
        }
        let v = match funcs::call(name, args, self.ctx.facts, &self.meter)? {
            Some(v) => v,
            None => return Err(err(format!("function \"{name}\" not defined"))),
        };
        self.meter.forgive_since(mark);
        self.within_budget()?;
        Ok(v)
    }

    /// A note: its template rendered over the root data, its text the value (`true`/`false`
    /// as booleans); `$1`… are the arguments and `$args` their list.
    fn note(
        &mut self,
        name: &str,
        note: &'c Note,
        args: Vec<Val<'c>>,
    ) -> Result<Val<'c>, TemplateError> {
        if self.note_depth >= MAX_NOTE_DEPTH {
            return Err(err(format!(
                "notes call each other more than {MAX_NOTE_DEPTH} levels deep (at {name}); is there a cycle?"
            )));
        }
        let saved = std::mem::take(&mut self.vars);
        if note.uses_args {
            let list = Value::Array(args.iter().map(|a| (**a).clone()).collect());
            self.vars
                .push(("$args".into(), Val::fresh(list, &self.meter)));
        }
        for (i, a) in args.into_iter().enumerate() {
            self.vars.push((format!("${}", i + 1), a));
        }
        self.note_depth += 1;
        let mut out = String::new();
        let result = self.nodes(note.template.nodes(), &Dot::Root, &mut out);
        self.note_depth -= 1;
        self.vars = saved;
        result.map_err(|e| err(format!("in note {name}: {}", e.0)))?;
        let out = trim_result(&out);
        Ok(match out {
            "true" => Val::bool(true),
            "false" => Val::bool(false),
            _ => Val::fresh(Value::String(out.to_string()), &self.meter),
        })
    }
}

fn push(out: &mut String, s: &str) -> Result<(), TemplateError> {
    if out.len() + s.len() > MAX_OUTPUT {
        return Err(err(format!(
            "the template output is longer than {MAX_OUTPUT} bytes"
        )));
    }
    out.push_str(s);
    Ok(())
}

fn describe(arg: &Arg) -> String {
    match arg {
        Arg::Literal(v) => text(v),
        Arg::Field(chain) => format!(".{}", chain.join(".")),
        Arg::Var(name, chain) if chain.is_empty() => name.clone(),
        Arg::Var(name, chain) => format!("{name}.{}", chain.join(".")),
        Arg::Sub(..) => "(...)".into(),
        Arg::Func(name) => name.clone(),
    }
}

/// The value `.a.b` names inside `v`; `None` for a missing key (at any depth).
fn walk<'v>(v: &'v Value, chain: &[String]) -> Result<Option<&'v Value>, TemplateError> {
    let mut cur = v;
    for key in chain {
        cur = match cur {
            Value::Object(m) => match m.get(key) {
                Some(next) => next,
                None => return Ok(None),
            },
            Value::Null => return Ok(None),
            other => {
                return Err(err(format!(
                    "can't evaluate field {key} in type {}",
                    type_name(other)
                )));
            }
        };
    }
    Ok(Some(cur))
}

/// Whether a URL rendered so far has reached its path, query or fragment: past `scheme://host`.
fn past_authority(out: &str) -> bool {
    out.find("://")
        .is_some_and(|i| out[i + 3..].contains(['/', '?', '#']))
}

/// Whether a URL rendered so far is inside its authority: past `scheme://`, before the path.
fn in_authority(out: &str) -> bool {
    out.contains("://") && !past_authority(out)
}

/// Refuses `text` printed into a URL's authority unless it holds only what a host and port
/// may: letters, digits, `-`, `.`, `_`, `:` and IPv6 brackets. Anything else (`/ ? # \ @`,
/// spaces, `%`) would move the rest of the URL into another path, query or user-info on an
/// allowed host (finding L1 of issue 47).
fn refuse_outside_host(text: &str) -> Result<(), TemplateError> {
    match text
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | ':' | '[' | ']')))
    {
        None => Ok(()),
        Some(c) => Err(err(format!(
            "the endpoint's host renders to {:?}, whose {c:?} is not a host character (letters, digits, '-', '.', '_', ':' and IPv6 brackets): refused, as it would move the rest of the URL into another path or query",
            shorten(text)
        ))),
    }
}

fn shorten(text: &str) -> String {
    let mut s: String = text.chars().take(80).collect();
    if text.chars().count() > 80 {
        s.push('…');
    }
    s
}

/// Orkestra trims a rendered template of surrounding whitespace (not a literal value).
pub(crate) fn trim_result(s: &str) -> &str {
    s.trim()
}
