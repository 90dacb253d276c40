//! A Go `text/template` subset over JSON: fields, literals, pipelines, functions, if/else.
//!
//! Missing keys render as empty text (Go's `missingkey=zero` with `<no value>` stripped), so a
//! Katalog written for Orkestra renders the same here.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::condition::{lookup, scalar_text};

/// A parsed template and its source.
#[derive(Clone)]
pub struct Template {
    source: String,
    nodes: Vec<Node>,
}

/// Why a template failed to parse or render.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct TemplateError(String);

#[derive(Clone, Debug)]
enum Node {
    Text(String),
    Action(Pipeline),
    If {
        cond: Pipeline,
        then: Vec<Node>,
        otherwise: Vec<Node>,
    },
}

type Pipeline = Vec<Command>;

#[derive(Clone, Debug)]
struct Command {
    func: Option<Func>,
    args: Vec<Operand>,
}

#[derive(Clone, Debug)]
enum Operand {
    Field(String),
    Literal(Value),
    Sub(Pipeline),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Func {
    Default,
    Lower,
    Upper,
    Trim,
    Quote,
    Eq,
    Ne,
    Not,
    And,
    Or,
    Printf,
    ToJson,
}

const FUNCS: [(&str, Func); 12] = [
    ("default", Func::Default),
    ("lower", Func::Lower),
    ("upper", Func::Upper),
    ("trim", Func::Trim),
    ("quote", Func::Quote),
    ("eq", Func::Eq),
    ("ne", Func::Ne),
    ("not", Func::Not),
    ("and", Func::And),
    ("or", Func::Or),
    ("printf", Func::Printf),
    ("toJson", Func::ToJson),
];

impl Template {
    /// Parses a template.
    ///
    /// # Errors
    /// Unbalanced `{{ }}`, an unknown function, an `if` without `end`, a stray `else`/`end`.
    pub fn parse(source: &str) -> Result<Template, TemplateError> {
        let tokens = split_actions(source)?;
        let mut pos = 0;
        let (nodes, stop) = parse_nodes(&tokens, &mut pos)?;
        if let Some(stop) = stop {
            return Err(TemplateError(format!(
                "unexpected {{{{ {stop} }}}} with no open if"
            )));
        }
        Ok(Template {
            source: source.to_string(),
            nodes,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// True when the source has no actions: it renders to itself.
    pub fn is_literal(&self) -> bool {
        self.nodes.iter().all(|n| matches!(n, Node::Text(_)))
    }

    /// Renders over `data` (usually the CR as JSON).
    ///
    /// # Errors
    /// A function given arguments it cannot use (e.g. `printf` without a format).
    pub fn render(&self, data: &Value) -> Result<String, TemplateError> {
        let mut out = String::new();
        render_nodes(&self.nodes, data, &mut out)?;
        Ok(out)
    }
}

impl fmt::Debug for Template {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Template({:?})", self.source)
    }
}

impl schemars::JsonSchema for Template {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Template".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Text with Go template actions over the CR, e.g. \"{{ .metadata.name }}-svc\".",
        })
    }
}

impl<'de> Deserialize<'de> for Template {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Template::parse(&s).map_err(|e| serde::de::Error::custom(format!("invalid template: {e}")))
    }
}

impl Serialize for Template {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.source)
    }
}

/// Raw pieces: text or the inside of an action.
#[derive(Debug)]
enum Piece {
    Text(String),
    Action(String),
}

fn split_actions(src: &str) -> Result<Vec<Piece>, TemplateError> {
    let mut pieces = Vec::new();
    let mut rest = src;
    while let Some(start) = rest.find("{{") {
        let mut text = &rest[..start];
        let after = &rest[start + 2..];
        let trim_left = after.starts_with('-') && after[1..].starts_with([' ', '\t', '\n']);
        if trim_left {
            text = text.trim_end();
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text.to_string()));
        }
        let end = after
            .find("}}")
            .ok_or_else(|| TemplateError("unclosed action: \"{{\" without \"}}\"".into()))?;
        let mut inner = &after[..end];
        if trim_left {
            inner = &inner[1..];
        }
        let trim_right =
            inner.ends_with('-') && inner[..inner.len() - 1].ends_with([' ', '\t', '\n']);
        if trim_right {
            inner = &inner[..inner.len() - 1];
        }
        pieces.push(Piece::Action(inner.trim().to_string()));
        rest = &after[end + 2..];
        if trim_right {
            rest = rest.trim_start();
        }
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    Ok(pieces)
}

/// Parses nodes until `else`/`end` (returned as the stop word) or the end of input.
fn parse_nodes(
    pieces: &[Piece],
    pos: &mut usize,
) -> Result<(Vec<Node>, Option<String>), TemplateError> {
    let mut nodes = Vec::new();
    while *pos < pieces.len() {
        let piece = &pieces[*pos];
        *pos += 1;
        match piece {
            Piece::Text(t) => nodes.push(Node::Text(t.clone())),
            Piece::Action(a) if a.is_empty() => {
                return Err(TemplateError("empty action {{ }}".into()));
            }
            Piece::Action(a) if a.starts_with("/*") => {}
            Piece::Action(a) if a == "end" || a == "else" || a.starts_with("else if ") => {
                return Ok((nodes, Some(a.clone())));
            }
            Piece::Action(a) if a.starts_with("if ") || a == "if" => {
                nodes.push(parse_if(&a[2..], pieces, pos)?);
            }
            Piece::Action(a)
                if starts_with_word(a, &["range", "with", "define", "template", "block"]) =>
            {
                let word = a.split_whitespace().next().unwrap_or_default();
                return Err(TemplateError(format!(
                    "\"{word}\" is not supported in ork templates (supported: fields, literals, pipelines, if/else, functions)"
                )));
            }
            Piece::Action(a) => nodes.push(Node::Action(parse_pipeline(a)?)),
        }
    }
    Ok((nodes, None))
}

fn parse_if(cond_src: &str, pieces: &[Piece], pos: &mut usize) -> Result<Node, TemplateError> {
    let cond = parse_pipeline(cond_src.trim())?;
    if cond.is_empty() {
        return Err(TemplateError("if without a condition".into()));
    }
    let (then, stop) = parse_nodes(pieces, pos)?;
    let otherwise = match stop.as_deref() {
        Some("end") => Vec::new(),
        Some("else") => {
            let (otherwise, stop) = parse_nodes(pieces, pos)?;
            if stop.as_deref() != Some("end") {
                return Err(TemplateError("if/else without {{ end }}".into()));
            }
            otherwise
        }
        Some(s) if s.starts_with("else if ") => vec![parse_if(&s[7..], pieces, pos)?],
        _ => return Err(TemplateError("if without {{ end }}".into())),
    };
    Ok(Node::If {
        cond,
        then,
        otherwise,
    })
}

fn starts_with_word(s: &str, words: &[&str]) -> bool {
    s.split_whitespace()
        .next()
        .is_some_and(|w| words.contains(&w))
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Field(String),
    Literal(Value),
    Ident(String),
    Pipe,
    Open,
    Close,
}

fn lex(src: &str) -> Result<Vec<Token>, TemplateError> {
    let chars: Vec<char> = src.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            ' ' | '\t' | '\n' | '\r' => i += 1,
            '|' => {
                tokens.push(Token::Pipe);
                i += 1;
            }
            '(' => {
                tokens.push(Token::Open);
                i += 1;
            }
            ')' => {
                tokens.push(Token::Close);
                i += 1;
            }
            '"' => {
                let mut s = String::new();
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err(TemplateError("unterminated string literal".into())),
                        Some('"') => break,
                        Some('\\') => {
                            let esc = chars.get(i + 1).copied().unwrap_or('\\');
                            s.push(match esc {
                                'n' => '\n',
                                't' => '\t',
                                other => other,
                            });
                            i += 2;
                        }
                        Some(ch) => {
                            s.push(*ch);
                            i += 1;
                        }
                    }
                }
                i += 1;
                tokens.push(Token::Literal(Value::String(s)));
            }
            '`' => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|ch| *ch == '`')
                    .ok_or_else(|| TemplateError("unterminated raw string".into()))?;
                tokens.push(Token::Literal(Value::String(
                    chars[i + 1..i + 1 + end].iter().collect(),
                )));
                i += end + 2;
            }
            _ => {
                let start = i;
                while i < chars.len()
                    && !matches!(chars[i], ' ' | '\t' | '\n' | '\r' | '|' | '(' | ')')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                tokens.push(word_token(&word)?);
            }
        }
    }
    Ok(tokens)
}

fn word_token(word: &str) -> Result<Token, TemplateError> {
    if word.starts_with('.') {
        return Ok(Token::Field(word.to_string()));
    }
    if word.starts_with('$') {
        return Err(TemplateError(format!(
            "variables ({word}) are not supported in ork templates"
        )));
    }
    match word {
        "true" => return Ok(Token::Literal(Value::Bool(true))),
        "false" => return Ok(Token::Literal(Value::Bool(false))),
        "nil" => return Ok(Token::Literal(Value::Null)),
        _ => {}
    }
    if let Ok(n) = word.parse::<i64>() {
        return Ok(Token::Literal(Value::from(n)));
    }
    if let Ok(f) = word.parse::<f64>() {
        return Ok(Token::Literal(Value::from(f)));
    }
    if word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Ok(Token::Ident(word.to_string()));
    }
    Err(TemplateError(format!("unexpected \"{word}\"")))
}

fn parse_pipeline(src: &str) -> Result<Pipeline, TemplateError> {
    let tokens = lex(src)?;
    let mut pos = 0;
    let pipeline = parse_tokens(&tokens, &mut pos)?;
    if pos < tokens.len() {
        return Err(TemplateError("unbalanced \")\"".into()));
    }
    Ok(pipeline)
}

fn parse_tokens(tokens: &[Token], pos: &mut usize) -> Result<Pipeline, TemplateError> {
    let mut pipeline = Vec::new();
    let mut current: Vec<Operand> = Vec::new();
    let mut func: Option<Func> = None;
    let finish = |func: &mut Option<Func>, current: &mut Vec<Operand>, pipeline: &mut Pipeline| {
        if func.is_none() && current.len() > 1 {
            return Err(TemplateError(
                "several values in one command: did you forget a function name?".into(),
            ));
        }
        if func.is_none() && current.is_empty() {
            return Err(TemplateError("empty command in pipeline".into()));
        }
        pipeline.push(Command {
            func: func.take(),
            args: std::mem::take(current),
        });
        Ok(())
    };
    while *pos < tokens.len() {
        let token = &tokens[*pos];
        *pos += 1;
        match token {
            Token::Close => {
                *pos -= 1;
                break;
            }
            Token::Pipe => finish(&mut func, &mut current, &mut pipeline)?,
            Token::Open => {
                let sub = parse_tokens(tokens, pos)?;
                if tokens.get(*pos) != Some(&Token::Close) {
                    return Err(TemplateError("unclosed \"(\"".into()));
                }
                *pos += 1;
                current.push(Operand::Sub(sub));
            }
            Token::Field(f) => current.push(Operand::Field(f.clone())),
            Token::Literal(v) => current.push(Operand::Literal(v.clone())),
            Token::Ident(name) => {
                if func.is_some() || !current.is_empty() {
                    return Err(TemplateError(format!(
                        "function \"{name}\" must come first in its command"
                    )));
                }
                let known: Vec<&str> = FUNCS.iter().map(|(n, _)| *n).collect();
                func = Some(
                    FUNCS
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, f)| *f)
                        .ok_or_else(|| {
                            TemplateError(format!(
                                "function \"{name}\" not defined ({})",
                                crate::condition::did_you_mean_or_list(name, &known)
                            ))
                        })?,
                );
            }
        }
    }
    if func.is_some() || !current.is_empty() {
        finish(&mut func, &mut current, &mut pipeline)?;
    }
    Ok(pipeline)
}

fn render_nodes(nodes: &[Node], data: &Value, out: &mut String) -> Result<(), TemplateError> {
    for node in nodes {
        match node {
            Node::Text(t) => out.push_str(t),
            Node::Action(p) => out.push_str(&scalar_text(&eval_pipeline(p, data)?)),
            Node::If {
                cond,
                then,
                otherwise,
            } => {
                if truthy(&eval_pipeline(cond, data)?) {
                    render_nodes(then, data, out)?;
                } else {
                    render_nodes(otherwise, data, out)?;
                }
            }
        }
    }
    Ok(())
}

fn eval_pipeline(pipeline: &Pipeline, data: &Value) -> Result<Value, TemplateError> {
    let mut piped: Option<Value> = None;
    for cmd in pipeline {
        let mut args = cmd
            .args
            .iter()
            .map(|a| eval_operand(a, data))
            .collect::<Result<Vec<_>, _>>()?;
        if let Some(v) = piped.take() {
            args.push(v);
        }
        piped = Some(match cmd.func {
            Some(f) => call(f, args)?,
            None => args.pop().unwrap_or(Value::Null),
        });
    }
    Ok(piped.unwrap_or(Value::Null))
}

fn eval_operand(op: &Operand, data: &Value) -> Result<Value, TemplateError> {
    Ok(match op {
        Operand::Field(f) if f == "." => data.clone(),
        Operand::Field(f) => lookup(data, f).cloned().unwrap_or(Value::Null),
        Operand::Literal(v) => v.clone(),
        Operand::Sub(p) => eval_pipeline(p, data)?,
    })
}

fn call(f: Func, args: Vec<Value>) -> Result<Value, TemplateError> {
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(TemplateError(format!(
                "{f:?} takes {n} argument(s), got {}",
                args.len()
            )))
        }
    };
    let text = |i: usize| scalar_text(&args[i]);
    Ok(match f {
        Func::Default => {
            arity(2)?;
            if truthy(&args[1]) {
                args[1].clone()
            } else {
                args[0].clone()
            }
        }
        Func::Lower => {
            arity(1)?;
            Value::String(text(0).to_lowercase())
        }
        Func::Upper => {
            arity(1)?;
            Value::String(text(0).to_uppercase())
        }
        Func::Trim => {
            arity(1)?;
            Value::String(text(0).trim().to_string())
        }
        Func::Quote => {
            arity(1)?;
            Value::String(format!("{:?}", text(0)))
        }
        Func::Eq | Func::Ne => {
            arity(2)?;
            let same = args[0] == args[1] || text(0) == text(1);
            Value::Bool(same == (f == Func::Eq))
        }
        Func::Not => {
            arity(1)?;
            Value::Bool(!truthy(&args[0]))
        }
        Func::And => Value::Bool(!args.is_empty() && args.iter().all(truthy)),
        Func::Or => Value::Bool(args.iter().any(truthy)),
        Func::ToJson => {
            arity(1)?;
            Value::String(args[0].to_string())
        }
        Func::Printf => {
            let (format, rest) = args
                .split_first()
                .ok_or_else(|| TemplateError("printf needs a format".into()))?;
            Value::String(printf(&scalar_text(format), rest))
        }
    })
}

fn printf(format: &str, args: &[Value]) -> String {
    let mut out = String::new();
    let mut args = args.iter();
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('q') => out.push_str(&format!(
                "{:?}",
                args.next().map(scalar_text).unwrap_or_default()
            )),
            Some(_) => out.push_str(&args.next().map(scalar_text).unwrap_or_default()),
            None => out.push('%'),
        }
    }
    out
}

/// Go's truth: false, 0, nil and empty strings, lists and maps are false.
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn render(src: &str, data: Value) -> String {
        Template::parse(src)
            .expect("template parses")
            .render(&data)
            .expect("template renders")
    }

    #[test]
    fn fields_and_missing_keys() {
        let cr = json!({"metadata": {"name": "web"}, "spec": {"replicas": 3}});
        assert_eq!(render("{{ .metadata.name }}-svc", cr.clone()), "web-svc");
        assert_eq!(render("n={{ .spec.replicas }}", cr.clone()), "n=3");
        assert_eq!(render("[{{ .spec.nothing }}]", cr), "[]");
    }

    #[test]
    fn pipelines_functions_and_if() {
        let cr = json!({"spec": {"env": "prod"}});
        assert_eq!(
            render("{{ .spec.tier | default \"web\" }}", cr.clone()),
            "web"
        );
        assert_eq!(render("{{ .spec.env | upper }}", cr.clone()), "PROD");
        assert_eq!(
            render(
                "{{ if eq .spec.env \"prod\" }}big{{ else }}small{{ end }}",
                cr.clone()
            ),
            "big"
        );
        assert_eq!(
            render(
                "{{ if .ork.inPod }}in{{ else if .spec.env }}env{{ else }}none{{ end }}",
                cr.clone()
            ),
            "env"
        );
        assert_eq!(render("{{ printf \"%s-%d\" .spec.env 2 }}", cr), "prod-2");
    }

    #[test]
    fn trim_markers_remove_whitespace() {
        assert_eq!(render("a  {{- \"b\" -}}  c", json!({})), "abc");
    }

    #[test]
    fn broken_templates_are_rejected() {
        for bad in [
            "{{ .a ",
            "{{ if .a }}x",
            "{{ end }}",
            "{{ nosuchfn .a }}",
            "{{ range .a }}{{ end }}",
            "{{ .a .b }}",
            "{{ (.a }}",
        ] {
            assert!(Template::parse(bad).is_err(), "{bad} should not parse");
        }
    }

    #[test]
    fn unknown_function_suggests_a_name() {
        let err = Template::parse("{{ .a | lowr }}").expect_err("unknown fn");
        assert!(err.to_string().contains("did you mean \"lower\""), "{err}");
    }
}
