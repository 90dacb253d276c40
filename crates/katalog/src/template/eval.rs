//! Executing a parsed template against a [`RenderContext`], with a step and output budget so no
//! template (or CR it reads) can make a render run away.

use serde_json::Value;

use super::context::{Notes, RenderContext};
use super::funcs::{self, truthy};
use super::parse::{Arg, Cmd, Node, Pipe};
use super::print::text;
use super::{TemplateError, trim_result};
use crate::model::Sentinel;

/// Evaluation steps (commands, nodes, range iterations) one render may take.
const MAX_STEPS: u64 = 1_000_000;
/// Bytes one render may output.
const MAX_OUTPUT: usize = 1 << 20;
/// How deep notes may call notes.
const MAX_NOTE_DEPTH: usize = 16;

fn err(msg: impl Into<String>) -> TemplateError {
    TemplateError(msg.into())
}

/// The value of `.`: the root data (with `.ork`) or a value reached by `with`/`range`.
#[derive(Clone)]
enum Dot {
    Root,
    Val(Value),
}

enum Flow {
    Normal,
    Break,
    Continue,
}

pub(crate) struct Eval<'c> {
    ctx: &'c RenderContext<'c>,
    notes: Option<&'c Notes>,
    vars: Vec<(String, Value)>,
    steps: u64,
    note_depth: usize,
}

impl<'c> Eval<'c> {
    pub fn new(ctx: &'c RenderContext<'c>, bound: Option<&'c Notes>) -> Eval<'c> {
        Eval {
            ctx,
            notes: ctx.notes.or(bound),
            vars: Vec::new(),
            steps: 0,
            note_depth: 0,
        }
    }

    pub fn render(&mut self, nodes: &[Node]) -> Result<String, TemplateError> {
        let mut out = String::new();
        self.nodes(nodes, &Dot::Root, &mut out)?;
        Ok(out)
    }

    fn step(&mut self) -> Result<(), TemplateError> {
        self.steps += 1;
        if self.steps > MAX_STEPS {
            return Err(err(format!(
                "the template takes more than {MAX_STEPS} steps; simplify it"
            )));
        }
        Ok(())
    }

    fn root(&self) -> Value {
        let mut data = self.ctx.data.clone();
        if let Value::Object(m) = &mut data {
            m.insert("ork".into(), self.ctx.facts.as_value());
        } else if data.is_null() {
            data = serde_json::json!({ "ork": self.ctx.facts.as_value() });
        }
        data
    }

    fn nodes(
        &mut self,
        nodes: &[Node],
        dot: &Dot,
        out: &mut String,
    ) -> Result<Flow, TemplateError> {
        for node in nodes {
            self.step()?;
            match node {
                Node::Text(t) => push(out, t)?,
                Node::Action(pipe) => {
                    let v = self.pipe(pipe, dot)?;
                    if pipe.is_output() {
                        push(out, &text(&v))?;
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

    fn range(
        &mut self,
        pipe: &Pipe,
        body: &[Node],
        otherwise: &[Node],
        dot: &Dot,
        out: &mut String,
    ) -> Result<Flow, TemplateError> {
        let header = Pipe {
            vars: Vec::new(),
            assign: false,
            cmds: pipe.cmds.clone(),
        };
        let v = self.pipe(&header, dot)?;
        let items: Vec<(Value, Value)> = match v {
            Value::Array(items) => items
                .into_iter()
                .enumerate()
                .map(|(i, v)| (Value::from(i), v))
                .collect(),
            Value::Object(map) => map
                .into_iter()
                .map(|(k, v)| (Value::String(k), v))
                .collect(),
            Value::Null => Vec::new(),
            Value::Number(n) => {
                let count = n
                    .as_i64()
                    .ok_or_else(|| err(format!("range can't iterate over {n}")))?;
                (0..count.max(0))
                    .map(|i| (Value::from(i), Value::from(i)))
                    .collect()
            }
            other => {
                return Err(err(format!(
                    "range can't iterate over {}",
                    funcs::type_name(&other)
                )));
            }
        };
        if items.is_empty() {
            return self.nodes(otherwise, dot, out);
        }
        for (key, value) in items {
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
            if matches!(flow, Flow::Break) {
                break;
            }
        }
        Ok(Flow::Normal)
    }

    fn set_var(&mut self, name: &str, value: Value, assign: bool) -> Result<(), TemplateError> {
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

    fn pipe(&mut self, pipe: &Pipe, dot: &Dot) -> Result<Value, TemplateError> {
        let mut piped: Option<Value> = None;
        for cmd in &pipe.cmds {
            piped = Some(self.cmd(cmd, dot, piped)?);
        }
        let v = piped.unwrap_or(Value::Null);
        for name in &pipe.vars {
            self.set_var(name, v.clone(), pipe.assign)?;
        }
        Ok(v)
    }

    fn cmd(&mut self, cmd: &Cmd, dot: &Dot, piped: Option<Value>) -> Result<Value, TemplateError> {
        self.step()?;
        match &cmd.args[0] {
            Arg::Func(name) if funcs::LAZY.contains(&name.as_str()) => {
                let rest = &cmd.args[1..];
                let count = rest.len() + usize::from(piped.is_some());
                if count == 0 {
                    return Err(err(format!("{name} needs at least one argument")));
                }
                let want = name == "or";
                let mut last = Value::Null;
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

    fn arg(&mut self, arg: &Arg, dot: &Dot) -> Result<Value, TemplateError> {
        match arg {
            Arg::Literal(v) => Ok(v.clone()),
            Arg::Func(name) => {
                if funcs::LAZY.contains(&name.as_str()) {
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
                walk(&v, chain)
            }
            Arg::Sub(pipe, chain) => {
                let mark = self.vars.len();
                let v = self.pipe(pipe, dot)?;
                self.vars.truncate(mark);
                walk(&v, chain)
            }
        }
    }

    fn field(&self, dot: &Dot, chain: &[String]) -> Result<Value, TemplateError> {
        match dot {
            Dot::Val(v) => walk(v, chain),
            Dot::Root => match chain.split_first() {
                None => Ok(self.root()),
                Some((first, rest)) if first == "ork" => walk(&self.ctx.facts.as_value(), rest),
                Some(_) => walk(self.ctx.data, chain),
            },
        }
    }

    fn call(&mut self, name: &str, args: Vec<Value>) -> Result<Value, TemplateError> {
        if let Some(s) = Sentinel::from_name(name) {
            if !args.is_empty() {
                return Err(err(format!("sentinel {name} takes no arguments")));
            }
            return Ok(Value::Bool(
                self.ctx
                    .sentinels
                    .and_then(|m| m.get(&s).copied())
                    .unwrap_or(false),
            ));
        }
        if let Some(note) = self.notes.and_then(|n| n.get(name)) {
            if self.note_depth >= MAX_NOTE_DEPTH {
                return Err(err(format!(
                    "notes call each other more than {MAX_NOTE_DEPTH} levels deep (at {name}); is there a cycle?"
                )));
            }
            let nodes = note.nodes();
            let saved = std::mem::take(&mut self.vars);
            self.vars.push(("$args".into(), Value::Array(args.clone())));
            for (i, a) in args.into_iter().enumerate() {
                self.vars.push((format!("${}", i + 1), a));
            }
            self.note_depth += 1;
            let mut out = String::new();
            let result = self.nodes(nodes, &Dot::Root, &mut out);
            self.note_depth -= 1;
            self.vars = saved;
            result.map_err(|e| err(format!("in note {name}: {}", e.0)))?;
            let out = trim_result(&out).to_string();
            return Ok(match out.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => Value::String(out),
            });
        }
        match funcs::call(name, args, self.ctx.facts)? {
            Some(v) => Ok(v),
            None => Err(err(format!("function \"{name}\" not defined"))),
        }
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

/// Follows `.a.b` from `v`; a missing key (at any depth) is nil.
fn walk(v: &Value, chain: &[String]) -> Result<Value, TemplateError> {
    let mut cur = v;
    for key in chain {
        cur = match cur {
            Value::Object(m) => match m.get(key) {
                Some(next) => next,
                None => return Ok(Value::Null),
            },
            Value::Null => return Ok(Value::Null),
            other => {
                return Err(err(format!(
                    "can't evaluate field {key} in type {}",
                    funcs::type_name(other)
                )));
            }
        };
    }
    Ok(cur.clone())
}
