//! Go `text/template` syntax → a small tree: text, actions, `if`/`with`/`range` (with `else`,
//! `else if`, `else with`), variables, pipelines, parenthesised pipelines and field chains.
//!
//! Nesting is bounded ([`MAX_DEPTH`]): a template is Katalog (or CR-adjacent) input and must not
//! be able to exhaust the stack.

use serde_json::Value;

use super::error::{TemplateError, err};

/// Deepest nesting of parentheses plus `if`/`with`/`range` blocks a template may have.
pub const MAX_DEPTH: usize = 64;

#[derive(Clone, Debug)]
pub(crate) enum Node {
    Text(String),
    /// `{{ pipeline }}`; prints unless the pipeline declares or assigns variables.
    Action(Pipe),
    If {
        pipe: Pipe,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    With {
        pipe: Pipe,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Range {
        pipe: Pipe,
        body: Vec<Node>,
        otherwise: Vec<Node>,
    },
    Break,
    Continue,
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Pipe {
    /// Variables declared (`$x :=`) or assigned (`$x =`), with names including `$`.
    pub vars: Vec<String>,
    pub assign: bool,
    pub cmds: Vec<Cmd>,
}

#[derive(Clone, Debug)]
pub(crate) struct Cmd {
    pub args: Vec<Arg>,
}

#[derive(Clone, Debug)]
pub(crate) enum Arg {
    /// A function name (called; with arguments when first in its command).
    Func(String),
    /// `.a.b` relative to dot; an empty chain is `.` itself.
    Field(Vec<String>),
    /// `$name.a.b`; `$` is the root data.
    Var(String, Vec<String>),
    /// `(pipeline).a.b`
    Sub(Box<Pipe>, Vec<String>),
    Literal(Value),
}

impl Pipe {
    pub fn is_output(&self) -> bool {
        self.vars.is_empty()
    }
}

/// Top-level parse: the whole source into nodes.
pub(crate) fn parse(src: &str) -> Result<Vec<Node>, TemplateError> {
    let pieces = split(src)?;
    let mut parser = Parser {
        pieces,
        pos: 0,
        depth: 0,
        in_range: 0,
    };
    let (nodes, stop) = parser.nodes()?;
    match stop {
        None => Ok(nodes),
        Some(Stop::End) => Err(err("unexpected {{ end }}")),
        Some(Stop::Else(_)) => Err(err("unexpected {{ else }}")),
    }
}

fn too_deep() -> TemplateError {
    err(format!(
        "the template nests deeper than {MAX_DEPTH} levels (parentheses or if/with/range blocks)"
    ))
}

#[derive(Debug)]
enum Piece {
    Text(String),
    Action(String),
}

/// Splits text from actions, honouring `{{- ` / ` -}}` trim markers and quotes inside actions.
fn split(src: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = src;
    while let Some(start) = rest.find("{{") {
        let mut text = &rest[..start];
        let after = &rest[start + 2..];
        let trim_left =
            after.starts_with('-') && after[1..].starts_with(|c: char| c.is_ascii_whitespace());
        if trim_left {
            text = text.trim_end();
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text.to_string()));
        }
        let body = if trim_left { &after[1..] } else { after };
        let end = action_end(body)?;
        let mut inner = &body[..end];
        let trim_right = inner.ends_with('-')
            && inner[..inner.len() - 1].ends_with(|c: char| c.is_ascii_whitespace());
        if trim_right {
            inner = &inner[..inner.len() - 1];
        }
        pieces.push(Piece::Action(inner.trim().to_string()));
        rest = &body[end + 2..];
        if trim_right {
            rest = rest.trim_start();
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// Byte offset of the `}}` closing the action that starts at `body`.
fn action_end(body: &str) -> Result<usize, TemplateError> {
    let bytes = body.as_bytes();
    let mut i = 0;
    if body.trim_start().starts_with("/*") {
        let open = body.len() - body.trim_start().len();
        let close = body[open..]
            .find("*/")
            .ok_or_else(|| err("unclosed comment"))?;
        i = open + close + 2;
    }
    while i < bytes.len() {
        match bytes[i] {
            b'}' if bytes.get(i + 1) == Some(&b'}') => return Ok(i),
            q @ (b'"' | b'\'') => {
                i += 1;
                loop {
                    match bytes.get(i) {
                        None | Some(b'\n') => return Err(err("unterminated quoted string")),
                        Some(b'\\') => i += 2,
                        Some(c) if *c == q => break,
                        Some(_) => i += 1,
                    }
                }
                i += 1;
            }
            b'`' => {
                let close = body[i + 1..]
                    .find('`')
                    .ok_or_else(|| err("unterminated raw string"))?;
                i += close + 2;
            }
            _ => i += 1,
        }
    }
    Err(err("unclosed action: \"{{\" without \"}}\""))
}

enum Stop {
    End,
    /// `else`, with the rest of the action (`if x`, `with y` or empty).
    Else(String),
}

struct Parser {
    pieces: Vec<Piece>,
    pos: usize,
    depth: usize,
    in_range: usize,
}

impl Parser {
    fn nodes(&mut self) -> Result<(Vec<Node>, Option<Stop>), TemplateError> {
        let mut nodes = Vec::new();
        while self.pos < self.pieces.len() {
            let piece = std::mem::replace(&mut self.pieces[self.pos], Piece::Text(String::new()));
            self.pos += 1;
            let action = match piece {
                Piece::Text(t) => {
                    nodes.push(Node::Text(t));
                    continue;
                }
                Piece::Action(a) => a,
            };
            if action.is_empty() {
                return Err(err("empty action {{ }}"));
            }
            if action.starts_with("/*") {
                if !action.ends_with("*/") {
                    return Err(err("a comment must be the whole action: {{/* ... */}}"));
                }
                continue;
            }
            let (word, rest) = match action.find(|c: char| c.is_ascii_whitespace()) {
                Some(i) => (&action[..i], action[i..].trim()),
                None => (action.as_str(), ""),
            };
            match word {
                "end" if rest.is_empty() => return Ok((nodes, Some(Stop::End))),
                "else" => return Ok((nodes, Some(Stop::Else(rest.to_string())))),
                "if" | "with" | "range" => nodes.push(self.block(word, rest)?),
                "break" | "continue" if rest.is_empty() => {
                    if self.in_range == 0 {
                        return Err(err(format!("{{{{ {word} }}}} outside range")));
                    }
                    nodes.push(if word == "break" {
                        Node::Break
                    } else {
                        Node::Continue
                    });
                }
                "define" | "template" | "block" => {
                    return Err(err(format!(
                        "\"{word}\" is not supported in ork templates; use notes.functions for reusable expressions"
                    )));
                }
                _ => nodes.push(Node::Action(parse_pipe(&action, self.depth)?)),
            }
        }
        Ok((nodes, None))
    }

    fn block(&mut self, word: &str, header: &str) -> Result<Node, TemplateError> {
        if header.is_empty() {
            return Err(err(format!("{word} without a pipeline")));
        }
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(too_deep());
        }
        let pipe = parse_pipe(header, self.depth)?;
        if pipe.vars.len() > usize::from(word == "range") + 1 || (pipe.assign && word != "range") {
            return Err(err(format!("too many declarations in {word}")));
        }
        if word == "range" {
            self.in_range += 1;
        }
        let (then, stop) = self.nodes()?;
        if word == "range" {
            self.in_range -= 1;
        }
        let otherwise = match stop {
            Some(Stop::End) => Vec::new(),
            Some(Stop::Else(rest)) if rest.is_empty() => {
                let (otherwise, stop) = self.nodes()?;
                if !matches!(stop, Some(Stop::End)) {
                    return Err(err(format!("{word}/else without {{{{ end }}}}")));
                }
                otherwise
            }
            Some(Stop::Else(rest)) => {
                let (chained, chained_header) =
                    match rest.split_once(|c: char| c.is_ascii_whitespace()) {
                        Some((w, h)) => (w.to_string(), h.trim().to_string()),
                        None => (rest.clone(), String::new()),
                    };
                if chained != "if" && chained != "with" {
                    return Err(err(format!("unexpected \"{rest}\" after else")));
                }
                // `else if x` is `else {{ if x }}...{{ end }}` sharing this block's end.
                vec![self.block(&chained, &chained_header)?]
            }
            None => return Err(err(format!("{word} without {{{{ end }}}}"))),
        };
        self.depth -= 1;
        Ok(match word {
            "if" => Node::If {
                pipe,
                then,
                otherwise,
            },
            "with" => Node::With {
                pipe,
                then,
                otherwise,
            },
            _ => Node::Range {
                pipe,
                body: then,
                otherwise,
            },
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    /// `.a.b` (empty for `.`)
    Field(Vec<String>),
    Var(String, Vec<String>),
    /// `.a.b` directly after `)`.
    Chain(Vec<String>),
    Lit(Value),
    Pipe,
    Open,
    Close,
    Declare,
    Assign,
    Comma,
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

fn lex(src: &str) -> Result<Vec<Tok>, TemplateError> {
    let chars: Vec<char> = src.chars().collect();
    let mut toks = Vec::new();
    let mut i = 0;
    let field_chain = |i: &mut usize| -> Result<Vec<String>, TemplateError> {
        let mut chain = Vec::new();
        while *i < chars.len() && chars[*i] == '.' {
            let start = *i + 1;
            let mut j = start;
            while j < chars.len() && is_ident_char(chars[j]) {
                j += 1;
            }
            if j == start {
                if chain.is_empty() && (j >= chars.len() || !is_ident_char(chars[j])) {
                    *i = j;
                    return Ok(chain);
                }
                return Err(err("a field name is missing after \".\""));
            }
            chain.push(chars[start..j].iter().collect());
            *i = j;
        }
        Ok(chain)
    };
    while i < chars.len() {
        let c = chars[i];
        match c {
            c if c.is_whitespace() => i += 1,
            '|' => {
                toks.push(Tok::Pipe);
                i += 1;
            }
            '(' => {
                toks.push(Tok::Open);
                i += 1;
            }
            ')' => {
                toks.push(Tok::Close);
                i += 1;
                if i < chars.len() && chars[i] == '.' {
                    let chain = field_chain(&mut i)?;
                    toks.push(Tok::Chain(chain));
                }
            }
            ',' => {
                toks.push(Tok::Comma);
                i += 1;
            }
            ':' if chars.get(i + 1) == Some(&'=') => {
                toks.push(Tok::Declare);
                i += 2;
            }
            '=' => {
                toks.push(Tok::Assign);
                i += 1;
            }
            '.' if chars.get(i + 1).is_some_and(|d| d.is_ascii_digit()) => {
                let (lit, next) = number(&chars, i)?;
                toks.push(Tok::Lit(lit));
                i = next;
            }
            '.' => {
                let chain = field_chain(&mut i)?;
                toks.push(Tok::Field(chain));
            }
            '$' => {
                let start = i;
                i += 1;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                let name: String = chars[start..i].iter().collect();
                let chain = field_chain(&mut i)?;
                toks.push(Tok::Var(name, chain));
            }
            '"' => {
                let (s, next) = quoted(&chars, i)?;
                toks.push(Tok::Lit(Value::String(s)));
                i = next;
            }
            '`' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|ch| *ch == '`')
                    .ok_or_else(|| err("unterminated raw string"))?;
                toks.push(Tok::Lit(Value::String(
                    chars[i + 1..i + 1 + end].iter().collect(),
                )));
                i += end + 2;
            }
            '\'' => {
                let (s, next) = quoted(&chars, i)?;
                let mut it = s.chars();
                match (it.next(), it.next()) {
                    (Some(ch), None) => toks.push(Tok::Lit(Value::from(u32::from(ch)))),
                    _ => return Err(err("a character constant holds exactly one character")),
                }
                i = next;
            }
            c if c.is_ascii_digit()
                || ((c == '-' || c == '+')
                    && chars
                        .get(i + 1)
                        .is_some_and(|d| d.is_ascii_digit() || *d == '.')) =>
            {
                let (lit, next) = number(&chars, i)?;
                toks.push(Tok::Lit(lit));
                i = next;
            }
            c if is_ident_char(c) => {
                let start = i;
                while i < chars.len() && is_ident_char(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                toks.push(match word.as_str() {
                    "true" => Tok::Lit(Value::Bool(true)),
                    "false" => Tok::Lit(Value::Bool(false)),
                    "nil" => Tok::Lit(Value::Null),
                    _ => Tok::Ident(word),
                });
                if i < chars.len() && chars[i] == '.' {
                    return Err(err(format!(
                        "unexpected \".\" after \"{}\"; put a space between arguments",
                        chars[start..i].iter().collect::<String>()
                    )));
                }
            }
            other => return Err(err(format!("unexpected \"{other}\" in action"))),
        }
    }
    Ok(toks)
}

fn quoted(chars: &[char], start: usize) -> Result<(String, usize), TemplateError> {
    let q = chars[start];
    let mut s = String::new();
    let mut i = start + 1;
    loop {
        match chars.get(i) {
            None => return Err(err("unterminated quoted string")),
            Some(c) if *c == q => return Ok((s, i + 1)),
            Some('\\') => {
                let esc = chars
                    .get(i + 1)
                    .ok_or_else(|| err("unterminated quoted string"))?;
                i += 2;
                match esc {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'a' => s.push('\u{7}'),
                    'b' => s.push('\u{8}'),
                    'f' => s.push('\u{c}'),
                    'v' => s.push('\u{b}'),
                    '\\' | '"' | '\'' => s.push(*esc),
                    'x' | 'u' | 'U' => {
                        let n = match esc {
                            'x' => 2,
                            'u' => 4,
                            _ => 8,
                        };
                        let hex: String = chars.get(i..i + n).unwrap_or_default().iter().collect();
                        let code = u32::from_str_radix(&hex, 16)
                            .ok()
                            .and_then(char::from_u32)
                            .ok_or_else(|| err(format!("invalid escape \\{esc}{hex}")))?;
                        s.push(code);
                        i += n;
                    }
                    other => return Err(err(format!("unknown escape \\{other}"))),
                }
            }
            Some(c) => {
                s.push(*c);
                i += 1;
            }
        }
    }
}

/// A Go number literal: decimal, `0x`, `0o`, `0b`, legacy octal, `_` separators, floats.
fn number(chars: &[char], start: usize) -> Result<(Value, usize), TemplateError> {
    let mut i = start;
    while i < chars.len() && (chars[i].is_ascii_alphanumeric() || "._+-".contains(chars[i])) {
        // A sign is part of the literal only at the start or after an exponent marker.
        if (chars[i] == '+' || chars[i] == '-')
            && i != start
            && !matches!(chars[i - 1], 'e' | 'E' | 'p' | 'P')
        {
            break;
        }
        i += 1;
    }
    let text: String = chars[start..i].iter().filter(|c| **c != '_').collect();
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b.to_string()),
        None => (false, text.trim_start_matches('+').to_string()),
    };
    let radix = |prefix: &[&str]| prefix.iter().find_map(|p| body.strip_prefix(p));
    let int = if let Some(h) = radix(&["0x", "0X"]) {
        i64::from_str_radix(h, 16).ok()
    } else if let Some(o) = radix(&["0o", "0O"]) {
        i64::from_str_radix(o, 8).ok()
    } else if let Some(b) = radix(&["0b", "0B"]) {
        i64::from_str_radix(b, 2).ok()
    } else if body.len() > 1 && body.starts_with('0') && body.chars().all(|c| c.is_ascii_digit()) {
        i64::from_str_radix(&body[1..], 8).ok()
    } else {
        body.parse::<i64>().ok()
    };
    if let Some(n) = int {
        return Ok((Value::from(if negative { -n } else { n }), i));
    }
    match body.parse::<f64>() {
        Ok(f) if f.is_finite() && !body.contains(['x', 'X']) => {
            Ok((Value::from(if negative { -f } else { f }), i))
        }
        _ => Err(err(format!("bad number syntax: \"{text}\""))),
    }
}

/// Parses the inside of an action into a pipeline, at nesting `depth`.
pub(crate) fn parse_pipe(src: &str, depth: usize) -> Result<Pipe, TemplateError> {
    let toks = lex(src)?;
    let mut pos = 0;
    let mut pipe = Pipe::default();
    // Declarations: `$x :=`, `$x =`, `$i, $v :=`.
    let mut look = 0;
    let mut vars = Vec::new();
    while let Some(Tok::Var(name, chain)) = toks.get(look) {
        if !chain.is_empty() {
            break;
        }
        vars.push(name.clone());
        look += 1;
        match toks.get(look) {
            Some(Tok::Comma) => look += 1,
            Some(Tok::Declare) | Some(Tok::Assign) => break,
            _ => {
                vars.clear();
                break;
            }
        }
    }
    if !vars.is_empty() {
        match toks.get(look) {
            Some(Tok::Declare) => {
                pipe.vars = vars;
                pos = look + 1;
            }
            Some(Tok::Assign) => {
                pipe.vars = vars;
                pipe.assign = true;
                pos = look + 1;
            }
            _ => {}
        }
    }
    if pipe.vars.iter().any(|v| v == "$") {
        return Err(err("cannot declare or assign $"));
    }
    pipe.cmds = commands(&toks, &mut pos, depth)?;
    if pos < toks.len() {
        return Err(err("unexpected \")\""));
    }
    if pipe.cmds.is_empty() {
        return Err(err("missing value in action"));
    }
    Ok(pipe)
}

fn commands(toks: &[Tok], pos: &mut usize, depth: usize) -> Result<Vec<Cmd>, TemplateError> {
    let mut cmds = Vec::new();
    let mut args: Vec<Arg> = Vec::new();
    let finish = |args: &mut Vec<Arg>, cmds: &mut Vec<Cmd>| -> Result<(), TemplateError> {
        if args.is_empty() {
            return Err(err("missing command in pipeline"));
        }
        if !matches!(args[0], Arg::Func(_)) && args.len() > 1 {
            return Err(err(
                "several values in one command: only a function takes arguments",
            ));
        }
        cmds.push(Cmd {
            args: std::mem::take(args),
        });
        Ok(())
    };
    while *pos < toks.len() {
        let tok = &toks[*pos];
        *pos += 1;
        match tok {
            Tok::Close => {
                *pos -= 1;
                break;
            }
            Tok::Pipe => finish(&mut args, &mut cmds)?,
            Tok::Open => {
                if depth + 1 > MAX_DEPTH {
                    return Err(too_deep());
                }
                let inner = commands(toks, pos, depth + 1)?;
                if toks.get(*pos) != Some(&Tok::Close) {
                    return Err(err("unclosed \"(\""));
                }
                *pos += 1;
                if inner.is_empty() {
                    return Err(err("empty parenthesised pipeline"));
                }
                let chain = match toks.get(*pos) {
                    Some(Tok::Chain(c)) => {
                        *pos += 1;
                        c.clone()
                    }
                    _ => Vec::new(),
                };
                args.push(Arg::Sub(
                    Box::new(Pipe {
                        cmds: inner,
                        ..Pipe::default()
                    }),
                    chain,
                ));
            }
            Tok::Field(chain) => args.push(Arg::Field(chain.clone())),
            Tok::Var(name, chain) => args.push(Arg::Var(name.clone(), chain.clone())),
            Tok::Lit(v) => args.push(Arg::Literal(v.clone())),
            Tok::Ident(name) => args.push(Arg::Func(name.clone())),
            Tok::Chain(_) => return Err(err("unexpected field after \")\"")),
            Tok::Declare | Tok::Assign | Tok::Comma => {
                return Err(err("unexpected declaration in the middle of a pipeline"));
            }
        }
    }
    if !args.is_empty() {
        finish(&mut args, &mut cmds)?;
    } else if !cmds.is_empty() {
        return Err(err("missing command after \"|\""));
    }
    Ok(cmds)
}

/// Calls `visit` with every pipeline of a node list, nested blocks and sub-pipelines included.
fn for_each_pipe<'a>(nodes: &'a [Node], visit: &mut impl FnMut(&'a Pipe)) {
    fn pipe<'a>(p: &'a Pipe, visit: &mut impl FnMut(&'a Pipe)) {
        visit(p);
        for a in p.cmds.iter().flat_map(|c| &c.args) {
            if let Arg::Sub(sub, _) = a {
                pipe(sub, visit);
            }
        }
    }
    for n in nodes {
        match n {
            Node::Text(_) | Node::Break | Node::Continue => {}
            Node::Action(p) => pipe(p, visit),
            Node::If {
                pipe: p,
                then,
                otherwise,
            }
            | Node::With {
                pipe: p,
                then,
                otherwise,
            }
            | Node::Range {
                pipe: p,
                body: then,
                otherwise,
            } => {
                pipe(p, visit);
                for_each_pipe(then, visit);
                for_each_pipe(otherwise, visit);
            }
        }
    }
}

/// The field chains `nodes` read from the root data: `.a.b` while `.` is the root (`root`),
/// `$.a.b` anywhere.
pub(crate) fn root_fields(nodes: &[Node], root: bool, out: &mut Vec<Vec<String>>) {
    fn pipe(p: &Pipe, root: bool, out: &mut Vec<Vec<String>>) {
        for a in p.cmds.iter().flat_map(|c| &c.args) {
            match a {
                Arg::Field(chain) if root && !chain.is_empty() => out.push(chain.clone()),
                Arg::Var(name, chain) if name == "$" && !chain.is_empty() => {
                    out.push(chain.clone())
                }
                Arg::Sub(sub, _) => pipe(sub, root, out),
                _ => {}
            }
        }
    }
    for n in nodes {
        match n {
            Node::Text(_) | Node::Break | Node::Continue => {}
            Node::Action(p) => pipe(p, root, out),
            Node::If {
                pipe: p,
                then,
                otherwise,
            } => {
                pipe(p, root, out);
                root_fields(then, root, out);
                root_fields(otherwise, root, out);
            }
            // The body sees the pipeline's value (or each item) as `.`.
            Node::With {
                pipe: p,
                then: body,
                otherwise,
            }
            | Node::Range {
                pipe: p,
                body,
                otherwise,
            } => {
                pipe(p, root, out);
                root_fields(body, false, out);
                root_fields(otherwise, root, out);
            }
        }
    }
}

/// Whether a node list reads or sets the variable `name`.
pub(crate) fn uses_variable(nodes: &[Node], name: &str) -> bool {
    let mut used = false;
    for_each_pipe(nodes, &mut |p| {
        used = used
            || p.vars.iter().any(|v| v == name)
            || p.cmds
                .iter()
                .flat_map(|c| &c.args)
                .any(|a| matches!(a, Arg::Var(v, _) if v == name));
    });
    used
}

/// Every function name a node list calls (for validation against the known set).
pub(crate) fn called_functions(nodes: &[Node], out: &mut Vec<String>) {
    for_each_pipe(nodes, &mut |p| {
        for a in p.cmds.iter().flat_map(|c| &c.args) {
            if let Arg::Func(name) = a {
                out.push(name.clone());
            }
        }
    });
}
